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

    /// An amount of this unit, in words that fit its size: `1 ms`,
    /// `312.5 µs`, `80 pages`, `500` (a count has no noun). Up to two
    /// decimals, trailing zeros dropped.
    pub fn amount(self, v: f64) -> String {
        let r = v.abs();
        let (x, noun) = match self {
            Unit::Ns if r < 1e3 => (v, " ns"),
            Unit::Ns if r < 1e6 => (v / 1e3, " \u{b5}s"),
            Unit::Ns if r < 1e9 => (v / 1e6, " ms"),
            Unit::Ns => (v / 1e9, " s"),
            Unit::PerSecond => (v, " per s"),
            Unit::Bytes if r < 1024.0 * 1024.0 => (v, " bytes"),
            Unit::Bytes => (v / (1024.0 * 1024.0), " MiB"),
            Unit::Cycles => (v, " cycles"),
            Unit::Insns => (v, " instructions"),
            Unit::Pages => (v, " pages"),
            Unit::Count => (v, ""),
        };
        let text = format!("{x:.2}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        format!("{text}{noun}")
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
    fn amounts_read_in_a_unit_that_fits() {
        assert_eq!(Unit::Ns.amount(1e6), "1 ms");
        assert_eq!(Unit::Ns.amount(312_500.0), "312.5 \u{b5}s");
        assert_eq!(Unit::Ns.amount(999.0), "999 ns");
        assert_eq!(Unit::Pages.amount(80.0), "80 pages");
        assert_eq!(Unit::Count.amount(0.55), "0.55");
        assert_eq!(Unit::Count.amount(500.0), "500");
        assert_eq!(Unit::Bytes.amount(3.0 * 1024.0 * 1024.0), "3 MiB");
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
