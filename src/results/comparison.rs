//! The comparison records of `results.json`: what the statistics concluded
//! about each metric, in types of the published format's own. They are
//! converted from `stats::Comparison` here, so a change to the statistics'
//! internals does not change the file.

use serde::{Deserialize, Serialize};

use crate::model;
use crate::stats;

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
    pub verdict: VerdictRecord,
    /// What decided the verdict, for people.
    pub reason: String,
    pub options: OptionsRecord,
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
    Inconclusive,
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
            model::Verdict::Inconclusive => VerdictRecord::Inconclusive,
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
            VerdictRecord::Inconclusive => model::Verdict::Inconclusive,
        }
    }
}

impl From<stats::Interval> for IntervalRecord {
    fn from(i: stats::Interval) -> Self {
        IntervalRecord { lo: i.lo, hi: i.hi }
    }
}

impl From<&stats::Summary> for SummaryRecord {
    fn from(s: &stats::Summary) -> Self {
        SummaryRecord {
            n: s.n,
            mean: s.mean,
            median: s.median,
            sd: s.sd,
            cv_pct: s.cv_pct,
            min: s.min,
            max: s.max,
            mean_ci: s.mean_ci.map(Into::into),
        }
    }
}

impl From<&stats::Change> for ChangeRecord {
    fn from(c: &stats::Change) -> Self {
        ChangeRecord {
            pct: c.pct,
            ci: c.ci.map(Into::into),
        }
    }
}

impl ComparisonRecord {
    /// The record of `c`: `metric` in `condition`, `variant` against
    /// `baseline`.
    pub fn new(
        condition: Option<&str>,
        metric: &str,
        baseline: &str,
        variant: &str,
        c: &stats::Comparison,
    ) -> ComparisonRecord {
        let boots = |b: &[Option<stats::Summary>]| {
            b.iter()
                .map(|s| s.as_ref().map(SummaryRecord::from))
                .collect()
        };
        ComparisonRecord {
            condition: condition.map(str::to_string),
            metric: metric.to_string(),
            baseline: baseline.to_string(),
            variant: variant.to_string(),
            direction: c.direction.into(),
            a: (&c.a).into(),
            b: (&c.b).into(),
            a_repeated: c.a_repeated,
            b_repeated: c.b_repeated,
            a_boots: boots(&c.a_boots),
            b_boots: boots(&c.b_boots),
            drift_pct: c.drift_pct,
            max_boot_cv_pct: c.max_boot_cv_pct,
            mean_change: c.mean_change.as_ref().map(Into::into),
            median_change: c.median_change.as_ref().map(Into::into),
            welch: c.welch.map(|w| WelchRecord {
                t: w.t,
                df: w.df,
                p: w.p,
            }),
            mann_whitney: MannWhitneyRecord {
                u: c.mann_whitney.u,
                p: c.mann_whitney.p,
                method: match c.mann_whitney.method {
                    stats::MannWhitneyMethod::Exact => "exact",
                    stats::MannWhitneyMethod::Asymptotic => "asymptotic",
                }
                .to_string(),
            },
            separation: match c.separation {
                stats::Separation::AllBelow => SeparationRecord::AllBelow,
                stats::Separation::AllAbove => SeparationRecord::AllAbove,
                stats::Separation::Overlap => SeparationRecord::Overlap,
            },
            verdict: c.verdict.kind.into(),
            reason: c.verdict.reason.clone(),
            options: OptionsRecord {
                min_samples: c.options.min_samples,
                alpha: c.options.alpha,
                noise_pct: c.options.noise_pct,
                resamples: c.options.resamples,
                seed: c.options.seed,
                negligible: c.options.negligible,
                by_boot: c.options.by_boot,
                sequential: c.sequential.map(|s| LookOptionsRecord {
                    look: s.look.look,
                    of: s.look.of,
                    spending: s.look.spending,
                    critical: s.critical,
                    level: s.level,
                }),
            },
        }
    }
}
