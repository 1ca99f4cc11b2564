//! Descriptive statistics of one group of samples, and the comparisons of
//! whole groups that need no model: % change, return drift and whether B
//! lies entirely beyond A.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The confidence level of every interval this module reports.
pub const CONFIDENCE: f64 = 0.95;

/// A closed interval `[lo, hi]`, such as a 95% confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    /// Whether `x` lies in `[lo, hi]`.
    pub fn contains(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }

    /// Whether the whole interval lies strictly outside `[-band, +band]`,
    /// on one side of it.
    pub fn clear_of_band(&self, band: f64) -> bool {
        self.lo > band || self.hi < -band
    }

    /// Whether the interval reaches beyond `[-band, +band]` on both sides.
    pub fn spans_band(&self, band: f64) -> bool {
        self.lo < -band && self.hi > band
    }

    /// Whether the whole interval lies strictly inside `(-band, +band)`:
    /// every change it allows is smaller than the band.
    pub fn within_band(&self, band: f64) -> bool {
        self.lo > -band && self.hi < band
    }
}

/// Summary of one group of samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// The middle value; the mean of the two middle values for an even `n`.
    pub median: f64,
    /// Sample standard deviation (n − 1); 0 for fewer than two samples.
    pub sd: f64,
    /// Coefficient of variation, `sd / |mean|` in percent; `None` when the
    /// mean is 0.
    pub cv_pct: Option<f64>,
    pub min: f64,
    pub max: f64,
    /// The 95% confidence interval of the mean, Student t with n − 1
    /// degrees of freedom; `None` for fewer than two samples.
    pub mean_ci: Option<Interval>,
}

impl Summary {
    /// Summarise `values`; `None` when there are none or any is not finite
    /// (NaN or infinite).
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let n = values.len();
        let mean = mean(values);
        let sd = if n > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(Summary {
            n,
            mean,
            median: median(values),
            sd,
            cv_pct: (mean != 0.0).then(|| sd / mean.abs() * 100.0),
            min,
            max,
            mean_ci: mean_ci(mean, sd, n),
        })
    }

    /// Coefficient of variation in percent, if the mean is not zero.
    pub fn cv_pct(&self) -> Option<f64> {
        self.cv_pct
    }
}

/// The arithmetic mean; NaN for an empty slice.
pub(crate) fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// The median; NaN for an empty slice. Sorts a copy, so `values` may be in
/// any order.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    median_of_sorted(&sorted)
}

/// The median of values already in ascending order; NaN when empty.
pub(crate) fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The `q` quantile (0 ≤ q ≤ 1) of values in ascending order, interpolating
/// linearly between order statistics: numpy's default
/// (`np.quantile(x, q, method="linear")`, Hyndman & Fan type 7). NaN when
/// empty.
pub(crate) fn quantile_of_sorted(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let below = h.floor() as usize;
    let above = (below + 1).min(sorted.len() - 1);
    sorted[below] + (h - below as f64) * (sorted[above] - sorted[below])
}

/// The Student-t 95% confidence interval of a mean from `n` samples with
/// sample standard deviation `sd`; `None` for fewer than two samples.
fn mean_ci(mean: f64, sd: f64, n: usize) -> Option<Interval> {
    if n < 2 {
        return None;
    }
    // `StudentsT::new` cannot fail here: the freedom is at least 1.
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64).ok()?;
    let half = t.inverse_cdf(1.0 - (1.0 - CONFIDENCE) / 2.0) * sd / (n as f64).sqrt();
    Some(Interval {
        lo: mean - half,
        hi: mean + half,
    })
}

/// `(new − old) / |old|` in percent, if `old` is not zero.
pub fn pct_change(old: f64, new: f64) -> Option<f64> {
    (old != 0.0).then(|| (new - old) / old.abs() * 100.0)
}

/// Return drift: the mean of the last A boot (A′) against the mean of the
/// first, in percent. `None` with fewer than two boots or a zero first
/// mean. It shows how far the baseline moved between boots of the same
/// kernel, which bounds the changes one run can resolve.
pub fn drift_pct(a_boots: &[Summary]) -> Option<f64> {
    match a_boots {
        [first, .., last] => pct_change(first.mean, last.mean),
        _ => None,
    }
}

/// Where the B samples lie relative to every A sample (all A boots).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Separation {
    /// Every B sample is below the smallest sample of every A boot.
    AllBelow,
    /// Every B sample is above the largest sample of every A boot.
    AllAbove,
    /// Some B sample lies within the range of some A boot.
    Overlap,
}

/// The seed's check: does every B sample lie below both A groups (A and A′),
/// or above both? Strict: a B sample equal to an A sample overlaps. `None`
/// when either side has no samples.
pub fn separation(a_boots: &[Summary], b: &Summary) -> Option<Separation> {
    let a_min = a_boots.iter().map(|s| s.min).reduce(f64::min)?;
    let a_max = a_boots.iter().map(|s| s.max).reduce(f64::max)?;
    Some(if b.max < a_min {
        Separation::AllBelow
    } else if b.min > a_max {
        Separation::AllAbove
    } else {
        Separation::Overlap
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::reference::{A_BOOT_1, A_BOOT_2, B_BOOT_1, assert_close};

    #[test]
    fn summary_matches_hand_computed_values() {
        // numpy: np.std([2,4,4,4,5,5,7,9], ddof=1) = 2.138089935299395.
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert_eq!(s.mean, 5.0);
        assert_eq!(s.median, 4.5);
        assert!((s.sd - 2.138_089_935_299_395).abs() < 1e-12);
        assert_eq!((s.min, s.max), (2.0, 9.0));
        assert!((s.cv_pct().unwrap() - 42.761_798_705_987_9).abs() < 1e-9);
    }

    #[test]
    fn summary_of_pageout_boots_matches_numpy_and_scipy() {
        // mean: np.mean(x); median: np.median(x); sd: np.std(x, ddof=1);
        // cv: sd / abs(mean) * 100; ci: scipy.stats.t.interval(0.95, n - 1,
        // loc=mean, scale=sd / np.sqrt(n)).
        let cases: [(&[f64], [f64; 6]); 3] = [
            (
                &A_BOOT_1,
                [
                    23.829444444444448,
                    23.723,
                    0.624977421814403,
                    2.6227108368869634,
                    23.349044271406697,
                    24.3098446174822,
                ],
            ),
            (
                &A_BOOT_2,
                [
                    23.517444444444443,
                    23.415,
                    0.6153541888845625,
                    2.6165861275370355,
                    23.044441343050106,
                    23.99044754583878,
                ],
            ),
            (
                &B_BOOT_1,
                [
                    13.141444444444444,
                    13.083,
                    0.21326574450149702,
                    1.622848579568856,
                    12.977513881538496,
                    13.305375007350392,
                ],
            ),
        ];
        for (values, [mean, median, sd, cv, lo, hi]) in cases {
            let s = Summary::of(values).unwrap();
            assert_close(s.mean, mean, 1e-12);
            assert_close(s.median, median, 1e-12);
            assert_close(s.sd, sd, 1e-12);
            assert_close(s.cv_pct.unwrap(), cv, 1e-12);
            let ci = s.mean_ci.unwrap();
            assert_close(ci.lo, lo, 1e-10);
            assert_close(ci.hi, hi, 1e-10);
        }
    }

    #[test]
    fn pooled_a_median_averages_the_middle_pair() {
        // np.median(np.concatenate([A_BOOT_1, A_BOOT_2])) = 23.6995
        let pooled: Vec<f64> = A_BOOT_1.iter().chain(&A_BOOT_2).copied().collect();
        assert_close(median(&pooled), 23.6995, 1e-12);
    }

    #[test]
    fn quantile_interpolates_like_numpy() {
        // np.quantile([1, 2, 4, 8, 16], [0, 0.025, 0.5, 0.975, 1])
        //   = [1.0, 1.1, 4.0, 15.2, 16.0]
        let sorted = [1.0, 2.0, 4.0, 8.0, 16.0];
        for (q, want) in [
            (0.0, 1.0),
            (0.025, 1.1),
            (0.5, 4.0),
            (0.975, 15.2),
            (1.0, 16.0),
        ] {
            assert_close(quantile_of_sorted(&sorted, q), want, 1e-12);
        }
        assert_eq!(quantile_of_sorted(&[7.0], 0.975), 7.0);
        assert!(quantile_of_sorted(&[], 0.5).is_nan());
    }

    #[test]
    fn degenerate_inputs_do_not_divide_by_zero() {
        assert_eq!(Summary::of(&[]), None);
        let one = Summary::of(&[3.0]).unwrap();
        assert_eq!((one.sd, one.median, one.mean_ci), (0.0, 3.0, None));
        let zeros = Summary::of(&[0.0, 0.0]).unwrap();
        assert_eq!(zeros.cv_pct(), None);
        assert_eq!(zeros.mean_ci, Some(Interval { lo: 0.0, hi: 0.0 }));
        assert_eq!(pct_change(0.0, 1.0), None);
    }

    #[test]
    fn non_finite_samples_are_refused() {
        assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
        assert_eq!(Summary::of(&[f64::INFINITY, 1.0]), None);
    }

    #[test]
    fn pct_change_of_a_negative_baseline_keeps_the_sign_of_the_move() {
        assert_eq!(pct_change(-10.0, -5.0), Some(50.0));
        assert_eq!(pct_change(10.0, 5.0), Some(-50.0));
    }

    #[test]
    fn the_seeds_headline_change_is_reproduced() {
        // Seed 000: PAGEOUT 23.903 ms (A) → 13.113 ms (counter) is −45.14%
        // against Base A alone (the mail's −44.69% pools A and A').
        let pooled_a = (23.903 + 23.514) / 2.0;
        let change = pct_change(pooled_a, 13.113).unwrap();
        assert!((change - -44.689).abs() < 0.01, "{change}");
    }

    #[test]
    fn drift_compares_the_last_a_boot_with_the_first() {
        // (np.mean(A_BOOT_2) - np.mean(A_BOOT_1)) / np.mean(A_BOOT_1) * 100
        let boots = [
            Summary::of(&A_BOOT_1).unwrap(),
            Summary::of(&A_BOOT_2).unwrap(),
        ];
        assert_close(drift_pct(&boots).unwrap(), -1.3093045485277515, 1e-10);
        assert_eq!(drift_pct(&boots[..1]), None);
        let three = [boots[0], Summary::of(&[100.0]).unwrap(), boots[1]];
        assert_eq!(drift_pct(&three), drift_pct(&boots));
    }

    #[test]
    fn separation_needs_every_b_sample_beyond_both_a_boots() {
        let s = |v: &[f64]| Summary::of(v).unwrap();
        let a = [s(&A_BOOT_1), s(&A_BOOT_2)];
        assert_eq!(separation(&a, &s(&B_BOOT_1)), Some(Separation::AllBelow));
        assert_eq!(
            separation(&a, &s(&[30.0, 31.0])),
            Some(Separation::AllAbove)
        );
        // Below A but not below A′ (A′'s minimum is 22.603).
        assert_eq!(separation(&a, &s(&[22.610])), Some(Separation::Overlap));
        // A tie with the minimum is not "below".
        assert_eq!(separation(&a, &s(&[22.603])), Some(Separation::Overlap));
        assert_eq!(separation(&[], &s(&[1.0])), None);
    }
}
