//! A cost-lane profile's arithmetic: modeled cycles (or instructions, in
//! the counting lane) per symbol in one window of one sample, and the
//! table of what changed by symbol from A's samples to B's. Pure, shared
//! by the cost stage that makes profiles and the report that renders the
//! stored ones.

use std::collections::BTreeMap;

/// Modeled cycles per symbol in one window of one sample.
pub type SymbolProfile = BTreeMap<String, u64>;

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
}
