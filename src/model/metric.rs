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
    /// Instructions the vCPUs ran, shown in millions: the work done. The
    /// counting lane's time; in the cost lane, the work its modeled cycles
    /// price (docs/statistics.md, "Which way is better").
    Insns,
}

impl Unit {
    /// Whether the metric is a time, a rate, modeled cycles (the cost
    /// lane's time) or instructions (the counting lane's): what a user
    /// waits for or gets. The others are counts of pages, events and
    /// bytes, which explain a result rather than being one: their change
    /// is *changed*, never better or worse.
    pub fn is_time_or_rate(self) -> bool {
        match self {
            Unit::Ns | Unit::PerSecond | Unit::Cycles | Unit::Insns => true,
            Unit::Pages | Unit::Count | Unit::Bytes => false,
        }
    }

    /// The directions a metric of this unit may have, the one its spec
    /// names when that is allowed first: the rule of docs/statistics.md's
    /// table "Which way is better" (a test holds the table, this and every
    /// spec to each other). A time is lower-is-better, or no direction
    /// for another task's time that explains a result (kswapd's); a rate
    /// is higher-is-better; a count explains a result and has none.
    pub fn directions(self) -> &'static [Direction] {
        match self {
            Unit::Ns => &[Direction::LowerIsBetter, Direction::Neither],
            Unit::PerSecond => &[Direction::HigherIsBetter],
            Unit::Cycles | Unit::Insns => &[Direction::LowerIsBetter],
            Unit::Pages | Unit::Count | Unit::Bytes => &[Direction::Neither],
        }
    }

    /// `better` when this unit allows it, else the unit's own first
    /// direction: what a verdict uses, whatever a spec says.
    pub fn direction(self, better: Direction) -> Direction {
        if self.directions().contains(&better) {
            better
        } else {
            self.directions()[0]
        }
    }

    /// The word a spec writes for this unit (`unit: per-second`).
    pub fn key(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Pages => "pages",
            Unit::Count => "count",
            Unit::PerSecond => "per-second",
            Unit::Bytes => "bytes",
            Unit::Cycles => "cycles",
            Unit::Insns => "insns",
        }
    }

    /// Every unit.
    pub const ALL: [Unit; 7] = [
        Unit::Ns,
        Unit::PerSecond,
        Unit::Cycles,
        Unit::Insns,
        Unit::Count,
        Unit::Pages,
        Unit::Bytes,
    ];

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

impl Direction {
    /// The word a spec writes (`better: lower`).
    pub fn key(self) -> &'static str {
        match self {
            Direction::LowerIsBetter => "lower",
            Direction::HigherIsBetter => "higher",
            Direction::Neither => "none",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_keys_are_the_words_specs_write() {
        for unit in Unit::ALL {
            let parsed: Unit = serde_json::from_value(serde_json::json!(unit.key())).unwrap();
            assert_eq!(parsed, unit);
        }
    }

    #[test]
    fn a_direction_the_unit_does_not_allow_gives_way_to_the_units_own() {
        assert_eq!(
            Unit::Count.direction(Direction::LowerIsBetter),
            Direction::Neither
        );
        assert_eq!(
            Unit::Insns.direction(Direction::Neither),
            Direction::LowerIsBetter
        );
        assert_eq!(Unit::Ns.direction(Direction::Neither), Direction::Neither);
    }
}
