//! The cost lane's "where the change came from": per marked phase, the
//! kernel symbols whose mean modeled cycles per sample changed most from
//! the baseline to a variant (`profile::top_symbol_deltas` over the samples'
//! profiles), and the lane's banner.

use std::collections::BTreeMap;

use crate::model::profile::{self, SplitDelta, SplitProfile, SymbolDelta, SymbolProfile};
use crate::results::Results;

/// Symbols listed per table.
pub const TOP_SYMBOLS: usize = 10;

/// One phase's table of one variant against the baseline, main workload.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileTable {
    pub phase: String,
    pub baseline: String,
    pub variant: String,
    /// Samples of each side with a profile.
    pub a_samples: usize,
    pub b_samples: usize,
    /// Mean modeled cycles per sample of the whole phase, A and B.
    pub a_total: f64,
    pub b_total: f64,
    /// The symbols, largest |Δ| first.
    pub rows: Vec<SymbolDelta>,
    /// The functions the series changes that the chosen campaign executes
    /// (`results.reach`), in name order, when not among `rows`.
    pub series_rows: Vec<SymbolDelta>,
    /// The counting lane's table: instructions, not modeled cycles.
    pub counting: bool,
    /// The cost lane, where samples carry splits: where each row's Δ went
    /// (`rows` then `series_rows`, by symbol), and the whole phase's.
    pub splits: Vec<(String, SplitDelta)>,
    pub phase_split: Option<SplitDelta>,
}

impl ProfileTable {
    /// `b_total − a_total`.
    pub fn total_delta(&self) -> f64 {
        self.b_total - self.a_total
    }

    /// The share of the total Δ the listed symbols explain (their Δs add
    /// up to it); `None` when the total did not change.
    pub fn listed_share(&self) -> Option<f64> {
        let total = self.total_delta();
        (total != 0.0).then(|| self.rows.iter().map(|r| r.delta).sum::<f64>() / total)
    }

    /// What the table counts: `modeled cycles`, or the counting lane's
    /// `instructions`.
    pub fn measure(&self) -> &'static str {
        if self.counting {
            "instructions"
        } else {
            "modeled cycles"
        }
    }

    /// Its unit in millions: `Mcycles` or `Minsns`.
    pub fn unit(&self) -> &'static str {
        if self.counting { "Minsns" } else { "Mcycles" }
    }

    /// "Top symbols by Δ modeled cycles per sample, B vs A: pageout".
    pub fn title(&self) -> String {
        format!(
            "Top symbols by \u{394} {} per sample, {} vs {}: {}",
            self.measure(),
            self.variant,
            self.baseline,
            self.phase
        )
    }
}

/// Every table of the main workload: each candidate against the baseline,
/// each phase any sample profiled (in name order). Empty outside the cost
/// lane.
pub fn profile_tables(results: &Results) -> Vec<ProfileTable> {
    let baseline = results.baseline();
    let changed: Vec<&str> = results
        .reach
        .iter()
        .flat_map(|r| r.executes.iter().map(|e| e.function.as_str()))
        .collect();
    let mut tables = Vec::new();
    for variant in results.candidates() {
        let a = profiles(results, baseline);
        let b = profiles(results, &variant.name);
        let phases: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        for phase in phases {
            let (Some(pa), Some(pb)) = (a.get(phase), b.get(phase)) else {
                continue;
            };
            let mean_total = |side: &[SymbolProfile]| {
                side.iter()
                    .map(|p| p.values().sum::<u64>() as f64)
                    .sum::<f64>()
                    / side.len() as f64
            };
            let rows = profile::top_symbol_deltas(pa, pb, TOP_SYMBOLS);
            let mut series_rows = profile::function_deltas(pa, pb, &changed);
            series_rows.retain(|r| !rows.iter().any(|t| t.symbol == r.symbol));
            let (sa, sb) = (
                split_side(results, baseline, phase),
                split_side(results, &variant.name, phase),
            );
            let phase_split = profile::split_delta(&sa, &sb, None);
            let splits = if phase_split.is_some() {
                rows.iter()
                    .chain(&series_rows)
                    .filter_map(|r| {
                        profile::split_delta(&sa, &sb, Some(&r.symbol))
                            .map(|d| (r.symbol.clone(), d))
                    })
                    .collect()
            } else {
                Vec::new()
            };
            tables.push(ProfileTable {
                phase: phase.clone(),
                baseline: baseline.to_string(),
                variant: variant.name.clone(),
                a_samples: pa.len(),
                b_samples: pb.len(),
                a_total: mean_total(pa),
                b_total: mean_total(pb),
                rows,
                series_rows,
                counting: results.host.lane == crate::model::Lane::Counting,
                splits,
                phase_split,
            });
        }
    }
    tables
}

/// The profiles of a variant's main-workload samples, by phase.
fn profiles(results: &Results, variant: &str) -> BTreeMap<String, Vec<SymbolProfile>> {
    let mut by_phase: BTreeMap<String, Vec<SymbolProfile>> = BTreeMap::new();
    for (_, samples) in results.samples_by_boot(variant, None) {
        for sample in samples {
            for (phase, profile) in &sample.profile {
                by_phase
                    .entry(phase.clone())
                    .or_default()
                    .push(profile.clone());
            }
        }
    }
    by_phase
}

/// A variant's main-workload samples of `phase` that carry a split, each
/// with its profile (samples written before splits existed carry none).
fn split_side<'a>(
    results: &'a Results,
    variant: &str,
    phase: &str,
) -> Vec<(&'a SymbolProfile, &'a SplitProfile)> {
    results
        .samples_by_boot(variant, None)
        .into_iter()
        .flat_map(|(_, samples)| samples)
        .filter_map(|sample| Some((sample.profile.get(phase)?, sample.split.get(phase)?)))
        .collect()
}

/// A split's classes that changed, for a table cell: `pause −8192,
/// locked +4.0` (mean instructions per sample, largest change first).
pub fn classes_cell(d: &SplitDelta) -> String {
    if d.classes.is_empty() {
        return "none".into();
    }
    d.classes
        .iter()
        .map(|(c, n)| {
            let sign = if *n < 0.0 { "\u{2212}" } else { "+" };
            // A mean over samples: whole counts unless it is small.
            let digits = if n.abs() < 10.0 { 1 } else { 0 };
            format!("{} {sign}{:.*}", c.name(), digits, n.abs())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The cost lane's banner, or `None` outside it: "Cost lane: modeled
/// cost on skylake-client; TCG forced (...)".
pub fn cost_banner(results: &Results) -> Option<String> {
    let banner = results
        .host
        .lane
        .plugin_banner(results.host.cost_model.as_deref())?;
    Some(format!("{banner} {}", results.host.accel_reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_come_from_the_samples_profiles() {
        let results = crate::results::tests::cost_lane();
        let tables = profile_tables(&results);
        let phases: Vec<&str> = tables.iter().map(|t| t.phase.as_str()).collect();
        assert_eq!(phases, ["pageout", "verify"]);
        let pageout = &tables[0];
        assert_eq!((pageout.a_samples, pageout.b_samples), (6, 3));
        assert_eq!(pageout.rows[0].symbol, "do_flush_stats");
        assert!(pageout.total_delta() < 0.0);
        let share = pageout.listed_share().unwrap();
        assert!((share - 1.0).abs() < 1e-9, "{share}");
        assert_eq!(
            pageout.title(),
            "Top symbols by \u{394} modeled cycles per sample, B vs A: pageout"
        );
        assert!(cost_banner(&results).unwrap().contains("skylake-client"));
        // Markdown (report.md, the PR comment) and the terminal show both.
        let md = super::super::markdown(&{
            let mut r = results.clone();
            crate::judge::judge_into(&mut r);
            r
        });
        assert!(
            md.contains("> **Cost lane: modeled cost on the skylake-client model"),
            "{md}"
        );
        assert!(!md.contains("Accelerator: TCG"), "one banner: {md}");
        assert!(
            md.contains("#### Top symbols by \u{394} modeled cycles per sample, B vs A: pageout"),
            "{md}"
        );
        assert!(
            md.contains("| `do_flush_stats` | 300.002 | 0.000 | \u{2212}300.002 | 100.3% |"),
            "{md}"
        );
        assert!(
            md.contains("| `mod_memcg_state` | 1.000 | 2.000 | +1.000 | \u{2212}0.3% |"),
            "{md}"
        );
        assert!(
            md.contains("the symbols listed account for 100.0% of the \u{394}"),
            "{md}"
        );
        assert!(md.contains("| pageout_modeled_cycles | Mcycles |"), "{md}");
        assert!(
            md.contains("No symbol's modeled cycles changed"),
            "verify: {md}"
        );
        let text = super::super::terminal(&{
            let mut r = results.clone();
            crate::judge::judge_into(&mut r);
            r
        });
        // The headline first, then the lane's banner.
        assert!(text.starts_with("B: "), "{text}");
        assert!(
            text.lines()
                .nth(1)
                .unwrap()
                .starts_with("Cost lane: modeled cost"),
            "{text}"
        );
        assert!(text.contains("do_flush_stats"), "{text}");
        let plain = crate::results::tests::with_control(None);
        assert!(profile_tables(&plain).is_empty());
        assert!(cost_banner(&plain).is_none());
    }

    #[test]
    fn where_each_rows_cycles_went_is_shown_when_samples_carry_splits() {
        use crate::model::profile::Class;
        // Samples written before splits existed: no split table.
        let plain = crate::results::tests::cost_lane();
        assert!(
            profile_tables(&plain)
                .iter()
                .all(|t| t.phase_split.is_none())
        );
        let results = crate::results::tests::cost_lane_with_splits();
        let tables = profile_tables(&results);
        let pageout = &tables[0];
        let flush = &pageout.splits[0];
        assert_eq!(flush.0, "do_flush_stats");
        assert_eq!(flush.1.class_cycles, -(8192.0 * 139.0));
        assert_eq!(flush.1.classes, [(Class::Pause, -8192.0)]);
        let phase = pageout.phase_split.as_ref().unwrap();
        let parts = phase.insns + phase.class_cycles + phase.miss_cycles;
        assert!((parts - pageout.total_delta()).abs() < 1e-6, "{parts}");
        assert_eq!(classes_cell(phase), "pause \u{2212}8192");
        assert!(tables[1].phase_split.is_none(), "verify has no split");
        let mut judged = results.clone();
        crate::judge::judge_into(&mut judged);
        let md = super::super::markdown(&judged);
        assert!(
            md.contains("| `do_flush_stats` | \u{2212}60.000 | \u{2212}1.139 | \u{2212}238.863 | pause \u{2212}8192 |"),
            "{md}"
        );
        assert!(md.contains("| (whole phase) |"), "{md}");
        let text = super::super::terminal(&judged);
        assert!(text.contains("delta went to"), "{text}");
    }

    #[test]
    fn the_series_functions_get_a_row_however_small() {
        let mut results = crate::results::tests::cost_lane();
        let executed = |function: &str| crate::results::ReachedRecord {
            function: function.into(),
            file: "mm/memcontrol.c".into(),
            how: vec![],
        };
        results.reach = Some(crate::results::ReachRecord {
            executes: vec![executed("do_flush_stats"), executed("user")],
            unreached: vec![],
        });
        let tables = profile_tables(&results);
        let pageout = &tables[0];
        // Already among the top rows: not twice; unchanged: still shown.
        let names: Vec<&str> = pageout
            .series_rows
            .iter()
            .map(|r| r.symbol.as_str())
            .collect();
        assert_eq!(names, ["user"]);
        assert_eq!(pageout.series_rows[0].delta, 0.0);
        let md = super::super::markdown(&{
            let mut r = results.clone();
            crate::judge::judge_into(&mut r);
            r
        });
        assert!(
            md.contains("| `user` (changed by the series) | 0.010 | 0.010 | +0.000 |"),
            "{md}"
        );
        let text = super::super::terminal(&{
            let mut r = results.clone();
            crate::judge::judge_into(&mut r);
            r
        });
        assert!(text.contains("user (changed)"), "{text}");
        // The share of the listed symbols is the top rows' alone.
        let share = pageout.listed_share().unwrap();
        assert!((share - 1.0).abs() < 1e-9, "{share}");
    }
}
