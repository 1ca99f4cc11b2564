//! Tests of the entry point and the verdict rules, on the seed's shapes of
//! data. The statistics themselves are pinned against scipy in their own
//! modules; here the question is what `compare` makes of them.

use super::reference::*;
use super::*;

fn options() -> CompareOptions {
    CompareOptions {
        resamples: MIN_RESAMPLES,
        ..CompareOptions::default()
    }
}

fn pageout() -> Comparison {
    compare(
        &[&A_BOOT_1[..], &A_BOOT_2[..]],
        &[&B_BOOT_1[..]],
        Direction::LowerIsBetter,
        &CompareOptions::default(),
    )
    .unwrap()
}

#[test]
fn the_seeds_pageout_gain_is_an_improvement() {
    let c = pageout();
    assert_eq!(c.verdict.kind, Verdict::Improvement, "{}", c.verdict.reason);
    assert!(
        c.verdict.reason.starts_with("-44.49% (95% CI [-45.3"),
        "{}",
        c.verdict.reason
    );
    assert_eq!(c.separation, Separation::AllBelow);
    // Values pinned against numpy/scipy in describe, hypothesis and
    // bootstrap; see those tests for the calls.
    assert_close(c.drift_pct.unwrap(), -1.3093045485277515, 1e-10);
    assert_close(c.max_boot_cv_pct.unwrap(), 2.6227108368869634, 1e-12);
    assert_close(c.a.mean, 23.673444444444446, 1e-12);
    assert_close(c.welch.unwrap().p, 1.0823654953803235e-27, 1e-8);
    assert_close(c.mann_whitney.p, 3.465900661488035e-05, 1e-10);
    assert_close(c.mean_change.unwrap().pct, -44.48866756468805, 1e-12);
    assert_close(c.median_change.unwrap().pct, -44.79630371948775, 1e-12);
    assert_eq!(
        (c.a.n, c.b.n, c.a_boots.len(), c.b_boots.len()),
        (18, 9, 2, 1)
    );
    assert_eq!(c.a_boots[1], Summary::of(&A_BOOT_2));
}

#[test]
fn a_comparison_is_reproducible() {
    assert_eq!(pageout(), pageout());
}

#[test]
fn the_direction_decides_improvement_or_regression() {
    let a = [&A_BOOT_1[..], &A_BOOT_2[..]];
    let b = [&B_BOOT_1[..]];
    let kind = |direction, a: &[&[f64]], b: &[&[f64]]| {
        compare(a, b, direction, &options()).unwrap().verdict.kind
    };
    use Verdict::*;
    assert_eq!(kind(Direction::HigherIsBetter, &a, &b), Regression);
    assert_eq!(kind(Direction::Neither, &a, &b), Changed);
    // B above A: the mirror image.
    assert_eq!(kind(Direction::LowerIsBetter, &b, &a[..1]), Regression);
    assert_eq!(kind(Direction::HigherIsBetter, &b, &a[..1]), Improvement);
}

#[test]
fn a_drift_larger_than_the_noise_band_makes_the_control_inconclusive() {
    // The control's A′ sits +4.33% above A
    // ((np.mean(CONTROL_A_BOOT_2) - np.mean(CONTROL_A_BOOT_1)) /
    // np.mean(CONTROL_A_BOOT_1) * 100 = 4.334457604518016).
    let c = compare(
        &[&CONTROL_A_BOOT_1[..], &CONTROL_A_BOOT_2[..]],
        &[&CONTROL_B_BOOT_1[..]],
        Direction::LowerIsBetter,
        &options(),
    )
    .unwrap();
    assert_close(c.drift_pct.unwrap(), 4.334457604518016, 1e-10);
    assert_eq!(c.verdict.kind, Verdict::Inconclusive);
    assert!(
        c.verdict
            .reason
            .starts_with("A drifted +4.33% between boots"),
        "{}",
        c.verdict.reason
    );
}

#[test]
fn a_change_well_beyond_the_drift_is_still_called() {
    // Shaped like the seed's 8-worker finite-limit run: A′ drifted +5.35%,
    // B is −84.13% (np.random.default_rng(84), normal, rounded to 0.1).
    let a1 = [
        1218.0, 1240.2, 1202.7, 1266.5, 1224.4, 1243.8, 1258.9, 1249.7, 1230.9,
    ];
    let a2 = [
        1333.0, 1308.0, 1300.3, 1293.6, 1282.9, 1330.6, 1293.7, 1309.0, 1279.6,
    ];
    let b = [
        196.5, 215.1, 187.1, 200.1, 192.2, 208.3, 215.7, 213.4, 185.6,
    ];
    let c = compare(
        &[&a1[..], &a2[..]],
        &[&b[..]],
        Direction::LowerIsBetter,
        &options(),
    )
    .unwrap();
    assert_close(c.drift_pct.unwrap(), 5.348851828901395, 1e-10);
    assert_close(c.mean_change.unwrap().pct, -84.13350943330212, 1e-10);
    assert_eq!(c.verdict.kind, Verdict::Improvement, "{}", c.verdict.reason);
    assert!(
        c.verdict.reason.ends_with("clears the ±5.35% band"),
        "{}",
        c.verdict.reason
    );
}

#[test]
fn a_noisy_single_boot_control_is_too_noisy_to_clear() {
    // CV 4.7%, 9 against 9: np.mean change −0.5464480874316875%,
    // scipy.stats.ttest_ind(CONTROL_B_BOOT_1, CONTROL_A_BOOT_1,
    // equal_var=False).pvalue = 0.796025552557236. The interval is about
    // ±4%, so a 2% change either way cannot be excluded.
    let c = compare(
        &[&CONTROL_A_BOOT_1[..]],
        &[&CONTROL_B_BOOT_1[..]],
        Direction::LowerIsBetter,
        &options(),
    )
    .unwrap();
    assert_close(c.welch.unwrap().p, 0.796025552557236, 1e-9);
    assert_eq!(c.drift_pct, None);
    assert_eq!(c.verdict.kind, Verdict::Inconclusive);
    assert!(
        c.verdict
            .reason
            .contains("reaches past ±2.00% and does not clear it"),
        "{}",
        c.verdict.reason
    );
    // Both sides past the band: nothing is ruled out, and about four times
    // the samples would narrow it to the band.
    assert!(
        c.verdict
            .ruled_out
            .as_deref()
            .is_some_and(|r| r.starts_with("nothing beyond the band is ruled out")),
        "{:?}",
        c.verdict.ruled_out
    );
    assert!(
        matches!(c.verdict.to_decide, Some(crate::stats::ToDecide::Samples { factor, .. }) if factor > 3.0),
        "{:?}",
        c.verdict.to_decide
    );
}

#[test]
fn a_quiet_metric_without_change_has_no_clear_difference() {
    let a = [100.1, 99.9, 100.0, 100.2, 99.8, 100.05, 99.95, 100.1, 99.9];
    let b = [
        100.0, 100.1, 99.9, 100.15, 99.85, 100.0, 100.05, 99.95, 100.1,
    ];
    let c = compare(&[&a[..]], &[&b[..]], Direction::LowerIsBetter, &options()).unwrap();
    assert_eq!(
        c.verdict.kind,
        Verdict::NoClearDifference,
        "{}",
        c.verdict.reason
    );
    assert!(
        c.verdict.reason.contains("lies wholly inside ±2.00%"),
        "{}",
        c.verdict.reason
    );
}

#[test]
fn a_significant_change_inside_the_noise_band_is_not_called() {
    // +1%, very tight: Welch p is tiny but the change is under 2%.
    let a = [100.1, 99.9, 100.0, 100.2, 99.8, 100.05, 99.95, 100.1, 99.9];
    let b: Vec<f64> = a.iter().map(|x| x + 1.0).collect();
    let c = compare(&[&a[..]], &[&b[..]], Direction::LowerIsBetter, &options()).unwrap();
    assert!(c.welch.unwrap().p < 1e-6);
    assert_eq!(
        c.verdict.kind,
        Verdict::NoClearDifference,
        "{}",
        c.verdict.reason
    );
    assert!(
        c.verdict.reason.contains("lies wholly inside ±2.00%"),
        "{}",
        c.verdict.reason
    );
    // The same data with a 0.5% band: a regression.
    let tight = CompareOptions {
        noise_pct: 0.5,
        ..options()
    };
    let c = compare(&[&a[..]], &[&b[..]], Direction::LowerIsBetter, &tight).unwrap();
    assert_eq!(c.verdict.kind, Verdict::Regression, "{}", c.verdict.reason);
}

#[test]
fn too_few_samples_are_inconclusive_not_an_error() {
    for (a, b) in [
        (&[1.0, 2.0][..], &[3.0, 4.0, 5.0][..]),
        (&[1.0, 2.0, 3.0][..], &[9.0][..]),
    ] {
        let c = compare(&[a], &[b], Direction::LowerIsBetter, &options()).unwrap();
        assert_eq!(c.verdict.kind, Verdict::Inconclusive);
        assert!(
            c.verdict.reason.starts_with("too few samples"),
            "{}",
            c.verdict.reason
        );
    }
    // n = 1 on each side: every statistic degrades without a panic.
    let c = compare(
        &[&[10.0][..]],
        &[&[11.0][..]],
        Direction::LowerIsBetter,
        &options(),
    )
    .unwrap();
    assert_eq!((c.welch, c.a.mean_ci, c.a.sd), (None, None, 0.0));
    assert_eq!(c.mann_whitney.p, 1.0);
    assert_eq!(c.verdict.kind, Verdict::Inconclusive);
}

#[test]
fn one_sample_boots_that_repeat_exactly_are_judged_exactly() {
    // kernel-boot under icount: one sample a boot, A and A' the same.
    let judge = |a: &[&[f64]], b: &[&[f64]]| {
        compare(a, b, Direction::LowerIsBetter, &options())
            .unwrap()
            .verdict
    };
    let v = judge(&[&[1000.0], &[1000.0]], &[&[1100.0]]);
    assert_eq!(v.kind, Verdict::Regression, "{}", v.reason);
    let v = judge(&[&[1000.0], &[1000.0]], &[&[1000.0]]);
    assert_eq!(v.kind, Verdict::NoClearDifference, "{}", v.reason);
    assert!(v.reason.contains("deterministic lane"), "{}", v.reason);
    // A's boots differ (a noisy lane), or A booted once: too few samples.
    for (a, b) in [
        (&[&[1000.0][..], &[1001.0]][..], &[&[1100.0][..]][..]),
        (&[&[1000.0][..]][..], &[&[1100.0][..]][..]),
        // B's boots disagree: B is not one value.
        (
            &[&[1000.0][..], &[1000.0]][..],
            &[&[1100.0][..], &[1101.0]][..],
        ),
    ] {
        let v = judge(a, b);
        assert_eq!(v.kind, Verdict::Inconclusive, "{a:?} {b:?}");
        assert!(v.reason.starts_with("too few samples"), "{}", v.reason);
    }
}

#[test]
fn constant_counters_change_exactly_or_not_at_all() {
    // Forced flushes: 8192 per sample on A, none on B.
    let c = compare(
        &[&[8192.0; 9][..]],
        &[&[0.0; 9][..]],
        Direction::Neither,
        &options(),
    )
    .unwrap();
    assert_eq!(c.welch, None);
    assert_eq!(c.verdict.kind, Verdict::Changed, "{}", c.verdict.reason);
    assert!(
        c.verdict
            .reason
            .starts_with("-100.00% (95% CI [-100.00%, -100.00%]), Welch p = 0")
    );
    // Pages stored: 8192 on both.
    let c = compare(
        &[&[8192.0; 9][..]],
        &[&[8192.0; 9][..]],
        Direction::Neither,
        &options(),
    )
    .unwrap();
    assert_eq!(c.verdict.kind, Verdict::NoClearDifference);
    assert_eq!(c.verdict.reason, "every A and B sample is 8192");
}

#[test]
fn a_zero_baseline_has_no_percentage() {
    let zeros = [0.0; 5];
    let c = compare(&[&zeros[..]], &[&zeros[..]], Direction::Neither, &options()).unwrap();
    assert_eq!(c.verdict.kind, Verdict::NoClearDifference);
    assert_eq!((c.a.cv_pct, c.mean_change), (None, None));
    let c = compare(
        &[&zeros[..]],
        &[&[1.0, 2.0, 3.0][..]],
        Direction::Neither,
        &options(),
    )
    .unwrap();
    assert_eq!(c.verdict.kind, Verdict::Inconclusive);
    assert!(
        c.verdict.reason.contains("A's mean is 0"),
        "{}",
        c.verdict.reason
    );
    // A's mean is 1.2, but resamples of only its zeros have no % change.
    let a = [0.0, 0.0, 0.0, 0.0, 6.0];
    let c = compare(
        &[&a[..]],
        &[&[1.0, 2.0, 3.0][..]],
        Direction::LowerIsBetter,
        &options(),
    )
    .unwrap();
    assert_eq!(c.mean_change.unwrap().ci, None);
    assert_eq!(c.verdict.kind, Verdict::Inconclusive);
    assert!(
        c.verdict.reason.contains("has no interval"),
        "{}",
        c.verdict.reason
    );
}

#[test]
fn a_boot_without_samples_keeps_its_place() {
    let c = compare(
        &[&A_BOOT_1[..], &[][..], &A_BOOT_2[..]],
        &[&B_BOOT_1[..]],
        Direction::LowerIsBetter,
        &options(),
    )
    .unwrap();
    assert_eq!(c.a_boots[1], None);
    assert_close(c.drift_pct.unwrap(), -1.3093045485277515, 1e-10);
    // An empty last boot leaves no drift to report.
    let c = compare(
        &[&A_BOOT_1[..], &[][..]],
        &[&B_BOOT_1[..]],
        Direction::LowerIsBetter,
        &options(),
    )
    .unwrap();
    assert_eq!(c.drift_pct, None);
}

#[test]
fn bad_input_and_options_are_errors() {
    let good: &[f64] = &[1.0, 2.0, 3.0];
    let err = compare(
        &[good, &[1.0, f64::NAN]],
        &[good],
        Direction::Neither,
        &options(),
    );
    assert!(matches!(
        err,
        Err(StatsError::NotFinite {
            side: super::Side::A,
            boot: 1,
            index: 1,
            ..
        })
    ));
    let err = compare(&[good], &[&[][..]], Direction::Neither, &options());
    assert_eq!(
        err,
        Err(StatsError::NoSamples {
            side: super::Side::B
        })
    );
    for bad in [
        CompareOptions {
            resamples: 1_999,
            ..options()
        },
        CompareOptions {
            alpha: 1.0,
            ..options()
        },
        CompareOptions {
            alpha: f64::NAN,
            ..options()
        },
        CompareOptions {
            noise_pct: -1.0,
            ..options()
        },
        CompareOptions {
            min_samples: 1,
            ..options()
        },
        CompareOptions {
            negligible: Some(-1.0),
            ..options()
        },
        CompareOptions {
            negligible: Some(f64::INFINITY),
            ..options()
        },
    ] {
        assert!(
            compare(&[good], &[good], Direction::Neither, &bad).is_err(),
            "{bad:?}"
        );
    }
}

/// The unlimited control's background flushes: A about 0.6 and B about 0.8
/// per sample, with A resamples of mean 0.
fn background_flushes() -> ([[f64; 5]; 2], [f64; 5]) {
    (
        [[1.0, 0.0, 1.0, 0.0, 1.0], [0.0, 1.0, 0.0, 1.0, 0.0]],
        [1.0, 1.0, 0.0, 1.0, 1.0],
    )
}

#[test]
fn near_zero_counts_without_a_negligible_level_have_no_interval() {
    let (a, b) = background_flushes();
    let c = compare(&a, &[b], Direction::LowerIsBetter, &options()).unwrap();
    assert_eq!(c.verdict.kind, Verdict::Inconclusive);
    assert!(c.mean_change.unwrap().ci.is_none(), "{c:?}");
}

#[test]
fn counts_negligible_on_both_sides_are_negligible_with_the_level_in_words() {
    let (a, b) = background_flushes();
    let negligible = CompareOptions {
        negligible: Some(80.0),
        ..options()
    };
    let c = compare(&a, &[b], Direction::LowerIsBetter, &negligible).unwrap();
    assert_eq!(c.verdict.kind, Verdict::Negligible);
    assert_eq!(
        c.verdict.reason,
        "both within \u{b1}80, the metric's negligible level, in every sample (A's mean 0.50, B's 0.80)"
    );
    assert_eq!(c.options.negligible, Some(80.0));
    assert!(c.negligible());
    // The level is inclusive; A's mean of 0 no longer matters.
    let zeros = [0.0; 5];
    let c = compare(
        &[zeros],
        &[[80.0; 5]],
        Direction::LowerIsBetter,
        &negligible,
    )
    .unwrap();
    assert_eq!(c.verdict.kind, Verdict::Negligible);
    // In the metric's unit: 000-counter-tcg's kcompactd_ns, a fall of
    // about half with an interval wholly outside the band, all under 1 ms.
    let a = [[310_000.0, 290_000.0, 330_000.0, 305_000.0, 315_000.0]];
    let b = [150_000.0, 140_000.0, 170_000.0, 160_000.0, 155_000.0];
    let ms = CompareOptions {
        negligible: Some(1e6),
        unit: Some(crate::model::Unit::Ns),
        ..options()
    };
    let c = compare(&a, &[b], Direction::Neither, &ms).unwrap();
    assert_eq!(c.verdict.kind, Verdict::Negligible);
    assert!(c.mean_change.unwrap().ci.unwrap().hi < -2.0);
    assert_eq!(
        c.verdict.reason,
        "both within \u{b1}1 ms, the metric's negligible level, in every sample (A's mean 310 \u{b5}s, B's 155 \u{b5}s)"
    );
}

#[test]
fn a_side_beyond_the_negligible_level_is_judged_as_usual() {
    let negligible = CompareOptions {
        negligible: Some(80.0),
        ..options()
    };
    // The finite-limit condition: A flushes once per stored page, B almost
    // never. Only B is negligible: the change is called.
    let a = [[8200.0, 8210.0, 8195.0, 8205.0, 8199.0]; 2];
    let b = [1.0, 0.0, 2.0, 1.0, 0.0];
    let c = compare(&a, &[b], Direction::LowerIsBetter, &negligible).unwrap();
    assert_eq!(c.verdict.kind, Verdict::Improvement, "{}", c.verdict.reason);
    // One sample past the level on either side: the usual rules.
    let (a, mut b) = background_flushes();
    b[2] = 81.0;
    let c = compare(&a, &[b], Direction::LowerIsBetter, &negligible).unwrap();
    assert!(!c.negligible());
    assert_ne!(c.verdict.kind, Verdict::Negligible);
    let c = compare(
        &[[-81.0, 0.0, 0.0]],
        &[[0.0; 3]],
        Direction::Neither,
        &negligible,
    )
    .unwrap();
    assert_ne!(c.verdict.kind, Verdict::Negligible, "{}", c.verdict.reason);
}

/// A′ in a deterministic lane runs exactly as A did: its samples are the
/// same values again, not a second draw, so they count once. Counting them
/// twice would narrow the interval by about √2.
#[test]
fn a_boot_that_repeats_an_earlier_one_value_for_value_counts_once() {
    let once = compare(
        &[&A_BOOT_1[..]],
        &[&B_BOOT_1[..]],
        Direction::LowerIsBetter,
        &options(),
    )
    .unwrap();
    let twice = compare(
        &[&A_BOOT_1[..], &A_BOOT_1[..]],
        &[&B_BOOT_1[..]],
        Direction::LowerIsBetter,
        &options(),
    )
    .unwrap();
    assert_eq!(twice.a, once.a);
    assert_eq!(twice.a_repeated, A_BOOT_1.len());
    assert_eq!(twice.b_repeated, 0);
    assert_eq!(twice.mean_change, once.mean_change);
    assert_eq!(twice.drift_pct, Some(0.0));
    assert_eq!(twice.a_boots.len(), 2);
    // Boots that differ by one value are two draws, and pool.
    let mut nudged = A_BOOT_1.to_vec();
    nudged[0] += 1e-9;
    let two = compare(
        &[&A_BOOT_1[..], &nudged[..]],
        &[&B_BOOT_1[..]],
        Direction::LowerIsBetter,
        &options(),
    )
    .unwrap();
    assert_eq!((two.a.n, two.a_repeated), (2 * A_BOOT_1.len(), 0));
}

#[test]
fn constant_boots_that_repeat_pool_as_before() {
    let a = [8192.0; 3];
    let c = compare(&[&a[..], &a[..]], &[&a[..]], Direction::Neither, &options()).unwrap();
    assert_eq!((c.a.n, c.a_repeated), (6, 0));
    assert_eq!(c.verdict.kind, Verdict::NoClearDifference);
}

/// Four boots per side, each in a memory layout of its own: boot means
/// 100.03, 102.13, 98.80, 101.00 (A) and 98.0, 99.5, 96.2, 98.8 (B).
const LAYOUT_A: [[f64; 3]; 4] = [
    [100.0, 100.2, 99.9],
    [102.1, 102.0, 102.3],
    [98.7, 98.9, 98.8],
    [101.0, 101.1, 100.9],
];
const LAYOUT_B: [[f64; 3]; 4] = [
    [97.9, 98.0, 98.1],
    [99.5, 99.6, 99.4],
    [96.2, 96.1, 96.3],
    [98.8, 98.7, 98.9],
];

#[test]
fn judged_by_boot_each_boot_mean_is_one_observation() {
    let by_boot = CompareOptions {
        by_boot: true,
        ..options()
    };
    let c = compare(&LAYOUT_A, &LAYOUT_B, Direction::LowerIsBetter, &by_boot).unwrap();
    assert_eq!((c.a.n, c.b.n), (4, 4));
    assert_eq!(c.drift_pct, None, "boots differ by layout, not by drift");
    // b_means, a_means = the boot means above;
    // r = scipy.stats.ttest_ind(b_means, a_means, equal_var=False):
    // statistic -2.357570458435133, df 5.999926856458216,
    // pvalue 0.05647170982131475; the change -2.3550874865245945. The
    // interval is Welch's on the log of the ratio (the delta method):
    // va = a_means.var(ddof=1) / (4 * a_means.mean()**2), vb likewise,
    // df = (va + vb)**2 / (va**2 / 3 + vb**2 / 3) = 5.995525906801825,
    // h = scipy.stats.t.ppf(0.975, df) * sqrt(va + vb),
    // c = log(b_means.mean() / a_means.mean()), (exp(c ∓ h) − 1) · 100:
    // [-4.7416976221622225, 0.09131699561455431].
    let w = c.welch.unwrap();
    assert!((w.t - -2.357570458435133).abs() < 1e-12, "{w:?}");
    assert!((w.df - 5.999926856458216).abs() < 1e-9, "{w:?}");
    assert!((w.p - 0.05647170982131475).abs() < 1e-9, "{w:?}");
    let change = c.mean_change.unwrap();
    let ci = change.ci.unwrap();
    assert!((change.pct - -2.3550874865245945).abs() < 1e-12);
    assert!((ci.lo - -4.7416976221622225).abs() < 1e-9, "{ci:?}");
    assert!((ci.hi - 0.09131699561455431).abs() < 1e-9, "{ci:?}");
    // The interval reaches past −2%: an improvement that large is not
    // ruled out, so this is no "no clear difference".
    assert_eq!(c.verdict.kind, Verdict::Inconclusive);
    assert_eq!(
        c.verdict.ruled_out.as_deref(),
        Some("a regression over 2.00% is ruled out; an improvement of up to 4.74% is not")
    );
    // Pooled by sample, the same data look like twelve draws against
    // twelve and the layout spread vanishes from the interval: the
    // sample-level comparison is far more confident (scipy: p =
    // 0.000177 pooled) than the four layouts allow.
    let pooled = compare(&LAYOUT_A, &LAYOUT_B, Direction::LowerIsBetter, &options()).unwrap();
    assert_eq!(pooled.a.n, 12);
    assert!(pooled.welch.unwrap().p < 0.001);
}

#[test]
fn judged_by_boot_constant_boots_change_exactly() {
    let by_boot = CompareOptions {
        by_boot: true,
        ..options()
    };
    let a = [[8192.0; 2]; 3];
    let b = [[0.0; 2]; 3];
    let c = compare(&a, &b, Direction::Neither, &by_boot).unwrap();
    let change = c.mean_change.unwrap();
    assert_eq!(change.pct, -100.0);
    assert_eq!(change.ci.map(|ci| (ci.lo, ci.hi)), Some((-100.0, -100.0)));
    assert_eq!(c.verdict.kind, Verdict::Changed);
}

#[test]
fn judged_by_boot_boots_that_agree_are_two_layouts_not_one_run_twice() {
    // Flush counts of 0, 0, 1 in two layouts: a coincidence of counts,
    // each boot its own observation.
    let by_boot = CompareOptions {
        by_boot: true,
        ..options()
    };
    let a = [[8192.0, 8193.0, 8192.0]; 3];
    let b = [[0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]];
    let c = compare(&a, &b, Direction::LowerIsBetter, &by_boot).unwrap();
    assert_eq!((c.a.n, c.b.n, c.a_repeated, c.b_repeated), (3, 3, 0, 0));
    // Judged by sample, the repeated boots count once as before.
    let c = compare(&a, &b, Direction::LowerIsBetter, &options()).unwrap();
    assert_eq!((c.a_repeated, c.b_repeated), (6, 3));
}

/// Rule 8: an interval wholly outside the band that Welch's test does not
/// confirm is inconclusive, not "no clear difference". The data: large
/// folios swapped out whole per kernel build, seed 004's kernel build,
/// base/swapin-margin/base' (`/work/cache/runs/s28/004-user`, 2026-12-02).
#[test]
fn an_interval_beyond_the_band_that_welch_does_not_confirm_is_inconclusive() {
    let a: [&[f64]; 2] = [&[803.0, 658.0, 768.0], &[689.0, 583.0, 939.0]];
    let b: [&[f64]; 1] = [&[646.0, 611.0, 612.0]];
    let c = compare(&a, &b, Direction::Neither, &CompareOptions::default()).unwrap();
    let ci = c.mean_change.unwrap().ci.unwrap();
    assert!(ci.clear_of_band(2.0), "{ci:?}");
    assert!(c.welch.unwrap().p >= 0.05, "{:?}", c.welch);
    assert!(c.drift_pct.unwrap().abs() <= 2.0, "{:?}", c.drift_pct);
    assert_eq!(
        c.verdict.kind,
        Verdict::Inconclusive,
        "{}",
        c.verdict.reason
    );
    assert!(
        c.verdict
            .reason
            .starts_with("unconfirmed: -15.81% (95% CI [-25.6"),
        "{}",
        c.verdict.reason
    );
    assert!(
        c.verdict
            .reason
            .ends_with("but Welch p = 0.071 does not confirm it"),
        "{}",
        c.verdict.reason
    );
}

fn look(look: u32, of: u32) -> CompareOptions {
    CompareOptions {
        sequential: Some(SequentialLook {
            look,
            of,
            spending: crate::model::Spending::Pocock,
        }),
        ..options()
    }
}

/// At a look, the interval is the repeated one: Welch's t at the look's
/// nominal level, wider than the fixed protocol's 95%, and the verdict
/// comes from it alone.
#[test]
fn a_look_draws_the_repeated_interval_and_decides_a_clear_change() {
    let a = [&A_BOOT_1[..], &A_BOOT_2[..]];
    let b = [&B_BOOT_1[..]];
    let fixed = compare(&a, &b, Direction::LowerIsBetter, &options()).unwrap();
    let first = compare(&a, &b, Direction::LowerIsBetter, &look(1, 3)).unwrap();
    let s = first.sequential.expect("a look");
    assert!((s.critical - 2.2794).abs() < 1e-3, "{s:?}");
    assert!((s.level - 0.02264).abs() < 1e-4, "{s:?}");
    let width = |c: &Comparison| {
        let ci = c.mean_change.as_ref().unwrap().ci.unwrap();
        ci.hi - ci.lo
    };
    assert!(width(&first) > width(&fixed), "{first:?}");
    assert_eq!(
        first.verdict.kind,
        Verdict::Improvement,
        "{}",
        first.verdict.reason
    );
    assert!(
        first.verdict.reason.contains("repeated 95% CI"),
        "{}",
        first.verdict.reason
    );
    assert!(
        first.verdict.reason.contains("look 1 of 3"),
        "{}",
        first.verdict.reason
    );
}

/// No change is decided only by equivalence: the interval wholly inside
/// the band; otherwise the look leaves the metric undecided, and at the
/// budget's last look says the budget ran out.
#[test]
fn a_look_decides_no_difference_by_equivalence_and_otherwise_waits() {
    let quiet_a: Vec<f64> = (0..6).map(|i| 100.0 + 0.05 * f64::from(i % 3)).collect();
    let quiet_b: Vec<f64> = (0..3).map(|i| 100.1 + 0.05 * f64::from(i)).collect();
    let c = compare(
        &[&quiet_a[..3], &quiet_a[3..]],
        &[&quiet_b[..]],
        Direction::LowerIsBetter,
        &look(1, 3),
    )
    .unwrap();
    assert_eq!(
        c.verdict.kind,
        Verdict::NoClearDifference,
        "{}",
        c.verdict.reason
    );
    assert!(
        c.verdict.reason.contains("wholly inside"),
        "{}",
        c.verdict.reason
    );
    let noisy_a = [100.0, 104.0, 97.0, 101.0, 99.0, 103.0];
    let noisy_b = [98.0, 103.0, 101.0];
    let a = [&noisy_a[..3], &noisy_a[3..]];
    let early = compare(&a, &[&noisy_b[..]], Direction::LowerIsBetter, &look(1, 3)).unwrap();
    assert_eq!(early.verdict.kind, Verdict::Inconclusive);
    assert!(
        early.verdict.reason.starts_with("undecided: ")
            && early.verdict.reason.contains("at look 1 of 3"),
        "{}",
        early.verdict.reason
    );
    let last = compare(&a, &[&noisy_b[..]], Direction::LowerIsBetter, &look(3, 3)).unwrap();
    assert!(
        last.verdict.reason.contains("budget ran out"),
        "{}",
        last.verdict.reason
    );
    assert!(compare(&a, &[&noisy_b[..]], Direction::LowerIsBetter, &look(4, 3)).is_err());
}

/// Simulated A/A campaigns: the sequential rule calls no more changes than
/// alpha, and fewer than the fixed rules applied at every look (peeking).
/// The full table, from real runs' noise, is `examples/sequential-aa.rs`'s.
#[test]
fn the_sequential_rule_holds_its_error_where_peeking_does_not() {
    let scenario = RoundsScenario {
        a_boots: 2,
        b_boots: 1,
        per_boot: 3,
        rounds: 3,
        spending: crate::model::Spending::Pocock,
        within_cv_pct: 6.0,
        between_cv_pct: 0.0,
        shift_pct: 0.0,
        simulations: 200,
        seed: 7,
    };
    let r = sequential_rates(&scenario, &options()).unwrap();
    assert!(r.sequential_calls <= 0.05, "{r:?}");
    assert!(r.peeking_calls > r.sequential_calls, "{r:?}");
    let power = sequential_rates(
        &RoundsScenario {
            shift_pct: -15.0,
            simulations: 40,
            ..scenario
        },
        &options(),
    )
    .unwrap();
    assert!(power.sequential_calls > 0.9, "{power:?}");
}

/// Under a true change of twice the band (±4%), neither protocol says "no
/// clear difference" more often than α: "no clear difference" needs the
/// whole interval inside ±2% (equivalence), which a 4% change rarely
/// allows, at any noise. The full table, from real runs' noise, is
/// `examples/sequential-aa.rs`'s (docs/statistics.md).
#[test]
fn a_change_of_twice_the_band_is_rarely_called_no_clear_difference() {
    for within in [0.5, 3.0] {
        for shift in [-4.0, 4.0] {
            let scenario = RoundsScenario {
                a_boots: 2,
                b_boots: 1,
                per_boot: 3,
                rounds: 3,
                spending: crate::model::Spending::Pocock,
                within_cv_pct: within,
                between_cv_pct: 0.0,
                shift_pct: shift,
                simulations: 100,
                seed: 11,
            };
            let r = sequential_rates(&scenario, &options()).unwrap();
            assert!(r.sequential_same <= 0.05, "CV {within}%, {shift:+}%: {r:?}");
            assert!(r.fixed_same <= 0.05, "CV {within}%, {shift:+}%: {r:?}");
        }
    }
    // And with no change at a quiet metric, both protocols do say it.
    let quiet = RoundsScenario {
        a_boots: 2,
        b_boots: 1,
        per_boot: 3,
        rounds: 3,
        spending: crate::model::Spending::Pocock,
        within_cv_pct: 0.2,
        between_cv_pct: 0.0,
        shift_pct: 0.0,
        simulations: 50,
        seed: 12,
    };
    let r = sequential_rates(&quiet, &options()).unwrap();
    assert!(r.sequential_same > 0.9 && r.fixed_same > 0.9, "{r:?}");
}

/// A time cannot fall by more than 100%: the interval of a look (Welch's,
/// on the log of the ratio) stays above −100% however noisy the data,
/// where the linear interval of the difference reached −12209% (seed
/// 000's `guest_irq_ns` at a look).
#[test]
fn the_interval_of_a_positive_quantity_never_reaches_below_minus_100_percent() {
    let a: [&[f64]; 2] = [&[1.0, 40.0, 2.0], &[30.0, 1.0, 1.0]];
    let b: [&[f64]; 2] = [&[10.0, 200.0, 1.0], &[5.0, 100.0, 2.0]];
    for options in [
        look(1, 3),
        CompareOptions {
            by_boot: true,
            ..options()
        },
    ] {
        let c = compare(&a, &b, Direction::LowerIsBetter, &options).unwrap();
        let ci = c.mean_change.unwrap().ci.unwrap();
        assert!(ci.lo > -100.0 && ci.hi > ci.lo, "{ci:?}");
    }
    let c = compare(&a, &b, Direction::LowerIsBetter, &look(1, 3)).unwrap();
    assert_eq!(c.verdict.kind, Verdict::Inconclusive);
}
