//! The comparison records of `results.json`: what the judgement concluded
//! about each metric, in types of the published format's own. `judge`
//! converts them from the statistics' types, so a change to the
//! statistics' internals does not change the file; every renderer reads
//! them as stored.

use serde::{Deserialize, Serialize};

use crate::model;

/// One metric's comparison in one condition, B against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComparisonRecord {
    /// The control condition compared; absent for the main workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    pub metric: String,
    /// The variant compared against: the baseline (`A`).
    pub baseline: String,
    /// The variant compared (`B`).
    pub variant: String,
    pub direction: DirectionRecord,
    /// The metric's unit, from its spec; absent when the spec does not
    /// list the metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<model::Unit>,
    /// One of the seed's own figures (`primary: true` in its spec): the
    /// headline is made of these, and a sequential campaign waits for them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub primary: bool,
    /// Measured samples of each side, with the metric or without it (a
    /// workload leaves out a value it did not measure; `a.n` counts only
    /// the samples that have it).
    #[serde(default)]
    pub a_samples: usize,
    #[serde(default)]
    pub b_samples: usize,
    /// All baseline samples, pooled over boots; a boot that repeats an
    /// earlier one value for value (a deterministic lane) counted once.
    pub a: SummaryRecord,
    /// All samples of the variant, pooled over boots, likewise.
    pub b: SummaryRecord,
    /// Baseline samples left out of `a` because their boot repeated an
    /// earlier one value for value; absent when none (and in documents
    /// written before, which pooled every boot).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub a_repeated: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub b_repeated: usize,
    /// Each baseline boot in boot order; null for a boot without samples.
    pub a_boots: Vec<Option<SummaryRecord>>,
    pub b_boots: Vec<Option<SummaryRecord>>,
    /// The last baseline boot's mean against the first's, in percent.
    pub drift_pct: Option<f64>,
    /// The largest within-boot CV over all boots, in percent.
    pub max_boot_cv_pct: Option<f64>,
    pub mean_change: Option<ChangeRecord>,
    pub median_change: Option<ChangeRecord>,
    pub welch: Option<WelchRecord>,
    pub mann_whitney: MannWhitneyRecord,
    pub separation: SeparationRecord,
    /// `context` when the figure is not this lane's measurement: it is
    /// shown, without a verdict, and enters no headline, count or exit
    /// code.
    pub verdict: VerdictRecord,
    /// What decided the verdict, for people; for a context row, why the
    /// lane does not measure it exactly.
    pub reason: String,
    /// An inconclusive verdict: which changes the interval rules out and
    /// which it allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ruled_out: Option<String>,
    /// An inconclusive verdict, or a context row: what would decide it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_decide: Option<ToDecideRecord>,
    pub options: OptionsRecord,
}

/// What would decide an inconclusive verdict (docs/statistics.md).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToDecideRecord {
    /// About `factor` times the observations: `a` of A, `b` of B.
    Samples { factor: f64, a: usize, b: usize },
    /// The change sits on the band's edge.
    OnTheEdge,
    /// A baseline that does not drift, not more samples.
    Drift,
    /// Another lane: this one does not measure the figure exactly.
    AnotherLane,
}

impl std::fmt::Display for ToDecideRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToDecideRecord::Samples { factor, a, b } => write!(
                f,
                "about {factor:.1}\u{d7} the observations would decide it ({a} A, {b} B)"
            ),
            ToDecideRecord::OnTheEdge => f.write_str(
                "the change sits on the band's edge: no practical number of samples decides it",
            ),
            ToDecideRecord::Drift => f.write_str(
                "a baseline that does not drift between boots decides it, not more samples",
            ),
            ToDecideRecord::AnotherLane => f.write_str("not in this lane"),
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DirectionRecord {
    LowerIsBetter,
    HigherIsBetter,
    Neither,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictRecord {
    Improvement,
    Regression,
    Changed,
    NoClearDifference,
    /// Rule 3, from rule version 3 on (version 2 stored it as
    /// `no_clear_difference`).
    Negligible,
    Inconclusive,
    Context,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeparationRecord {
    AllBelow,
    AllAbove,
    Overlap,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntervalRecord {
    pub lo: f64,
    pub hi: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SummaryRecord {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    pub sd: f64,
    pub cv_pct: Option<f64>,
    pub min: f64,
    pub max: f64,
    pub mean_ci: Option<IntervalRecord>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChangeRecord {
    pub pct: f64,
    pub ci: Option<IntervalRecord>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WelchRecord {
    pub t: f64,
    pub df: f64,
    pub p: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MannWhitneyRecord {
    pub u: f64,
    pub p: f64,
    /// `exact` or `asymptotic`.
    pub method: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptionsRecord {
    pub min_samples: usize,
    pub alpha: f64,
    pub noise_pct: f64,
    pub resamples: usize,
    pub seed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub negligible: Option<f64>,
    /// Each boot's mean was one observation (`protocol.layouts: varied`);
    /// absent when every sample was.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub by_boot: bool,
    /// A look of a sequential campaign: `mean_change.ci` is then the
    /// repeated confidence interval drawn at `level` (the look's boundary
    /// `critical` on the normal scale); absent for the fixed protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<LookOptionsRecord>,
}

/// [`OptionsRecord::sequential`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LookOptionsRecord {
    pub look: u32,
    pub of: u32,
    pub spending: model::Spending,
    pub critical: f64,
    pub level: f64,
}

impl From<model::Direction> for DirectionRecord {
    fn from(d: model::Direction) -> Self {
        match d {
            model::Direction::LowerIsBetter => DirectionRecord::LowerIsBetter,
            model::Direction::HigherIsBetter => DirectionRecord::HigherIsBetter,
            model::Direction::Neither => DirectionRecord::Neither,
        }
    }
}

impl From<model::Verdict> for VerdictRecord {
    fn from(v: model::Verdict) -> Self {
        match v {
            model::Verdict::Improvement => VerdictRecord::Improvement,
            model::Verdict::Regression => VerdictRecord::Regression,
            model::Verdict::Changed => VerdictRecord::Changed,
            model::Verdict::NoClearDifference => VerdictRecord::NoClearDifference,
            model::Verdict::Negligible => VerdictRecord::Negligible,
            model::Verdict::Inconclusive => VerdictRecord::Inconclusive,
            model::Verdict::Context => VerdictRecord::Context,
        }
    }
}

impl From<VerdictRecord> for model::Verdict {
    fn from(v: VerdictRecord) -> Self {
        match v {
            VerdictRecord::Improvement => model::Verdict::Improvement,
            VerdictRecord::Regression => model::Verdict::Regression,
            VerdictRecord::Changed => model::Verdict::Changed,
            VerdictRecord::NoClearDifference => model::Verdict::NoClearDifference,
            VerdictRecord::Negligible => model::Verdict::Negligible,
            VerdictRecord::Inconclusive => model::Verdict::Inconclusive,
            VerdictRecord::Context => model::Verdict::Context,
        }
    }
}

impl From<DirectionRecord> for model::Direction {
    fn from(d: DirectionRecord) -> Self {
        match d {
            DirectionRecord::LowerIsBetter => model::Direction::LowerIsBetter,
            DirectionRecord::HigherIsBetter => model::Direction::HigherIsBetter,
            DirectionRecord::Neither => model::Direction::Neither,
        }
    }
}

impl ComparisonRecord {
    /// The verdict, in the one vocabulary.
    pub fn kind(&self) -> model::Verdict {
        self.verdict.into()
    }

    /// B's mean against A's, in percent.
    pub fn change_pct(&self) -> Option<f64> {
        self.mean_change.as_ref().map(|c| c.pct)
    }

    /// The change's interval.
    pub fn change_ci(&self) -> Option<IntervalRecord> {
        self.mean_change.as_ref().and_then(|c| c.ci)
    }

    /// Whether the row is this lane's measurement (not a context row).
    pub fn measured(&self) -> bool {
        self.verdict != VerdictRecord::Context
    }

    /// Whether rule 3 decided: the metric has a negligible level and every
    /// A and B sample lies within it.
    pub fn negligible(&self) -> bool {
        let largest = |s: &SummaryRecord| s.min.abs().max(s.max.abs());
        self.options
            .negligible
            .is_some_and(|level| largest(&self.a) <= level && largest(&self.b) <= level)
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

    /// When some samples lack the metric (a workload leaves out a value it
    /// did not measure, such as a mean over no calls): how many have it on
    /// each side, so the reader knows what the statistics stand on.
    pub fn coverage(&self) -> Option<String> {
        let samples = |boots: &[Option<SummaryRecord>]| -> usize {
            boots.iter().flatten().map(|s| s.n).sum()
        };
        let (a, b) = (samples(&self.a_boots), samples(&self.b_boots));
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
        let parts: Vec<String> = [
            (self.a_repeated, self.a.n, &self.baseline),
            (self.b_repeated, self.b.n, &self.variant),
        ]
        .into_iter()
        .filter(|(repeated, ..)| *repeated > 0)
        .map(|(repeated, n, side)| {
            format!("{repeated} {side} samples repeat an earlier {side} boot value for value and count once: the statistics stand on {n}")
        })
        .collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}
