//! What each patch of a series did: for a per-patch campaign (the base,
//! then the base plus each prefix of the series), each step against the
//! one before it, with its interval and verdict, and its contribution in
//! points of the base's mean; then the steps' sum against the whole
//! series' change.
//!
//! Steps are measured between adjacent prefixes, so their contributions add
//! up to the whole series' change by construction (the means telescope). An
//! interaction between patches shows as a step unlike that patch's effect
//! alone; measuring a patch alone on the base is another campaign.

use std::fmt::Write;

use super::format::{change_cell, code_span};
use crate::model::{Direction, Unit};
use crate::results::{ComparisonRecord, Results};

/// One patch's step for one metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Step<'r> {
    /// The variant with this patch on top (`p2`).
    pub variant: &'r str,
    /// The patch's subject (untrusted text).
    pub subject: &'r str,
    /// The variant against the one before it.
    pub row: &'r ComparisonRecord,
    /// `(mean − previous mean) / base mean · 100`; `None` when the base's
    /// mean is 0.
    pub points: Option<f64>,
}

/// One metric's waterfall.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric<'r> {
    pub metric: &'r str,
    pub unit: Option<Unit>,
    pub direction: Option<Direction>,
    pub steps: Vec<Step<'r>>,
    /// The sum of the steps' points.
    pub sum_points: Option<f64>,
    /// The whole series against the base.
    pub whole: Option<&'r ComparisonRecord>,
}

/// The waterfall of every main-workload metric, from the step rows
/// (the judgement's `steps`) and the rows against the baseline.
pub fn metrics<'r>(
    results: &'r Results,
    steps: &'r [ComparisonRecord],
    rows: &'r [ComparisonRecord],
) -> Vec<Metric<'r>> {
    let last = results.variants.last().map_or("", |v| v.name.as_str());
    let mut names: Vec<&str> = Vec::new();
    for r in steps {
        if !names.contains(&r.metric.as_str()) {
            names.push(&r.metric);
        }
    }
    names
        .into_iter()
        .map(|metric| {
            let whole = rows
                .iter()
                .find(|r| r.condition.is_none() && r.metric == metric && r.variant == last);
            let base_mean = whole.map(|w| w.a.mean).filter(|m| *m != 0.0);
            let steps: Vec<Step> = steps
                .iter()
                .filter(|r| r.metric == metric)
                .map(|row| {
                    let patches = results
                        .variants
                        .iter()
                        .find(|v| v.name == row.variant)
                        .map_or(0, |v| v.patches);
                    Step {
                        variant: &row.variant,
                        subject: patches
                            .checked_sub(1)
                            .and_then(|i| results.series.patches.get(i))
                            .map_or("", |p| p.subject.as_str()),
                        points: base_mean
                            .map(|base| (row.b.mean - row.a.mean) / base.abs() * 100.0),
                        row,
                    }
                })
                .collect();
            let sum_points = steps.iter().map(|s| s.points).sum::<Option<f64>>();
            let first = steps.first().map(|s| s.row);
            Metric {
                metric,
                unit: first.and_then(|r| r.unit),
                direction: first.map(|r| r.direction.into()),
                steps,
                sum_points,
                whole,
            }
        })
        .collect()
}

/// Points of the base, signed with a true minus.
pub fn points_text(points: Option<f64>) -> String {
    match points {
        Some(p) if p < 0.0 => format!("\u{2212}{:.2}", -p),
        Some(p) => format!("+{p:.2}"),
        None => "n/a".into(),
    }
}

/// The waterfall as a Markdown section.
pub fn markdown(
    results: &Results,
    steps: &[ComparisonRecord],
    rows: &[ComparisonRecord],
) -> String {
    let mut out = String::new();
    let base = results.baseline();
    let _ = writeln!(
        out,
        "\n#### What each patch did\n\n\
         Each step is one patch on top of the ones before it: its change against the step before, \
         with its 95% interval and verdict, and its contribution in points of {}'s mean. \
         Steps between adjacent prefixes add up to the whole series' change by construction; \
         an interaction between patches shows as a step unlike that patch's effect alone, \
         which this campaign does not measure.\n",
        code_span(base)
    );
    let _ = writeln!(
        out,
        "| metric | step | vs the step before [95% CI] | verdict | points of {base} |\n|---|---|---:|---|---:|"
    );
    for m in metrics(results, steps, rows) {
        for (i, step) in m.steps.iter().enumerate() {
            let _ = writeln!(
                out,
                "| {} | {} {} | {} | {} | {} |",
                if i == 0 { m.metric } else { "" },
                step.variant,
                code_span(step.subject),
                change_cell(step.row),
                step.row.kind().marked(),
                points_text(step.points)
            );
        }
        let _ = writeln!(
            out,
            "| | **sum of the steps** | | | {} |",
            points_text(m.sum_points)
        );
        if let Some(whole) = m.whole {
            let _ = writeln!(
                out,
                "| | **whole series, {} vs {base}** | {} | {} | {} |",
                whole.variant,
                change_cell(whole),
                whole.kind().marked(),
                points_text(whole.mean_change.map(|c| c.pct))
            );
        }
    }
    let called: Vec<String> = metrics(results, steps, rows)
        .iter()
        .flat_map(|m| {
            m.steps
                .iter()
                .filter(|s| !s.row.kind().is_unchanged())
                .map(|s| {
                    format!(
                        "- {}, {}: {} \u{2014} {}",
                        m.metric,
                        s.variant,
                        s.row.kind().marked(),
                        s.row.reason
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect();
    if !called.is_empty() {
        let _ = writeln!(out, "\n{}", called.join("\n"));
    }
    out
}
