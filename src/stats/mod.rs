//! Statistics over samples: pure functions, no I/O, no clock, no global
//! randomness (the bootstrap and the simulations draw from a seeded
//! ChaCha8 stream).
//!
//! [`compare`] is the entry point: one metric's A and B samples, grouped by
//! boot, become one [`Comparison`] holding descriptive statistics per
//! group and per boot, the return drift, B's % change of the mean and of
//! the median with percentile-bootstrap intervals, Welch's t test, the
//! Mann-Whitney U test, whether B lies beyond both A groups, and a
//! [`Verdict`] with its reason. [`geomean_change`] sums up a workload;
//! [`aa_false_positive_rate`] measures how often the verdict rules cry
//! wolf. docs/statistics.md documents the methods and the rules.
//!
//! - [`describe`]: summaries, quantiles, % change, drift, separation;
//! - [`hypothesis`]: Welch's t test and the Mann-Whitney U test;
//! - [`bootstrap`]: unbiased bounded draws and bootstrap intervals;
//! - [`verdict`]: directions, verdicts and the rules;
//! - `compare`: the entry point and the geometric-mean summary;
//! - `simulate`: the A/A false-positive rate.

pub mod bootstrap;
mod compare;
pub mod describe;
pub mod hypothesis;
#[cfg(test)]
mod reference;
mod simulate;
#[cfg(test)]
mod tests;
pub mod verdict;

pub use bootstrap::{BootstrapChanges, Change, DEFAULT_RESAMPLES, DEFAULT_SEED, MIN_RESAMPLES};
pub use compare::{CompareOptions, Comparison, GeomeanChange, compare, geomean_change};
pub use describe::{CONFIDENCE, Interval, Separation, Summary, pct_change};
pub use hypothesis::{MannWhitney, MannWhitneyMethod, WelchTest};
pub use simulate::{NullScenario, aa_false_positive_rate};
pub use verdict::{Direction, Verdict, VerdictKind};

use crate::config::Variant;

/// Why a comparison could not be made at all. Too few samples is not one
/// of these: the verdict reports it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("variant {variant:?} has no samples")]
    NoSamples { variant: Variant },
    #[error("sample {index} of boot {boot} of variant {variant:?} is {value}, not a finite number")]
    NotFinite {
        variant: Variant,
        /// The boot's index among the variant's boots, from 0.
        boot: usize,
        index: usize,
        value: f64,
    },
    #[error("min_samples is {min_samples}, below 2")]
    MinSamplesTooLow { min_samples: usize },
    #[error("alpha is {alpha}, not strictly between 0 and 1")]
    AlphaOutOfRange { alpha: f64 },
    #[error("noise_pct is {noise_pct}, not a finite non-negative number")]
    NoiseBandInvalid { noise_pct: f64 },
    #[error("negligible is {negligible}, not a finite non-negative number")]
    NegligibleInvalid { negligible: f64 },
    #[error("{resamples} bootstrap resamples are too few, the minimum is {min}")]
    TooFewResamples { resamples: usize, min: usize },
    #[error("the null scenario's {field} is empty or out of range")]
    ScenarioInvalid { field: &'static str },
}
