//! The verdict on one metric: the rules that turn the statistics into
//! "improvement", "regression", "changed", "no clear difference" or
//! "inconclusive", each with a one-line reason. docs/statistics.md states
//! the same rules for readers of the report.

use super::bootstrap::Change;
use super::describe::{Interval, Summary};
use super::hypothesis::WelchTest;
use super::options::CompareOptions;
use crate::model::{Direction, Verdict};

/// A verdict and the one-line reason for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    pub kind: Verdict,
    /// For people: what decided the verdict, with the numbers that did.
    pub reason: String,
}

impl Judgement {
    fn new(kind: Verdict, reason: String) -> Judgement {
        Judgement { kind, reason }
    }
}

/// What [`decide`] looks at, computed by [`super::compare`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Evidence<'a> {
    pub direction: Direction,
    /// All A samples, pooled over boots.
    pub a: &'a Summary,
    /// All B samples, pooled over boots.
    pub b: &'a Summary,
    pub welch: Option<&'a WelchTest>,
    pub mean_change: Option<&'a Change>,
    pub drift_pct: Option<f64>,
}

/// The verdict rules, applied in order; the first that matches decides.
///
/// 1. Fewer than `min_samples` (default 3) in A or in B: **inconclusive**.
/// 2. A and B all one value: **no clear difference** when it is the same
///    value, else a change known exactly, judged by rule 5 with p = 0.
/// 3. The metric has a `negligible` level and every A and B sample lies
///    within ±it: **no clear difference**. Both sides are too small to
///    matter (background flushes counted in a run that forces none), and a
///    % change of two near-zero counts says nothing.
/// 4. A's mean is 0, so no % change exists: **inconclusive**.
/// 5. Welch p < `alpha` (default 0.05) and the 95% bootstrap interval of
///    the % change of the mean lies wholly outside ±band, where band is the
///    larger of `noise_pct` (default 2%) and |A's return drift|: a change.
///    Its sign and the direction make it an **improvement** or a
///    **regression**, or **changed** for a metric with no direction.
/// 6. |A's return drift| > `noise_pct`: **inconclusive**. A moved that
///    much between boots of the same kernel, and the change did not clear
///    it, so a smaller difference cannot be told from boot-to-boot drift.
/// 7. The interval reaches beyond ±`noise_pct` on both sides, or there is
///    no interval: **inconclusive**. The data allow an improvement and a
///    regression larger than the noise band alike: A's and B's spread is
///    too large for the change measured (the interval's width is about
///    4 · CV · sqrt(1/n_A + 1/n_B)).
/// 8. The interval lies wholly outside ±`noise_pct` but p ≥ `alpha`:
///    **inconclusive**. The interval points to a change larger than the
///    band, and the test does not confirm it (with few samples, or skewed
///    ones, the percentile bootstrap is too narrow), so neither a change
///    nor its absence can be said.
/// 9. Otherwise: **no clear difference**, either because p ≥ `alpha` and
///    the interval reaches inside the band, or because a significant
///    change is smaller than the noise band.
pub(crate) fn decide(e: &Evidence<'_>, options: &CompareOptions) -> Judgement {
    use Verdict::*;
    let noise = options.noise_pct;
    if e.a.n < options.min_samples || e.b.n < options.min_samples {
        return Judgement::new(
            Inconclusive,
            format!(
                "too few samples: A has {}, B has {}; at least {} each are needed",
                e.a.n, e.b.n, options.min_samples
            ),
        );
    }
    let constant = e.a.sd == 0.0 && e.b.sd == 0.0;
    if constant && e.a.mean == e.b.mean {
        return Judgement::new(
            NoClearDifference,
            format!("every A and B sample is {}", e.a.mean),
        );
    }
    if let Some(level) = options.negligible {
        if both_negligible(e.a, e.b, level) {
            return Judgement::new(
                NoClearDifference,
                format!(
                    "negligible on both sides: every A and B sample is within ±{} (the metric's negligible level); A's mean is {}, B's {}",
                    fmt_num(level),
                    fmt_num(e.a.mean),
                    fmt_num(e.b.mean)
                ),
            );
        }
    }
    let Some(change) = e.mean_change else {
        return Judgement::new(
            Inconclusive,
            "A's mean is 0, so B's change has no percentage".into(),
        );
    };
    let band = e.drift_pct.map_or(noise, |d| noise.max(d.abs()));
    let p = match e.welch {
        Some(w) => w.p,
        // No variance in either group: the difference is exact.
        None if constant => 0.0,
        None => 1.0,
    };
    let ci_text = change.ci.map_or_else(|| "no interval".into(), fmt_interval);
    if p < options.alpha && change.ci.is_some_and(|ci| ci.clear_of_band(band)) {
        let kind = change_kind(e.direction, change.pct);
        return Judgement::new(
            kind,
            format!(
                "{:+.2}% (95% CI {ci_text}), Welch p = {}, clears the ±{band:.2}% band",
                change.pct,
                fmt_p(p),
            ),
        );
    }
    if let Some(drift) = e.drift_pct.filter(|d| d.abs() > noise) {
        return Judgement::new(
            Inconclusive,
            format!(
                "A drifted {drift:+.2}% between boots, beyond the ±{noise:.2}% noise band, and B's {:+.2}% (95% CI {ci_text}) does not clear that drift",
                change.pct
            ),
        );
    }
    match change.ci {
        None => {
            return Judgement::new(
                Inconclusive,
                format!(
                    "{:+.2}% has no bootstrap interval: some resamples of A have a mean of 0",
                    change.pct
                ),
            );
        }
        Some(ci) if ci.spans_band(noise) => {
            let cv =
                e.a.cv_pct
                    .map_or_else(|| "n/a".into(), |cv| format!("{cv:.2}%"));
            return Judgement::new(
                Inconclusive,
                format!(
                    "too noisy: the 95% CI of the change, {ci_text}, reaches past ±{noise:.2}% on both sides (A's CV {cv})"
                ),
            );
        }
        // Rule 5 took every significant change that clears the band, so
        // here p >= alpha.
        Some(ci) if ci.clear_of_band(noise) => {
            return Judgement::new(
                Inconclusive,
                format!(
                    "unconfirmed: the 95% CI of the change, {ci_text}, lies wholly outside ±{noise:.2}%, but Welch p = {} does not confirm it",
                    fmt_p(p)
                ),
            );
        }
        Some(_) => {}
    }
    let why = if p < options.alpha {
        format!(
            "significant (Welch p = {}) but does not clear the ±{noise:.2}% noise band",
            fmt_p(p)
        )
    } else {
        format!("not significant (Welch p = {})", fmt_p(p))
    };
    Judgement::new(
        NoClearDifference,
        format!("{:+.2}% (95% CI {ci_text}) is {why}", change.pct),
    )
}

/// The verdict at a look of a sequential campaign (docs/statistics.md,
/// "Sequential campaigns"). Rules 1 to 4 are [`decide`]'s; then, with the
/// change's interval the repeated confidence interval of the look:
///
/// 5. The interval lies wholly outside ±band (band as in [`decide`]): a
///    change, **improvement**, **regression** or **changed**. The repeated
///    intervals cover the true change at every look at once with 95%
///    probability, so no separate test is asked for.
/// 6. |A's return drift| > `noise_pct`: **inconclusive**, undecided.
/// 7. The interval lies wholly inside ±`noise_pct`: **no clear
///    difference**, decided: every change the data allow is smaller than
///    the band (equivalence, not the absence of evidence).
/// 8. Otherwise **inconclusive**: undecided at this look, and at the
///    budget's last look, left undecided by the budget.
pub(crate) fn decide_sequential(
    e: &Evidence<'_>,
    options: &CompareOptions,
    look: &super::options::SequentialLook,
) -> Judgement {
    use Verdict::*;
    let fixed = decide(e, options);
    let Some(change) = e.mean_change else {
        return fixed;
    };
    // Rules 1 to 4 decide alike, whatever the interval.
    let early = e.a.n < options.min_samples
        || e.b.n < options.min_samples
        || (e.a.sd == 0.0 && e.b.sd == 0.0 && e.a.mean == e.b.mean)
        || options
            .negligible
            .is_some_and(|level| both_negligible(e.a, e.b, level));
    if early {
        return fixed;
    }
    let noise = options.noise_pct;
    let band = e.drift_pct.map_or(noise, |d| noise.max(d.abs()));
    let at = format!("look {} of {}", look.look, look.of);
    let Some(ci) = change.ci else {
        return Judgement::new(
            Inconclusive,
            format!("{:+.2}% has no interval at {at}", change.pct),
        );
    };
    let ci_text = fmt_interval(ci);
    if ci.clear_of_band(band) {
        let kind = change_kind(e.direction, change.pct);
        return Judgement::new(
            kind,
            format!(
                "{:+.2}% (repeated 95% CI {ci_text} at {at}) clears the ±{band:.2}% band",
                change.pct
            ),
        );
    }
    let left = if look.last() {
        format!("undecided when the budget ran out ({at})")
    } else {
        format!("undecided at {at}")
    };
    if let Some(drift) = e.drift_pct.filter(|d| d.abs() > noise) {
        return Judgement::new(
            Inconclusive,
            format!(
                "{left}: A drifted {drift:+.2}% between boots, beyond the ±{noise:.2}% noise band, and B's {:+.2}% (repeated 95% CI {ci_text}) does not clear it",
                change.pct
            ),
        );
    }
    if ci.within_band(noise) {
        return Judgement::new(
            NoClearDifference,
            format!(
                "{:+.2}% (repeated 95% CI {ci_text} at {at}) lies wholly inside ±{noise:.2}%: any change is smaller than the band",
                change.pct
            ),
        );
    }
    Judgement::new(
        Inconclusive,
        format!(
            "{left}: {:+.2}% (repeated 95% CI {ci_text}) reaches past ±{noise:.2}% and does not clear the ±{band:.2}% band",
            change.pct
        ),
    )
}

/// Rule 3's test: every A and B sample lies within ±`level`.
pub fn both_negligible(a: &Summary, b: &Summary, level: f64) -> bool {
    let largest = |s: &Summary| s.min.abs().max(s.max.abs());
    largest(a) <= level && largest(b) <= level
}

/// A number with at most two decimals, none when it is whole.
fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

fn fmt_interval(ci: Interval) -> String {
    format!("[{:+.2}%, {:+.2}%]", ci.lo, ci.hi)
}

/// A p-value with three significant digits; tiny ones in scientific form.
fn fmt_p(p: f64) -> String {
    if p == 0.0 {
        "0".into()
    } else if p < 0.001 {
        format!("{p:.2e}")
    } else {
        format!("{p:.3}")
    }
}

/// The verdict of a change that is called: which way is better decides it.
fn change_kind(direction: Direction, pct: f64) -> Verdict {
    match (direction, pct < 0.0) {
        (Direction::Neither, _) => Verdict::Changed,
        (Direction::LowerIsBetter, true) | (Direction::HigherIsBetter, false) => {
            Verdict::Improvement
        }
        _ => Verdict::Regression,
    }
}
