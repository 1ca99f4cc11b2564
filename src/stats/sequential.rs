//! Group-sequential boundaries with Lan-DeMets alpha spending, for stopping
//! an A/B comparison early while the overall two-sided error stays at α.
//!
//! At look k of at most K, with information fraction t_k (k/K when every
//! look adds the same samples; any increasing fractions in (0, 1] work),
//! the standardized statistic Z_k is under the null a standard normal with
//! Corr(Z_j, Z_k) = √(t_j/t_k): the score S_k = Z_k·√t_k is a Brownian
//! motion, its increments independent normals of variance t_k − t_(k−1).
//! [`boundaries`] gives the symmetric critical values c_1..c_K such that
//! the probability of first crossing ±c_k at look k is the increment
//! `spent(t_k) − spent(t_(k−1))` of a spending function (Lan & DeMets 1983,
//! *Discrete sequential boundaries for clinical trials*, Biometrika 70).
//! Each side spends half of α, as the two-sided designs of ldbounds,
//! rpact and gsDesign do ([`Spending::spent`]).
//!
//! The boundaries serve as repeated confidence intervals (Jennison &
//! Turnbull 1989, *Interim analyses: the repeated confidence interval
//! approach*, JRSS B 51): [`repeated_interval`], estimate ± c_k·SE at each
//! look, holds the true difference at all looks at once with probability
//! 1 − α, so sampling may stop at the first look whose interval decides.
//!
//! The crossing probabilities come from the recursive numerical
//! integration of Armitage, McPherson & Rowe (1969, *Repeated significance
//! tests on accumulating data*, JRSS A 132), as set out in Jennison &
//! Turnbull (2000), *Group Sequential Methods with Applications to Clinical
//! Trials*, chapter 19: the sub-density of Z_k (the score's, rescaled) of
//! the paths that have not crossed is carried from look to look on the
//! grid of their section 19.2 (6r − 1 points, denser in the middle,
//! clipped to the continuation region, midpoints added for Simpson's rule),
//! and each c_k is solved by bisection. The tests pin the boundaries to
//! printed tables and to an independent computation with scipy's
//! multivariate normal distribution.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// J&T's grid parameter r: 6r − 1 points before clipping and midpoints
/// (they advise r = 16 for about 1e-6 in probability; gsDesign uses 18).
const GRID_R: usize = 32;

/// Where the bisection for a boundary gives up looking higher: the normal
/// tail beyond it is below the smallest positive `f64`.
const MAX_BOUNDARY: f64 = 40.0;

pub use crate::model::Spending;

/// How a [`Spending`] (the campaign files' vocabulary) spends the
/// two-sided α over the information fraction t (Lan & DeMets 1983): both
/// spend nothing at t = 0 and exactly α at t = 1.
pub trait Spent {
    /// The cumulative two-sided α spent by information fraction `t`.
    fn spent(self, alpha: f64, t: f64) -> f64;
}

impl Spent for Spending {
    /// The cumulative two-sided α spent by information fraction `t`
    /// (clamped to [0, 1]; NaN stays NaN):
    ///
    /// - O'Brien-Fleming type: `2·(2 − 2·Φ(z_{1−α/4} / √t))`, each side
    ///   spending Lan & DeMets's `2 − 2·Φ(z_{1−a/2} / √t)` of a = α/2.
    ///   This is ldbounds' `ldBounds(t, iuse=1, alpha=α, sides=2)`, rpact's
    ///   `typeOfDesign = "asOF", sided = 2` and gsDesign's `test.type=2`
    ///   with `sfLDOF` at `alpha = α/2`. (Applying `2 − 2·Φ(z_{1−α/2}/√t)`
    ///   to the two-sided α instead spends more early: c_1 = 4.38, not the
    ///   published 4.88, for five looks at α = 0.05.)
    /// - Pocock type: `α·ln(1 + (e − 1)·t)`, linear in α, so either
    ///   reading agrees.
    fn spent(self, alpha: f64, t: f64) -> f64 {
        if t.is_nan() {
            return f64::NAN;
        }
        if t <= 0.0 {
            return 0.0;
        }
        if t >= 1.0 {
            return alpha;
        }
        formula(self, alpha, t)
    }
}

/// The spending function itself, for t in (0, 1].
fn formula(spending: Spending, alpha: f64, t: f64) -> f64 {
    match spending {
        Spending::OBrienFleming => {
            let z = -standard().inverse_cdf(alpha / 4.0);
            4.0 * standard().sf(z / t.sqrt())
        }
        Spending::Pocock => alpha * (1.0 + (std::f64::consts::E - 1.0) * t).ln(),
    }
}

/// Why [`boundaries`] cannot make a design.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SequentialError {
    #[error("alpha is {alpha}, not strictly between 0 and 1")]
    AlphaOutOfRange { alpha: f64 },
    #[error("a design needs at least one look")]
    NoLooks,
    #[error("information fraction {index} is {value}, not in (0, 1]")]
    FractionOutOfRange { index: usize, value: f64 },
    #[error("information fraction {index} is {value}, not above the one before it ({previous})")]
    FractionsNotIncreasing {
        index: usize,
        value: f64,
        previous: f64,
    },
}

/// The symmetric two-sided critical values c_1..c_K on the z scale, one
/// per information fraction: under the null, the probability that |Z_j|
/// stays below c_j at every look j < k and reaches c_k at look k is
/// `spending.spent(alpha, t_k) − spending.spent(alpha, t_(k−1))`.
///
/// `fractions` must be non-empty and strictly increasing in (0, 1]. The
/// last need not be 1: c_k depends on the looks up to k only, so the
/// fractions so far give the boundaries so far. Each c_k is solved to
/// 1e-12 on the z scale (far inside 1e-9 in probability); the integration
/// itself agrees with the references to about 1e-6. A look whose
/// increment is below the smallest `f64` (O'Brien-Fleming at t of a few
/// thousandths) gets an infinite boundary: no stopping there.
pub fn boundaries(
    alpha: f64,
    fractions: &[f64],
    spending: Spending,
) -> Result<Vec<f64>, SequentialError> {
    validate(alpha, fractions)?;
    let mut continuing = Continuing::start();
    let mut spent_before = 0.0;
    let mut c = Vec::with_capacity(fractions.len());
    for &t in fractions {
        let spent = spending.spent(alpha, t);
        let target = spent - spent_before;
        let ck = continuing.solve(t, target);
        continuing = continuing.advance(t, ck);
        spent_before = spent;
        c.push(ck);
    }
    Ok(c)
}

/// The two-sided nominal significance of a boundary, `2·(1 − Φ(c))`: the
/// p-value a fixed test would need to cross it.
pub fn nominal_level(c: f64) -> f64 {
    2.0 * standard().sf(c)
}

/// The repeated confidence interval at a look with boundary `c`:
/// `estimate ± q·se`, where q is c itself when the variance is known
/// (`df` None) and, with `df = Some(v)` for an estimated variance, the
/// Student-t quantile at the same nominal level,
/// `t_v^{-1}(1 − nominal_level(c)/2)` (Jennison & Turnbull 2000, chapter
/// 11). `se` is a standard error (≥ 0); 0 gives the point itself, even
/// for an infinite boundary. An infinite `df` is the normal case; a `df`
/// that is not positive gives NaN bounds. (At 1 or 2 degrees of freedom
/// statrs's inverse t, good to 1e-10 relative up to c = 5, fails at tails
/// like c = 8's, 1e-15.)
pub fn repeated_interval(estimate: f64, se: f64, df: Option<f64>, c: f64) -> (f64, f64) {
    if se == 0.0 {
        return (estimate, estimate);
    }
    let q = match df {
        None => c,
        Some(v) => student_quantile(c, v),
    };
    (estimate - q * se, estimate + q * se)
}

/// Above this many degrees of freedom the Student-t quantile comes from
/// its expansion in the normal one: statrs's inverse drifts there (1e-4
/// at 1e6 degrees of freedom) and does not return at 1e8.
const EXPANSION_DF: f64 = 1e4;

/// The Student-t quantile with `v` degrees of freedom at the level of the
/// normal quantile `c`, `t_v^{-1}(Φ(c))`. Up to [`EXPANSION_DF`], statrs's
/// inverse of the lower tail (not of 1 − p/2, so small levels keep their
/// digits; within 1e-10 of scipy for c up to 8 and v from 2); above, the
/// Cornish-Fisher expansion of Abramowitz & Stegun 26.7.5 to v⁻⁴, within
/// 1e-10 of scipy for c up to 20.
fn student_quantile(c: f64, v: f64) -> f64 {
    if c.is_infinite() || v == f64::INFINITY {
        return c;
    }
    if v.is_nan() || v <= 0.0 {
        return f64::NAN;
    }
    if v > EXPANSION_DF {
        let x = c;
        let (x2, x3) = (x * x, x * x * x);
        let (x5, x7, x9) = (x3 * x2, x3 * x2 * x2, x3 * x3 * x3);
        let g1 = (x3 + x) / 4.0;
        let g2 = (5.0 * x5 + 16.0 * x3 + 3.0 * x) / 96.0;
        let g3 = (3.0 * x7 + 19.0 * x5 + 17.0 * x3 - 15.0 * x) / 384.0;
        let g4 = (79.0 * x9 + 776.0 * x7 + 1482.0 * x5 - 1920.0 * x3 - 945.0 * x) / 92160.0;
        return x + g1 / v + g2 / (v * v) + g3 / (v * v * v) + g4 / (v * v * v * v);
    }
    match StudentsT::new(0.0, 1.0, v) {
        Ok(t) => -t.inverse_cdf(nominal_level(c) / 2.0),
        Err(_) => f64::NAN,
    }
}

fn validate(alpha: f64, fractions: &[f64]) -> Result<(), SequentialError> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(SequentialError::AlphaOutOfRange { alpha });
    }
    if fractions.is_empty() {
        return Err(SequentialError::NoLooks);
    }
    for (index, &value) in fractions.iter().enumerate() {
        if !(value > 0.0 && value <= 1.0) {
            return Err(SequentialError::FractionOutOfRange { index, value });
        }
        if index > 0 && value <= fractions[index - 1] {
            return Err(SequentialError::FractionsNotIncreasing {
                index,
                value,
                previous: fractions[index - 1],
            });
        }
    }
    Ok(())
}

/// The paths that have not crossed a boundary by a look, as the
/// sub-density h of Z at that look on a Simpson grid over the continuation
/// region (Jennison & Turnbull 2000, section 19.2): `mass[i]` is the
/// Simpson weight times h at `points[i]`.
struct Continuing {
    /// The look's information fraction (0 before the first look).
    info: f64,
    points: Vec<f64>,
    mass: Vec<f64>,
}

impl Continuing {
    /// Before the first look: every path at Z = 0 with no information.
    fn start() -> Self {
        Continuing {
            info: 0.0,
            points: vec![0.0],
            mass: vec![1.0],
        }
    }

    /// The probability of continuing to the next look, at fraction `t`,
    /// and crossing ±c there: the grid sum of h times the normal tails of
    /// the increment, `P(Z_t ≥ c | z) + P(Z_t ≤ −c | z)`.
    fn exit(&self, t: f64, c: f64) -> f64 {
        let n = standard();
        let (root, sd) = (t.sqrt(), (t - self.info).sqrt());
        let before = self.info.sqrt();
        self.points
            .iter()
            .zip(&self.mass)
            .map(|(&z, &m)| {
                let s = z * before;
                m * (n.sf((c * root - s) / sd) + n.sf((c * root + s) / sd))
            })
            .sum()
    }

    /// The boundary at fraction `t` whose exit probability is `target`, by
    /// bisection: the exit probability falls as c grows.
    fn solve(&self, t: f64, target: f64) -> f64 {
        if target.is_nan() || target <= 0.0 || self.exit(t, MAX_BOUNDARY) >= target {
            return f64::INFINITY;
        }
        let (mut lo, mut hi) = (0.0_f64, MAX_BOUNDARY);
        while hi - lo > 1e-12 {
            let mid = 0.5 * (lo + hi);
            if self.exit(t, mid) > target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        0.5 * (lo + hi)
    }

    /// The paths still continuing after the look at fraction `t` with
    /// boundary c: h_t(z) = Σ mass_i · (√t/σ)·φ((z·√t − z_i·√t_before)/σ)
    /// with σ² = t − t_before, on the grid of (−c, c).
    fn advance(&self, t: f64, c: f64) -> Self {
        let (root, sd) = (t.sqrt(), (t - self.info).sqrt());
        let before = self.info.sqrt();
        let (points, weights) = simpson_grid(c);
        let mass = points
            .iter()
            .zip(&weights)
            .map(|(&z, &w)| {
                let h: f64 = self
                    .points
                    .iter()
                    .zip(&self.mass)
                    .map(|(&zi, &m)| m * phi((z * root - zi * before) / sd))
                    .sum();
                w * h * root / sd
            })
            .collect();
        Continuing {
            info: t,
            points,
            mass,
        }
    }
}

/// Jennison & Turnbull's grid (section 19.2, the null's mean 0) on the
/// continuation region (−c, c), with its Simpson weights: the 6r − 1
/// points x_i = −3 − 4·ln(r/i) (i < r), −3 + 3(i − r)/(2r) (r ≤ i ≤ 5r),
/// 3 + 4·ln(r/(6r − i)) (i > 5r); those outside (−c, c) replaced by ±c;
/// then the midpoints of successive points, for an odd count.
fn simpson_grid(c: f64) -> (Vec<f64>, Vec<f64>) {
    let r = GRID_R as f64;
    let x = (1..6 * GRID_R).map(|i| {
        let i = i as f64;
        if i < r {
            -3.0 - 4.0 * (r / i).ln()
        } else if i <= 5.0 * r {
            -3.0 + 3.0 * (i - r) / (2.0 * r)
        } else {
            3.0 + 4.0 * (r / (6.0 * r - i)).ln()
        }
    });
    let mut odd: Vec<f64> = Vec::with_capacity(6 * GRID_R + 1);
    if -c > -3.0 - 4.0 * r.ln() {
        odd.push(-c);
    }
    odd.extend(x.filter(|&x| x > -c && x < c));
    if c < 3.0 + 4.0 * r.ln() {
        odd.push(c);
    }
    let mut points = Vec::with_capacity(2 * odd.len() - 1);
    for pair in odd.windows(2) {
        points.push(pair[0]);
        points.push(0.5 * (pair[0] + pair[1]));
    }
    points.push(odd[odd.len() - 1]);
    // Each panel [z_(2j), z_(2j+2)] with its midpoint: (h/6)·(1, 4, 1).
    let mut weights = vec![0.0; points.len()];
    for j in (0..points.len() - 1).step_by(2) {
        let h = points[j + 2] - points[j];
        weights[j] += h / 6.0;
        weights[j + 1] += 4.0 * h / 6.0;
        weights[j + 2] += h / 6.0;
    }
    (points, weights)
}

/// The standard normal density.
fn phi(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

fn standard() -> Normal {
    Normal::standard()
}

#[cfg(test)]
mod tests {
    use rand_chacha::ChaCha8Rng;
    use rand_core::{Rng, SeedableRng};

    use super::*;

    const EQUAL_5: [f64; 5] = [0.2, 0.4, 0.6, 0.8, 1.0];

    fn equal(k: usize) -> Vec<f64> {
        (1..=k).map(|i| i as f64 / k as f64).collect()
    }

    fn assert_all_close(got: &[f64], want: &[f64], tolerance: f64) {
        assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() <= tolerance, "{got:?} vs {want:?}");
        }
    }

    /// The probability of first crossing at each look, for given
    /// boundaries, by the module's integration.
    fn exit_probabilities(fractions: &[f64], c: &[f64]) -> Vec<f64> {
        let mut continuing = Continuing::start();
        let mut exits = Vec::new();
        for (&t, &ck) in fractions.iter().zip(c) {
            exits.push(continuing.exit(t, ck));
            continuing = continuing.advance(t, ck);
        }
        exits
    }

    /// The same exit probabilities by an independent, cruder integration:
    /// the score S_k = Z_k·√t_k (not Z) on a uniform grid of step 0.005
    /// (not J&T's) with the trapezoid rule (not Simpson's).
    fn exit_probabilities_by_trapezoid(fractions: &[f64], c: &[f64]) -> Vec<f64> {
        let n = Normal::standard();
        let step = 0.005;
        // The score's sub-density on the last look's grid: (point, weight × density).
        let mut grid: Vec<(f64, f64)> = vec![(0.0, 1.0)];
        let mut before = 0.0;
        let mut exits = Vec::new();
        for (&t, &ck) in fractions.iter().zip(c) {
            let sd = (t - before).sqrt();
            let b = ck * t.sqrt();
            exits.push(
                grid.iter()
                    .map(|&(s, m)| m * (n.sf((b - s) / sd) + n.sf((b + s) / sd)))
                    .sum(),
            );
            let intervals = (2.0 * b / step).ceil() as usize;
            let h = 2.0 * b / intervals as f64;
            grid = (0..=intervals)
                .map(|i| {
                    let s = -b + i as f64 * h;
                    let density: f64 = grid.iter().map(|&(u, m)| m * phi((s - u) / sd) / sd).sum();
                    let w = if i == 0 || i == intervals { h / 2.0 } else { h };
                    (s, w * density)
                })
                .collect();
            before = t;
        }
        exits
    }

    /// The boundaries against printed tables, to their printed digits
    /// (half a unit in the last place, plus 2e-6 for the integration; one
    /// printed value is off by 1.1e-4, below):
    ///
    /// - O'Brien-Fleming type, K = 5, α = 0.05: 4.8769 3.3569 2.6803
    ///   2.2898 2.0310, with cumulative exit probabilities 1.0777e-06
    ///   7.8830e-04 7.6161e-03 2.4424e-02 5.0000e-02: ldbounds 2.0.2's
    ///   vignette (T. C. Casper, *An R Package for Group Sequential
    ///   Boundaries Using Alpha Spending Functions*, 2021, section 5.1,
    ///   `summary(ldBounds(seq(0.2, 1, length=5)))`, after Reboussin et
    ///   al. 2000), github.com/cran/ldbounds inst/doc/ldbounds.pdf.
    /// - O'Brien-Fleming type, K = 3: 3.710 2.511 1.993, rpact's
    ///   `getDesignGroupSequential(typeOfDesign = "asOF", futilityBounds =
    ///   c(0, 0))` one-sided at 2.5% (non-binding futility leaves the
    ///   efficacy bounds alone; one side of the symmetric α = 0.05 design
    ///   agrees to 1e-6): the "Efficacy boundary (z-value scale)" row of
    ///   https://rpact-com.github.io/slides-mcp-2025.
    /// - K = 2, α = 0.05, `getDesignGroupSequential(kMax = 2, sided = 2,
    ///   alpha = 0.05, beta = 0.1)`: "asOF" 2.963 1.969 with cumulative α
    ///   0.0031; "asP" 2.157 2.201 with cumulative α 0.03101: rpact's
    ///   output printed in D. Lakens, *Improving Your Statistical
    ///   Inferences*, chapter 10,
    ///   https://lakens.github.io/statistical_inferences/10-sequential.html.
    /// - Unequal fractions 0.5, 0.75, 1, O'Brien-Fleming type: 2.962588
    ///   2.359018 2.014084, gsDesign's one-sided `gsDesign(alpha = .025, k
    ///   = 3, test.type = 1, sfu = sfLDOF, timing = c(.5, .75, 1))$upper$bound`
    ///   printed in the gs_b example of gsDesign2,
    ///   https://merck.github.io/gsDesign2/reference/gs_b.html (the
    ///   two-sided design agrees to 1e-6, the script below).
    /// - The first look of rpact's test design `getDesignGroupSequential(kMax
    ///   = 3, alpha = 0.09, sided = 2, typeOfDesign = "asOF",
    ///   informationRates = c(0.2, 0.55, 1), ...)`: 4.3323635, alpha spent
    ///   1.475171e-05 (its later looks have a binding futility bound):
    ///   github.com/cran/rpact 4.1.0, tests/testthat/test-f_design_group_sequential.R.
    #[test]
    fn boundaries_match_the_published_tables() {
        use Spending::*;
        let got =
            |alpha, fractions: &[f64], spending| boundaries(alpha, fractions, spending).unwrap();
        let c = got(0.05, &EQUAL_5, OBrienFleming);
        // ldbounds' second value, 3.3569, is 1.1e-4 below scipy's and ours
        // (3.357012, the next test): its own, coarser integration. The
        // others agree to the printed digits.
        let printed = [4.8769, 3.3569, 2.6803, 2.2898, 2.0310];
        let tolerances = [5.2e-5, 1.5e-4, 5.2e-5, 5.2e-5, 5.2e-5];
        for ((got, want), tolerance) in c.iter().zip(printed).zip(tolerances) {
            assert!((got - want).abs() <= tolerance, "{c:?}");
        }
        let cumulative: Vec<f64> = exit_probabilities(&EQUAL_5, &c)
            .iter()
            .scan(0.0, |sum, p| {
                *sum += p;
                Some(*sum)
            })
            .collect();
        let printed = [1.0777e-06, 7.8830e-04, 7.6161e-03, 2.4424e-02, 5.0000e-02];
        for (got, want) in cumulative.iter().zip(printed) {
            assert!(((got - want) / want).abs() < 1e-4, "{cumulative:?}");
        }
        assert_all_close(
            &got(0.05, &equal(3), OBrienFleming),
            &[3.710, 2.511, 1.993],
            5e-4 + 2e-6,
        );
        assert_all_close(
            &got(0.05, &[0.5, 1.0], OBrienFleming),
            &[2.963, 1.969],
            5e-4 + 2e-6,
        );
        assert_all_close(
            &got(0.05, &[0.5, 1.0], Pocock),
            &[2.157, 2.201],
            5e-4 + 2e-6,
        );
        assert!((OBrienFleming.spent(0.05, 0.5) - 0.0031).abs() < 5e-5);
        assert!((Pocock.spent(0.05, 0.5) - 0.03101).abs() < 5e-6);
        assert_all_close(
            &got(0.05, &[0.5, 0.75, 1.0], OBrienFleming),
            &[2.962588, 2.359018, 2.014084],
            5e-7 + 2e-6,
        );
        let first = got(0.09, &[0.2, 0.55, 1.0], OBrienFleming)[0];
        assert!((first - 4.3323635).abs() < 1e-6, "{first}");
        assert!((OBrienFleming.spent(0.09, 0.2) - 1.475171e-05).abs() < 1e-11);
    }

    /// An independent computation with scipy 1.17.1 and numpy 2.4.6: each
    /// c_k solved with `brentq` on the exact crossing probability
    /// `1 − P(|Z_j| < c_j, j ≤ k)` from `multivariate_normal(0, cov).cdf`
    /// with Corr(Z_i, Z_j) = √(t_i/t_j), set equal to the spending at t_k.
    /// The script (its loop over designs elided to one line):
    ///
    /// ```text
    /// import numpy as np
    /// from scipy.optimize import brentq
    /// from scipy.stats import multivariate_normal, norm
    ///
    /// def spent(kind, alpha, t):
    ///     if kind == "obf":  # alpha/2 per side
    ///         return 4 * norm.sf(norm.isf(alpha / 4) / np.sqrt(t))
    ///     return alpha * np.log(1 + (np.e - 1) * t)
    ///
    /// def inside(c, t):  # P(|Z_j| < c_j for all j)
    ///     t = np.asarray(t)
    ///     if len(c) == 1:
    ///         return 1 - 2 * norm.sf(c[0])
    ///     cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    ///     mvn = multivariate_normal(np.zeros(len(t)), cov, maxpts=10_000_000,
    ///                               abseps=1e-11, releps=0, seed=1)
    ///     return mvn.cdf(np.array(c), lower_limit=-np.array(c))
    ///
    /// def boundaries(kind, alpha, t):
    ///     c = []
    ///     for k in range(len(t)):
    ///         target = spent(kind, alpha, t[k])
    ///         c.append(brentq(lambda x: 1 - inside(c + [x], t[: k + 1]) - target,
    ///                         0.5, 12, xtol=1e-10))
    ///     return c
    ///
    /// print(kind, alpha, t, boundaries(kind, alpha, t), 1 - inside(c, t))
    /// ```
    ///
    /// Its output:
    ///
    /// ```text
    /// obf 0.05 [0.2, 0.4, 0.6, 0.8, 1.0] 4.876885 3.357012 2.680280 2.289817 2.031032 | exit 0.05000000
    /// pocock 0.05 [0.2, 0.4, 0.6, 0.8, 1.0] 2.437977 2.426814 2.410194 2.396646 2.385985 | exit 0.05000000
    /// obf 0.05 [0.3333, 0.6667, 1.0] 3.710303 2.511427 1.993047 | exit 0.05000000
    /// pocock 0.05 [0.3333, 0.6667, 1.0] 2.279428 2.294911 2.295938 | exit 0.05000000
    /// obf 0.05 [0.5, 1.0] 2.962588 1.968596 | exit 0.05000000
    /// pocock 0.05 [0.5, 1.0] 2.156999 2.200977 | exit 0.05000000
    /// obf 0.05 [0.5, 0.75, 1.0] 2.962588 2.359018 2.014084 | exit 0.05000000
    /// ```
    #[test]
    fn boundaries_match_an_independent_computation() {
        use Spending::*;
        let cases: [(Spending, &[f64], &[f64]); 6] = [
            (
                OBrienFleming,
                &EQUAL_5,
                &[4.876885, 3.357012, 2.680280, 2.289817, 2.031032],
            ),
            (
                Pocock,
                &EQUAL_5,
                &[2.437977, 2.426814, 2.410194, 2.396646, 2.385985],
            ),
            (
                OBrienFleming,
                &[1.0 / 3.0, 2.0 / 3.0, 1.0],
                &[3.710303, 2.511427, 1.993047],
            ),
            (
                Pocock,
                &[1.0 / 3.0, 2.0 / 3.0, 1.0],
                &[2.279428, 2.294911, 2.295938],
            ),
            (Pocock, &[0.5, 1.0], &[2.156999, 2.200977]),
            (
                OBrienFleming,
                &[0.5, 0.75, 1.0],
                &[2.962588, 2.359018, 2.014084],
            ),
        ];
        for (spending, fractions, want) in cases {
            let got = boundaries(0.05, fractions, spending).unwrap();
            assert_all_close(&got, want, 5e-6);
        }
    }

    #[test]
    fn all_of_alpha_is_spent_and_none_before_the_first_look() {
        for spending in [Spending::OBrienFleming, Spending::Pocock] {
            for alpha in [0.01, 0.05, 0.2] {
                assert_eq!(spending.spent(alpha, 1.0), alpha);
                assert_eq!(spending.spent(alpha, 0.0), 0.0);
                // The formula itself, not only the clamp, reaches alpha.
                let formula = formula(spending, alpha, 1.0);
                // (statrs's erfc and its inverse round-trip to about 1e-10.)
                assert!(
                    (formula / alpha - 1.0).abs() < 1e-9,
                    "{spending:?}: {formula}"
                );
                assert!(spending.spent(alpha, 0.5) < alpha);
            }
        }
    }

    #[test]
    fn one_look_is_the_fixed_test() {
        for spending in [Spending::OBrienFleming, Spending::Pocock] {
            let c = boundaries(0.05, &[1.0], spending).unwrap();
            assert!((c[0] - 1.959963984540054).abs() < 1e-9, "{c:?}");
            assert!((nominal_level(c[0]) - 0.05).abs() < 1e-9);
        }
    }

    #[test]
    fn obrien_fleming_boundaries_fall_and_pocock_stay_nearly_level() {
        let obf = boundaries(0.05, &EQUAL_5, Spending::OBrienFleming).unwrap();
        assert!(obf.windows(2).all(|w| w[0] > w[1]), "{obf:?}");
        let pocock = boundaries(0.05, &EQUAL_5, Spending::Pocock).unwrap();
        assert!(pocock.iter().all(|c| (c - 2.41).abs() < 0.03), "{pocock:?}");
    }

    /// The fractions so far give the boundaries so far.
    #[test]
    fn the_boundaries_of_the_first_looks_do_not_depend_on_later_ones() {
        let all = boundaries(0.05, &EQUAL_5, Spending::Pocock).unwrap();
        let first = boundaries(0.05, &EQUAL_5[..2], Spending::Pocock).unwrap();
        assert_eq!(&all[..2], &first[..]);
    }

    /// The exit probabilities of the computed boundaries, by a second,
    /// independent integration, are the spending's increments and sum to
    /// alpha.
    #[test]
    fn the_boundaries_spend_exactly_alpha_by_an_independent_integration() {
        for spending in [Spending::OBrienFleming, Spending::Pocock] {
            let c = boundaries(0.05, &EQUAL_5, spending).unwrap();
            let exits = exit_probabilities_by_trapezoid(&EQUAL_5, &c);
            let mut before = 0.0;
            for (&t, p) in EQUAL_5.iter().zip(&exits) {
                let increment = spending.spent(0.05, t) - spending.spent(0.05, before);
                assert!((p - increment).abs() < 2e-6, "{spending:?}: {exits:?}");
                before = t;
            }
            let total: f64 = exits.iter().sum();
            assert!((total - 0.05).abs() < 2e-6, "{spending:?}: {total}");
            // And by the module's own integration, to the bisection's
            // tolerance.
            let own: f64 = exit_probabilities(&EQUAL_5, &c).iter().sum();
            assert!((own - 0.05).abs() < 1e-10, "{spending:?}: {own}");
        }
    }

    /// Testing at 1.96 at every look: the chance of a false alarm grows
    /// with the looks. scipy, as above: `1 - inside([1.959964] * K,
    /// [k / K ...])`; gsDesign's own unit test (runit.output.R,
    /// `test.Deming.gsProb`) checks one side rounded to 3 digits: 0.042,
    /// 0.063 and 0.097 for K = 2, 4 and 10.
    #[test]
    fn naive_testing_at_every_look_inflates_the_error() {
        let naive = |k: usize| -> f64 {
            exit_probabilities(&equal(k), &vec![1.959963984540054; k])
                .iter()
                .sum()
        };
        for (k, one_side) in [(2, 0.042), (4, 0.063), (10, 0.097)] {
            assert!(
                (naive(k) / 2.0 - one_side).abs() <= 5e-4,
                "K={k}: {}",
                naive(k)
            );
        }
        for (k, scipy) in NAIVE {
            assert!((naive(k) - scipy).abs() < 2e-6, "K={k}: {}", naive(k));
        }
    }

    /// `1 - inside([1.959963984540054] * K, [k / K for k in 1..=K])` with
    /// the script above printed 0.083118, 0.126169, 0.141689 and 0.193356
    /// for K = 2, 4, 5 and 10.
    const NAIVE: [(usize, f64); 4] = [(2, 0.083118), (4, 0.126169), (5, NAIVE_5), (10, 0.193356)];
    const NAIVE_5: f64 = 0.141689;

    /// 20 000 simulated null paths (standardized Brownian motion at the
    /// five looks, from a seeded ChaCha8 stream by Box–Muller as in
    /// `simulate`) cross the O'Brien-Fleming-type boundaries in 5% of paths
    /// and 1.96 at some look in about 14% (scipy's and the integration's 0.1417). The
    /// binomial standard errors are √(p(1 − p)/20 000): 0.15% at 5%, 0.25%
    /// at 14%; the tolerances are over three of them.
    #[test]
    fn simulated_null_paths_cross_at_alpha_and_naive_testing_far_more() {
        let c = boundaries(0.05, &EQUAL_5, Spending::OBrienFleming).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(2026);
        let paths = 20_000;
        let (mut sequential, mut naive) = (0_usize, 0_usize);
        for _ in 0..paths {
            let (mut score, mut before) = (0.0, 0.0);
            let (mut crossed, mut crossed_naive) = (false, false);
            for (&t, &ck) in EQUAL_5.iter().zip(&c) {
                score += (t - before).sqrt() * standard_normal(&mut rng);
                before = t;
                let z: f64 = score / t.sqrt();
                crossed |= z.abs() >= ck;
                crossed_naive |= z.abs() >= 1.959963984540054;
            }
            sequential += usize::from(crossed);
            naive += usize::from(crossed_naive);
        }
        let rate = |n: usize| n as f64 / paths as f64;
        assert!(
            (rate(sequential) - 0.05).abs() < 0.005,
            "{}",
            rate(sequential)
        );
        assert!((rate(naive) - NAIVE_5).abs() < 0.01, "{}", rate(naive));
    }

    /// A standard normal draw by the Box–Muller transform, as `simulate`
    /// draws them.
    fn standard_normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
        let uniform = |rng: &mut R| (rng.next_u64() >> 11) as f64 / (1_u64 << 53) as f64;
        let u1 = 1.0 - uniform(rng);
        let u2 = uniform(rng);
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    #[test]
    fn invalid_designs_are_refused() {
        use SequentialError::*;
        let design = |alpha, fractions: &[f64]| boundaries(alpha, fractions, Spending::Pocock);
        for alpha in [0.0, 1.0, -0.1, f64::NAN] {
            assert!(matches!(design(alpha, &[1.0]), Err(AlphaOutOfRange { .. })));
        }
        assert_eq!(design(0.05, &[]), Err(NoLooks));
        for bad in [0.0, -0.5, 1.2, f64::NAN] {
            assert!(matches!(
                design(0.05, &[0.5, bad]),
                Err(FractionOutOfRange { index: 1, .. })
            ));
        }
        assert_eq!(
            design(0.05, &[0.5, 0.5]),
            Err(FractionsNotIncreasing {
                index: 1,
                value: 0.5,
                previous: 0.5
            })
        );
        assert!(design(0.05, &[0.6, 0.3, 1.0]).is_err());
        assert_eq!(
            design(0.05, &[]).unwrap_err().to_string(),
            "a design needs at least one look"
        );
    }

    /// O'Brien-Fleming at a tiny first fraction spends less than the
    /// smallest f64: no stopping there, and the later looks still work.
    #[test]
    fn a_look_that_spends_nothing_never_stops() {
        let c = boundaries(0.05, &[0.001, 1.0], Spending::OBrienFleming).unwrap();
        assert_eq!(c[0], f64::INFINITY);
        assert!((c[1] - 1.959963984540054).abs() < 1e-6, "{c:?}");
        assert_eq!(
            repeated_interval(1.0, 0.5, None, c[0]),
            (f64::NEG_INFINITY, f64::INFINITY)
        );
    }

    #[test]
    fn nominal_levels_are_the_two_sided_tails() {
        let fixed = nominal_level(1.959963984540054);
        // statrs's erfc is good to about 1e-10 relative: 0.04999999999775.
        assert!((fixed - 0.05).abs() < 1e-11, "{fixed:e}");
        // ldbounds prints 1.0777e-06 for the first of five O'Brien-Fleming looks.
        let c = boundaries(0.05, &EQUAL_5, Spending::OBrienFleming).unwrap();
        assert!((nominal_level(c[0]) - 1.0777e-6).abs() < 1e-10);
        assert_eq!(nominal_level(f64::INFINITY), 0.0);
    }

    #[test]
    fn repeated_intervals_widen_with_an_estimated_variance() {
        let c = 2.437977;
        assert_eq!(
            repeated_interval(1.0, 0.5, None, c),
            (1.0 - c * 0.5, 1.0 + c * 0.5)
        );
        assert_eq!(repeated_interval(3.0, 0.0, Some(4.0), c), (3.0, 3.0));
        assert_eq!(repeated_interval(3.0, 0.0, None, f64::INFINITY), (3.0, 3.0));
        let half = |df| {
            let (lo, hi) = repeated_interval(0.0, 1.0, df, c);
            assert_eq!(lo, -hi);
            hi
        };
        // Student's t at the same nominal level, `t.isf(norm.sf(2.437977),
        // v)` in scipy 1.17.1, on both sides of the switch to the expansion.
        for (v, scipy) in T_QUANTILES {
            let q = half(Some(v));
            assert!((q - scipy).abs() < 1e-9, "{v}: {q} vs {scipy}");
        }
        // Fewer degrees of freedom, wider; many approach the normal case
        // from above.
        let widths: Vec<f64> = [3.0, 10.0, 100.0, 1e4, 2e4, 1e6, 1e12]
            .map(|df| half(Some(df)))
            .to_vec();
        assert!(widths.windows(2).all(|w| w[0] > w[1]), "{widths:?}");
        assert!(widths.iter().all(|&w| w > c), "{widths:?}");
        assert!(widths[6] - c < 1e-11, "{widths:?}");
        assert_eq!(half(Some(f64::INFINITY)), c);
        let (lo, hi) = repeated_interval(0.0, 1.0, Some(0.0), c);
        assert!(lo.is_nan() && hi.is_nan());
    }

    /// `scipy.stats.t.isf(scipy.stats.norm.sf(2.437977), v)`.
    const T_QUANTILES: [(f64, f64); 4] = [
        (10.0, 2.9406248653120164),
        (1e4, 2.438400286244289),
        (1e6, 2.437981232171615),
        (1e8, 2.437977042321647),
    ];
}
