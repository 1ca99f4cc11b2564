//! Change points in a nightly history: the nights at which a metric
//! stepped, for `patchbench watch`, which measures a branch's head every
//! night (docs/statistics.md, "Change points").
//!
//! **Method.** Binary segmentation (Scott & Knott 1974; Vostrikova 1981)
//! with a permutation test of each split, as E-divisive (Matteson & James
//! 2014, "A nonparametric approach for multiple change point analysis of
//! multivariate data", JASA 109(505)) does, and as Hunter, now Apache
//! Otava, uses it on performance tests (Daly et al. 2020, "Change Point
//! Detection in Software Performance Testing", ICPE). The unit of
//! observation is the night's mean: nights, not samples, are the
//! independent units, as boots are when a comparison is judged by boot
//! (every sample of a night shares its kernel and its boot).
//!
//! **The split.** Within a segment `[s, e)` of the history, E-divisive
//! compares the nights `[s, τ)` with `[τ, κ)` for every `τ` and every end
//! `κ ≤ e`, each side at least `min_nights` long, and takes the pair that
//! maximises `Q̂ = m·n / (m + n) · Ê`, `m` and `n` being the sides'
//! lengths and `Ê` their empirical energy distance with exponent α.
//! patchbench takes α = 2, on the logs of the night means. Matteson &
//! James need α < 2 to see any difference of distributions; at 2 the
//! energy distance sees the means only (Székely & Rizzo 2005, where
//! exponent 2 makes energy clustering Ward's minimum-variance method), and
//! Ê works out to `2·((x̄ − ȳ)² − s²_x / m − s²_y / n)`: a statistic of a
//! step in the mean, which is what the verdicts judge. The search over
//! `κ` finds a step whose later side is cut short by a second step (up at
//! night 5 and back down at 12), which a split of `[s, e)` into two sides
//! would blur.
//!
//! A Welch t statistic was tried first and is not used. Over splits of
//! `[s, e)` into two, the 16-night history with steps at nights 5 and 12
//! gave its best split p = 0.376; over E-divisive's pairs, a single +20%
//! step in 16 nights gave p = 0.038-0.081 in five draws (0.049 in the
//! test's). Divided by each side's own variance, two or three nights that
//! happen to agree give a huge t, so the permutations' largest t are
//! heavy-tailed and swamp a real step
//! (`a_welch_statistic_would_miss_clear_steps` below). The Welch interval
//! still decides the step's size.
//!
//! **The rule.** A split is a change point when both hold:
//!
//! - its permutation p-value is below `alpha`: the fraction of
//!   `permutations` random orders of the segment's nights whose largest
//!   `Q` is at least the observed (up to rounding), with the
//!   `(k + 1) / (m + 1)` correction (Davison & Hinkley 1997, §4.2.1;
//!   Phipson & Smyth 2010);
//! - the 95% Welch interval of the change, the log of the ratio of the two
//!   sides' means of night means by the delta method with the nights as
//!   observations (the by-boot interval of `compare`), lies wholly outside
//!   `±noise_pct`. With both sides constant the change is exact.
//!
//! Then the two halves `[s, τ)` and `[τ, e)` are searched in turn, and the
//! search stops where no split qualifies.
//!
//! **The figures.** Each step is reported against the nights next to it:
//! the nights it was judged on, cut at its neighbouring steps (from the
//! step before it, to the step after it or `κ`, whichever comes first).
//! Where that interval reaches into the band, which happens when a
//! neighbouring segment is only a few nights long or holds a step the
//! history cannot resolve yet (two nights after it are too few for the
//! permutations), the step keeps the figures it was found with. Every
//! step reported therefore clears the band by its own figures.
//!
//! The permutations of a segment come from ChaCha8 seeded with `seed`, on
//! a stream named by the segment's bounds: a segment's p-value depends on
//! its nights, its bounds and the seed only, not on the order the search
//! visits segments in. The size of a split is checked before its
//! permutations (they cannot change a split that fails the band), and
//! counting stops once p can no longer fall below `alpha`; neither changes
//! any result.

use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

use super::bootstrap::{DEFAULT_SEED, uniform_below};
use super::compare::welch_change;
use super::describe::{CONFIDENCE, Interval, Summary, mean};
use super::error::StatsError;
use super::hypothesis::welch_t_test;
use super::simulate::standard_normal;

/// The knobs of [`change_points`]. [`Default`] gives the documented
/// defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangePointOptions {
    /// The significance level of each split's permutation test, strictly
    /// between 0 and 1; default 0.01 (a history is tested again every
    /// night, so each test is held stricter than a verdict's 0.05).
    pub alpha: f64,
    /// The band, in percent: a step whose 95% interval reaches into
    /// `±noise_pct` is not a change point; default 2, the verdict rules'
    /// `noise_pct`.
    pub noise_pct: f64,
    /// The fewest nights on each side of a split, at least 2 (a side needs
    /// two nights for a variance); default 2.
    pub min_nights: usize,
    /// Random permutations per split; default 999. Enough that
    /// `1 / (permutations + 1)` is below `alpha`, or no split could ever
    /// be significant.
    pub permutations: usize,
    /// The permutations' ChaCha8 seed; default [`DEFAULT_SEED`], the
    /// bootstrap's.
    pub seed: u64,
}

impl Default for ChangePointOptions {
    fn default() -> ChangePointOptions {
        ChangePointOptions {
            alpha: 0.01,
            noise_pct: 2.0,
            min_nights: 2,
            permutations: 999,
            seed: DEFAULT_SEED,
        }
    }
}

impl ChangePointOptions {
    /// Check every knob is in range.
    pub fn validate(&self) -> Result<(), StatsError> {
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            return Err(StatsError::AlphaOutOfRange { alpha: self.alpha });
        }
        if !(self.noise_pct >= 0.0 && self.noise_pct.is_finite()) {
            return Err(StatsError::NoiseBandInvalid {
                noise_pct: self.noise_pct,
            });
        }
        if self.min_nights < 2 {
            return Err(StatsError::MinNightsTooLow {
                min_nights: self.min_nights,
            });
        }
        if 1.0 / (self.permutations as f64 + 1.0) >= self.alpha {
            return Err(StatsError::TooFewPermutations {
                permutations: self.permutations,
                alpha: self.alpha,
            });
        }
        Ok(())
    }
}

/// One change point: the nights from `index` on differ from the nights
/// before it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// The first night after the step (an index into the history).
    pub index: usize,
    /// The mean of the night means of the segment before the step, in the
    /// metric's unit: from the previous step (or the start of the segment
    /// the search found this one in) to `index`. The module's docs, "The
    /// figures", say when a step keeps wider segments instead.
    pub before_mean: f64,
    /// The mean of the night means of the segment after it: from `index`
    /// to the next step, or to where the segment it was judged against
    /// ended, whichever comes first.
    pub after_mean: f64,
    /// The nights of those two segments.
    pub before_nights: usize,
    pub after_nights: usize,
    /// After against before, in percent.
    pub change_pct: f64,
    /// Its 95% Welch interval (the delta method on the log of the ratio,
    /// nights as observations); both equal `change_pct` when both segments
    /// are constant.
    pub ci_low_pct: f64,
    pub ci_high_pct: f64,
    /// The permutation p-value of the split, in the segment the search
    /// found it in.
    pub p: f64,
}

/// The change points of one metric's history: `nights[i]` holds the
/// samples of night `i`, oldest first. Returns the steps, ordered by
/// index; the module's documentation gives the method.
///
/// Fewer than `2 · min_nights` nights give no change points (not an
/// error). The statistic is taken on the logs of the night means when
/// every night's mean is positive, on the means themselves otherwise.
/// A step from a segment whose mean is 0 has no % change and is never a
/// change point.
///
/// Errors when the options are out of range, or a night has no samples or
/// a sample that is not finite.
pub fn change_points(
    nights: &[Vec<f64>],
    opts: &ChangePointOptions,
) -> Result<Vec<Step>, StatsError> {
    opts.validate()?;
    let means = night_means(nights)?;
    let n = means.len();
    if n < 2 * opts.min_nights {
        return Ok(Vec::new());
    }
    let scale: Vec<f64> = if means.iter().all(|m| *m > 0.0) {
        means.iter().map(|m| m.ln()).collect()
    } else {
        means.clone()
    };
    let found = segment(&means, &scale, opts);
    Ok(report(&means, found, opts.noise_pct))
}

/// A split that qualified: the step's night `index` and p-value, and the
/// segment `[from, to)` it was judged on (`from` the searched segment's
/// start, `to` the end E-divisive chose).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Found {
    index: usize,
    p: f64,
    from: usize,
    to: usize,
}

/// Binary segmentation: the splits that qualify, in the order found.
fn segment(means: &[f64], scale: &[f64], opts: &ChangePointOptions) -> Vec<Found> {
    let mut found = Vec::new();
    let mut segments = vec![(0, means.len())];
    while let Some((s, e)) = segments.pop() {
        if let Some(f) = split(means, scale, s, e, opts) {
            found.push(f);
            segments.push((s, f.index));
            segments.push((f.index, e));
        }
    }
    found
}

/// The steps of `found`, ordered by index, each measured on the nights
/// it was judged on cut at its neighbouring steps: the segments between
/// it and the steps on either side, the later one no longer than the
/// segment E-divisive chose. Where that interval reaches into the band (a
/// neighbouring segment of a few nights, or a step the history cannot
/// resolve yet, widening it), the step keeps the figures it was found
/// with, which cleared the band.
fn report(means: &[f64], mut found: Vec<Found>, band: f64) -> Vec<Step> {
    found.sort_by_key(|f| f.index);
    (0..found.len())
        .filter_map(|k| {
            let f = found[k];
            let from = k
                .checked_sub(1)
                .map_or(f.from, |prev| found[prev].index.max(f.from));
            let to = found.get(k + 1).map_or(f.to, |next| next.index.min(f.to));
            measure(means, from, f.index, to, f.p)
                .filter(|step| clears(step, band))
                .or_else(|| measure(means, f.from, f.index, f.to, f.p))
        })
        .collect()
}

/// Each night's mean; an error for an empty night or a sample that is not
/// finite.
fn night_means(nights: &[Vec<f64>]) -> Result<Vec<f64>, StatsError> {
    nights
        .iter()
        .enumerate()
        .map(|(night, samples)| {
            if samples.is_empty() {
                return Err(StatsError::NightEmpty { night });
            }
            if let Some((index, &value)) = samples.iter().enumerate().find(|(_, v)| !v.is_finite())
            {
                return Err(StatsError::NightNotFinite {
                    night,
                    index,
                    value,
                });
            }
            Ok(mean(samples))
        })
        .collect()
}

/// Whether a step's interval lies wholly outside the band.
fn clears(step: &Step, band: f64) -> bool {
    Interval {
        lo: step.ci_low_pct,
        hi: step.ci_high_pct,
    }
    .clear_of_band(band)
}

/// The step at `index` between the night means `[from, index)` and
/// `[index, to)`: their means, the % change and its 95% Welch interval
/// (`compare`'s by-boot interval). `None` without a % change (the
/// earlier mean is 0) or an interval (a side of one night).
fn measure(means: &[f64], from: usize, index: usize, to: usize, p: f64) -> Option<Step> {
    let (before, after) = (&means[from..index], &means[index..to]);
    let (a, b) = (Summary::of(before)?, Summary::of(after)?);
    let welch = welch_t_test(before, after);
    let change = welch_change(&a, &b, welch.as_ref(), 1.0 - CONFIDENCE)?;
    let ci = change.ci?;
    Some(Step {
        index,
        before_mean: a.mean,
        after_mean: b.mean,
        before_nights: a.n,
        after_nights: b.n,
        change_pct: change.pct,
        ci_low_pct: ci.lo,
        ci_high_pct: ci.hi,
        p,
    })
}

/// The change point of the segment `[s, e)`, if its best split
/// qualifies.
fn split(
    means: &[f64],
    scale: &[f64],
    s: usize,
    e: usize,
    opts: &ChangePointOptions,
) -> Option<Found> {
    let min = opts.min_nights;
    if e - s < 2 * min {
        return None;
    }
    // Centred, so that the prefix sums hold small numbers: the logs of
    // 1.8e8 ns are 19, and the steps that matter are in the fourth digit.
    let centre = mean(&scale[s..e]);
    let x: Vec<f64> = scale[s..e].iter().map(|v| v - centre).collect();
    let mut sums = Sums::new(x.len());
    let best = best_split(&x, min, &mut sums)?;
    // The size first: a split that fails the band needs no permutations.
    let step = measure(means, s, s + best.tau, s + best.kappa, f64::NAN)?;
    if !clears(&step, opts.noise_pct) {
        return None;
    }
    let p = permutation_p(&x, best.q, opts, stream(s, e), &mut sums)?;
    Some(Found {
        index: s + best.tau,
        p,
        from: s,
        to: s + best.kappa,
    })
}

/// The ChaCha8 stream of the segment `[s, e)`'s permutations. Never 0
/// (`e` ≥ 1), the stream [`false_alarm_rate`] draws its histories from.
fn stream(s: usize, e: usize) -> u64 {
    ((s as u64) << 32) | e as u64
}

/// The best split of a segment: the nights `[0, tau)` against
/// `[tau, kappa)`, and its statistic.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Split {
    tau: usize,
    kappa: usize,
    q: f64,
}

/// Prefix sums of a segment's values and of their squares, from which
/// every split's statistic takes O(1).
struct Sums {
    /// `sum[i]`: the sum of the first `i` values.
    sum: Vec<f64>,
    /// `squares[i]`: the sum of their squares.
    squares: Vec<f64>,
}

impl Sums {
    fn new(len: usize) -> Sums {
        Sums {
            sum: vec![0.0; len + 1],
            squares: vec![0.0; len + 1],
        }
    }

    fn fill(&mut self, values: &[f64]) {
        for (i, v) in values.iter().enumerate() {
            self.sum[i + 1] = self.sum[i] + v;
            self.squares[i + 1] = self.squares[i] + v * v;
        }
    }

    /// The mean of `values[a..b]` and its variance's share `s² / n` (the
    /// squared standard error), for `b − a` ≥ 2.
    fn side(&self, a: usize, b: usize) -> (f64, f64) {
        let n = (b - a) as f64;
        let sum = self.sum[b] - self.sum[a];
        let squares = (self.squares[b] - self.squares[a] - sum * sum / n).max(0.0);
        (sum / n, squares / (n - 1.0) / n)
    }

    /// E-divisive's statistic with exponent 2, halved, for `x =
    /// values[0..tau]` (`m` long) against `y = values[tau..kappa]` (`n`
    /// long): `m·n / (m + n) · ((x̄ − ȳ)² − s²_x / m − s²_y / n)`.
    /// Matteson & James's `Q̂ = m·n / (m + n) · Ê` with Ê's sums of
    /// `|x_i − y_j|²`, `|x_i − x_k|²` and `|y_j − y_k|²` (the last two
    /// over pairs, `i < k`) worked out: `Ê = 2·((x̄ − ȳ)² − s²_x / m −
    /// s²_y / n)`, an unbiased estimate of twice the squared difference of
    /// the means.
    fn statistic(&self, tau: usize, kappa: usize) -> f64 {
        let (m, n) = (tau as f64, (kappa - tau) as f64);
        let (x, se_x) = self.side(0, tau);
        let (y, se_y) = self.side(tau, kappa);
        m * n / (m + n) * ((x - y).powi(2) - se_x - se_y)
    }
}

/// The split with the largest statistic, the first in (`tau`, `kappa`)
/// order on a tie; `None` when no statistic is above 0 (no split whose
/// means differ by more than their noise: a constant segment has only
/// zeros).
fn best_split(values: &[f64], min: usize, sums: &mut Sums) -> Option<Split> {
    sums.fill(values);
    let len = values.len();
    let mut best = Split {
        tau: 0,
        kappa: 0,
        q: 0.0,
    };
    for tau in min..=len - min {
        for kappa in tau + min..=len {
            let q = sums.statistic(tau, kappa);
            if q > best.q {
                best = Split { tau, kappa, q };
            }
        }
    }
    (best.q > 0.0).then_some(best)
}

/// Whether some split of `values` has a statistic of at least `at_least`.
fn reaches(values: &[f64], min: usize, at_least: f64, sums: &mut Sums) -> bool {
    sums.fill(values);
    let len = values.len();
    (min..=len - min)
        .any(|tau| (tau + min..=len).any(|kappa| sums.statistic(tau, kappa) >= at_least))
}

/// A split's permutation p-value `(k + 1) / (m + 1)`, `k` of `m` random
/// orders of `values` having a split with a statistic of at least
/// `observed`; `None` once it cannot be below `alpha`. "At least" allows
/// for rounding: the same nights in another order sum in another order,
/// so a split that is the observed one mirrored may come out a few units
/// in the last place below it.
fn permutation_p(
    values: &[f64],
    observed: f64,
    opts: &ChangePointOptions,
    stream: u64,
    sums: &mut Sums,
) -> Option<f64> {
    const ROUNDING: f64 = 1e-9;
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    rng.set_stream(stream);
    let m = opts.permutations;
    let limit = opts.alpha * (m as f64 + 1.0);
    let mut order = values.to_vec();
    let mut k = 0_usize;
    for _ in 0..m {
        shuffle(&mut order, &mut rng);
        if reaches(&order, opts.min_nights, observed * (1.0 - ROUNDING), sums) {
            k += 1;
            if (k + 1) as f64 >= limit {
                return None;
            }
        }
    }
    Some((k + 1) as f64 / (m + 1) as f64)
}

/// Shuffle `values` in place: Fisher-Yates, with unbiased bounded draws.
fn shuffle(values: &mut [f64], rng: &mut ChaCha8Rng) {
    for i in (1..values.len()).rev() {
        let j = uniform_below(rng, i as u64 + 1) as usize;
        values.swap(i, j);
    }
}

/// What [`false_alarm_rate`] counted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FalseAlarms {
    /// Histories simulated.
    pub histories: usize,
    /// Nights simulated, over all histories.
    pub nights: usize,
    /// Change points found, every one of them false.
    pub steps: usize,
    /// Histories with at least one.
    pub histories_with_steps: usize,
    /// `steps / nights`.
    pub rate_per_night: f64,
    /// The one-sided 95% Clopper-Pearson upper bound of the rate per night
    /// (`steps` of `nights` taken as binomial; `1 − 0.05^(1/nights)`, the
    /// rule of three's `3 / nights` to first order, with no step).
    pub upper_95_per_night: f64,
}

/// The A/A false-alarm rate of [`change_points`]: false steps per night
/// over `histories` simulated histories of `nights` nights each, with no
/// true step. Each night's centre is drawn around 100 with a CV of
/// `between_cv_pct` (the spread of the night means beyond what the
/// samples' own noise explains), and each of its `samples` samples around
/// the centre with a CV of `within_cv_pct`, both normal. The histories
/// come from ChaCha8 seeded with `opts.seed` (stream 0), the permutations
/// as [`change_points`] draws them: the rate is that of this seed's
/// permutations, the ones `watch` uses. Deterministic for a seed.
///
/// Errors when the options are out of range, or a count is 0 or a CV
/// negative or not finite.
pub fn false_alarm_rate(
    histories: usize,
    nights: usize,
    samples: usize,
    between_cv_pct: f64,
    within_cv_pct: f64,
    opts: &ChangePointOptions,
) -> Result<FalseAlarms, StatsError> {
    opts.validate()?;
    let invalid = |field| Err(StatsError::ScenarioInvalid { field });
    if histories == 0 {
        return invalid("histories");
    }
    if nights == 0 {
        return invalid("nights");
    }
    if samples == 0 {
        return invalid("samples");
    }
    if ![between_cv_pct, within_cv_pct]
        .iter()
        .all(|cv| *cv >= 0.0 && cv.is_finite())
    {
        return invalid("cv_pct");
    }
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let (mut steps, mut with_steps) = (0, 0);
    for _ in 0..histories {
        let history: Vec<Vec<f64>> = (0..nights)
            .map(|_| {
                let centre = 100.0 * (1.0 + between_cv_pct / 100.0 * standard_normal(&mut rng));
                (0..samples)
                    .map(|_| centre * (1.0 + within_cv_pct / 100.0 * standard_normal(&mut rng)))
                    .collect()
            })
            .collect();
        let found = change_points(&history, opts)?.len();
        steps += found;
        with_steps += usize::from(found > 0);
    }
    let total = histories * nights;
    Ok(FalseAlarms {
        histories,
        nights: total,
        steps,
        histories_with_steps: with_steps,
        rate_per_night: steps as f64 / total as f64,
        upper_95_per_night: clopper_pearson_upper(steps, total, CONFIDENCE),
    })
}

/// The one-sided Clopper-Pearson upper bound at `level` of a binomial
/// proportion with `k` successes in `n` trials: the `p` at which
/// `P(X ≤ k) = 1 − level`, that is the `level` quantile of Beta(k + 1,
/// n − k), found by bisection on the regularised incomplete beta
/// function.
fn clopper_pearson_upper(k: usize, n: usize, level: f64) -> f64 {
    if k >= n {
        return 1.0;
    }
    if k == 0 {
        return 1.0 - (1.0 - level).powf(1.0 / n as f64);
    }
    let (a, b) = ((k + 1) as f64, (n - k) as f64);
    let (mut lo, mut hi) = (k as f64 / n as f64, 1.0);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if statrs::function::beta::beta_reg(a, b, mid) < level {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

#[cfg(test)]
#[path = "changepoint_tests.rs"]
mod tests;
