//! A cost-lane profile's arithmetic: modeled cycles (or instructions, in
//! the counting lane) per symbol in one window of one sample, and the
//! table of what changed by symbol from A's samples to B's. Pure, shared
//! by the cost stage that makes profiles and the report that renders the
//! stored ones.

use std::collections::BTreeMap;

/// Modeled cycles per symbol in one window of one sample.
pub type SymbolProfile = BTreeMap<String, u64>;

pub use patchbench_costmodel::insn::{Class, ClassCounts};

/// Where one symbol's modeled cycles in one window went, in the cost lane
/// (docs/cost-model.md): one cycle for each instruction, `class_cycles`
/// beyond that for the cost table's classes, and the rest of its profile
/// cycles ([`CycleSplit::miss_cycles`]) for its misses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CycleSplit {
    pub insns: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub class_cycles: u64,
    /// Instructions of each class that ran (only those that did).
    #[serde(default, skip_serializing_if = "ClassCounts::is_zero")]
    pub classes: ClassCounts,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl CycleSplit {
    /// The misses' share of `cycles`, the symbol's modeled cycles.
    pub fn miss_cycles(&self, cycles: u64) -> u64 {
        cycles.saturating_sub(self.insns + self.class_cycles)
    }
}

/// Every symbol's split in one window of one sample.
pub type SplitProfile = BTreeMap<String, CycleSplit>;

/// The mean change from A's samples to B's in where some symbols' cycles
/// went: per sample, in cycles (instructions count one each).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SplitDelta {
    pub insns: f64,
    pub class_cycles: f64,
    pub miss_cycles: f64,
    /// Instructions of each class, B's mean minus A's, the classes that
    /// changed, largest |Δ| first.
    pub classes: Vec<(Class, f64)>,
}

/// The mean split of `symbol` (every symbol when `None`) over one side's
/// samples, each a profile and its split.
fn mean_split(side: &[(&SymbolProfile, &SplitProfile)], symbol: Option<&str>) -> SplitDelta {
    let mut sum = SplitDelta {
        classes: Class::ALL.iter().map(|&c| (c, 0.0)).collect(),
        ..SplitDelta::default()
    };
    for (profile, split) in side {
        // One symbol: a lookup, not a walk over the whole window.
        let chosen: Vec<(&String, &CycleSplit)> = match symbol {
            Some(want) => split.get_key_value(want).into_iter().collect(),
            None => split.iter().collect(),
        };
        for (symbol, s) in chosen {
            let cycles = profile.get(symbol).copied().unwrap_or(0);
            sum.insns += s.insns as f64;
            sum.class_cycles += s.class_cycles as f64;
            sum.miss_cycles += s.miss_cycles(cycles) as f64;
            for (c, n) in &mut sum.classes {
                *n += s.classes.get(*c) as f64;
            }
        }
    }
    let n = side.len().max(1) as f64;
    sum.insns /= n;
    sum.class_cycles /= n;
    sum.miss_cycles /= n;
    for (_, v) in &mut sum.classes {
        *v /= n;
    }
    sum
}

/// Where the change in `symbol`'s cycles (the whole phase's when `None`)
/// went, from A's samples to B's; `None` when either side has no split.
pub fn split_delta(
    a: &[(&SymbolProfile, &SplitProfile)],
    b: &[(&SymbolProfile, &SplitProfile)],
    symbol: Option<&str>,
) -> Option<SplitDelta> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (ma, mb) = (mean_split(a, symbol), mean_split(b, symbol));
    let mut classes: Vec<(Class, f64)> = ma
        .classes
        .iter()
        .zip(&mb.classes)
        .map(|(&(c, x), &(_, y))| (c, y - x))
        .filter(|&(_, d)| d != 0.0)
        .collect();
    classes.sort_by(|x, y| y.1.abs().total_cmp(&x.1.abs()));
    Some(SplitDelta {
        insns: mb.insns - ma.insns,
        class_cycles: mb.class_cycles - ma.class_cycles,
        miss_cycles: mb.miss_cycles - ma.miss_cycles,
        classes,
    })
}

/// One row of the "top symbols by Δ modeled cycles per sample" table.
#[derive(Debug, Clone, PartialEq)]
pub struct SymbolDelta {
    pub symbol: String,
    /// Mean modeled cycles per sample of A (a sample without the symbol
    /// counts 0).
    pub a_mean: f64,
    pub b_mean: f64,
    /// `b_mean − a_mean`.
    pub delta: f64,
    /// `delta` over the total Δ (B's mean total minus A's): the share of
    /// the change this symbol explains; negative when it moved against the
    /// total. `None` when the total did not change.
    pub share: Option<f64>,
}

/// The `limit` symbols whose mean modeled cycles per sample changed most
/// from A's samples to B's (largest |Δ| first, ties by name), from the
/// per-sample profiles of one phase. Empty if either side has no sample.
pub fn top_symbol_deltas(
    a: &[SymbolProfile],
    b: &[SymbolProfile],
    limit: usize,
) -> Vec<SymbolDelta> {
    let mut rows = symbol_deltas(a, b);
    rows.retain(|r| r.delta != 0.0);
    // Stable: equal |Δ| keep name order.
    rows.sort_by(|x, y| y.delta.abs().total_cmp(&x.delta.abs()));
    rows.truncate(limit);
    rows
}

/// The rows of the symbols that are `functions` (a compiler suffix such as
/// `.isra.0` aside), in name order, changed or not: what a series' own
/// functions did, however small beside the phase.
pub fn function_deltas(
    a: &[SymbolProfile],
    b: &[SymbolProfile],
    functions: &[&str],
) -> Vec<SymbolDelta> {
    let mut rows = symbol_deltas(a, b);
    rows.retain(|r| functions.contains(&r.symbol.split('.').next().unwrap_or("")));
    rows
}

/// Every symbol's row, in name order. Empty if either side has no sample.
fn symbol_deltas(a: &[SymbolProfile], b: &[SymbolProfile]) -> Vec<SymbolDelta> {
    if a.is_empty() || b.is_empty() {
        return Vec::new();
    }
    let (a_means, b_means) = (mean_profile(a), mean_profile(b));
    let total = b_means.values().sum::<f64>() - a_means.values().sum::<f64>();
    let symbols: std::collections::BTreeSet<&str> =
        a_means.keys().chain(b_means.keys()).copied().collect();
    symbols
        .into_iter()
        .map(|symbol| {
            let a_mean = a_means.get(symbol).copied().unwrap_or(0.0);
            let b_mean = b_means.get(symbol).copied().unwrap_or(0.0);
            let delta = b_mean - a_mean;
            SymbolDelta {
                symbol: symbol.to_string(),
                a_mean,
                b_mean,
                delta,
                share: (total != 0.0).then(|| delta / total),
            }
        })
        .collect()
}

/// Mean cycles per sample of each symbol (absent in a sample: 0).
fn mean_profile(side: &[SymbolProfile]) -> BTreeMap<&str, f64> {
    let mut sums: BTreeMap<&str, u64> = BTreeMap::new();
    for profile in side {
        for (symbol, cycles) in profile {
            *sums.entry(symbol).or_default() += cycles;
        }
    }
    let n = side.len() as f64;
    sums.into_iter()
        .map(|(s, sum)| (s, sum as f64 / n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delta_table_ranks_symbols_by_change_and_shares_the_total() {
        let p = |pairs: &[(&str, u64)]| -> SymbolProfile {
            pairs.iter().map(|&(s, c)| (s.to_string(), c)).collect()
        };
        // A: the flush costs 1000 and 1200; B: it is gone, a counter update
        // costs 100 more, user code is unchanged.
        let a = [
            p(&[
                ("do_flush_stats", 1000),
                ("user", 500),
                ("mod_memcg_state", 10),
            ]),
            p(&[
                ("do_flush_stats", 1200),
                ("user", 500),
                ("mod_memcg_state", 10),
            ]),
        ];
        let b = [
            p(&[("user", 500), ("mod_memcg_state", 110)]),
            p(&[("user", 500), ("mod_memcg_state", 110)]),
        ];
        let rows = top_symbol_deltas(&a, &b, 10);
        // Total Δ: (610) − (1610) = −1000.
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert_eq!(rows[0].symbol, "do_flush_stats");
        assert_eq!((rows[0].a_mean, rows[0].b_mean), (1100.0, 0.0));
        assert_eq!(rows[0].delta, -1100.0);
        assert_eq!(rows[0].share, Some(1.1));
        assert_eq!(rows[1].symbol, "mod_memcg_state");
        assert_eq!((rows[1].delta, rows[1].share), (100.0, Some(-0.1)));
        // The listed shares add up to the whole change.
        let sum: f64 = rows.iter().filter_map(|r| r.share).sum();
        assert!((sum - 1.0).abs() < 1e-12);
        assert_eq!(top_symbol_deltas(&a, &b, 1).len(), 1);
        assert!(top_symbol_deltas(&a, &[], 10).is_empty());
        // No change at all: no rows, and no shares to divide by zero.
        assert!(top_symbol_deltas(&a, &a, 10).is_empty());
    }

    #[test]
    fn a_split_delta_parts_instructions_classes_and_misses() {
        let mut pauses = ClassCounts::default();
        pauses.add(Class::Pause, 20);
        let mut locked = ClassCounts::default();
        locked.add(Class::Locked, 4);
        let flush = |insns, class_cycles, classes| CycleSplit {
            insns,
            class_cycles,
            classes,
        };
        // A: the flush ran 1000 instructions, 20 PAUSEs (139 beyond one
        // each) and the rest of its 5000 cycles missed; B: gone, and the
        // counter update took 4 locked instructions more.
        let a_profile: SymbolProfile =
            [("flush".to_string(), 5000), ("inc".to_string(), 10)].into();
        let a_split: SplitProfile = [
            ("flush".to_string(), flush(1000, 20 * 139, pauses)),
            ("inc".to_string(), flush(10, 0, ClassCounts::default())),
        ]
        .into();
        let b_profile: SymbolProfile = [("inc".to_string(), 90)].into();
        let b_split: SplitProfile = [("inc".to_string(), flush(22, 4 * 17, locked))].into();
        let a = [(&a_profile, &a_split)];
        let b = [(&b_profile, &b_split)];
        let f = split_delta(&a, &b, Some("flush")).unwrap();
        assert_eq!((f.insns, f.class_cycles), (-1000.0, -2780.0));
        assert_eq!(f.miss_cycles, -(5000.0 - 1000.0 - 2780.0));
        assert_eq!(f.classes, [(Class::Pause, -20.0)]);
        let whole = split_delta(&a, &b, None).unwrap();
        // The parts add up to the whole phase's change: 90 − 5010.
        assert_eq!(
            whole.insns + whole.class_cycles + whole.miss_cycles,
            -4920.0
        );
        assert_eq!(whole.classes, [(Class::Pause, -20.0), (Class::Locked, 4.0)]);
        assert!(split_delta(&a, &[], None).is_none());
    }
}
