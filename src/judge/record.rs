//! The statistics' comparison, converted at the edge into the record
//! results.json stores and every renderer reads.

use crate::model::{Direction, Unit, Verdict};
use crate::results::comparison::*;
use crate::stats;

/// What the record says besides the statistics: which metric, of which
/// condition, which two variants, and how many samples each side measured.
pub(super) struct Meta<'a> {
    pub condition: Option<&'a str>,
    pub metric: &'a str,
    pub baseline: &'a str,
    pub variant: &'a str,
    pub unit: Option<Unit>,
    pub primary: bool,
    pub a_samples: usize,
    pub b_samples: usize,
}

/// The record of `c`; with `context`, a row that is not this lane's
/// measurement: its numbers are kept, its verdict is
/// [`Verdict::Context`] and its reason says why.
pub(super) fn record(
    meta: &Meta<'_>,
    c: &stats::Comparison,
    context: Option<String>,
) -> ComparisonRecord {
    let boots = |b: &[Option<stats::Summary>]| b.iter().map(|s| s.as_ref().map(summary)).collect();
    let (verdict, reason, ruled_out, to_decide) = match context {
        Some(why) => (
            Verdict::Context,
            format!("context, not this lane's measurement: {why}"),
            None,
            Some(ToDecideRecord::AnotherLane),
        ),
        None => (
            c.verdict.kind,
            c.verdict.reason.clone(),
            c.verdict.ruled_out.clone(),
            c.verdict.to_decide.map(to_decide_record),
        ),
    };
    ComparisonRecord {
        condition: meta.condition.map(str::to_string),
        metric: meta.metric.to_string(),
        baseline: meta.baseline.to_string(),
        variant: meta.variant.to_string(),
        direction: c.direction.into(),
        unit: meta.unit,
        primary: meta.primary,
        a_samples: meta.a_samples,
        b_samples: meta.b_samples,
        a: summary(&c.a),
        b: summary(&c.b),
        a_repeated: c.a_repeated,
        b_repeated: c.b_repeated,
        a_boots: boots(&c.a_boots),
        b_boots: boots(&c.b_boots),
        drift_pct: c.drift_pct,
        max_boot_cv_pct: c.max_boot_cv_pct,
        mean_change: c.mean_change.as_ref().map(change),
        median_change: c.median_change.as_ref().map(change),
        welch: c.welch.map(|w| WelchRecord {
            t: w.t,
            df: w.df,
            p: w.p,
        }),
        mann_whitney: MannWhitneyRecord {
            u: c.mann_whitney.u,
            p: c.mann_whitney.p,
            method: match c.mann_whitney.method {
                stats::MannWhitneyMethod::Exact => "exact",
                stats::MannWhitneyMethod::Asymptotic => "asymptotic",
            }
            .to_string(),
        },
        separation: match c.separation {
            stats::Separation::AllBelow => SeparationRecord::AllBelow,
            stats::Separation::AllAbove => SeparationRecord::AllAbove,
            stats::Separation::Overlap => SeparationRecord::Overlap,
        },
        verdict: verdict.into(),
        reason,
        ruled_out,
        to_decide,
        options: OptionsRecord {
            min_samples: c.options.min_samples,
            alpha: c.options.alpha,
            noise_pct: c.options.noise_pct,
            resamples: c.options.resamples,
            seed: c.options.seed,
            negligible: c.options.negligible,
            by_boot: c.options.by_boot,
            sequential: c.sequential.map(|s| LookOptionsRecord {
                look: s.look.look,
                of: s.look.of,
                spending: s.look.spending,
                critical: s.critical,
                level: s.level,
            }),
        },
    }
}

fn to_decide_record(t: stats::ToDecide) -> ToDecideRecord {
    match t {
        stats::ToDecide::Samples { factor, a, b } => ToDecideRecord::Samples { factor, a, b },
        stats::ToDecide::OnTheEdge => ToDecideRecord::OnTheEdge,
        stats::ToDecide::Drift => ToDecideRecord::Drift,
    }
}

fn interval(i: stats::Interval) -> IntervalRecord {
    IntervalRecord { lo: i.lo, hi: i.hi }
}

fn summary(s: &stats::Summary) -> SummaryRecord {
    SummaryRecord {
        n: s.n,
        mean: s.mean,
        median: s.median,
        sd: s.sd,
        cv_pct: s.cv_pct,
        min: s.min,
        max: s.max,
        mean_ci: s.mean_ci.map(interval),
    }
}

fn change(c: &stats::Change) -> ChangeRecord {
    ChangeRecord {
        pct: c.pct,
        ci: c.ci.map(interval),
    }
}

/// The direction a verdict uses: the spec's, where its unit allows it,
/// else the unit's own ([`Unit::direction`]: a count explains a result
/// rather than being one, so its change is *changed*, never an
/// improvement or a regression, whatever a spec says). The rule is
/// docs/statistics.md's table "Which way is better"; the specs follow it
/// (tests/docs.rs).
pub(super) fn direction(unit: Option<Unit>, better: Option<Direction>) -> Direction {
    match (unit, better) {
        (Some(u), Some(d)) => u.direction(d),
        (Some(u), None) => u.directions()[0],
        (None, Some(d)) => d,
        (None, None) => Direction::Neither,
    }
}
