//! What a metric measures and which way is better, as the workload specs
//! (`workloads/*.yaml`) declare it and every report reads it.

use serde::Deserialize;

/// A metric's unit. Times are nanoseconds, shown in milliseconds.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Ns,
    Pages,
    Count,
    /// Events per second (a rate).
    #[serde(rename = "per-second")]
    PerSecond,
    /// Bytes, shown in MiB.
    Bytes,
    /// Modeled CPU cycles (the cost lane, docs/cost-model.md), shown in
    /// millions.
    Cycles,
}

impl Unit {
    /// Whether a workload's summary (the geometric mean of its changes)
    /// counts metrics of this unit: times, rates and modeled cycles (the
    /// cost lane's time), what a user waits for or gets. Counts of pages and events explain a result (a forced
    /// flush, a page stored), and a count near zero would swing the mean
    /// by orders of magnitude on one event.
    pub fn summarised(self) -> bool {
        matches!(self, Unit::Ns | Unit::PerSecond | Unit::Cycles)
    }

    /// The unit as a table shows it (after [`Unit`]'s conversions).
    pub fn label(self) -> &'static str {
        match self {
            Unit::Ns => "ms",
            Unit::Pages => "pages",
            Unit::Count => "count",
            Unit::PerSecond => "per s",
            Unit::Bytes => "MiB",
            Unit::Cycles => "Mcycles",
        }
    }
}

/// Which way a metric is better. Specs write it `better: lower`, `higher`
/// or `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Direction {
    /// Times and costs.
    #[serde(rename = "lower")]
    LowerIsBetter,
    /// Rates and throughputs.
    #[serde(rename = "higher")]
    HigherIsBetter,
    /// A counter that explains a result rather than being one: it can be
    /// [`crate::model::Verdict::Changed`], never better or worse.
    #[serde(rename = "none")]
    Neither,
}
