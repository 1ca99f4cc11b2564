//! The Markdown report (report.md, the PR comment, the job summary): the
//! seeds' table for an A/B campaign, one column per variant when there are
//! more, and the waterfall of a per-patch campaign.

use std::fmt::Write;

use super::format::{
    boot_order, change_cell, code_span, control_title, format_value, noise_line, noisy_host,
    p_cell, short, signed_pct, unit_label,
};
use super::rows::{Row, by_condition, rows, steps};
use super::waterfall;
use crate::model::{Direction, Verdict};
use crate::results::{Accel, Results};
use crate::stats::{self, CompareOptions};
use crate::workload::WorkloadSpec;

/// Markdown for a PR comment or a job summary.
pub fn markdown(results: &Results, spec: Option<&WorkloadSpec>) -> String {
    markdown_of(results, spec, &rows(results, spec))
}

/// [`markdown`] from rows already compared (the bootstrap is not free):
/// an A/B campaign reads as the seeds' mails do; more variants get one
/// column each, and a per-patch campaign its waterfall.
pub fn markdown_of(results: &Results, spec: Option<&WorkloadSpec>, rows: &[Row]) -> String {
    let names: Vec<&str> = results.variants.iter().map(|v| v.name.as_str()).collect();
    if names == ["A", "B"] {
        two_variants(results, spec, rows)
    } else {
        many_variants(results, spec, rows)
    }
}

/// The cost lane's banner, or the TCG banner when the boots ran under TCG.
fn accelerator(out: &mut String, results: &Results) {
    if let Some(banner) = super::profile::cost_banner(results) {
        let _ = writeln!(out, "> **{banner}**\n");
    } else if results.host.accel == Accel::Tcg {
        let _ = writeln!(
            out,
            "> **Accelerator: TCG{}** \u{2014} {}. Times are emulated CPU time: compare A with B, not with hardware.\n",
            super::format::tcg_mode(results),
            results.host.accel_reason
        );
    }
    if let Some(line) = super::format::cputime_line(results) {
        let _ = writeln!(out, "> {line}\n");
    }
    for line in results.reach.iter().flat_map(|r| r.lines()) {
        let _ = writeln!(out, "> **{line}**\n");
    }
}

/// The boots a guest failure stopped, as a warning above the tables.
fn stopped_markdown(out: &mut String, results: &Results) {
    for failed in super::failures::failed_boots(results) {
        let _ = writeln!(out, "> **Stopped:** {}\n", failed.sentence(code_span));
    }
    if let Some(line) = super::failures::nothing_compared(results) {
        let _ = writeln!(out, "{line}\n");
    }
}

fn two_variants(results: &Results, spec: Option<&WorkloadSpec>, rows: &[Row]) -> String {
    let mut out = String::new();
    let workload = spec.map_or("workload", |s| s.name.as_str());
    let subject = results
        .series
        .patches
        .first()
        .map(|p| p.subject.as_str())
        .unwrap_or("series");
    let self_check = results.series.patches.is_empty();
    if self_check {
        let _ = writeln!(
            out,
            "### patchbench: {workload}, A/A self-check: A = B = the base\n"
        );
    } else {
        let _ = writeln!(
            out,
            "### patchbench: {workload}, A = base, B = base + {}\n",
            code_span(subject)
        );
    }
    accelerator(&mut out, results);
    stopped_markdown(&mut out, results);
    for (control, rows) in by_condition(results, rows) {
        if let Some(control) = control {
            let _ = writeln!(out, "\n#### {}\n", control_title(control));
        }
        condition_markdown(&mut out, results, &rows);
    }
    uncompared_markdown(&mut out, results);
    profile_markdown(&mut out, results);
    if self_check {
        let _ = writeln!(out, "\n{}", self_check_line(results, rows));
    }
    run_lines(&mut out, results, rows);
    let _ = writeln!(
        out,
        "\nMethod: fresh boots in the order {}, {} warm-up(s) then {} sample(s) per boot; {} \
         A change is called only when p < {} and the whole interval lies outside \u{b1}{}% (widened to the A drift when that is larger); \
         see docs/statistics.md.{} Accelerator: {}. Base {} ({}), chosen from {}; B adds {} patch(es), series sha256 {}.",
        boot_order(results),
        results.protocol.warmups,
        results.protocol.samples,
        if super::rows::judged_by_boot(results) {
            "each boot ran in a memory layout of its own and its mean is one observation (no drift: the boots differ by layout on purpose); \
             max CV is the largest within-boot coefficient of variation. \
             B vs A is the change of the mean of the boots' means with Welch's 95% t interval; p is Welch's t-test over the boots' means."
                .to_string()
        } else {
            format!(
                "A pools every A boot. \
                 Drift is the last A boot's mean against the first's; max CV is the largest within-boot coefficient of variation. \
                 B vs A is the change of the mean with a 95% percentile-bootstrap interval ({} resamples, seed {:#x}); p is Welch's t-test.",
                CompareOptions::default().resamples,
                CompareOptions::default().seed,
            )
        },
        CompareOptions::default().alpha,
        CompareOptions::default().noise_pct,
        if results.controls.is_empty() {
            ""
        } else {
            " Each control ran in the same boots, after the main workload, with as many warm-ups and samples, and is compared on its own."
        },
        results.host.accel,
        short(&results.tree.base_commit),
        results.tree.origin,
        results.tree.base_choice,
        results.series.patches.len(),
        short(&results.series.sha256),
    );
    out
}

/// One condition's table, its geometric-mean line and the reason behind
/// every verdict that is not "no clear difference".
fn condition_markdown(out: &mut String, results: &Results, rows: &[&Row]) {
    let _ = writeln!(
        out,
        "| metric | unit | A mean | B mean | B vs A [95% CI] | p | verdict | A drift | max CV |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---|---:|---:|");
    for row in rows {
        let c = &row.comparison;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.metric,
            unit_label(row.unit),
            format_value(c.a.mean, row.unit),
            format_value(c.b.mean, row.unit),
            change_cell(c),
            p_cell(c),
            c.verdict.kind.marked(),
            signed_pct(c.drift_pct),
            c.max_boot_cv_pct
                .map_or("n/a".into(), |cv| format!("{cv:.2}%")),
        );
    }
    if let Some(g) = stats::geomean_change(summarised(rows.iter().copied())) {
        let _ = writeln!(
            out,
            "\nGeometric mean of B/A over {} time and rate metric(s) (lower is better; counts of pages and events are left out): {}.",
            g.metrics,
            signed_pct(Some(g.change_pct))
        );
    }
    // Every verdict but "no clear difference" is explained, and so is one
    // that only the metric's negligible level decided (its change may look
    // large, or have no interval), and one that some samples lack.
    let mut reasons = rows
        .iter()
        .filter(|r| {
            r.comparison.verdict.kind != Verdict::NoClearDifference
                || r.comparison.negligible()
                || r.coverage().is_some()
        })
        .peekable();
    if reasons.peek().is_some() {
        let _ = writeln!(out);
        for r in reasons {
            let _ = writeln!(
                out,
                "- {}: {} \u{2014} {}{}{}",
                r.metric,
                r.comparison.verdict.kind.marked(),
                r.comparison.verdict.reason,
                noisy_note(results, r),
                coverage_note(r)
            );
        }
    }
    repeats_markdown(out, rows);
}

/// [`super::rows::repeats_line`] as a paragraph, or nothing.
fn repeats_markdown(out: &mut String, rows: &[&Row]) {
    let lines = [
        super::rows::repeats_line(rows),
        super::rows::layouts_line(rows),
    ];
    for line in lines.into_iter().flatten() {
        let _ = writeln!(out, "\n{line}");
    }
}

/// The metrics no sample of one side has, one line each (nothing when
/// there are none).
fn uncompared_markdown(out: &mut String, results: &Results) {
    let missing = super::rows::uncompared(results);
    if missing.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nNot compared (no sample of one side has the metric):\n"
    );
    for m in missing {
        let _ = writeln!(out, "- {}", m.sentence());
    }
}

/// A row's [`Row::coverage`] as a sentence to append, or nothing.
/// [`noisy_host`] as a sentence to append to a verdict's reason, or
/// nothing.
fn noisy_note(results: &Results, row: &Row) -> String {
    noisy_host(results, row.comparison.verdict.kind).map_or(String::new(), |n| format!(". {n}"))
}

fn coverage_note(row: &Row) -> String {
    row.coverage()
        .map_or(String::new(), |c| format!(". Samples: {c}"))
}

/// The A/A verdict: any improvement or regression is a false positive, set
/// against the rate the rules imply for this protocol and noise.
fn self_check_line(results: &Results, rows: &[Row]) -> String {
    let false_calls: Vec<String> = rows
        .iter()
        .filter(|r| {
            matches!(
                r.comparison.verdict.kind,
                Verdict::Improvement | Verdict::Regression
            )
        })
        .map(Row::label)
        .collect();
    let directed: Vec<&Row> = rows
        .iter()
        .filter(|r| r.comparison.direction != Direction::Neither)
        .collect();
    let cv = directed
        .iter()
        .filter_map(|r| r.comparison.a.cv_pct())
        .fold(0.0_f64, f64::max);
    let count = |v: &str| results.protocol.boots.iter().filter(|b| *b == v).count();
    let scenario = stats::NullScenario {
        a_boots: count(results.baseline()),
        b_boots: results.candidates().first().map_or(0, |v| count(&v.name)),
        per_boot: results.protocol.samples as usize,
        cv_pct: cv.max(0.1),
        simulations: 2000,
        seed: stats::DEFAULT_SEED,
    };
    let rate = stats::aa_false_positive_rate(&scenario, &CompareOptions::default())
        .map_or("n/a".to_string(), |r| format!("{:.1}%", r * 100.0));
    let outcome = if false_calls.is_empty() {
        format!(
            "**A/A self-check passed**: none of {} metric(s) with a direction was called an improvement or a regression",
            directed.len()
        )
    } else {
        format!(
            "**A/A self-check FAILED**: {} called a change between identical kernels",
            false_calls.join(", ")
        )
    };
    format!(
        "{outcome}. The rules' false-positive rate per metric at this protocol ({} A and {} B boot(s) of {} sample(s), CV {cv:.1}%), simulated: {rate}.",
        scenario.a_boots, scenario.b_boots, scenario.per_boot
    )
}

/// Three or more variants: which each is, then one table per condition
/// with a column per variant against the baseline, mmtests-style; the
/// waterfall of a per-patch campaign; the method.
fn many_variants(results: &Results, spec: Option<&WorkloadSpec>, rows: &[Row]) -> String {
    let mut out = String::new();
    let workload = spec.map_or("workload", |s| s.name.as_str());
    let baseline = results.baseline();
    let candidates = results.candidates();
    let _ = match candidates {
        [one] => writeln!(
            out,
            "### patchbench: {workload}, {} against {}\n",
            code_span(&one.name),
            code_span(baseline)
        ),
        _ => writeln!(
            out,
            "### patchbench: {workload}, {} variants against {}\n",
            candidates.len(),
            code_span(baseline)
        ),
    };
    accelerator(&mut out, results);
    stopped_markdown(&mut out, results);
    let _ = writeln!(out, "| variant | what it is | kernel |\n|---|---|---|");
    for (i, v) in results.variants.iter().enumerate() {
        let shared = results.variants[..i]
            .iter()
            .find(|w| w.kernel.bzimage_sha256 == v.kernel.bzimage_sha256);
        let kernel = match shared {
            Some(w) => format!("the same as {}", code_span(&w.name)),
            None => format!(
                "{}{}",
                short(&v.kernel.commit),
                if v.kernel.incremental {
                    format!(", {} objects rebuilt", v.kernel.objects_rebuilt)
                } else {
                    String::new()
                }
            ),
        };
        let _ = writeln!(
            out,
            "| {}{} | {} | {kernel} |",
            code_span(&v.name),
            if i == 0 { " (baseline)" } else { "" },
            code_span(&v.description)
        );
    }
    for (control, rows) in by_condition(results, rows) {
        if let Some(control) = control {
            let _ = writeln!(out, "\n#### {}", control_title(control));
        }
        columns_markdown(&mut out, results, &rows);
    }
    uncompared_markdown(&mut out, results);
    profile_markdown(&mut out, results);
    let steps = steps(results, spec);
    if !steps.is_empty() {
        out.push_str(&waterfall::markdown(results, &steps, rows));
    }
    run_lines(&mut out, results, rows);
    let _ = writeln!(
        out,
        "\nMethod: fresh boots in the order {}, {} warm-up(s) then {} sample(s) per boot; {} \
         A change is called only when Welch's p < {} and the whole interval lies outside \u{b1}{}% (widened to the baseline's drift when that is larger); \
         see docs/statistics.md.{} Accelerator: {}. Base {} ({}), chosen from {}; the series has {} patch(es), sha256 {}.",
        boot_order(results),
        results.protocol.warmups,
        results.protocol.samples,
        if super::rows::judged_by_boot(results) {
            format!(
                "each boot ran in a memory layout of its own and its mean is one observation. \
                 Each column is that variant's mean of its boots' means and its change against {baseline}'s with Welch's 95% t interval."
            )
        } else {
            format!(
                "each variant pools its boots. \
                 Each column is that variant's mean and its change against {baseline}'s with a 95% percentile-bootstrap interval ({} resamples, seed {:#x}).",
                CompareOptions::default().resamples,
                CompareOptions::default().seed,
            )
        },
        CompareOptions::default().alpha,
        CompareOptions::default().noise_pct,
        if results.controls.is_empty() {
            ""
        } else {
            " Each control ran in the same boots, after the main workload, with as many warm-ups and samples, and is compared on its own."
        },
        results.host.accel,
        short(&results.tree.base_commit),
        results.tree.origin,
        results.tree.base_choice,
        results.series.patches.len(),
        short(&results.series.sha256),
    );
    out
}

/// One condition's table with a column per variant, then each variant's
/// geometric mean and the reason behind every verdict that is not "no
/// clear difference".
fn columns_markdown(out: &mut String, results: &Results, rows: &[&Row]) {
    let baseline = results.baseline();
    let candidates = results.candidates();
    let _ = write!(out, "\n| metric | unit | {baseline} mean |");
    for v in candidates {
        let _ = write!(out, " {} vs {baseline} |", v.name);
    }
    let _ = write!(out, "\n|---|---|---:|");
    for _ in candidates {
        out.push_str("---:|");
    }
    out.push('\n');
    let mut metrics: Vec<&str> = Vec::new();
    for r in rows {
        if !metrics.contains(&r.metric.as_str()) {
            metrics.push(&r.metric);
        }
    }
    for metric in &metrics {
        let of: Vec<&&Row> = rows.iter().filter(|r| r.metric == *metric).collect();
        let Some(first) = of.first() else { continue };
        let _ = write!(
            out,
            "| {metric} | {} | {} |",
            unit_label(first.unit),
            format_value(first.comparison.a.mean, first.unit)
        );
        for v in candidates {
            match of.iter().find(|r| r.variant == v.name) {
                Some(r) => {
                    let _ = write!(
                        out,
                        " {} ({}, {}) |",
                        format_value(r.comparison.b.mean, r.unit),
                        change_cell(&r.comparison),
                        r.comparison.verdict.kind.marked()
                    );
                }
                None => out.push_str(" n/a |"),
            }
        }
        out.push('\n');
    }
    let geomeans: Vec<String> = candidates
        .iter()
        .filter_map(|v| {
            let of = summarised(rows.iter().copied().filter(|r| r.variant == v.name));
            stats::geomean_change(of)
                .map(|g| format!("{} {}", v.name, signed_pct(Some(g.change_pct))))
        })
        .collect();
    if !geomeans.is_empty() {
        let _ = writeln!(
            out,
            "\nGeometric mean against {baseline} over the time and rate metrics (lower is better; counts of pages and events are left out): {}.",
            geomeans.join(", ")
        );
    }
    let reasons: Vec<&&Row> = rows
        .iter()
        .filter(|r| {
            r.comparison.verdict.kind != Verdict::NoClearDifference
                || r.comparison.negligible()
                || r.coverage().is_some()
        })
        .collect();
    if !reasons.is_empty() {
        out.push('\n');
        for r in reasons {
            let _ = writeln!(
                out,
                "- {}, {} vs {}: {} \u{2014} {}{}{}",
                r.metric,
                r.variant,
                r.baseline,
                r.comparison.verdict.kind.marked(),
                r.comparison.verdict.reason,
                noisy_note(results, r),
                coverage_note(r)
            );
        }
    }
    repeats_markdown(out, rows);
}

/// The comparisons a summary covers: the time and rate metrics
/// ([`crate::model::Unit::summarised`]).
fn summarised<'r>(
    rows: impl Iterator<Item = &'r Row>,
) -> impl Iterator<Item = &'r crate::stats::Comparison> {
    rows.filter(|r| r.unit.is_some_and(crate::model::Unit::summarised))
        .map(|r| &r.comparison)
}

/// The largest within-boot CV over some rows, in percent.
fn max_boot_cv(rows: &[Row]) -> Option<f64> {
    super::format::max_time_cv(
        rows.iter()
            .map(|r| (r.unit, r.direction, r.comparison.max_boot_cv_pct)),
    )
}

/// The cost lane's tables: per phase, the symbols whose modeled cycles per
/// sample changed most (mean of A's samples, of B's, Δ, share of the
/// phase's total Δ), in millions of cycles.
fn profile_markdown(out: &mut String, results: &Results) {
    for table in super::profile::profile_tables(results) {
        let (a, b) = (&table.baseline, &table.variant);
        let _ = writeln!(out, "\n#### {}\n", table.title());
        if table.rows.is_empty() {
            let _ = writeln!(
                out,
                "No symbol's modeled cycles changed ({} and {} sample(s)).",
                table.a_samples, table.b_samples
            );
            continue;
        }
        let _ = writeln!(
            out,
            "| symbol | {a} (Mcycles) | {b} (Mcycles) | \u{394} (Mcycles) | share of total \u{394} |\n|---|---:|---:|---:|---:|"
        );
        let listed = table.rows.iter().map(|r| (r, ""));
        let changed = table
            .series_rows
            .iter()
            .map(|r| (r, " (changed by the series)"));
        for (r, mark) in listed.chain(changed) {
            let _ = writeln!(
                out,
                "| {}{mark} | {} | {} | {} | {} |",
                code_span(&r.symbol),
                mcycles(r.a_mean),
                mcycles(r.b_mean),
                signed_mcycles(r.delta),
                r.share
                    .map_or_else(|| "n/a".to_string(), |s| pct(s * 100.0)),
            );
        }
        let _ = writeln!(
            out,
            "\nThe whole phase: {a} {}, {b} {}, \u{394} {} Mcycles per sample ({} and {} sample(s)){}.",
            mcycles(table.a_total),
            mcycles(table.b_total),
            signed_mcycles(table.total_delta()),
            table.a_samples,
            table.b_samples,
            table.listed_share().map_or_else(String::new, |s| format!(
                "; the symbols listed account for {} of the \u{394}",
                pct(s * 100.0)
            )),
        );
    }
}

/// Cycles in millions, three decimals.
fn mcycles(cycles: f64) -> String {
    format!("{:.3}", cycles / 1e6)
}

/// A signed Δ in millions of cycles, with a minus sign.
fn signed_mcycles(cycles: f64) -> String {
    if cycles < 0.0 {
        format!("\u{2212}{}", mcycles(-cycles))
    } else {
        format!("+{}", mcycles(cycles))
    }
}

/// A percentage with one decimal and a minus sign.
fn pct(p: f64) -> String {
    if p < 0.0 {
        format!("\u{2212}{:.1}%", -p)
    } else {
        format!("{p:.1}%")
    }
}

/// The run's own lines under the tables: the noise floor, the sequential
/// stop and the time it took.
fn run_lines(out: &mut String, results: &Results, rows: &[Row]) {
    if let Some(line) = noise_line(results, max_boot_cv(rows)) {
        let _ = writeln!(out, "\n{line}");
    }
    let all: Vec<&Row> = rows.iter().collect();
    for line in [
        super::format::sequential_line(&all),
        super::format::time_line(results),
    ]
    .into_iter()
    .flatten()
    {
        let _ = writeln!(out, "\n{line}");
    }
}
