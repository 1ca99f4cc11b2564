//! The verdict on one metric: the rules that turn the statistics into
//! "improvement", "regression", "changed", "no clear difference",
//! "negligible" or "inconclusive", each with a one-line reason, and for an inconclusive
//! one, what the data do rule out and what would decide it.
//! docs/statistics.md states the same rules for readers of the report.

use super::bootstrap::Change;
use super::describe::{Interval, Summary};
use super::hypothesis::WelchTest;
use super::options::{CompareOptions, SequentialLook};
use crate::model::{Direction, Verdict};

/// The version of the rules below, stored with every judgement
/// (docs/statistics.md, "Rule versions"): 1, "no clear difference" when
/// the interval merely reached into the band; 2, only when it lies inside
/// it (equivalence), the same for the fixed and the sequential protocol;
/// 3, rule 3 has a word of its own, "negligible", instead of "no clear
/// difference" beside an interval that may lie far outside the band.
pub const RULE_VERSION: u32 = 3;

/// A verdict, the one-line reason for it and, when it is inconclusive,
/// what the data rule out and what would decide it.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub kind: Verdict,
    /// For people: what decided the verdict, with the numbers that did.
    pub reason: String,
    /// An inconclusive verdict's bounds: which changes the interval rules
    /// out and which it allows ("a regression over 2.00% is ruled out; an
    /// improvement of up to 10.34% is not").
    pub ruled_out: Option<String>,
    /// An inconclusive verdict: what would decide it.
    pub to_decide: Option<ToDecide>,
}

/// What would decide an inconclusive verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ToDecide {
    /// About `factor` times the observations on each side (`a` and `b`
    /// of them), from the interval's width: it shrinks as 1/√n, and must
    /// shrink to the distance between its centre and the band's edge.
    Samples { factor: f64, a: usize, b: usize },
    /// The interval's centre sits on the band's edge: no practical number
    /// of samples moves it off (more than 100 times as many).
    OnTheEdge,
    /// A's own boots differ by more than the band: a baseline that does
    /// not drift decides it, not more samples.
    Drift,
}

impl std::fmt::Display for ToDecide {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToDecide::Samples { factor, a, b } => write!(
                f,
                "about {factor:.1}\u{d7} the observations would decide it ({a} A, {b} B)"
            ),
            ToDecide::OnTheEdge => f.write_str(
                "the change sits on the band's edge: no practical number of samples decides it",
            ),
            ToDecide::Drift => f.write_str(
                "a baseline that does not drift between boots decides it, not more samples",
            ),
        }
    }
}

impl Judgement {
    fn new(kind: Verdict, reason: String) -> Judgement {
        Judgement {
            kind,
            reason,
            ruled_out: None,
            to_decide: None,
        }
    }

    fn undecided(
        reason: String,
        ruled_out: Option<String>,
        to_decide: Option<ToDecide>,
    ) -> Judgement {
        Judgement {
            kind: Verdict::Inconclusive,
            reason,
            ruled_out,
            to_decide,
        }
    }
}

/// What [`decide`] looks at, computed by [`super::compare`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Evidence<'a> {
    pub direction: Direction,
    /// All A samples, pooled over boots (or the boots' means).
    pub a: &'a Summary,
    /// All B samples, likewise.
    pub b: &'a Summary,
    pub welch: Option<&'a WelchTest>,
    pub mean_change: Option<&'a Change>,
    pub drift_pct: Option<f64>,
    /// A booted twice or more and its boots agree value for value, and so
    /// do B's: a deterministic lane, in which one boot of a kernel is all
    /// of its boots (kernel-boot's one sample a boot under icount).
    pub boots_repeat: bool,
}

/// The verdict rules, applied in order; the first that matches decides.
/// "The interval" is the 95% interval of the % change of the mean: the
/// percentile bootstrap's in the fixed protocol, the repeated confidence
/// interval at a look of a sequential campaign (`look`).
///
/// 1. Fewer than `min_samples` (default 3) in A or in B: **inconclusive**,
///    unless both are constant and A's boots repeat value for value
///    (`boots_repeat`): then the lane is deterministic, and rule 2 judges.
/// 2. A and B all one value: **no clear difference** when it is the same
///    value, else a change known exactly, judged by rule 5 with p = 0.
/// 3. The metric has a `negligible` level and every A and B sample lies
///    within ±it: **negligible**, whatever the interval says.
/// 4. A's mean is 0, so no % change exists: **inconclusive**.
/// 5. The interval lies wholly outside ±band, where band is the larger of
///    `noise_pct` (default 2%) and |A's return drift|, and (fixed
///    protocol) Welch p < `alpha`: a change. Its sign and the direction
///    make it an **improvement** or a **regression**, or **changed** for
///    a metric with no direction.
/// 6. |A's return drift| > `noise_pct`: **inconclusive**; a baseline that
///    moved that far between boots cannot show that a change is smaller.
/// 7. The interval lies wholly inside ±`noise_pct`: **no clear
///    difference**. Every change the data allow is smaller than the band:
///    equivalence (two one-sided tests, each at 2.5%, Schuirmann 1987),
///    not the absence of evidence.
/// 8. Otherwise **inconclusive**, with what the interval rules out and
///    what would decide it.
pub(crate) fn decide(
    e: &Evidence<'_>,
    options: &CompareOptions,
    look: Option<&SequentialLook>,
) -> Judgement {
    use Verdict::*;
    let noise = options.noise_pct;
    let constant = e.a.sd == 0.0 && e.b.sd == 0.0;
    let exact = constant && e.boots_repeat;
    if (e.a.n < options.min_samples || e.b.n < options.min_samples) && !exact {
        return Judgement::undecided(
            format!(
                "too few samples: A has {}, B has {}; at least {} each are needed",
                e.a.n, e.b.n, options.min_samples
            ),
            None,
            None,
        );
    }
    if constant && e.a.mean == e.b.mean {
        let repeat = if exact && e.a.n < options.min_samples {
            " (A's boots repeat value for value: a deterministic lane)"
        } else {
            ""
        };
        return Judgement::new(
            NoClearDifference,
            format!("every A and B sample is {}{repeat}", e.a.mean),
        );
    }
    if let Some(level) = options.negligible
        && both_negligible(e.a, e.b, level)
    {
        let amount = |x: f64| match options.unit {
            Some(unit) => unit.amount(x),
            None => fmt_num(x),
        };
        return Judgement::new(
            Negligible,
            format!(
                "both within \u{b1}{}, the metric's negligible level, in every sample (A's mean {}, B's {})",
                amount(level),
                amount(e.a.mean),
                amount(e.b.mean)
            ),
        );
    }
    let Some(change) = e.mean_change else {
        return Judgement::undecided(
            "A's mean is 0, so B's change has no percentage".into(),
            None,
            None,
        );
    };
    let (which, at) = match look {
        Some(l) => (
            "repeated 95% CI",
            format!(" at look {} of {}", l.look, l.of),
        ),
        None => ("95% CI", String::new()),
    };
    let Some(ci) = change.ci else {
        return Judgement::undecided(
            format!(
                "{:+.2}% has no interval{at}: some resamples of A have a mean of 0",
                change.pct
            ),
            None,
            None,
        );
    };
    let band = e.drift_pct.map_or(noise, |d| noise.max(d.abs()));
    let ci_text = format!("{which} {}{at}", fmt_interval(ci));
    let p = match e.welch {
        Some(w) => w.p,
        // No variance in either group: the difference is exact.
        None if constant => 0.0,
        None => 1.0,
    };
    // The fixed protocol asks Welch's test too (the percentile bootstrap
    // is a little narrow at n = 9); a repeated interval already holds its
    // error over every look.
    let confirmed = look.is_some() || p < options.alpha;
    if ci.clear_of_band(band) && confirmed {
        let test = if look.is_some() {
            String::new()
        } else {
            format!(", Welch p = {}", fmt_p(p))
        };
        return Judgement::new(
            change_kind(e.direction, change.pct),
            format!(
                "{:+.2}% ({ci_text}){test}, clears the ±{band:.2}% band",
                change.pct
            ),
        );
    }
    let left = match look {
        Some(l) if l.last() => "undecided when the budget ran out: ",
        Some(_) => "undecided: ",
        None => "",
    };
    let ruled_out = Some(bounds(ci, noise, e.direction));
    if let Some(drift) = e.drift_pct.filter(|d| d.abs() > noise) {
        return Judgement::undecided(
            format!(
                "{left}A drifted {drift:+.2}% between boots, beyond the ±{noise:.2}% noise band, and B's {:+.2}% ({ci_text}) does not clear that drift",
                change.pct
            ),
            ruled_out,
            Some(ToDecide::Drift),
        );
    }
    if ci.within_band(noise) {
        return Judgement::new(
            NoClearDifference,
            format!(
                "{:+.2}% ({ci_text}) lies wholly inside ±{noise:.2}%: any change is smaller than the band",
                change.pct
            ),
        );
    }
    let to_decide = Some(samples_to_decide(ci, noise, e.a.n, e.b.n));
    if ci.clear_of_band(noise) {
        // Rule 5 took every confirmed change that clears the band.
        return Judgement::undecided(
            format!(
                "unconfirmed: {:+.2}% ({ci_text}) lies wholly outside ±{noise:.2}%, but Welch p = {} does not confirm it",
                change.pct,
                fmt_p(p)
            ),
            ruled_out,
            to_decide,
        );
    }
    let cv =
        e.a.cv_pct
            .map_or_else(|| "n/a".into(), |cv| format!("{cv:.2}%"));
    Judgement::undecided(
        format!(
            "{left}{:+.2}% ({ci_text}) reaches past ±{noise:.2}% and does not clear it (A's CV {cv})",
            change.pct
        ),
        ruled_out,
        to_decide,
    )
}

/// What an interval that is neither inside nor clear of ±`band` rules
/// out, in the metric's own words: "a regression over 2.00% is ruled out;
/// an improvement of up to 10.34% is not".
pub(crate) fn bounds(ci: Interval, band: f64, direction: Direction) -> String {
    let (up, down) = match direction {
        Direction::LowerIsBetter => ("a regression", "an improvement"),
        Direction::HigherIsBetter => ("an improvement", "a regression"),
        Direction::Neither => ("a rise", "a fall"),
    };
    let fall = -ci.lo;
    match (ci.hi < band, ci.lo > -band) {
        (true, _) => {
            format!("{up} over {band:.2}% is ruled out; {down} of up to {fall:.2}% is not")
        }
        (false, true) => format!(
            "{down} over {band:.2}% is ruled out; {up} of up to {:.2}% is not",
            ci.hi
        ),
        (false, false) => format!(
            "nothing beyond the band is ruled out: the data allow {down} of up to {fall:.2}% and {up} of up to {:.2}%",
            ci.hi
        ),
    }
}

/// How many more observations would shrink `ci` enough to decide: its
/// half-width falls as 1/√n and must fall below the distance from its
/// centre to the nearer edge of ±`band` (the band itself for an interval
/// centred on 0).
pub(crate) fn samples_to_decide(ci: Interval, band: f64, a_n: usize, b_n: usize) -> ToDecide {
    let half = (ci.hi - ci.lo) / 2.0;
    let centre = (ci.hi + ci.lo) / 2.0;
    let margin = (centre.abs() - band).abs();
    let factor = (half / margin).powi(2);
    if !factor.is_finite() || factor > 100.0 {
        return ToDecide::OnTheEdge;
    }
    let factor = factor.max(1.0);
    let scaled = |n: usize| (n as f64 * factor).ceil() as usize;
    ToDecide::Samples {
        factor,
        a: scaled(a_n),
        b: scaled(b_n),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ci(lo: f64, hi: f64) -> Interval {
        Interval { lo, hi }
    }

    #[test]
    fn the_bounds_say_which_side_the_interval_rules_out() {
        let lower = Direction::LowerIsBetter;
        assert_eq!(
            bounds(ci(-0.74, 10.34), 2.0, lower),
            "an improvement over 2.00% is ruled out; a regression of up to 10.34% is not"
        );
        assert_eq!(
            bounds(ci(-16.69, -0.75), 2.0, lower),
            "a regression over 2.00% is ruled out; an improvement of up to 16.69% is not"
        );
        assert_eq!(
            bounds(ci(-48.09, 1.52), 2.0, Direction::HigherIsBetter),
            "an improvement over 2.00% is ruled out; a regression of up to 48.09% is not"
        );
        assert!(bounds(ci(-9.0, 9.0), 2.0, Direction::Neither).starts_with("nothing beyond"));
    }

    #[test]
    fn samples_to_decide_scale_with_the_square_of_the_width_over_the_margin() {
        // Centred on 0, half-width 4 against a band of 2: four times the
        // samples halve the width.
        assert_eq!(
            samples_to_decide(ci(-4.0, 4.0), 2.0, 9, 9),
            ToDecide::Samples {
                factor: 4.0,
                a: 36,
                b: 36
            }
        );
        // Centred at +4.8, half-width 5.54: clearing the band needs the
        // half-width below 2.8, (5.54 / 2.8)^2 = 3.91 times the samples.
        match samples_to_decide(ci(-0.74, 10.34), 2.0, 6, 3) {
            ToDecide::Samples { factor, a, b } => {
                assert!((factor - 3.915).abs() < 0.01, "{factor}");
                assert_eq!((a, b), (24, 12));
            }
            other => panic!("{other:?}"),
        }
        // On the edge: the centre is the band.
        assert_eq!(
            samples_to_decide(ci(0.0, 4.0), 2.0, 9, 9),
            ToDecide::OnTheEdge
        );
        assert!(ToDecide::OnTheEdge.to_string().contains("band's edge"));
    }
}
