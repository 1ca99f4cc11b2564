//! The headline: what a candidate did, in one line, from its primary
//! metrics' verdicts in the main workload, with every regression of any
//! condition and how many figures are context in the lane. It states
//! verdicts only, so it cannot say more than they do, nor the opposite.
//!
//! Where the patched kernel is the baseline (a diagnostic's reversed
//! order, [`crate::results::Compares::patch_first`]), every change is the
//! base's against the patch: the headline says so, words each called
//! change as the base's ("worse on the base"), and names as the patch's
//! regressions only what the base does better.

use crate::model::{Unit, Verdict};
use crate::results::{ComparisonRecord, HeadlineRecord, SelfCheckRecord};

/// The headline of `variant` against `baseline`; `patch_first` when the
/// baseline is the patched kernel and `variant` the base.
pub(super) fn headline(
    rows: &[ComparisonRecord],
    baseline: &str,
    variant: &str,
    self_check: Option<&SelfCheckRecord>,
    patch_first: bool,
) -> HeadlineRecord {
    let of: Vec<&ComparisonRecord> = rows
        .iter()
        .filter(|r| r.baseline == baseline && r.variant == variant)
        .collect();
    let main: Vec<&ComparisonRecord> = of
        .iter()
        .copied()
        .filter(|r| r.condition.is_none())
        .collect();
    let any_primary = main.iter().any(|r| r.primary);
    // Without a spec's primary metrics, every metric of the main workload
    // speaks.
    let primary: Vec<&ComparisonRecord> = main
        .iter()
        .copied()
        .filter(|r| r.primary || !any_primary)
        .collect();
    let names = |v: Verdict| -> Vec<String> {
        primary
            .iter()
            .filter(|r| r.kind() == v)
            .map(|r| r.metric.clone())
            .collect()
    };
    let mut parts: Vec<String> = Vec::new();
    // Times and rates first, then the counts that explain them.
    let mut called: Vec<&ComparisonRecord> = primary
        .iter()
        .copied()
        .filter(|r| r.kind().is_change())
        .collect();
    called.sort_by_key(|r| !r.unit.is_some_and(Unit::is_time_or_rate));
    let changes: Vec<String> = called.into_iter().map(|r| change(r, patch_first)).collect();
    if !changes.is_empty() {
        parts.push(changes.join(", "));
    }
    let same = names(Verdict::NoClearDifference);
    if !same.is_empty() {
        parts.push(format!("no clear difference in {}", same.join(", ")));
    }
    let negligible = names(Verdict::Negligible);
    if !negligible.is_empty() {
        parts.push(format!(
            "negligible on both sides: {}",
            negligible.join(", ")
        ));
    }
    let undecided = names(Verdict::Inconclusive);
    if !undecided.is_empty() {
        parts.push(format!("undecided: {}", undecided.join(", ")));
    }
    let elsewhere = names(Verdict::Context);
    let regressed: Vec<String> = of
        .iter()
        .filter(|r| r.kind() == regression_of_the_patch(patch_first))
        .map(|r| match &r.condition {
            Some(c) => format!("{} (control {c})", r.metric),
            None => r.metric.clone(),
        })
        .collect();
    // "No regression" only where something could have regressed: a time
    // or a rate this lane measures.
    let could_regress = of.iter().any(|r| {
        r.measured()
            && crate::model::Direction::from(r.direction) != crate::model::Direction::Neither
    });
    let of_the_patch = if patch_first { " of the patch" } else { "" };
    parts.push(if !regressed.is_empty() {
        format!("REGRESSION{of_the_patch}: {}", regressed.join(", "))
    } else if could_regress {
        format!("no regression{of_the_patch}")
    } else {
        "no time or rate is measured exactly in this lane, so none could regress".to_string()
    });
    let context = of.iter().filter(|r| r.kind() == Verdict::Context).count();
    if context > 0 {
        parts.push(format!(
            "{context} figure{} shown as context, not measured exactly in this lane{}",
            if context == 1 { "" } else { "s" },
            if elsewhere.is_empty() {
                String::new()
            } else {
                format!(" (among them {})", elsewhere.join(", "))
            }
        ));
    }
    let who = if patch_first {
        format!("{variant} vs {baseline}, the base against the patch (A)")
    } else if (baseline, variant) == ("A", "B") {
        "B".to_string()
    } else {
        format!("{variant} vs {baseline}")
    };
    let text = match self_check {
        // Every boot of a side stopped before its samples: nothing was
        // compared, so the check neither passed nor failed.
        Some(_) if of.is_empty() => {
            "A/A self-check not made: no boot of a side completed, so nothing was compared"
                .to_string()
        }
        Some(check) if check.false_calls.is_empty() => format!(
            "A/A self-check passed: no change called between identical kernels; {}",
            parts.join("; ")
        ),
        Some(check) => format!(
            "A/A self-check FAILED: {} called a change between identical kernels",
            check.false_calls.join(", ")
        ),
        None => format!("{who}: {}", parts.join("; ")),
    };
    HeadlineRecord {
        baseline: baseline.to_string(),
        variant: variant.to_string(),
        text,
    }
}

/// The verdict of a row that is a regression of the patch, which the exit
/// code is: B's regression, or, where the patched kernel is the baseline
/// and the base the candidate (`patch_first`), the base's improvement.
pub(super) fn regression_of_the_patch(patch_first: bool) -> Verdict {
    if patch_first {
        Verdict::Improvement
    } else {
        Verdict::Regression
    }
}

/// A called change: a count whose sides are each constant as `8192 → 0`,
/// anything else as its % change; with the verdict, or with the patch as
/// A, what it says of the base.
fn change(r: &ComparisonRecord, patch_first: bool) -> String {
    let count = matches!(r.unit, Some(Unit::Pages | Unit::Count | Unit::Bytes));
    let what = if count && r.a.sd == 0.0 && r.b.sd == 0.0 {
        format!(
            "{} {} \u{2192} {}",
            r.metric,
            whole(r.a.mean),
            whole(r.b.mean)
        )
    } else {
        format!("{} {}", r.metric, signed_pct(r.change_pct()))
    };
    let said = match r.kind() {
        Verdict::Regression if patch_first => "worse on the base",
        Verdict::Improvement if patch_first => "better on the base",
        v => v.label(),
    };
    format!("{what} ({said})")
}

fn whole(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// A signed percentage with U+2212 MINUS SIGN, as the tables write it.
fn signed_pct(p: Option<f64>) -> String {
    match p {
        Some(p) if p < 0.0 => format!("\u{2212}{:.2}%", -p),
        Some(p) => format!("+{p:.2}%"),
        None => "n/a".into(),
    }
}
