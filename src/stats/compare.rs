//! The entry point: one metric's A and B samples, grouped by boot, in; one
//! [`Comparison`] with every statistic and the verdict out.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::bootstrap::{Change, bootstrap_changes};
use super::describe::{Interval, Separation, Summary, drift_pct, separation};
use super::error::{Side, StatsError};
use super::hypothesis::{MannWhitney, WelchTest, mann_whitney_u, welch_t_test};
use super::options::{CompareOptions, SequentialLook};
use super::sequential::Spending;
use super::verdict::{Evidence, Judgement, decide};
use crate::model::Direction;

/// Everything the statistics say about one metric, B against A. This is
/// the documented contract stored in results and rendered by reports; see
/// docs/statistics.md.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub direction: Direction,
    /// All A samples, pooled over boots, a boot that repeats an earlier
    /// one value for value counted once (see [`compare`]).
    pub a: Summary,
    /// All B samples, pooled over boots, likewise.
    pub b: Summary,
    /// A's samples left out of `a` because their boot repeated an earlier
    /// A boot value for value.
    pub a_repeated: usize,
    /// B's, likewise.
    pub b_repeated: usize,
    /// Each A boot in boot order (A, A′, …); `None` for a boot without
    /// samples of this metric. Each carries its within-boot CV.
    pub a_boots: Vec<Option<Summary>>,
    /// Each B boot in boot order.
    pub b_boots: Vec<Option<Summary>>,
    /// The last A boot's mean against the first's, in percent; `None` with
    /// one A boot, or when either of those has no samples.
    pub drift_pct: Option<f64>,
    /// The largest within-boot CV over all A and B boots, in percent.
    pub max_boot_cv_pct: Option<f64>,
    /// B's mean against A's, in percent, with its bootstrap interval;
    /// `None` when A's mean is 0.
    pub mean_change: Option<Change>,
    /// B's median against A's, in percent, with its bootstrap interval;
    /// `None` when A's median is 0.
    pub median_change: Option<Change>,
    /// `None` with fewer than two samples on a side, or no variance at all.
    pub welch: Option<WelchTest>,
    pub mann_whitney: MannWhitney,
    /// Whether every B sample lies below, or above, every A boot.
    pub separation: Separation,
    pub verdict: Judgement,
    /// At a look of a sequential campaign: the look, and the boundary its
    /// repeated interval (`mean_change`'s) was drawn with.
    pub sequential: Option<SequentialOutcome>,
    /// The options the comparison ran with, so that it can be reproduced.
    pub options: CompareOptions,
}

/// How a look's repeated confidence interval was drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SequentialOutcome {
    pub look: super::options::SequentialLook,
    /// The look's boundary on the normal scale (`stats::sequential`).
    pub critical: f64,
    /// Its two-sided nominal level, at which the interval's Welch t
    /// quantile is taken.
    pub level: f64,
}

impl Comparison {
    /// Whether rule 3 decided: the metric has a negligible level and every
    /// A and B sample lies within it.
    pub fn negligible(&self) -> bool {
        self.options
            .negligible
            .is_some_and(|level| super::verdict::both_negligible(&self.a, &self.b, level))
    }
}

/// Compare one metric: `a_boots` and `b_boots` hold its samples, one list
/// per boot in boot order (A, A′, …). The groups are pooled over boots for
/// the tests and intervals; per-boot summaries give the drift and CVs.
///
/// A boot whose samples repeat an earlier boot's of the same side value for
/// value (A′ in a deterministic lane, which runs exactly as A did) adds no
/// information about the spread: pooling it would count every sample
/// twice and narrow the interval by about √2 for nothing. It is left out
/// of the pool (`a_repeated`, `b_repeated`) and still counts for the
/// drift, which it makes 0. A constant boot pools as before: without a
/// spread there is nothing to count twice.
///
/// Errors when the options are out of range, a sample is not finite, or a
/// variant has no samples at all. Too few samples are not an error: the
/// verdict says so.
pub fn compare<S: AsRef<[f64]>>(
    a_boots: &[S],
    b_boots: &[S],
    direction: Direction,
    options: &CompareOptions,
) -> Result<Comparison, StatsError> {
    options.validate()?;
    // Judged by boot, every boot ran in a layout of its own: two that agree
    // value for value (a count of 0, 0, 1 flushes) are two layouts that
    // happened to agree, not one run counted twice.
    let skip_repeats = !options.by_boot;
    let (a_pool, a_repeated) = pooled(a_boots, Side::A, skip_repeats)?;
    let (b_pool, b_repeated) = pooled(b_boots, Side::B, skip_repeats)?;
    let per_boot = |boots: &[S]| -> Vec<Option<Summary>> {
        boots.iter().map(|s| Summary::of(s.as_ref())).collect()
    };
    let (a_per_boot, b_per_boot) = (per_boot(a_boots), per_boot(b_boots));
    // Judged by boot, each boot's mean is one observation; every boot runs
    // in a layout of its own, so the first and last A boots differ by
    // design and their difference is not a drift: the between-boot spread
    // is in the interval instead.
    let (a, b, drift) = if options.by_boot {
        (boot_means(&a_pool), boot_means(&b_pool), None)
    } else {
        let drift = match a_per_boot.as_slice() {
            [Some(first), .., Some(last)] => drift_pct(&[*first, *last]),
            _ => None,
        };
        (a_pool.concat(), b_pool.concat(), drift)
    };
    let a_summary = Summary::of(&a).expect("pooled() returns finite, non-empty samples");
    let b_summary = Summary::of(&b).expect("pooled() returns finite, non-empty samples");
    let max_boot_cv_pct = a_per_boot
        .iter()
        .chain(&b_per_boot)
        .filter_map(|s| s.and_then(|s| s.cv_pct))
        .reduce(f64::max);
    let a_present: Vec<Summary> = a_per_boot.iter().flatten().copied().collect();
    let welch = welch_t_test(&a, &b);
    let mut changes = bootstrap_changes(&a, &b, options.resamples, options.seed)
        .expect("both groups are non-empty and resamples ≥ MIN_RESAMPLES");
    if options.by_boot {
        // A percentile bootstrap over three to five boot means is far too
        // narrow (it cannot reach past the extreme means); Welch's t
        // interval has the right width at any n.
        changes.mean = welch_change(
            &a_summary,
            &b_summary,
            welch.as_ref(),
            1.0 - super::describe::CONFIDENCE,
        );
    }
    // At a look of a sequential campaign, the interval is the repeated
    // confidence interval: Welch's t at the look's nominal level.
    let sequential = match options.sequential {
        Some(look) => {
            let critical = critical(options.alpha, &look)?;
            let level = super::sequential::nominal_level(critical);
            changes.mean = welch_change(&a_summary, &b_summary, welch.as_ref(), level);
            Some(SequentialOutcome {
                look,
                critical,
                level,
            })
        }
        None => None,
    };
    // The separation check is about samples: B's all beyond every A boot.
    let b_samples = Summary::of(&b_pool.concat()).expect("pooled() returns non-empty samples");
    let evidence = Evidence {
        direction,
        a: &a_summary,
        b: &b_summary,
        welch: welch.as_ref(),
        mean_change: changes.mean.as_ref(),
        drift_pct: drift,
        boots_repeat: a_boots.len() >= 2 && repeat_exactly(a_boots) && repeat_exactly(b_boots),
    };
    let verdict = decide(&evidence, options, sequential.as_ref().map(|s| &s.look));
    Ok(Comparison {
        direction,
        a: a_summary,
        b: b_summary,
        a_repeated,
        b_repeated,
        drift_pct: drift,
        max_boot_cv_pct,
        mean_change: changes.mean,
        median_change: changes.median,
        welch,
        mann_whitney: mann_whitney_u(&a, &b).expect("both groups are non-empty"),
        separation: separation(&a_present, &b_samples).expect("A has a non-empty boot"),
        verdict,
        sequential,
        options: *options,
        a_boots: a_per_boot,
        b_boots: b_per_boot,
    })
}

/// Whether every boot's samples equal the first boot's, value for value.
fn repeat_exactly<S: AsRef<[f64]>>(boots: &[S]) -> bool {
    boots
        .iter()
        .all(|b| boots.first().is_some_and(|f| f.as_ref() == b.as_ref()))
}

/// The mean of each boot's samples.
fn boot_means(boots: &[Vec<f64>]) -> Vec<f64> {
    boots.iter().map(|s| super::describe::mean(s)).collect()
}

/// B's mean against A's in percent, with Welch's t interval (two-sided
/// level `level`: 0.05 for 95%) of the ratio of the means, drawn on the
/// log scale: `log(m_B / m_A) ± t · se`, with the delta method's
/// `se = √(s²_A / (n_A m²_A) + s²_B / (n_B m²_B))` and its own
/// Welch-Satterthwaite degrees of freedom, then turned back into a %
/// change. A ratio of two positive means is positive, so the interval
/// never reaches below −100%, where the linear interval of the
/// difference did (seed 000's `guest_irq_ns` at a look: [−12209%,
/// +16409%]). When a mean is not positive it falls back to the linear
/// interval, `(m_B − m_A ± t · se) / |m_A|`, cut at −100% for a quantity
/// no sample has below 0 (B all 0). `None` when A's mean is 0; no
/// interval without a Welch test (fewer than two values on a side),
/// unless both sides are constant, where the change is exact.
pub(super) fn welch_change(
    a: &Summary,
    b: &Summary,
    welch: Option<&WelchTest>,
    level: f64,
) -> Option<Change> {
    let pct = super::describe::pct_change(a.mean, b.mean)?;
    let ci = match welch {
        Some(w) => Some(welch_interval(a, b, w.df, level)?),
        // No Welch test: both sides constant (the change is exact), or a
        // side with a single value (no interval).
        None if a.n >= 2 && b.n >= 2 => Some(Interval { lo: pct, hi: pct }),
        None => None,
    };
    Some(Change { pct, ci })
}

/// [`welch_change`]'s interval, in percent.
fn welch_interval(a: &Summary, b: &Summary, linear_df: f64, level: f64) -> Option<Interval> {
    let quantile = |df: f64| {
        StudentsT::new(0.0, 1.0, df)
            .ok()
            .map(|t| t.inverse_cdf(1.0 - level / 2.0))
    };
    let (na, nb) = (a.n as f64, b.n as f64);
    if a.mean > 0.0 && b.mean > 0.0 {
        let va = a.sd * a.sd / (na * a.mean * a.mean);
        let vb = b.sd * b.sd / (nb * b.mean * b.mean);
        let df = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
        let q = quantile(df)?;
        let centre = (b.mean / a.mean).ln();
        let half = q * (va + vb).sqrt();
        let pct = |x: f64| (x.exp() - 1.0) * 100.0;
        return Some(Interval {
            lo: pct(centre - half),
            hi: pct(centre + half),
        });
    }
    let q = quantile(linear_df)?;
    let se = (a.sd * a.sd / na + b.sd * b.sd / nb).sqrt();
    let scale = |d: f64| d / a.mean.abs() * 100.0;
    let diff = b.mean - a.mean;
    let mut lo = scale(diff - q * se);
    // A quantity that no sample has below 0 cannot fall by more than all
    // of it (B's mean of 0 against A's, whose ratio has no logarithm).
    if a.min >= 0.0 && b.min >= 0.0 && a.mean > 0.0 {
        lo = lo.max(-100.0);
    }
    Some(Interval {
        lo,
        hi: scale(diff + q * se),
    })
}

/// A variant's samples, one list per boot that has any, with how many
/// samples were left out because their boot repeated an earlier one value
/// for value (only with `skip_repeats`); an error when there are none or
/// one is not finite.
fn pooled<S: AsRef<[f64]>>(
    boots: &[S],
    side: Side,
    skip_repeats: bool,
) -> Result<(Vec<Vec<f64>>, usize), StatsError> {
    let mut all = Vec::new();
    let mut repeated = 0;
    for (boot, samples) in boots.iter().enumerate() {
        let samples = samples.as_ref();
        // A constant boot (8192 pages stored, every sample) says the same
        // pooled or not: only a spread can be counted twice.
        let spread = samples.iter().any(|v| *v != samples[0]);
        if skip_repeats
            && spread
            && boots[..boot]
                .iter()
                .any(|earlier| earlier.as_ref() == samples)
        {
            repeated += samples.len();
            continue;
        }
        for (index, &value) in samples.iter().enumerate() {
            if !value.is_finite() {
                return Err(StatsError::NotFinite {
                    side,
                    boot,
                    index,
                    value,
                });
            }
        }
        if !samples.is_empty() {
            all.push(samples.to_vec());
        }
    }
    if all.is_empty() {
        return Err(StatsError::NoSamples { side });
    }
    Ok((all, repeated))
}

/// The boundary of `look` of a sequential campaign (equally spaced looks,
/// fractions k / of: every round adds the same boots), memoized: every
/// metric of a report asks for the same few.
fn critical(alpha: f64, look: &SequentialLook) -> Result<f64, StatsError> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    thread_local! {
        static MEMO: RefCell<HashMap<(u64, u32, Spending), Vec<f64>>> = RefCell::new(HashMap::new());
    }
    if look.look == 0 || look.look > look.of {
        return Err(StatsError::LookOutOfRange {
            look: look.look,
            of: look.of,
        });
    }
    let key = (alpha.to_bits(), look.of, look.spending);
    let at = look.look as usize - 1;
    if let Some(c) = MEMO.with(|m| m.borrow().get(&key).map(|v| v[at])) {
        return Ok(c);
    }
    let fractions: Vec<f64> = (1..=look.of)
        .map(|k| f64::from(k) / f64::from(look.of))
        .collect();
    let all = super::sequential::boundaries(alpha, &fractions, look.spending)?;
    let c = all[at];
    MEMO.with(|m| m.borrow_mut().insert(key, all));
    Ok(c)
}
