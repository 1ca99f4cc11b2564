//! What a metric measures and which way is better, as the workload specs
//! (`workloads/*.yaml`) declare it and every report reads it.

use serde::{Deserialize, Serialize};

/// A metric's unit. Times are nanoseconds, shown in a unit that fits
/// their size.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
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
    /// Instructions a vCPU ran, as the counting lane measures work (its
    /// time), shown in millions. A cost lane's instruction count, which
    /// explains its cycles, is a `count`.
    Insns,
}

impl Unit {
    /// Whether the metric is a time, a rate, modeled cycles (the cost
    /// lane's time) or the counting lane's instructions: what a user waits
    /// for or gets. The others are counts
    /// of pages, events and bytes, which explain a result rather than
    /// being one: their change is *changed*, never better or worse.
    pub fn is_time_or_rate(self) -> bool {
        matches!(
            self,
            Unit::Ns | Unit::PerSecond | Unit::Cycles | Unit::Insns
        )
    }

    /// The unit's own name in a table; reports show times and bytes in a
    /// unit that fits their size (`report::format::scale`).
    pub fn label(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Pages => "pages",
            Unit::Count => "count",
            Unit::PerSecond => "per s",
            Unit::Bytes => "MiB",
            Unit::Cycles => "Mcycles",
            Unit::Insns => "Minsns",
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
