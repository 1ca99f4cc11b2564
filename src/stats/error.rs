//! Why a comparison could not be made, and which side of it was at fault.

/// Which group of a comparison: the baseline (A) or the variant compared
/// with it (B).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    A,
    B,
}

/// Why a comparison could not be made at all. Too few samples is not one
/// of these: the verdict reports it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("{side:?} has no samples")]
    NoSamples { side: Side },
    #[error("sample {index} of boot {boot} of {side:?} is {value}, not a finite number")]
    NotFinite {
        side: Side,
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
    #[error("the spread between boots cannot be measured: {why}")]
    NoiseUnmeasurable { why: &'static str },
    #[error("the sequential design")]
    Sequential(#[from] super::sequential::SequentialError),
    #[error("look {look} of {of} is not a look of the budget")]
    LookOutOfRange { look: u32, of: u32 },
    #[error("night {night} of the history has no samples")]
    NightEmpty { night: usize },
    #[error("sample {index} of night {night} of the history is {value}, not a finite number")]
    NightNotFinite {
        /// The night's index in the history, from 0.
        night: usize,
        index: usize,
        value: f64,
    },
    #[error("min_nights is {min_nights}, below 2")]
    MinNightsTooLow { min_nights: usize },
    #[error("{permutations} permutations cannot give a p-value below alpha {alpha}")]
    TooFewPermutations { permutations: usize, alpha: f64 },
}
