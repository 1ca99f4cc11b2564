//! Judging, the stage between the statistics and the renderers: a run's
//! samples become its stored judgement (`results.json`'s `judgement`):
//! every metric's comparison with its verdict and reason, which figures
//! are not the lane's own ([`lane`]), the headline ([`headline`]), the
//! primary metrics still undecided, what regressed and, for an A/A run,
//! the self-check with its simulated false-call rate. The campaign, its
//! sequential looks, `merge` and the hunt call [`judge`]; reports, pages,
//! the PR comment and `compare` render what it stored and never judge
//! again (`patchbench judge` re-judges a kept run under today's rule).

mod detectable;
mod headline;
pub mod lane;
mod record;

pub use detectable::detectable;

use crate::model::{Direction, Verdict};
use crate::results::{
    Boot, ComparisonRecord, JudgementRecord, Results, SampleRecord, SelfCheckRecord,
    UncomparedRecord, What,
};
use crate::stats::{self, CompareOptions};
use crate::workload::{MetricSpec, WorkloadSpec};

/// Judge `results`: every condition's comparisons, each candidate against
/// the baseline (and a per-patch campaign's steps), under rule
/// [`stats::RULE_VERSION`].
pub fn judge(results: &Results) -> JudgementRecord {
    let spec = crate::workload::spec_for_kind(&results.workload.kind);
    let spec = spec.as_ref();
    let guest = lane::Guest::of(results, spec);
    let baseline = results.baseline();
    let mut rows = Vec::new();
    for condition in results.conditions() {
        let condition = condition.map(|c| c.name.as_str());
        for v in results.candidates() {
            rows.extend(condition_rows(
                results, spec, &guest, condition, baseline, &v.name,
            ));
        }
    }
    let steps = if is_prefix_chain(results) {
        results
            .variants
            .windows(2)
            .flat_map(|pair| {
                condition_rows(results, spec, &guest, None, &pair[0].name, &pair[1].name)
            })
            .collect()
    } else {
        Vec::new()
    };
    let defaults = CompareOptions::default();
    let patch_first = results.compares().patch_first();
    let regressed = rows
        .iter()
        .filter(|r| r.kind() == headline::regression_of_the_patch(patch_first))
        .map(ComparisonRecord::label)
        .collect();
    let undecided = rows
        .iter()
        .filter(|r| r.primary && r.kind() == Verdict::Inconclusive)
        .map(ComparisonRecord::label)
        .collect();
    let self_check = is_a_a(results).then(|| self_check(results, &rows));
    JudgementRecord {
        rule: stats::RULE_VERSION,
        lane: guest.lane,
        alpha: defaults.alpha,
        noise_pct: defaults.noise_pct,
        headlines: results
            .candidates()
            .iter()
            .map(|v| headline::headline(&rows, baseline, &v.name, self_check.as_ref(), patch_first))
            .collect(),
        rows,
        steps,
        undecided,
        regressed,
        uncompared: uncompared(results),
        self_check,
    }
}

/// [`judge`] `results` and store the judgement in it.
pub fn judge_into(results: &mut Results) {
    results.judgement = Some(judge(results));
}

/// Whether every variant is the same kernel, run the same way (an A/A
/// run: no patch, fragment, command-line word or setting tells them
/// apart), so that any change called is a false one.
pub fn is_a_a(results: &Results) -> bool {
    results.compares().what == What::SelfCheck
}

/// Whether the variants are the base and each prefix of the series in
/// turn (a per-patch campaign): then each step can be told apart.
pub fn is_prefix_chain(results: &Results) -> bool {
    matches!(results.compares().what, What::PerPatch { .. })
}

/// The look a sequential campaign's comparisons are at: the rounds its
/// boots have reached (a round cut short by a failure counts), of the
/// budget's. `None` for the fixed protocol.
fn sequential_look(results: &Results) -> Option<stats::SequentialLook> {
    let s = results.protocol.sequential.as_ref()?;
    let started = results.boots.len().div_ceil(s.round_boots.max(1)) as u32;
    Some(stats::SequentialLook {
        look: started.clamp(1, s.rounds),
        of: s.rounds,
        spending: s.spending,
    })
}

fn values(samples: &[&SampleRecord], metric: &str) -> Vec<f64> {
    samples
        .iter()
        .filter_map(|s| s.metrics.get(metric).map(|v| *v as f64))
        .collect()
}

/// One condition's comparisons (`None`: the main workload), `variant`
/// against `baseline`: the spec's metrics in its order, then any metric
/// the spec does not list, with the statistics' default options and each
/// metric's `negligible` level; a metric some side has no sample of is
/// left out (it is [`uncompared`]).
fn condition_rows(
    results: &Results,
    spec: Option<&WorkloadSpec>,
    guest: &lane::Guest,
    condition: Option<&str>,
    baseline: &str,
    variant: &str,
) -> Vec<ComparisonRecord> {
    let a_boots = results.samples_by_boot(baseline, condition);
    let b_boots = results.samples_by_boot(variant, condition);
    let mut names: Vec<(String, Option<&MetricSpec>)> = spec
        .map(|s| {
            s.metrics
                .iter()
                .map(|m| (m.name.clone(), Some(m)))
                .collect()
        })
        .unwrap_or_default();
    for boot in &results.boots {
        for sample in boot.samples_of(condition) {
            for name in sample.metrics.keys() {
                if !names.iter().any(|(n, _)| n == name) {
                    names.push((name.clone(), None));
                }
            }
        }
    }
    // Under KVM, and with boots in layouts of their own
    // (`protocol.layouts: varied`), boots are the observations: samples
    // within one boot share its state and are not independent. Otherwise
    // (the icount lanes, plain TCG) the samples are.
    let by_boot =
        results.host.lane.judged_by_boot() || results.boots.iter().any(|b| b.layout.is_some());
    let sequential = sequential_look(results);
    let count = |boots: &[(&Boot, Vec<&SampleRecord>)]| boots.iter().map(|(_, s)| s.len()).sum();
    names
        .into_iter()
        .filter_map(|(metric, metric_spec)| {
            let unit = metric_spec.map(|m| m.unit);
            let options = CompareOptions {
                negligible: metric_spec.and_then(|m| m.negligible),
                unit,
                by_boot,
                sequential,
                ..CompareOptions::default()
            };
            let per_boot = |boots: &[(&Boot, Vec<&SampleRecord>)]| {
                boots
                    .iter()
                    .map(|(_, s)| values(s, &metric))
                    .collect::<Vec<_>>()
            };
            let direction = record::direction(unit, metric_spec.map(|m| m.better));
            let comparison = stats::compare(
                &per_boot(&a_boots),
                &per_boot(&b_boots),
                direction,
                &options,
            )
            .ok()?;
            let context = metric_spec.and_then(|m| lane::context(m, guest));
            let meta = record::Meta {
                condition,
                metric: &metric,
                baseline,
                variant,
                unit,
                primary: metric_spec.is_some_and(|m| m.primary),
                a_samples: count(&a_boots),
                b_samples: count(&b_boots),
            };
            Some(record::record(&meta, &comparison, context))
        })
        .collect()
}

/// Every metric that some samples of a condition have but no sample of
/// one side does, in order: each condition, each variant against the
/// baseline, metrics by name. Only metrics some sample of the condition
/// has count (a metric of another lane is not missing), and only pairs
/// with measured samples on both sides.
fn uncompared(results: &Results) -> Vec<UncomparedRecord> {
    let baseline = results.baseline();
    let mut out = Vec::new();
    for condition in results.conditions() {
        let condition = condition.map(|c| c.name.as_str());
        let flat = |variant: &str| -> Vec<&SampleRecord> {
            results
                .samples_by_boot(variant, condition)
                .into_iter()
                .flat_map(|(_, s)| s)
                .collect()
        };
        let a_samples = flat(baseline);
        for variant in results.candidates() {
            let b_samples = flat(&variant.name);
            if a_samples.is_empty() || b_samples.is_empty() {
                continue;
            }
            let names: std::collections::BTreeSet<&String> = a_samples
                .iter()
                .chain(&b_samples)
                .flat_map(|s| s.metrics.keys())
                .collect();
            for metric in names {
                let have = |side: &[&SampleRecord]| {
                    side.iter()
                        .filter(|s| s.metrics.contains_key(metric))
                        .count()
                };
                let (a_have, b_have) = (have(&a_samples), have(&b_samples));
                if a_have == 0 || b_have == 0 {
                    out.push(UncomparedRecord {
                        condition: condition.map(str::to_string),
                        baseline: baseline.to_string(),
                        variant: variant.name.clone(),
                        metric: metric.clone(),
                        a_have,
                        a_samples: a_samples.len(),
                        b_have,
                        b_samples: b_samples.len(),
                    });
                }
            }
        }
    }
    out
}

/// An A/A run's self-check: any improvement or regression among the
/// measured metrics is a false call, set against the rate the rules imply
/// for this protocol and the noisiest directed metric's CV, simulated.
fn self_check(results: &Results, rows: &[ComparisonRecord]) -> SelfCheckRecord {
    let measured = || rows.iter().filter(|r| r.measured());
    let false_calls = measured()
        .filter(|r| matches!(r.kind(), Verdict::Improvement | Verdict::Regression))
        .map(ComparisonRecord::label)
        .collect();
    let directed: Vec<&ComparisonRecord> = measured()
        .filter(|r| Direction::from(r.direction) != Direction::Neither)
        .collect();
    let cv = directed
        .iter()
        .filter_map(|r| r.a.cv_pct)
        .fold(0.0_f64, f64::max);
    let count = |v: &str| results.protocol.boots.iter().filter(|b| *b == v).count();
    let scenario = stats::NullScenario {
        a_boots: count(results.baseline()),
        b_boots: results.candidates().first().map_or(0, |v| count(&v.name)),
        per_boot: results.protocol.samples as usize,
        cv_pct: cv.max(0.1),
        simulations: 2000,
        seed: stats::DEFAULT_SEED,
    };
    SelfCheckRecord {
        false_calls,
        directed: directed.len(),
        rate: stats::aa_false_positive_rate(&scenario, &CompareOptions::default()).ok(),
        a_boots: scenario.a_boots,
        b_boots: scenario.b_boots,
        per_boot: scenario.per_boot,
        cv_pct: scenario.cv_pct,
        simulations: scenario.simulations,
    }
}

#[cfg(test)]
mod tests;
