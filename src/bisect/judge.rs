//! The hunt's decisions, pure: what the whole series changed
//! ([`hunted`]), what a step says of it ([`classify`]), where the next
//! step goes ([`Bisection`]), and the document that compares the boots of
//! two steps ([`across`]).

use crate::model::Verdict;
use crate::results::hunt::{HuntStep, Hunted, MetricKey, StepOutcome, StepVerdict};
use crate::results::{ComparisonRecord, Results, VerdictRecord};
use crate::workload::WorkloadSpec;

/// The bounds of a bisection over `n` patches: prefix `lo` is known not
/// to have the change (0, the base, to begin with), prefix `hi` to have it
/// (`n`, the whole series). The first patch with the change is in
/// `lo + 1 ..= hi`, assuming, as every bisection does, that a prefix has
/// the change exactly when it carries that patch. `skipped` are the
/// prefixes that do not build, measured by none (`git bisect skip`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bisection {
    pub lo: usize,
    pub hi: usize,
    pub skipped: std::collections::BTreeSet<usize>,
}

impl Bisection {
    /// The bounds once the whole series (`n` patches) showed the change.
    pub fn new(n: usize) -> Bisection {
        Bisection {
            lo: 0,
            hi: n,
            skipped: Default::default(),
        }
    }

    /// The prefix to measure next: the middle of `lo + 1 .. hi`, or the
    /// prefix nearest to it that was not skipped (the lower of two as
    /// near); `None` when one patch is left (`hi`), or when every prefix
    /// between the bounds was skipped ([`Bisection::only_skipped_left`]).
    pub fn next(&self) -> Option<usize> {
        let mid = self.lo + (self.hi - self.lo) / 2;
        (self.lo + 1..self.hi)
            .filter(|k| !self.skipped.contains(k))
            .min_by_key(|&k| (k.abs_diff(mid), k))
    }

    /// The bounds after prefix `k`, measured, showed `outcome`.
    pub fn after(self, k: usize, outcome: StepOutcome) -> Bisection {
        match outcome {
            StepOutcome::Changed => Bisection { hi: k, ..self },
            StepOutcome::Unchanged => Bisection { lo: k, ..self },
            StepOutcome::Undecided => self,
            StepOutcome::Skipped => self.skip(k),
        }
    }

    /// The bounds once prefix `k` did not build.
    pub fn skip(mut self, k: usize) -> Bisection {
        self.skipped.insert(k);
        self
    }

    /// Whether the bisection ended with more than one patch left, every
    /// prefix between the bounds skipped: the first patch with the change
    /// is one of `lo + 1 ..= hi`, and which cannot be told.
    pub fn only_skipped_left(&self) -> bool {
        self.hi - self.lo > 1
    }

    /// The most steps a hunt over `n` patches takes, the whole series' own
    /// included: 1 + ⌈log2 n⌉.
    pub fn most_steps(n: usize) -> usize {
        1 + n.max(1).next_power_of_two().trailing_zeros() as usize
    }
}

/// The primary metrics of the spec.
fn primary(spec: Option<&WorkloadSpec>) -> Vec<&str> {
    spec.map(|s| {
        s.metrics
            .iter()
            .filter(|m| m.primary)
            .map(|m| m.name.as_str())
            .collect()
    })
    .unwrap_or_default()
}

fn key(row: &ComparisonRecord) -> MetricKey {
    MetricKey {
        condition: row.condition.clone(),
        metric: row.metric.clone(),
    }
}

/// What the hunt looks for, from the whole series' step: the primary
/// metrics (of every condition) it called a regression; if none, those it
/// called an improvement; if none, those it called changed. `None` when no
/// primary metric changed.
pub fn hunted(rows: &[ComparisonRecord], spec: Option<&WorkloadSpec>) -> Option<Hunted> {
    let primary = primary(spec);
    [Verdict::Regression, Verdict::Improvement, Verdict::Changed]
        .into_iter()
        .find_map(|verdict| {
            let metrics: Vec<MetricKey> = rows
                .iter()
                .filter(|r| primary.contains(&r.metric.as_str()))
                .filter(|r| r.kind() == verdict)
                .map(key)
                .collect();
            (!metrics.is_empty()).then(|| Hunted {
                verdict: verdict.into(),
                metrics,
            })
        })
}

/// Every primary metric's verdict in a step's rows, the hunted ones
/// first (in the hunt's order), then the others in the rows' order.
pub fn verdicts(
    rows: &[ComparisonRecord],
    spec: Option<&WorkloadSpec>,
    hunted: Option<&Hunted>,
) -> Vec<StepVerdict> {
    let primary = primary(spec);
    let is_hunted = |k: &MetricKey| hunted.is_some_and(|h| h.metrics.contains(k));
    let verdict = |r: &ComparisonRecord| StepVerdict {
        condition: r.condition.clone(),
        metric: r.metric.clone(),
        hunted: is_hunted(&key(r)),
        verdict: r.verdict,
        change: r.mean_change,
    };
    let mut out: Vec<StepVerdict> = hunted
        .map(|h| {
            h.metrics
                .iter()
                .filter_map(|k| rows.iter().find(|r| key(r) == *k))
                .map(verdict)
                .collect()
        })
        .unwrap_or_default();
    out.extend(
        rows.iter()
            .filter(|r| primary.contains(&r.metric.as_str()) && !is_hunted(&key(r)))
            .map(verdict),
    );
    out
}

/// What a step's rows say of the hunted change, and why: changed when any
/// hunted metric has the hunted verdict (the change, or a part of it, is
/// already in this prefix); unchanged when every hunted metric is "no
/// clear difference" or negligible; undecided otherwise (a hunted metric inconclusive,
/// changed the other way, or not compared), which stops the hunt.
pub fn classify(rows: &[ComparisonRecord], hunted: &Hunted) -> (StepOutcome, String) {
    let want: Verdict = hunted.verdict.into();
    let mut changed = Vec::new();
    let mut neither = Vec::new();
    for k in &hunted.metrics {
        match rows.iter().find(|r| key(r) == *k) {
            Some(r) if r.kind() == want => changed.push(k.label()),
            Some(r) if r.kind().is_unchanged() => {}
            Some(r) => neither.push(format!(
                "{}: {} ({})",
                k.label(),
                r.kind().label(),
                r.reason
            )),
            None => neither.push(format!("{}: not compared in this step", k.label())),
        }
    }
    if !changed.is_empty() {
        (
            StepOutcome::Changed,
            format!("{} {}", want.label(), changed.join(", ")),
        )
    } else if neither.is_empty() {
        (
            StepOutcome::Unchanged,
            "no clear difference in every hunted metric".to_string(),
        )
    } else {
        (StepOutcome::Undecided, neither.join("; "))
    }
}

/// The verdict of `metric` in a step's record, if the step has it.
pub fn step_verdict(step: &HuntStep, metric: &MetricKey) -> Option<VerdictRecord> {
    step.verdicts
        .iter()
        .find(|v| v.condition == metric.condition && v.metric == metric.metric)
        .map(|v| v.verdict)
}

/// One document of two steps' boots: `a`'s boots of variant `a_variant`
/// (as the baseline, renamed `a_name`) and `b`'s of `b_variant` (renamed
/// `b_name`), for [`crate::judge::judge`] to compare. Only meaningful where
/// boots of different steps are comparable (a deterministic lane). The
/// document is judged by the fixed protocol's rules: each step's
/// sequential looks were about that step's own A/B.
pub fn across(
    a: &Results,
    a_variant: &str,
    a_name: &str,
    b: &Results,
    b_variant: &str,
    b_name: &str,
) -> Results {
    let mut doc = b.clone();
    let variant = |r: &Results, name: &str, as_name: &str| {
        r.variants.iter().find(|v| v.name == name).map(|v| {
            let mut v = v.clone();
            v.name = as_name.to_string();
            v
        })
    };
    doc.variants = [variant(a, a_variant, a_name), variant(b, b_variant, b_name)]
        .into_iter()
        .flatten()
        .collect();
    let boots = |r: &Results, name: &str, as_name: &str| {
        r.boots
            .iter()
            .filter(|boot| boot.variant == name)
            .cloned()
            .map(|mut boot| {
                boot.variant = as_name.to_string();
                boot
            })
            .collect::<Vec<_>>()
    };
    doc.boots = boots(a, a_variant, a_name);
    doc.boots.extend(boots(b, b_variant, b_name));
    for (i, boot) in doc.boots.iter_mut().enumerate() {
        boot.index = i;
    }
    doc.protocol.sequential = None;
    doc.protocol.boots = doc.boots.iter().map(|b| b.variant.clone()).collect();
    doc.judgement = None;
    doc.shard = None;
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hunt over `n` patches whose patch `bad` makes the change: the
    /// prefixes measured, in order, and the patch named.
    fn hunt(n: usize, bad: usize) -> (Vec<usize>, usize) {
        let mut b = Bisection::new(n);
        let mut measured = vec![n];
        while let Some(k) = b.next() {
            measured.push(k);
            let outcome = if k >= bad {
                StepOutcome::Changed
            } else {
                StepOutcome::Unchanged
            };
            b = b.after(k, outcome);
        }
        (measured, b.hi)
    }

    #[test]
    fn bisection_names_every_bad_patch_in_at_most_1_plus_log2_n_steps() {
        for n in 1..=40 {
            for bad in 1..=n {
                let (measured, found) = hunt(n, bad);
                assert_eq!(found, bad, "n = {n}");
                assert!(
                    measured.len() <= Bisection::most_steps(n),
                    "n = {n}, bad = {bad}: {measured:?}"
                );
                // Both ends of the patch are measured: its own interval
                // needs no extra kernel.
                assert!(bad == 1 || measured.contains(&(bad - 1)), "{measured:?}");
                assert!(measured.contains(&bad), "{measured:?}");
            }
        }
        assert_eq!(hunt(7, 4), (vec![7, 3, 5, 4], 4));
        assert_eq!(Bisection::most_steps(7), 4);
        assert_eq!(Bisection::most_steps(8), 4);
        assert_eq!(Bisection::most_steps(9), 5);
        assert_eq!(Bisection::most_steps(1), 1);
        let b = Bisection::new(7);
        assert_eq!(b.clone().after(3, StepOutcome::Undecided), b);
    }

    /// `git bisect skip`: a prefix that does not build is passed over for
    /// the nearest one that does; when only such prefixes are left the
    /// bisection ends with the range, not a patch.
    #[test]
    fn a_prefix_that_does_not_build_is_skipped_for_its_nearest() {
        // Four patches, prefix 2 does not build, patch 4 is the bad one:
        // 2 is skipped, 1 (nearer than 3 and lower) and 3 measured.
        let mut b = Bisection::new(4);
        let mut order = Vec::new();
        while let Some(k) = b.next() {
            order.push(k);
            b = match k {
                2 => b.skip(k),
                k if k >= 4 => b.after(k, StepOutcome::Changed),
                k => b.after(k, StepOutcome::Unchanged),
            };
        }
        assert_eq!(order, [2, 1, 3]);
        assert_eq!((b.lo, b.hi, b.only_skipped_left()), (3, 4, false));
        // Patch 3 is the bad one and prefix 2 does not build: 3 or 2,
        // and nothing left to measure tells which.
        let mut b = Bisection::new(4);
        while let Some(k) = b.next() {
            b = match k {
                2 => b.after(k, StepOutcome::Skipped),
                k if k >= 3 => b.after(k, StepOutcome::Changed),
                k => b.after(k, StepOutcome::Unchanged),
            };
        }
        assert_eq!((b.lo, b.hi, b.only_skipped_left()), (1, 3, true));
    }

    /// The smoke run the README quotes (results/smoke/, under icount):
    /// B, the counter, improves PAGEOUT CPU, total and elapsed time and
    /// the flush count.
    fn smoke() -> Results {
        Results::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results/smoke/results.json"),
        )
        .unwrap()
    }

    /// [`smoke`]'s rows, after `edit`.
    fn smoke_rows(edit: impl Fn(&mut Results)) -> (Vec<ComparisonRecord>, Option<WorkloadSpec>) {
        let mut results = smoke();
        edit(&mut results);
        let spec = crate::workload::spec_for_kind(&results.workload.kind);
        (crate::judge::judge(&results).rows, spec)
    }

    #[test]
    fn the_hunt_takes_the_whole_series_regressions_first_then_improvements() {
        let (rows, spec) = smoke_rows(|_| {});
        let h = hunted(&rows, spec.as_ref()).unwrap();
        assert_eq!(h.verdict, VerdictRecord::Improvement);
        let names: Vec<String> = h.metrics.iter().map(MetricKey::label).collect();
        // The flush count is a count: changed, never an improvement.
        assert_eq!(names, ["pageout_cpu_ns", "total_cpu_ns", "elapsed_ns"]);
        // The same run backwards: B regresses those metrics.
        let (rows, spec) = smoke_rows(|r| {
            for boot in &mut r.boots {
                boot.variant = if boot.variant == "A" { "B" } else { "A" }.into();
            }
        });
        let h = hunted(&rows, spec.as_ref()).unwrap();
        assert_eq!(h.verdict, VerdictRecord::Regression);
        // The flush count's baseline is now the counter's, about 0 a
        // sample: no percentage, inconclusive, so not hunted.
        let names: Vec<String> = h.metrics.iter().map(MetricKey::label).collect();
        assert_eq!(names, ["pageout_cpu_ns", "total_cpu_ns", "elapsed_ns"]);
        // Only primary metrics: sys_ns regressed too, and is not hunted.
        assert!(h.metrics.iter().all(|m| m.metric != "sys_ns"));
        let v = verdicts(&rows, spec.as_ref(), Some(&h));
        assert!(
            v[..3]
                .iter()
                .all(|v| v.hunted && v.verdict == VerdictRecord::Regression)
        );
        assert!(v[3..].iter().all(|v| !v.hunted), "{v:?}");
        assert!(v.iter().any(|v| v.metric == "verify_cpu_ns"));
        // An A/A run changes nothing: nothing to hunt.
        let (rows, spec) = smoke_rows(|r| {
            r.boots.retain(|b| b.variant == "A");
            let again = r.boots[0].clone();
            let mut b = again.clone();
            b.variant = "B".into();
            r.boots.push(b);
        });
        assert_eq!(hunted(&rows, spec.as_ref()), None);
    }

    #[test]
    fn a_step_is_changed_by_any_hunted_metric_unchanged_by_all_and_else_undecided() {
        let (rows, spec) = smoke_rows(|_| {});
        let h = hunted(&rows, spec.as_ref()).unwrap();
        let (outcome, why) = classify(&rows, &h);
        assert_eq!(outcome, StepOutcome::Changed);
        assert!(why.starts_with("improvement pageout_cpu_ns"), "{why}");
        // A step where only one hunted metric moved still has the change.
        let one = Hunted {
            verdict: VerdictRecord::Improvement,
            metrics: vec![
                MetricKey {
                    condition: None,
                    metric: "verify_cpu_ns".into(),
                },
                MetricKey {
                    condition: None,
                    metric: "pageout_cpu_ns".into(),
                },
            ],
        };
        assert_eq!(classify(&rows, &one).0, StepOutcome::Changed);
        // No clear difference everywhere: unchanged.
        let flat = Hunted {
            verdict: VerdictRecord::Improvement,
            metrics: vec![MetricKey {
                condition: None,
                metric: "verify_cpu_ns".into(),
            }],
        };
        assert_eq!(classify(&rows, &flat).0, StepOutcome::Unchanged);
        // The other way (hunting a regression where the step improved):
        // undecided, naming the metric and its verdict.
        let against = Hunted {
            verdict: VerdictRecord::Regression,
            metrics: vec![MetricKey {
                condition: None,
                metric: "pageout_cpu_ns".into(),
            }],
        };
        let (outcome, why) = classify(&rows, &against);
        assert_eq!(outcome, StepOutcome::Undecided);
        assert!(why.starts_with("pageout_cpu_ns: improvement ("), "{why}");
        // Inconclusive (one sample of B): undecided, never a guess.
        let (few, _) = smoke_rows(|r| {
            for boot in r.boots.iter_mut().filter(|b| b.variant == "B") {
                boot.samples.truncate(1);
            }
        });
        let (outcome, why) = classify(&few, &h);
        assert_eq!(outcome, StepOutcome::Undecided);
        assert!(why.contains("inconclusive"), "{why}");
        let missing = Hunted {
            verdict: VerdictRecord::Improvement,
            metrics: vec![MetricKey {
                condition: Some("unlimited".into()),
                metric: "pageout_cpu_ns".into(),
            }],
        };
        let (outcome, why) = classify(&rows, &missing);
        assert_eq!(outcome, StepOutcome::Undecided);
        assert!(why.contains("(control unlimited): not compared"), "{why}");
    }

    #[test]
    fn across_two_steps_compares_one_steps_boots_with_the_others() {
        let step3 = smoke();
        let mut step4 = step3.clone();
        // In step 4, B is 30% slower in PAGEOUT.
        for boot in step4.boots.iter_mut().filter(|b| b.variant == "B") {
            for s in &mut boot.samples {
                let v = s.metrics.get_mut("pageout_cpu_ns").unwrap();
                *v = *v * 13 / 10;
            }
        }
        let doc = across(&step3, "B", "p3", &step4, "B", "p4");
        let names: Vec<&str> = doc.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["p3", "p4"]);
        assert_eq!(doc.boots.len(), 2);
        assert_eq!(
            doc.boots
                .iter()
                .map(|b| (b.index, b.variant.as_str()))
                .collect::<Vec<_>>(),
            [(0, "p3"), (1, "p4")]
        );
        let rows = crate::judge::judge(&doc).rows;
        let row = rows.iter().find(|r| r.metric == "pageout_cpu_ns").unwrap();
        assert_eq!((row.baseline.as_str(), row.variant.as_str()), ("p3", "p4"));
        assert_eq!(row.kind(), Verdict::Regression);
        assert!((row.change_pct().unwrap() - 30.0).abs() < 0.5);
        // The bases of the two steps: the same boots, no clear difference.
        let witness = across(&step3, "A", "base@p3", &step4, "A", "base@p4");
        let rows = crate::judge::judge(&witness).rows;
        let row = rows.iter().find(|r| r.metric == "pageout_cpu_ns").unwrap();
        assert_eq!(row.kind(), Verdict::NoClearDifference);
        assert_eq!(witness.boots.len(), 4);
    }
}
