//! The smallest change a sequential campaign judged by boot can detect,
//! stated before it measures: from the spread of the boots' means it has
//! seen (an A/A pilot, or its first round), its budget of rounds and the
//! boots each round adds. docs/statistics.md, "Under KVM".

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::error::{Side, StatsError};
use super::options::CompareOptions;
use super::sequential::{boundaries, repeated_interval};
use crate::model::Sequential;

/// The power the smallest detectable change is stated at: 80%, the
/// conventional power of a sample-size calculation (Cohen 1988), chosen
/// before any figure was computed.
pub const POWER: f64 = 0.8;

/// The boots each round of a campaign adds on each side: 2 A (A and A′)
/// and 1 B in the A, B, A′ order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BootsPerRound {
    pub a: usize,
    pub b: usize,
}

/// What a campaign judged by boot can resolve at its budget's last look,
/// at the noise it has seen. All percentages are of A's mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Detectable {
    /// The coefficient of variation of one boot's mean the figures are
    /// computed at, percent: given, or estimated from the boots' means.
    pub boot_cv_pct: f64,
    /// The degrees of freedom of that estimate (boots seen less one per
    /// side with boots); `None` when the CV was given.
    pub boot_cv_df: Option<usize>,
    /// Boots at the last look: A's and B's.
    pub a_boots: usize,
    pub b_boots: usize,
    /// The last look's group-sequential boundary c_K on the normal scale.
    pub critical: f64,
    /// Welch-Satterthwaite degrees of freedom at the last look, for equal
    /// spreads on both sides.
    pub df: f64,
    /// The Student-t quantile the last look's repeated interval is drawn
    /// with: t_df at the nominal level of c_K.
    pub quantile: f64,
    /// The expected half-width of the last look's repeated interval at no
    /// change, percent: its upper side, `100·(e^h − 1)` (on the log scale
    /// the interval is a little wider above than below).
    pub half_width_pct: f64,
    /// The smallest fall (negative) and rise (positive) of B's mean that
    /// the last look calls with probability [`POWER`]: its interval must
    /// clear the ±`noise_pct` band, not only 0.
    pub fall_pct: f64,
    pub rise_pct: f64,
    /// Whether "no clear difference" (the interval wholly inside
    /// ±`noise_pct`) can be reached at the last look: the expected
    /// half-width is below the band.
    pub band_reachable: bool,
    /// The fewest rounds of the same boots and spending whose expected
    /// last-look half-width is below the band (each such budget's own
    /// boundary and degrees of freedom); `None` beyond
    /// [`MAX_ROUNDS_FOR_BAND`]. At most K when `band_reachable`.
    pub rounds_for_band: Option<u32>,
}

/// How far [`Detectable::rounds_for_band`] looks: 32 rounds, eight times
/// the automatic schedule's most (`model::sequential::AUTO_MAX_ROUNDS`),
/// 96 boots of A, B, A′, past any budget a lane would run.
pub const MAX_ROUNDS_FOR_BAND: u32 = 32;

/// [`detectable_change_at`] at the spread of the boots' means seen so far:
/// the pooled standard deviation of A's boot means about A's mean and of
/// B's about B's, over A's mean,
/// `s = √((Σ_A (x − m_A)² + Σ_B (x − m_B)²) / (n_A − 1 + n_B − 1)) / m_A`,
/// with `n_A + n_B − 2` degrees of freedom (an A/A pilot, or a first round
/// of A, B, A′: two A boots and one B boot, one degree of freedom).
///
/// Errors: no means on a side ([`StatsError::NoSamples`]), a mean that is
/// not finite ([`StatsError::NotFinite`], its boot named, index 0), or one
/// that is not positive or no second boot on either side
/// ([`StatsError::NoiseUnmeasurable`]); and [`detectable_change_at`]'s.
pub fn detectable_change(
    a_means: &[f64],
    b_means: &[f64],
    budget: &Sequential,
    per_round: BootsPerRound,
    options: &CompareOptions,
) -> Result<Detectable, StatsError> {
    for (side, means) in [(Side::A, a_means), (Side::B, b_means)] {
        if means.is_empty() {
            return Err(StatsError::NoSamples { side });
        }
        if let Some((boot, &value)) = means.iter().enumerate().find(|(_, x)| !x.is_finite()) {
            return Err(StatsError::NotFinite {
                side,
                boot,
                index: 0,
                value,
            });
        }
        if means.iter().any(|&x| x <= 0.0) {
            return Err(StatsError::NoiseUnmeasurable {
                why: "a boot's mean is not positive",
            });
        }
    }
    let df = a_means.len() + b_means.len() - 2;
    if df == 0 {
        return Err(StatsError::NoiseUnmeasurable {
            why: "one boot a side shows no spread between boots",
        });
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let squares = |v: &[f64]| {
        let m = mean(v);
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>()
    };
    let pooled = ((squares(a_means) + squares(b_means)) / df as f64).sqrt();
    let cv = pooled / mean(a_means) * 100.0;
    let mut detectable = detectable_change_at(cv, budget, per_round, options)?;
    detectable.boot_cv_df = Some(df);
    Ok(detectable)
}

/// The smallest change a sequential campaign judged by boot detects at its
/// last look, for a boot mean's coefficient of variation `boot_cv_pct`
/// (percent), a budget of K = `budget.rounds` rounds spent as
/// `budget.spending`, and `per_round` boots a side each round; `alpha` and
/// the band (`noise_pct`) come from `options`.
///
/// At the last look A has n_A = a·K boots and B n_B = b·K. The interval
/// [`super::compare`] draws there is Welch's t on the log of the ratio of
/// the means at the look's nominal level, so with σ = `boot_cv_pct`/100 on
/// both sides:
///
/// - `se = σ·√(1/n_A + 1/n_B)`, and
///   `df = (1/n_A + 1/n_B)² / (1/(n_A²(n_A − 1)) + 1/(n_B²(n_B − 1)))`
///   (Welch-Satterthwaite with equal spreads);
/// - `c_K` is the last of [`boundaries`] at fractions k/K, and
///   `q = t_df⁻¹(1 − p_K/2)` with `p_K = nominal_level(c_K)`, as
///   [`repeated_interval`] draws it; the half-width is `h = q·se`;
/// - a change is called when the interval clears the band, so B's log
///   ratio must lie beyond `ln(1 ± band)` by h, and by
///   `z = t_df⁻¹(POWER)·se` more to do so with probability [`POWER`]
///   (the usual (t_{1−α/2} + t_{1−β})·se of a t test's sample size):
///   `fall = 100·((1 − band)·e^{−(h + z)} − 1)`,
///   `rise = 100·((1 + band)·e^{h + z} − 1)`;
/// - "no clear difference" needs the interval inside the band, at no
///   change `h < ln(1 + band)`.
///
/// This is the last look alone, with the spread taken as known: a
/// campaign may also decide earlier, and its estimated spread varies, so
/// its power over all looks differs a little (78.5–83.3% simulated at
/// the computed fall, results/error-rates/kvm.md). With one B boot a round
/// and `min_samples` 3, no look before the third decides by boot.
/// Errors: a CV that is not finite and positive, no rounds or no boots
/// ([`StatsError::ScenarioInvalid`]), or options out of range.
pub fn detectable_change_at(
    boot_cv_pct: f64,
    budget: &Sequential,
    per_round: BootsPerRound,
    options: &CompareOptions,
) -> Result<Detectable, StatsError> {
    options.validate()?;
    let invalid = |field| Err(StatsError::ScenarioInvalid { field });
    if !(boot_cv_pct > 0.0 && boot_cv_pct.is_finite()) {
        return invalid("boot_cv_pct");
    }
    if budget.rounds == 0 {
        return invalid("rounds");
    }
    if per_round.a == 0 || per_round.b == 0 {
        return invalid("boots");
    }
    let last = last_look(boot_cv_pct, budget, per_round, options.alpha)?;
    let band = options.noise_pct / 100.0;
    let band_log = (1.0 + band).ln();
    let reaches = |rounds: u32| -> Result<bool, StatsError> {
        let budget = Sequential { rounds, ..*budget };
        Ok(last_look(boot_cv_pct, &budget, per_round, options.alpha)?.half < band_log)
    };
    // The half-width falls with the rounds (se as 1/√K, faster than any
    // boundary rises), so the fewest that reach the band are bisected.
    let first = (1..=MAX_ROUNDS_FOR_BAND)
        .find(|&k| per_round.a * k as usize >= 2 && per_round.b * k as usize >= 2)
        .expect("two boots a side within a few rounds");
    let rounds_for_band = if reaches(MAX_ROUNDS_FOR_BAND)? {
        let (mut lo, mut hi) = (first, MAX_ROUNDS_FOR_BAND);
        if reaches(lo)? {
            hi = lo;
        }
        // Invariant: hi reaches the band, lo does not (unless lo == hi).
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if reaches(mid)? {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Some(hi)
    } else {
        None
    };
    let (h, power) = (last.half, last.power);
    Ok(Detectable {
        boot_cv_pct,
        boot_cv_df: None,
        a_boots: last.a_boots,
        b_boots: last.b_boots,
        critical: last.critical,
        df: last.df,
        quantile: last.quantile,
        half_width_pct: (h.exp() - 1.0) * 100.0,
        fall_pct: ((1.0 - band) * (-(h + power)).exp() - 1.0) * 100.0,
        rise_pct: ((1.0 + band) * (h + power).exp() - 1.0) * 100.0,
        band_reachable: h < band_log,
        rounds_for_band,
    })
}

/// The last look of a budget: its boots, boundary, degrees of freedom,
/// quantile, and on the log scale the half-width h and the power term.
struct LastLook {
    a_boots: usize,
    b_boots: usize,
    critical: f64,
    df: f64,
    quantile: f64,
    half: f64,
    power: f64,
}

fn last_look(
    boot_cv_pct: f64,
    budget: &Sequential,
    per_round: BootsPerRound,
    alpha: f64,
) -> Result<LastLook, StatsError> {
    let rounds = budget.rounds as usize;
    let (na, nb) = (per_round.a * rounds, per_round.b * rounds);
    if na < 2 || nb < 2 {
        // Welch's interval needs two boots a side at the last look.
        return Err(StatsError::ScenarioInvalid { field: "boots" });
    }
    let fractions: Vec<f64> = (1..=budget.rounds)
        .map(|k| f64::from(k) / f64::from(budget.rounds))
        .collect();
    let critical = *boundaries(alpha, &fractions, budget.spending)?
        .last()
        .expect("one fraction a round");
    let (fa, fb) = (na as f64, nb as f64);
    let share = 1.0 / fa + 1.0 / fb;
    let df = share * share / (1.0 / (fa * fa * (fa - 1.0)) + 1.0 / (fb * fb * (fb - 1.0)));
    let se = boot_cv_pct / 100.0 * share.sqrt();
    let quantile = repeated_interval(0.0, 1.0, Some(df), critical).1;
    let power = StudentsT::new(0.0, 1.0, df)
        .map_err(|_| StatsError::ScenarioInvalid { field: "boots" })?
        .inverse_cdf(POWER)
        * se;
    Ok(LastLook {
        a_boots: na,
        b_boots: nb,
        critical,
        df,
        quantile,
        half: quantile * se,
        power,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Spending;
    use crate::stats::{MIN_RESAMPLES, RoundsScenario, sequential_rates};

    const ABA: BootsPerRound = BootsPerRound { a: 2, b: 1 };

    fn budget(rounds: u32) -> Sequential {
        Sequential {
            rounds,
            samples: 3,
            time: None,
            spending: Spending::Pocock,
        }
    }

    fn options() -> CompareOptions {
        CompareOptions {
            resamples: MIN_RESAMPLES,
            by_boot: true,
            ..CompareOptions::default()
        }
    }

    #[test]
    fn the_interval_shrinks_as_one_over_root_boots() {
        let at = |rounds| detectable_change_at(3.0, &budget(rounds), ABA, &options()).unwrap();
        let (four, sixteen) = (at(4), at(16));
        assert_eq!((four.a_boots, four.b_boots), (8, 4));
        assert_eq!((sixteen.a_boots, sixteen.b_boots), (32, 16));
        // The standard error part exactly: four times the boots, half of it.
        let se = |d: &Detectable| (d.half_width_pct / 100.0).ln_1p() / d.quantile;
        assert!((se(&sixteen) / se(&four) - 0.5).abs() < 1e-12);
        // The whole half-width nearly so: Pocock's c_K rises with the
        // looks (2.361 at K = 4) while the t quantile falls with the
        // degrees of freedom (9.9 at K = 4, 44.9 at 16).
        let ratio = sixteen.half_width_pct / four.half_width_pct;
        assert!((ratio - 0.5).abs() < 0.1, "{ratio}");
        assert!(sixteen.rise_pct < four.rise_pct && sixteen.fall_pct > four.fall_pct);
        // Beyond the band by the half-width and the power term.
        for d in [four, sixteen] {
            assert!(d.fall_pct < -2.0 - d.half_width_pct * 0.9, "{d:?}");
            assert!(d.rise_pct > 2.0 + d.half_width_pct, "{d:?}");
        }
    }

    #[test]
    fn the_band_is_reachable_only_when_the_interval_fits_in_it() {
        let at = |cv, rounds| detectable_change_at(cv, &budget(rounds), ABA, &options()).unwrap();
        let quiet = at(0.5, 4);
        assert!(
            quiet.band_reachable && quiet.half_width_pct < 2.0,
            "{quiet:?}"
        );
        assert!(quiet.rounds_for_band.is_some_and(|k| k <= 4), "{quiet:?}");
        let noisy = at(3.0, 4);
        assert!(
            !noisy.band_reachable && noisy.half_width_pct > 2.0,
            "{noisy:?}"
        );
        let k = noisy.rounds_for_band.expect("within 32 rounds");
        assert!(k > 4, "{noisy:?}");
        // The fewest: the band is reached at k rounds, not at k − 1.
        assert!(at(3.0, k).band_reachable && !at(3.0, k - 1).band_reachable);
        assert_eq!(at(20.0, 4).rounds_for_band, None);
    }

    #[test]
    fn the_spread_is_estimated_from_the_boots_means() {
        // A: 100, 102 (sum of squares 2); B: 97 alone (0): s = √2, over
        // A's mean 101.
        let d = detectable_change(&[100.0, 102.0], &[97.0], &budget(4), ABA, &options()).unwrap();
        assert_eq!(d.boot_cv_df, Some(1));
        assert!((d.boot_cv_pct - 2.0_f64.sqrt() / 101.0 * 100.0).abs() < 1e-12);
        let given = detectable_change_at(d.boot_cv_pct, &budget(4), ABA, &options()).unwrap();
        assert_eq!(d.fall_pct, given.fall_pct);
        let refuse = |a: &[f64], b: &[f64]| detectable_change(a, b, &budget(4), ABA, &options());
        assert!(matches!(
            refuse(&[100.0], &[97.0]),
            Err(StatsError::NoiseUnmeasurable { .. })
        ));
        assert_eq!(
            refuse(&[], &[97.0]),
            Err(StatsError::NoSamples { side: Side::A })
        );
        assert!(matches!(
            refuse(&[100.0, f64::NAN], &[97.0]),
            Err(StatsError::NotFinite { boot: 1, .. })
        ));
        assert_eq!(
            detectable_change_at(3.0, &budget(1), ABA, &options()),
            Err(StatsError::ScenarioInvalid { field: "boots" })
        );
    }

    /// At the computed fall, the simulated campaigns call it about
    /// [`POWER`] of the time. 5% within-boot and 5% between-boot CV with 3
    /// samples a boot is a boot CV of √(25 + 25/3) = 5.77%; 4 rounds of
    /// A, B, A′ (8 A boots, 4 B). An unoptimised test build takes about
    /// 9 ms a comparison (the bootstrap of the median, which the verdict
    /// by boot does not use), two a look, so 50 campaigns keep this to a
    /// few seconds: 80% then has a binomial standard error of 5.7 points,
    /// and the tolerance is three of them (seed 11 gave 84%, the fall
    /// computed being −15.16%). `examples/kvm-rates.rs`
    /// simulates 2 000 campaigns at each detectable fall
    /// (results/error-rates/kvm.md).
    #[test]
    fn the_simulated_power_at_the_detectable_fall_is_about_eighty_percent() {
        let (within, between, per_boot) = (5.0_f64, 5.0_f64, 3);
        let boot_cv = (between.powi(2) + within.powi(2) / per_boot as f64).sqrt();
        let d = detectable_change_at(boot_cv, &budget(4), ABA, &options()).unwrap();
        let scenario = RoundsScenario {
            a_boots: 2,
            b_boots: 1,
            per_boot,
            rounds: 4,
            spending: Spending::Pocock,
            within_cv_pct: within,
            between_cv_pct: between,
            shift_pct: d.fall_pct,
            simulations: 50,
            seed: 11,
        };
        let rates = sequential_rates(&scenario, &options()).unwrap();
        assert!(
            (rates.sequential_calls - POWER).abs() < 0.17,
            "{d:?}: {rates:?}"
        );
    }
}
