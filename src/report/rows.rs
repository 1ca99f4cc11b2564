//! The comparison rows of a results document: every metric of every
//! condition, each variant against the baseline, and, for a chain of
//! series prefixes, each step against the one before.

use crate::model::{Direction, Unit, Verdict};
use crate::results::{Boot, ControlRecord, Results, SampleRecord};
use crate::stats::{self, CompareOptions, Comparison};
use crate::workload::{MetricSpec, WorkloadSpec};

/// One metric's comparison in one condition: a variant against the one
/// it is compared with.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The control condition; `None` for the main workload.
    pub condition: Option<String>,
    /// The variant compared against (the baseline, or the previous step).
    pub baseline: String,
    /// The variant compared.
    pub variant: String,
    pub metric: String,
    pub unit: Option<Unit>,
    /// From the workload's spec; `None` for a metric the spec does not list.
    pub direction: Option<Direction>,
    pub comparison: Comparison,
    /// The measured samples of the condition on each side, those without
    /// this metric included (the comparison's `a.n` and `b.n` count only
    /// the samples that have it).
    pub a_samples: usize,
    pub b_samples: usize,
}

impl Row {
    /// B's mean against A's pooled mean, in percent.
    pub fn change_pct(&self) -> Option<f64> {
        self.comparison.mean_change.as_ref().map(|c| c.pct)
    }

    /// When some samples lack the metric (a workload leaves out a value it
    /// did not measure, such as a mean over no calls): how many have it on
    /// each side, so the reader knows what the statistics stand on.
    pub fn coverage(&self) -> Option<String> {
        let c = &self.comparison;
        // Samples, whether the statistics counted samples or boots.
        let samples = |boots: &[Option<stats::Summary>]| -> usize {
            boots.iter().flatten().map(|s| s.n).sum()
        };
        let (a, b) = (samples(&c.a_boots), samples(&c.b_boots));
        if a == self.a_samples && b == self.b_samples {
            return None;
        }
        Some(format!(
            "measured in {a} of {} {} samples and {b} of {} {} samples (the others have no value: nothing to measure)",
            self.a_samples, self.baseline, self.b_samples, self.variant
        ))
    }

    /// When a boot repeated an earlier boot of its variant value for value
    /// (a deterministic lane), so its samples were counted once.
    pub fn repeat_note(&self) -> Option<String> {
        let c = &self.comparison;
        let parts: Vec<String> = [
            (c.a_repeated, c.a.n, &self.baseline),
            (c.b_repeated, c.b.n, &self.variant),
        ]
        .into_iter()
        .filter(|(repeated, ..)| *repeated > 0)
        .map(|(repeated, n, side)| {
            format!("{repeated} {side} samples repeat an earlier {side} boot value for value and count once: the statistics stand on {n}")
        })
        .collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    }
    /// The metric, with its control's name when it is a control's, and
    /// the variant's when it is not the B of an A/B campaign.
    pub fn label(&self) -> String {
        let mut label = self.metric.clone();
        if let Some(c) = &self.condition {
            label.push_str(&format!(" (control {c})"));
        }
        if (self.baseline.as_str(), self.variant.as_str()) != ("A", "B") {
            label.push_str(&format!(" ({} vs {})", self.variant, self.baseline));
        }
        label
    }
}

/// One line for the metrics whose samples a repeated boot left out of the
/// pool ([`Row::repeat_note`]), so that a deterministic lane, where every
/// metric repeats, says it once; `None` when no metric did.
pub fn repeats_line(rows: &[&Row]) -> Option<String> {
    let repeated: Vec<&&Row> = rows
        .iter()
        .filter(|r| r.comparison.a_repeated + r.comparison.b_repeated > 0)
        .collect();
    let first = repeated.first()?;
    let names: Vec<String> = repeated.iter().map(|r| r.label()).collect();
    let sides: Vec<&str> = [
        (first.comparison.a_repeated > 0).then_some(first.baseline.as_str()),
        (first.comparison.b_repeated > 0).then_some(first.variant.as_str()),
    ]
    .into_iter()
    .flatten()
    .collect();
    let (which, list) = if repeated.len() == rows.len() {
        (format!("all {} metrics", rows.len()), String::new())
    } else {
        (
            format!("{} of {} metrics", repeated.len(), rows.len()),
            format!(": {}", names.join(", ")),
        )
    };
    Some(format!(
        "{} boots that repeat an earlier boot of the same variant value for value (a deterministic lane) count once, so for {which} the statistics stand on one boot's samples{list}. Those samples share one memory layout, so the interval does not cover the layout: in the cost lane a change of a few percent can move with it (docs/cost-model.md, \"Layout\").",
        sides.join(" and "),
    ))
}

/// The look a sequential campaign's comparisons are at: the rounds its
/// boots have reached (a round cut short by a failure counts), of the
/// budget's. `None` for the fixed protocol.
pub fn sequential_look(results: &Results) -> Option<stats::SequentialLook> {
    let s = results.protocol.sequential.as_ref()?;
    let started = results.boots.len().div_ceil(s.round_boots.max(1)) as u32;
    Some(stats::SequentialLook {
        look: started.clamp(1, s.rounds),
        of: s.rounds,
        spending: s.spending,
    })
}

/// Whether the run's boots ran in memory layouts of their own
/// (`protocol.layouts: varied`), so its comparisons are judged by boot.
pub fn judged_by_boot(results: &Results) -> bool {
    results.boots.iter().any(|b| b.layout.is_some())
}

/// One line when the comparisons were judged by boot (`options.by_boot`):
/// the interval then covers the memory layouts' spread, which the samples
/// of one boot all share. `None` otherwise.
pub fn layouts_line(rows: &[&Row]) -> Option<String> {
    let first = rows.iter().find(|r| r.comparison.options.by_boot)?;
    let c = &first.comparison;
    Some(format!(
        "Judged by boot: each boot ran in a memory layout of its own (protocol.layouts: varied), so each boot's mean is one observation ({} {} boots, {} {} boots) and the intervals are Welch's t over those means: they cover the spread between layouts, which every sample of one boot shares (docs/cost-model.md, \"Layout\").",
        c.a.n, first.baseline, c.b.n, first.variant
    ))
}

fn values(samples: &[&SampleRecord], metric: &str) -> Vec<f64> {
    samples
        .iter()
        .filter_map(|s| s.metrics.get(metric).map(|v| *v as f64))
        .collect()
}

/// Compare every variant with the baseline, for every metric of every
/// condition (the main workload, then each control; within a condition,
/// variant by variant), in the spec's order, then any metric the spec does
/// not list, with the statistics' default options and each metric's
/// `negligible` level from the spec.
pub fn rows(results: &Results, spec: Option<&WorkloadSpec>) -> Vec<Row> {
    let baseline = results.baseline();
    results
        .conditions()
        .into_iter()
        .flat_map(|c| {
            results.candidates().iter().flat_map(move |v| {
                condition_rows(results, spec, c.map(|c| c.name.as_str()), baseline, &v.name)
            })
        })
        .collect()
}

/// Whether the variants are the base and each prefix of the series in
/// turn (a per-patch campaign): then each step can be told apart.
pub fn is_prefix_chain(results: &Results) -> bool {
    results.variants.len() > 2
        && results.variants.iter().enumerate().all(|(i, v)| {
            v.patches == i
                && v.fragments.is_empty()
                && v.cmdline.is_empty()
                && v.settings.is_empty()
        })
}

/// For a chain of series prefixes, each step against the one before, in
/// the main workload: what each patch did on top of the ones before it.
pub fn steps(results: &Results, spec: Option<&WorkloadSpec>) -> Vec<Row> {
    if !is_prefix_chain(results) {
        return Vec::new();
    }
    results
        .variants
        .windows(2)
        .flat_map(|pair| condition_rows(results, spec, None, &pair[0].name, &pair[1].name))
        .collect()
}

/// [`rows`] of one condition (`None`: the main workload), `variant`
/// against `baseline`.
pub fn condition_rows(
    results: &Results,
    spec: Option<&WorkloadSpec>,
    condition: Option<&str>,
    baseline: &str,
    variant: &str,
) -> Vec<Row> {
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
    // Boots in layouts of their own (`protocol.layouts: varied`) are the
    // observations; otherwise the samples are.
    let by_boot = judged_by_boot(results);
    let sequential = sequential_look(results);
    names
        .into_iter()
        .filter_map(|(metric, metric_spec)| {
            let unit = metric_spec.map(|m| m.unit);
            let direction = metric_spec.map(|m| m.better);
            let negligible = metric_spec.and_then(|m| m.negligible);
            let per_boot = |boots: &[(&Boot, Vec<&SampleRecord>)]| {
                boots
                    .iter()
                    .map(|(_, s)| values(s, &metric))
                    .collect::<Vec<_>>()
            };
            let options = CompareOptions {
                negligible,
                by_boot,
                sequential,
                ..CompareOptions::default()
            };
            let comparison = stats::compare(
                &per_boot(&a_boots),
                &per_boot(&b_boots),
                direction.unwrap_or(Direction::Neither),
                &options,
            )
            .ok()?;
            Some(Row {
                condition: condition.map(str::to_string),
                baseline: baseline.to_string(),
                variant: variant.to_string(),
                metric,
                unit,
                direction,
                comparison,
                a_samples: a_boots.iter().map(|(_, s)| s.len()).sum(),
                b_samples: b_boots.iter().map(|(_, s)| s.len()).sum(),
            })
        })
        .collect()
}

/// A metric that some samples of a condition have but no sample of one
/// side does: nothing to compare it on, and the reports say so rather than
/// leave it out without a word.
#[derive(Debug, Clone, PartialEq)]
pub struct Uncompared {
    pub condition: Option<String>,
    pub baseline: String,
    pub variant: String,
    pub metric: String,
    /// Samples with the metric, and all measured samples, on each side.
    pub a_have: usize,
    pub a_samples: usize,
    pub b_have: usize,
    pub b_samples: usize,
}

impl Uncompared {
    /// One line for the reports.
    pub fn sentence(&self) -> String {
        let mut label = self.metric.clone();
        if let Some(c) = &self.condition {
            label.push_str(&format!(" (control {c})"));
        }
        format!(
            "{label}: not compared, {} vs {}: measured in {} of {} {} samples and {} of {} {} samples",
            self.variant,
            self.baseline,
            self.a_have,
            self.a_samples,
            self.baseline,
            self.b_have,
            self.b_samples,
            self.variant
        )
    }
}

/// Every [`Uncompared`] metric, in the order of [`rows`]: each condition,
/// each variant against the baseline, metrics by name. Only metrics some
/// sample of the condition has count (a metric of another lane, or one a
/// workload never reports in this mode, is not missing), and only pairs
/// with measured samples on both sides.
pub fn uncompared(results: &Results) -> Vec<Uncompared> {
    let baseline = results.baseline();
    let mut out = Vec::new();
    for condition in results.conditions() {
        let condition = condition.map(|c| c.name.as_str());
        let a_samples: Vec<&SampleRecord> = results
            .samples_by_boot(baseline, condition)
            .into_iter()
            .flat_map(|(_, s)| s)
            .collect();
        for variant in results.candidates() {
            let b_samples: Vec<&SampleRecord> = results
                .samples_by_boot(&variant.name, condition)
                .into_iter()
                .flat_map(|(_, s)| s)
                .collect();
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
                    out.push(Uncompared {
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

/// The metrics that regressed, in any condition (a control's are named
/// with it): the campaign's exit code says so.
pub fn regressed_metrics(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .filter(|r| r.comparison.verdict.kind == Verdict::Regression)
        .map(Row::label)
        .collect()
}

/// The primary metrics (the spec's `primary: true`) of every condition
/// and candidate whose comparison is still inconclusive, by label: what a
/// sequential campaign's next round is for. A metric no sample has (another
/// lane's) is not compared and is not waited for.
pub fn undecided_primary(results: &Results, spec: Option<&WorkloadSpec>) -> Vec<String> {
    let primary: Vec<&str> = spec
        .map(|s| {
            s.metrics
                .iter()
                .filter(|m| m.primary)
                .map(|m| m.name.as_str())
                .collect()
        })
        .unwrap_or_default();
    rows(results, spec)
        .iter()
        .filter(|r| primary.contains(&r.metric.as_str()))
        .filter(|r| r.comparison.verdict.kind == Verdict::Inconclusive)
        .map(Row::label)
        .collect()
}

/// The rows of each condition, in the document's order: the main
/// workload's first (`None`), then each control's. Nothing at all when
/// there are no rows: nothing was compared (a variant has no complete
/// boot, and the reports say so), so no table is drawn empty.
pub fn by_condition<'r>(
    results: &'r Results,
    rows: &'r [Row],
) -> Vec<(Option<&'r ControlRecord>, Vec<&'r Row>)> {
    if rows.is_empty() {
        return Vec::new();
    }
    results
        .conditions()
        .into_iter()
        .map(|c| {
            let name = c.map(|c| c.name.as_str());
            let of = rows
                .iter()
                .filter(|r| r.condition.as_deref() == name)
                .collect();
            (c, of)
        })
        .collect()
}
