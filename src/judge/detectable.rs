//! What a campaign judged by boot can detect by its last look, stated
//! after its first round from the spread of the boots' means it has seen
//! (`stats::detectable_change`; docs/statistics.md, "Under KVM"): for each
//! primary metric of the main workload, the smallest fall and rise its
//! budget calls with 80% power, and whether "no clear difference" within
//! the band can be reached at all.

use crate::results::{DetectableRecord, Results};
use crate::stats::{self, BootsPerRound, CompareOptions};

/// The statement for every primary metric of the main workload, the first
/// candidate against the baseline, at the boots measured so far; empty
/// outside a sequential campaign, and for a metric whose boots cannot
/// give a spread yet.
pub fn detectable(results: &Results) -> Vec<DetectableRecord> {
    let (Some(s), Some(spec)) = (
        results.protocol.sequential.as_ref(),
        crate::workload::spec_for_kind(&results.workload.kind),
    ) else {
        return Vec::new();
    };
    let Some(variant) = results.candidates().first() else {
        return Vec::new();
    };
    let baseline = results.baseline();
    let round: Vec<&str> = results
        .protocol
        .boots
        .iter()
        .take(s.round_boots)
        .map(String::as_str)
        .collect();
    let per_round = BootsPerRound {
        a: round.iter().filter(|v| **v == baseline).count(),
        b: round.iter().filter(|v| **v == variant.name).count(),
    };
    let budget = crate::model::Sequential {
        rounds: s.rounds,
        samples: results.protocol.samples,
        time: None,
        spending: s.spending,
    };
    let round_seen = results.boots.len().div_ceil(s.round_boots.max(1)) as u32;
    let means = |variant: &str, metric: &str| -> Vec<f64> {
        results
            .samples_by_boot(variant, None)
            .iter()
            .filter_map(|(_, samples)| {
                let v: Vec<f64> = samples
                    .iter()
                    .filter_map(|s| s.metrics.get(metric).map(|v| *v as f64))
                    .collect();
                (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
            })
            .collect()
    };
    spec.metrics
        .iter()
        .filter(|m| m.primary)
        .filter_map(|m| {
            let options = CompareOptions {
                by_boot: true,
                ..CompareOptions::default()
            };
            let d = stats::detectable_change(
                &means(baseline, &m.name),
                &means(&variant.name, &m.name),
                &budget,
                per_round,
                &options,
            )
            .ok()?;
            Some(DetectableRecord {
                metric: m.name.clone(),
                round: round_seen,
                boot_cv_pct: d.boot_cv_pct,
                fall_pct: d.fall_pct,
                rise_pct: d.rise_pct,
                half_width_pct: d.half_width_pct,
                band_reachable: d.band_reachable,
                rounds_for_band: d.rounds_for_band,
                noise_pct: options.noise_pct,
            })
        })
        .collect()
}
