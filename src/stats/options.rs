//! The knobs of a comparison, shared by the entry point and the verdict
//! rules (so neither imports the other for them).

use super::bootstrap::{DEFAULT_RESAMPLES, DEFAULT_SEED, MIN_RESAMPLES};
use super::error::StatsError;

/// The knobs of a comparison. [`Default`] gives the documented defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompareOptions {
    /// Fewer samples than this in A or in B make the verdict inconclusive.
    /// At least 2; default 3 (lkp's minimum).
    pub min_samples: usize,
    /// The significance level of Welch's test; default 0.05.
    pub alpha: f64,
    /// Changes inside ±`noise_pct` percent are not called, and an A return
    /// drift beyond it makes a verdict inconclusive; default 2, as
    /// criterion's noise threshold.
    pub noise_pct: f64,
    /// Bootstrap resamples per interval; at least
    /// [`MIN_RESAMPLES`], default [`DEFAULT_RESAMPLES`].
    pub resamples: usize,
    /// The bootstrap's ChaCha8 seed; default [`DEFAULT_SEED`].
    pub seed: u64,
    /// The metric's negligible level, from its spec (`negligible:` in
    /// `workloads/*.yaml`): when every A and B sample is within ±this, the
    /// verdict is [`crate::model::Verdict::Negligible`] (rule 3). Default
    /// `None`: no level.
    pub negligible: Option<f64>,
    /// The metric's unit, for the words of a reason that states amounts
    /// (rule 3's level). Default `None`: bare numbers.
    pub unit: Option<crate::model::Unit>,
    /// Judge by boots: each boot's mean is one observation, and the
    /// interval of the change is Welch's t interval over those means
    /// (`protocol.layouts: varied`, where every boot runs in a memory
    /// layout of its own; docs/statistics.md). Default `false`: every
    /// sample is one.
    pub by_boot: bool,
    /// A look of a sequential campaign (docs/statistics.md, "Sequential
    /// campaigns"): the interval of the change of the mean is the repeated
    /// confidence interval at this look, and the verdict comes from the
    /// sequential rules. Default `None`: the fixed protocol.
    pub sequential: Option<SequentialLook>,
}

/// Look `look` of at most `of`, the alpha spent as `spending` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SequentialLook {
    pub look: u32,
    pub of: u32,
    pub spending: crate::model::Spending,
}

impl SequentialLook {
    /// Whether this is the budget's last look.
    pub fn last(&self) -> bool {
        self.look >= self.of
    }
}

impl Default for CompareOptions {
    fn default() -> CompareOptions {
        CompareOptions {
            min_samples: 3,
            alpha: 0.05,
            noise_pct: 2.0,
            resamples: DEFAULT_RESAMPLES,
            seed: DEFAULT_SEED,
            negligible: None,
            unit: None,
            by_boot: false,
            sequential: None,
        }
    }
}

impl CompareOptions {
    /// Check every knob is in range.
    pub fn validate(&self) -> Result<(), StatsError> {
        if self.min_samples < 2 {
            return Err(StatsError::MinSamplesTooLow {
                min_samples: self.min_samples,
            });
        }
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            return Err(StatsError::AlphaOutOfRange { alpha: self.alpha });
        }
        if !(self.noise_pct >= 0.0 && self.noise_pct.is_finite()) {
            return Err(StatsError::NoiseBandInvalid {
                noise_pct: self.noise_pct,
            });
        }
        if let Some(level) = self.negligible.filter(|l| !(*l >= 0.0 && l.is_finite())) {
            return Err(StatsError::NegligibleInvalid { negligible: level });
        }
        if let Some(look) = self.sequential.filter(|l| l.look == 0 || l.look > l.of) {
            return Err(StatsError::LookOutOfRange {
                look: look.look,
                of: look.of,
            });
        }
        if self.resamples < MIN_RESAMPLES {
            return Err(StatsError::TooFewResamples {
                resamples: self.resamples,
                min: MIN_RESAMPLES,
            });
        }
        Ok(())
    }
}
