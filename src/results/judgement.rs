//! The stored judgement of a run (`judgement` in results.json): every
//! comparison, the headline, what is undecided, what regressed and the
//! A/A figure, as `judge` made them under its rule's version. Reports,
//! pages, the PR comment and `compare` render this; none of them judges.

use serde::{Deserialize, Serialize};

use super::comparison::ComparisonRecord;

/// A run's judgement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgementRecord {
    /// The verdict rules' version (docs/statistics.md, "Rule versions").
    pub rule: u32,
    /// The lane the boots ran in, which decides which figures are its
    /// own.
    pub lane: crate::model::Lane,
    /// The significance level and the noise band every row was judged at.
    pub alpha: f64,
    pub noise_pct: f64,
    /// Every metric of every condition (the main workload, then each
    /// control), each candidate against the baseline.
    pub rows: Vec<ComparisonRecord>,
    /// A per-patch campaign's steps: each prefix against the one before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<ComparisonRecord>,
    /// One line per candidate, from its primary metrics' verdicts.
    pub headlines: Vec<HeadlineRecord>,
    /// Primary metrics still inconclusive, by label: what a sequential
    /// campaign's next round is for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undecided: Vec<String>,
    /// Metrics the patch regressed, in any condition, by label: the exit
    /// code. Where the patched kernel is the baseline and the base the
    /// candidate (`Compares::patch_first`), those the base does better.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub regressed: Vec<String>,
    /// Metrics some samples have but no sample of one side does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncompared: Vec<UncomparedRecord>,
    /// An A/A run (no patches): what it called, against the rate the rules
    /// imply for its protocol and noise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_check: Option<SelfCheckRecord>,
}

/// What one candidate did, in a line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeadlineRecord {
    pub baseline: String,
    pub variant: String,
    pub text: String,
}

/// A metric no sample of one side has: nothing to compare it on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UncomparedRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
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

impl UncomparedRecord {
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

/// An A/A run's self-check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelfCheckRecord {
    /// Metrics called an improvement or a regression between identical
    /// kernels, by label.
    pub false_calls: Vec<String>,
    /// Measured metrics with a direction, that could have been called.
    pub directed: usize,
    /// The simulated false-call rate per metric at this protocol and
    /// noise, and what it was simulated for.
    pub rate: Option<f64>,
    pub a_boots: usize,
    pub b_boots: usize,
    pub per_boot: usize,
    pub cv_pct: f64,
    pub simulations: usize,
}

impl SelfCheckRecord {
    /// The self-check in a sentence.
    pub fn sentence(&self) -> String {
        let outcome = if self.false_calls.is_empty() && self.directed == 0 {
            "**A/A self-check not made**: no metric with a direction was compared".to_string()
        } else if self.false_calls.is_empty() {
            format!(
                "**A/A self-check passed**: none of {} metric(s) with a direction was called an improvement or a regression",
                self.directed
            )
        } else {
            format!(
                "**A/A self-check FAILED**: {} called a change between identical kernels",
                self.false_calls.join(", ")
            )
        };
        let rate = self
            .rate
            .map_or("n/a".to_string(), |r| format!("{:.1}%", r * 100.0));
        format!(
            "{outcome}. The rules' false-positive rate per metric at this protocol ({} A and {} B boot(s) of {} sample(s), CV {:.1}%), simulated: {rate}.",
            self.a_boots, self.b_boots, self.per_boot, self.cv_pct
        )
    }
}
