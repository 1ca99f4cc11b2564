//! Statistics over samples: pure functions, no I/O, no clock, no global
//! randomness (the bootstrap and the simulations draw from a seeded
//! ChaCha8 stream).
//!
//! [`compare`] is the entry point: one metric's A and B samples, grouped by
//! boot, become one [`Comparison`] holding descriptive statistics per
//! group and per boot, the return drift, B's % change of the mean and of
//! the median with percentile-bootstrap intervals, Welch's t test, the
//! Mann-Whitney U test, whether B lies beyond both A groups, and a
//! [`Verdict`] with its reason;
//! [`aa_false_positive_rate`] measures how often the verdict rules cry
//! wolf. docs/statistics.md documents the methods and the rules.
//!
//! - [`describe`]: summaries, quantiles, % change, drift, separation;
//! - [`hypothesis`]: Welch's t test and the Mann-Whitney U test;
//! - [`bootstrap`]: unbiased bounded draws and bootstrap intervals;
//! - [`verdict`]: directions, verdicts and the rules;
//! - `compare`: the entry point;
//! - `simulate`: the A/A false-positive rate, and a sequential campaign's
//!   error rates against naive peeking;
//! - `detectable`: the smallest change a sequential campaign judged by
//!   boot can detect at the noise it has seen, stated before it measures;
//! - [`sequential`]: group-sequential boundaries (Lan-DeMets spending) for
//!   the repeated confidence intervals of a sequential campaign's looks;
//! - [`changepoint`]: the steps in a nightly history (`patchbench watch`),
//!   and their A/A false-alarm rate.

pub mod bootstrap;
pub mod changepoint;
mod compare;
pub mod describe;
mod detectable;
pub mod hypothesis;
mod options;
#[cfg(test)]
mod reference;
pub mod sequential;
mod simulate;
#[cfg(test)]
mod tests;
pub mod verdict;

mod error;
pub use error::{Side, StatsError};

pub use crate::model::{Direction, Verdict};
pub use bootstrap::{BootstrapChanges, Change, DEFAULT_RESAMPLES, DEFAULT_SEED, MIN_RESAMPLES};
pub use changepoint::{ChangePointOptions, FalseAlarms, Step, change_points, false_alarm_rate};
pub use compare::{Comparison, SequentialOutcome, compare};
pub use describe::{CONFIDENCE, Interval, Separation, Summary, pct_change};
pub use detectable::{
    BootsPerRound, Detectable, MAX_ROUNDS_FOR_BAND, POWER, detectable_change, detectable_change_at,
};
pub use hypothesis::{MannWhitney, MannWhitneyMethod, WelchTest};
pub use options::{CompareOptions, SequentialLook};
pub use simulate::{
    NullScenario, RoundsScenario, SequentialRates, aa_false_positive_rate, sequential_rates,
};
pub use verdict::{Judgement, RULE_VERSION, ToDecide};
