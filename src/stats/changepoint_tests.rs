//! Tests of `stats::changepoint`.

use super::*;
use crate::stats::reference::assert_close;

/// A history of `nights` nights of 3 samples around 1.8e8 (seed 000's
/// PAGEOUT ns), each night's centre drawn with a CV of `between` % and
/// each sample around it with `within` %; at each `(night, pct)` of
/// `steps` the level is multiplied by `1 + pct / 100`.
fn history(
    nights: usize,
    steps: &[(usize, f64)],
    within: f64,
    between: f64,
    seed: u64,
) -> Vec<Vec<f64>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..nights)
        .map(|night| {
            let level = steps
                .iter()
                .filter(|(at, _)| *at <= night)
                .fold(1.8e8, |level, (_, pct)| level * (1.0 + pct / 100.0));
            let centre = level * (1.0 + between / 100.0 * standard_normal(&mut rng));
            (0..3)
                .map(|_| centre * (1.0 + within / 100.0 * standard_normal(&mut rng)))
                .collect()
        })
        .collect()
}

/// The deterministic lane's noise: 0.05% within a night, 0.1% between.
fn quiet(nights: usize, steps: &[(usize, f64)], seed: u64) -> Vec<Vec<f64>> {
    history(nights, steps, 0.05, 0.1, seed)
}

/// Nights of one sample each, the given values.
fn constant_nights(levels: &[(f64, usize)]) -> Vec<Vec<f64>> {
    levels
        .iter()
        .flat_map(|&(value, nights)| std::iter::repeat_n(vec![value; 3], nights))
        .collect()
}

fn indices(steps: &[Step]) -> Vec<usize> {
    steps.iter().map(|s| s.index).collect()
}

/// Up 20% at night 5, back down at 12.
const UP_AND_DOWN: [(usize, f64); 2] = [(5, 20.0), (12, -16.666_666_666_666_668)];

#[test]
fn a_welch_statistic_would_miss_clear_steps() {
    // |t| of Welch's test, infinite for two constant sides that differ.
    let abs_t = |a: &[f64], b: &[f64]| match welch_t_test(a, b) {
        Some(w) => w.t.abs(),
        None if mean(a) != mean(b) => f64::INFINITY,
        None => 0.0,
    };
    // The largest over splits of the whole segment into two, or over
    // E-divisive's pairs of sides.
    let max_t = |x: &[f64], pairs: bool| {
        let mut best = 0.0_f64;
        for tau in 2..=x.len() - 2 {
            let ends = if pairs {
                tau + 2..=x.len()
            } else {
                x.len()..=x.len()
            };
            for kappa in ends {
                best = best.max(abs_t(&x[..tau], &x[tau..kappa]));
            }
        }
        best
    };
    let p = |nights: &[Vec<f64>], pairs: bool| {
        let x: Vec<f64> = nights.iter().map(|n| mean(n).ln()).collect();
        let observed = max_t(&x, pairs);
        let mut rng = ChaCha8Rng::seed_from_u64(DEFAULT_SEED);
        let mut order = x.clone();
        let k = (0..999)
            .filter(|_| {
                shuffle(&mut order, &mut rng);
                max_t(&order, pairs) >= observed * (1.0 - 1e-9)
            })
            .count();
        (k + 1) as f64 / 1000.0
    };
    let two = quiet(16, &UP_AND_DOWN, 1);
    assert_eq!(p(&two, false), 0.376);
    let one = quiet(16, &[(9, 20.0)], 1);
    assert_eq!(p(&one, true), 0.049);
    // Both are clear to E-divisive's statistic.
    let opts = ChangePointOptions::default();
    assert_eq!(indices(&change_points(&two, &opts).unwrap()), [5, 12]);
    assert_eq!(indices(&change_points(&one, &opts).unwrap()), [9]);
}

#[test]
fn a_twenty_percent_step_is_found_with_its_interval() {
    let steps = change_points(&quiet(16, &[(9, 20.0)], 1), &ChangePointOptions::default()).unwrap();
    assert_eq!(indices(&steps), [9]);
    let step = steps[0];
    assert_eq!((step.before_nights, step.after_nights), (9, 7));
    assert!((step.change_pct - 20.0).abs() < 0.5, "{step:?}");
    assert!(step.ci_low_pct < step.change_pct && step.change_pct < step.ci_high_pct);
    assert!(
        step.ci_low_pct > 19.0 && step.ci_high_pct < 21.0,
        "{step:?}"
    );
    assert_close(
        step.change_pct,
        (step.after_mean / step.before_mean - 1.0) * 100.0,
        1e-12,
    );
    // Only the sorted order (and, rarely, its mirror) reaches a step this
    // clean: 2 of C(16, 7) = 11 440 orders.
    assert_eq!(step.p, 0.001);
}

#[test]
fn a_quiet_history_has_no_change_point() {
    let opts = ChangePointOptions::default();
    for seed in 1..=20 {
        let steps = change_points(&quiet(16, &[], seed), &opts).unwrap();
        assert_eq!(steps, [], "seed {seed}");
    }
}

#[test]
fn a_step_inside_the_band_is_not_a_change_point_though_significant() {
    let nights = quiet(16, &[(9, 1.5)], 1);
    assert_eq!(
        change_points(&nights, &ChangePointOptions::default()).unwrap(),
        []
    );
    // With a band of 1% the same step is one: it is significant.
    let narrow = ChangePointOptions {
        noise_pct: 1.0,
        ..ChangePointOptions::default()
    };
    let steps = change_points(&nights, &narrow).unwrap();
    assert_eq!(indices(&steps), [9]);
    assert!(
        steps[0].p < 0.01 && steps[0].ci_low_pct > 1.0 && steps[0].ci_high_pct < 2.0,
        "{steps:?}"
    );
}

#[test]
fn a_constant_history_has_no_change_point() {
    let nights = constant_nights(&[(8192.0, 16)]);
    assert_eq!(
        change_points(&nights, &ChangePointOptions::default()).unwrap(),
        []
    );
    assert_eq!(best_split(&[0.0; 16], 2, &mut Sums::new(16)), None);
}

#[test]
fn an_exact_step_is_found_with_a_degenerate_interval() {
    let nights = constant_nights(&[(100.0, 8), (120.0, 8)]);
    let steps = change_points(&nights, &ChangePointOptions::default()).unwrap();
    assert_eq!(indices(&steps), [8]);
    let step = steps[0];
    assert_eq!((step.before_mean, step.after_mean), (100.0, 120.0));
    assert_close(step.change_pct, 20.0, 1e-12);
    assert_eq!(
        (step.ci_low_pct, step.ci_high_pct),
        (step.change_pct, step.change_pct)
    );
    // 2 of C(16, 8) = 12 870 orders reach it.
    assert_eq!(step.p, 0.001);
}

#[test]
fn two_steps_are_both_found() {
    let steps = change_points(&quiet(16, &UP_AND_DOWN, 1), &ChangePointOptions::default()).unwrap();
    assert_eq!(indices(&steps), [5, 12]);
    let nights: Vec<_> = steps
        .iter()
        .map(|s| (s.before_nights, s.after_nights))
        .collect();
    assert_eq!(nights, [(5, 7), (7, 4)]);
    assert!(
        steps[0].ci_low_pct > 19.0 && steps[0].ci_high_pct < 21.0,
        "{steps:?}"
    );
    assert!(
        steps[1].ci_low_pct > -17.5 && steps[1].ci_high_pct < -16.0,
        "{steps:?}"
    );
    assert_eq!(steps[0].after_mean, steps[1].before_mean);
}

#[test]
fn a_step_keeps_the_figures_it_was_found_with_when_a_neighbour_is_too_short() {
    // +2.4% at night 8, +2.2% at 11, +4.5% at 20 with two nights after
    // it: too few for the permutations (at best 2 of C(11, 2) = 55
    // orders of the nights from 11 on), so 20 is not found; measured
    // against nights 11-21, which hold it, the step at 11 reaches
    // into the band.
    let nights = constant_nights(&[(100.0, 8), (102.4, 3), (104.65, 9), (109.36, 2)]);
    let steps = change_points(&nights, &ChangePointOptions::default()).unwrap();
    assert_eq!(indices(&steps), [8, 11]);
    assert_eq!((steps[0].before_nights, steps[0].after_nights), (8, 3));
    assert_close(steps[0].change_pct, 2.4, 1e-12);
    let means: Vec<f64> = nights.iter().map(|n| mean(n)).collect();
    let neighbours = measure(&means, 8, 11, 22, 0.0).unwrap();
    assert!(!clears(&neighbours, 2.0), "{neighbours:?}");
    let step = steps[1];
    assert!(clears(&step, 2.0), "{step:?}");
    assert_eq!(step.before_nights + step.after_nights, 22, "{step:?}");
}

#[test]
fn the_same_seed_gives_the_same_steps() {
    let nights = quiet(16, &UP_AND_DOWN, 2);
    let opts = ChangePointOptions::default();
    let first = change_points(&nights, &opts).unwrap();
    assert_eq!(indices(&first), [5, 12]);
    assert_eq!(first, change_points(&nights, &opts).unwrap());
}

#[test]
fn the_one_split_of_four_nights_has_a_permutation_p_of_a_third() {
    // Nights 1, 1, 2, 2 with two nights a side: the only split is
    // [1, 1] against [2, 2]. Of the C(4, 2) = 6 ways to place the two
    // 1s, [1, 1 | 2, 2] and [2, 2 | 1, 1] reach its statistic; the four
    // others have equal means on both sides and a statistic below 0.
    // So the exact permutation p is 2/6 = 1/3, and k of 999 random
    // orders is Binomial(999, 1/3): sd of (k + 1)/1000 is 0.0149.
    let nights = vec![vec![1.0], vec![1.0], vec![2.0], vec![2.0]];
    let loose = ChangePointOptions {
        alpha: 0.5,
        ..ChangePointOptions::default()
    };
    let steps = change_points(&nights, &loose).unwrap();
    assert_eq!(indices(&steps), [2]);
    let p = steps[0].p;
    assert!((p - 1.0 / 3.0).abs() < 3.0 * 0.0149, "{p}");
    // 370 of 999: 2.5 sd above 1/3 for this seed (over seeds 0-199
    // the mean p was 0.3327).
    assert_eq!(p, 0.371);
    assert_eq!((steps[0].ci_low_pct, steps[0].ci_high_pct), (100.0, 100.0));
    // Another seed draws other orders.
    let other = ChangePointOptions { seed: 1, ..loose };
    assert_ne!(change_points(&nights, &other).unwrap()[0].p, p);
    // At the default alpha it is not a change point.
    assert_eq!(
        change_points(&nights, &ChangePointOptions::default()).unwrap(),
        []
    );
}

#[test]
fn a_count_falling_to_zero_is_a_step_and_one_rising_from_zero_is_not() {
    let opts = ChangePointOptions::default();
    let falls = change_points(&constant_nights(&[(10.0, 8), (0.0, 8)]), &opts).unwrap();
    assert_eq!(indices(&falls), [8]);
    assert_eq!(
        (falls[0].ci_low_pct, falls[0].ci_high_pct),
        (-100.0, -100.0)
    );
    // From 0 there is no % change.
    let rises = change_points(&constant_nights(&[(0.0, 8), (10.0, 8)]), &opts).unwrap();
    assert_eq!(rises, []);
}

#[test]
fn too_short_a_history_has_no_change_point() {
    let nights = constant_nights(&[(100.0, 2), (200.0, 1)]);
    assert_eq!(
        change_points(&nights, &ChangePointOptions::default()).unwrap(),
        []
    );
    assert_eq!(
        change_points(&[], &ChangePointOptions::default()).unwrap(),
        []
    );
}

#[test]
fn bad_nights_and_options_are_errors() {
    let opts = ChangePointOptions::default();
    let mut nights = constant_nights(&[(100.0, 4)]);
    nights[1].clear();
    assert_eq!(
        change_points(&nights, &opts),
        Err(StatsError::NightEmpty { night: 1 })
    );
    nights[1] = vec![1.0, f64::INFINITY];
    assert_eq!(
        change_points(&nights, &opts),
        Err(StatsError::NightNotFinite {
            night: 1,
            index: 1,
            value: f64::INFINITY
        })
    );
    let ok = constant_nights(&[(100.0, 4)]);
    let with = |o: ChangePointOptions| change_points(&ok, &o).unwrap_err();
    assert_eq!(
        with(ChangePointOptions { alpha: 0.0, ..opts }),
        StatsError::AlphaOutOfRange { alpha: 0.0 }
    );
    assert_eq!(
        with(ChangePointOptions {
            noise_pct: f64::NAN,
            ..opts
        })
        .to_string(),
        "noise_pct is NaN, not a finite non-negative number"
    );
    assert_eq!(
        with(ChangePointOptions {
            min_nights: 1,
            ..opts
        }),
        StatsError::MinNightsTooLow { min_nights: 1 }
    );
    // 1 / (99 + 1) is not below 0.01.
    assert_eq!(
        with(ChangePointOptions {
            permutations: 99,
            ..opts
        }),
        StatsError::TooFewPermutations {
            permutations: 99,
            alpha: 0.01
        }
    );
    assert!(
        change_points(
            &ok,
            &ChangePointOptions {
                permutations: 100,
                ..opts
            }
        )
        .is_ok()
    );
}

#[test]
fn false_alarm_rate_is_pinned() {
    // Without the band, every significant split is a false step: about
    // alpha of the histories' top splits, and a few more below them.
    let no_band = ChangePointOptions {
        alpha: 0.05,
        noise_pct: 0.0,
        permutations: 199,
        ..ChangePointOptions::default()
    };
    let r = false_alarm_rate(40, 24, 3, 3.0, 3.0, &no_band).unwrap();
    assert_eq!((r.histories, r.nights), (40, 960));
    assert_eq!((r.steps, r.histories_with_steps), (4, 4));
    assert_close(r.rate_per_night, r.steps as f64 / 960.0, 1e-15);
    assert_close(
        r.upper_95_per_night,
        clopper_pearson_upper(r.steps, 960, 0.95),
        1e-15,
    );
    assert_eq!(r, false_alarm_rate(40, 24, 3, 3.0, 3.0, &no_band).unwrap());
    // The deterministic lane's noise with the band: none.
    let quiet = false_alarm_rate(40, 24, 3, 0.1, 0.05, &ChangePointOptions::default()).unwrap();
    assert_eq!(quiet.steps, 0);
    assert_close(
        quiet.upper_95_per_night,
        1.0 - 0.05_f64.powf(1.0 / 960.0),
        1e-15,
    );
}

#[test]
fn false_alarm_rate_refuses_an_empty_scenario() {
    let opts = ChangePointOptions::default();
    assert_eq!(
        false_alarm_rate(10, 10, 0, 1.0, 1.0, &opts),
        Err(StatsError::ScenarioInvalid { field: "samples" })
    );
    assert_eq!(
        false_alarm_rate(0, 10, 3, 1.0, 1.0, &opts),
        Err(StatsError::ScenarioInvalid { field: "histories" })
    );
    assert_eq!(
        false_alarm_rate(10, 10, 3, -1.0, 1.0, &opts),
        Err(StatsError::ScenarioInvalid { field: "cv_pct" })
    );
}

#[test]
fn clopper_pearson_upper_bounds_the_binomial_tail() {
    // P(X ≤ k) for X ~ Binomial(n, p), summed term by term.
    let cdf = |k: usize, n: usize, p: f64| {
        let mut term = (1.0 - p).powi(n as i32);
        let mut sum = term;
        for i in 0..k {
            term *= (n - i) as f64 / (i + 1) as f64 * p / (1.0 - p);
            sum += term;
        }
        sum
    };
    for (k, n) in [(1, 10), (3, 50), (7, 1000), (0, 300)] {
        let upper = clopper_pearson_upper(k, n, 0.95);
        assert!(upper > k as f64 / n as f64);
        assert_close(cdf(k, n, upper), 0.05, 1e-9);
    }
    // The rule of three: about 3 / n with no event.
    assert_close(
        clopper_pearson_upper(0, 100_000, 0.95),
        3.0 / 100_000.0,
        0.002,
    );
    assert_eq!(clopper_pearson_upper(5, 5, 0.95), 1.0);
}
