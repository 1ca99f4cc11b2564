//! The Markdown report (report.md, the PR comment, the job summary): the
//! seeds' table for an A/B campaign, one column per variant when there are
//! more, and the waterfall of a per-patch campaign.

use std::fmt::Write;

use super::format::{
    boot_order, change_cell, code_span, control_title, noise_line, noisy_host, p_cell, row_scale,
    short, show, signed_pct,
};
use super::rows::{by_condition, context_lines, rows, undecided_note};
use super::waterfall;
use crate::model::Accel;
use crate::model::Verdict;
use crate::results::{ComparisonRecord, Results};

/// Markdown for a PR comment or a job summary, from the stored judgement:
/// the headline first; an A/B campaign then reads as the seeds' mails
/// do; more variants get one column each, and a per-patch campaign its
/// waterfall.
pub fn markdown(results: &Results) -> String {
    let names: Vec<&str> = results.variants.iter().map(|v| v.name.as_str()).collect();
    if names == ["A", "B"] {
        two_variants(results, rows(results))
    } else {
        many_variants(results, rows(results))
    }
}

/// The headlines, in bold, one per candidate; or why there are none.
fn headlines(out: &mut String, results: &Results) {
    for h in results.judgement.iter().flat_map(|j| &j.headlines) {
        let _ = writeln!(out, "**{}**\n", h.text);
    }
    if let Some(line) = super::rows::unjudged(results) {
        let _ = writeln!(out, "> **{line}**\n");
    }
}

/// The lane's banner: the plugin lanes', KVM's, or TCG's.
fn accelerator(out: &mut String, results: &Results) {
    if let Some(banner) = super::profile::cost_banner(results) {
        let _ = writeln!(out, "> **{banner}**\n");
    } else if results.host.lane == crate::model::Lane::Kvm {
        let _ = writeln!(
            out,
            "> **Accelerator: KVM** \u{2014} {}. Times are the host CPU's, in real time: each boot is one observation, and the campaign samples in rounds of boots (docs/statistics.md, \"Under KVM\").\n",
            results.host.accel_reason
        );
    } else if results.host.lane.accel() == Accel::Tcg {
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
    if let Some(facts) = &results.host.host_facts {
        let _ = writeln!(out, "> {}\n", facts.line());
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

fn two_variants(results: &Results, rows: &[ComparisonRecord]) -> String {
    let mut out = String::new();
    let workload = results.workload.kind.as_str();
    let _ = writeln!(
        out,
        "### patchbench: {workload}, {}\n",
        results.compares().sides(code_span)
    );
    headlines(&mut out, results);
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
    if let Some(check) = results
        .judgement
        .as_ref()
        .and_then(|j| j.self_check.as_ref())
    {
        let _ = writeln!(out, "\n{}", check.sentence());
    }
    run_lines(&mut out, results, rows);
    let _ = writeln!(
        out,
        "\nMethod: fresh boots in the order {}, {} warm-up(s) then {} sample(s) per boot; {} \
         {} \
         see docs/statistics.md.{} Accelerator: {}. Base {} ({}), chosen from {}; B adds {} patch(es), series sha256 {}.",
        boot_order(results),
        results.protocol.warmups,
        results.protocol.samples,
        if super::rows::judged_by_boot(rows) {
            format!(
                "{} and its mean is one observation ({}); \
                 max CV is the largest within-boot coefficient of variation. \
                 B vs A is the change of the mean of the boots' means with Welch's 95% t interval; p is Welch's t-test over the boots' means.",
                if results.host.lane.judged_by_boot() {
                    "each boot landed on the host anew"
                } else {
                    "each boot ran in a memory layout of its own"
                },
                if results.host.lane.judged_by_boot() {
                    "no drift: the boots are the samples"
                } else {
                    "no drift: the boots differ by layout on purpose"
                },
            )
        } else {
            format!(
                "A pools every A boot. \
                 Drift is the last A boot's mean against the first's; max CV is the largest within-boot coefficient of variation. \
                 B vs A is the change of the mean with a 95% percentile-bootstrap interval ({}); p is Welch's t-test.",
                bootstrap(rows),
            )
        },
        rule_sentence(results),
        if results.controls.is_empty() {
            ""
        } else {
            " Each control ran in the same boots, after the main workload, with as many warm-ups and samples, and is compared on its own."
        },
        results.host.lane.accel(),
        short(&results.tree.base_commit),
        results.tree.origin,
        results.tree.base_choice,
        results.series.patches.len(),
        short(&results.series.sha256),
    );
    out
}

/// One condition's table, then the reason behind every verdict that is
/// not "no clear difference" (with, for an inconclusive one, what the
/// data rule out and what would decide it), and the context rows.
fn condition_markdown(out: &mut String, results: &Results, rows: &[&ComparisonRecord]) {
    let _ = writeln!(
        out,
        "| metric | unit | A mean | B mean | B vs A [95% CI] | p | verdict | A drift | max CV |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---|---:|---:|");
    for row in rows {
        let scale = row_scale(row);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.metric,
            scale.label,
            show(row.a.mean, scale),
            show(row.b.mean, scale),
            change_cell(row),
            p_cell(row),
            row.kind().marked(),
            signed_pct(row.drift_pct),
            row.max_boot_cv_pct
                .map_or("n/a".into(), |cv| format!("{cv:.2}%")),
        );
    }
    reasons_markdown(out, results, rows, false);
    repeats_markdown(out, results, rows);
}

/// Every measured verdict but "no clear difference" is explained (a
/// negligible one among them: its change may look large, or have no
/// interval), and so is a "no clear difference" that the negligible level
/// decided under rule version 2, and one that some samples lack; then
/// the context rows, one line per reason.
fn reasons_markdown(
    out: &mut String,
    results: &Results,
    rows: &[&ComparisonRecord],
    name_variant: bool,
) {
    let reasons: Vec<&&ComparisonRecord> = rows
        .iter()
        .filter(|r| r.measured())
        .filter(|r| {
            r.kind() != Verdict::NoClearDifference || r.negligible() || r.coverage().is_some()
        })
        .collect();
    let context = context_lines(rows);
    if reasons.is_empty() && context.is_empty() {
        return;
    }
    let _ = writeln!(out);
    for r in reasons {
        let who = if name_variant {
            format!("{}, {} vs {}", r.metric, r.variant, r.baseline)
        } else {
            r.metric.clone()
        };
        let _ = writeln!(
            out,
            "- {who}: {} \u{2014} {}{}{}{}",
            r.kind().marked(),
            r.reason,
            undecided_note(r),
            noisy_note(results, r),
            coverage_note(r)
        );
    }
    for line in context {
        let _ = writeln!(out, "- {line}");
    }
}

/// [`super::rows::repeats_line`] as a paragraph, or nothing.
fn repeats_markdown(out: &mut String, results: &Results, rows: &[&ComparisonRecord]) {
    let lines = [
        super::rows::repeats_line(rows),
        super::rows::layouts_line(results.host.lane, rows),
    ];
    for line in lines.into_iter().flatten() {
        let _ = writeln!(out, "\n{line}");
    }
}

/// The metrics no sample of one side has, one line each (nothing when
/// there are none).
fn uncompared_markdown(out: &mut String, results: &Results) {
    let missing = results
        .judgement
        .as_ref()
        .map_or(&[][..], |j| j.uncompared.as_slice());
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

/// [`noisy_host`] as a sentence to append to a verdict's reason, or
/// nothing.
fn noisy_note(results: &Results, row: &ComparisonRecord) -> String {
    noisy_host(results, row.kind()).map_or(String::new(), |n| format!(". {n}"))
}

/// A row's [`ComparisonRecord::coverage`] as a sentence to append, or
/// nothing.
fn coverage_note(row: &ComparisonRecord) -> String {
    row.coverage()
        .map_or(String::new(), |c| format!(". Samples: {c}"))
}

/// The bootstrap's resamples and seed, as the rows were judged with.
fn bootstrap(rows: &[ComparisonRecord]) -> String {
    rows.first().map_or_else(String::new, |r| {
        format!(
            "{} resamples, seed {:#x}",
            r.options.resamples, r.options.seed
        )
    })
}

/// How the verdicts were decided, with the stored rule's version.
fn rule_sentence(results: &Results) -> String {
    let Some(j) = &results.judgement else {
        return "Not judged yet.".to_string();
    };
    // Rule 3's word, where some row has it.
    let negligible = if j.rows.iter().any(|r| r.kind() == Verdict::Negligible) {
        "negligible when every sample of both sides lies within the metric's negligible level, whatever the interval; "
    } else {
        ""
    };
    format!(
        "A change is called only when the whole interval lies outside \u{b1}{}% (widened to the A drift when that is larger) and, in the fixed protocol, Welch's p < {}; \
         no clear difference only when the whole interval lies inside \u{b1}{}% (equivalence); {negligible}anything else is inconclusive, with what the interval rules out. \
         A figure this lane ({}) does not measure exactly is shown as context, with no verdict (judged under rule {});",
        j.noise_pct,
        j.alpha,
        j.noise_pct,
        j.lane.label(),
        j.rule
    )
}

/// Three or more variants: which each is, then one table per condition
/// with a column per variant against the baseline, mmtests-style; the
/// waterfall of a per-patch campaign; the method.
fn many_variants(results: &Results, rows: &[ComparisonRecord]) -> String {
    let mut out = String::new();
    let workload = results.workload.kind.as_str();
    let baseline = results.baseline();
    let candidates = results.candidates();
    let _ = match candidates {
        [one] => writeln!(
            out,
            "### patchbench: {workload}, {} against {} ({})\n",
            code_span(&one.name),
            code_span(baseline),
            results.compares().label_with(code_span)
        ),
        _ => writeln!(
            out,
            "### patchbench: {workload}, {} variants against {}\n",
            candidates.len(),
            code_span(baseline)
        ),
    };
    headlines(&mut out, results);
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
    let steps = results
        .judgement
        .as_ref()
        .map_or(&[][..], |j| j.steps.as_slice());
    if !steps.is_empty() {
        out.push_str(&waterfall::markdown(results, steps, rows));
    }
    run_lines(&mut out, results, rows);
    let _ = writeln!(
        out,
        "\nMethod: fresh boots in the order {}, {} warm-up(s) then {} sample(s) per boot; {} \
         {} \
         see docs/statistics.md.{} Accelerator: {}. Base {} ({}), chosen from {}; the series has {} patch(es), sha256 {}.",
        boot_order(results),
        results.protocol.warmups,
        results.protocol.samples,
        if super::rows::judged_by_boot(rows) {
            format!(
                "each boot ran in a memory layout of its own and its mean is one observation. \
                 Each column is that variant's mean of its boots' means and its change against {baseline}'s with Welch's 95% t interval."
            )
        } else {
            format!(
                "each variant pools its boots. \
                 Each column is that variant's mean and its change against {baseline}'s with a 95% percentile-bootstrap interval ({}).",
                bootstrap(rows),
            )
        },
        rule_sentence(results),
        if results.controls.is_empty() {
            ""
        } else {
            " Each control ran in the same boots, after the main workload, with as many warm-ups and samples, and is compared on its own."
        },
        results.host.lane.accel(),
        short(&results.tree.base_commit),
        results.tree.origin,
        results.tree.base_choice,
        results.series.patches.len(),
        short(&results.series.sha256),
    );
    out
}

/// One condition's table with a column per variant, then the reason
/// behind every verdict that is not "no clear difference".
fn columns_markdown(out: &mut String, results: &Results, rows: &[&ComparisonRecord]) {
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
        let of: Vec<&&ComparisonRecord> = rows.iter().filter(|r| r.metric == *metric).collect();
        let Some(first) = of.first() else { continue };
        let scale = row_scale(first);
        let _ = write!(
            out,
            "| {metric} | {} | {} |",
            scale.label,
            show(first.a.mean, scale)
        );
        for v in candidates {
            match of.iter().find(|r| r.variant == v.name) {
                Some(r) => {
                    let _ = write!(
                        out,
                        " {} ({}, {}) |",
                        show(r.b.mean, scale),
                        change_cell(r),
                        r.kind().marked()
                    );
                }
                None => out.push_str(" n/a |"),
            }
        }
        out.push('\n');
    }
    reasons_markdown(out, results, rows, true);
    repeats_markdown(out, results, rows);
}

/// The largest within-boot CV over some rows' measured figures, in
/// percent.
fn max_boot_cv(rows: &[ComparisonRecord]) -> Option<f64> {
    super::format::max_time_cv(
        rows.iter()
            .filter(|r| r.measured())
            .map(|r| (r.unit, Some(r.direction.into()), r.max_boot_cv_pct)),
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
                "No symbol's {} changed ({} and {} sample(s)).",
                table.measure(),
                table.a_samples,
                table.b_samples
            );
            continue;
        }
        let u = table.unit();
        let _ = writeln!(
            out,
            "| symbol | {a} ({u}) | {b} ({u}) | \u{394} ({u}) | share of total \u{394} |\n|---|---:|---:|---:|---:|"
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
            "\nThe whole phase: {a} {}, {b} {}, \u{394} {} {} per sample ({} and {} sample(s)){}.",
            mcycles(table.a_total),
            mcycles(table.b_total),
            signed_mcycles(table.total_delta()),
            table.unit(),
            table.a_samples,
            table.b_samples,
            table.listed_share().map_or_else(String::new, |s| format!(
                "; the symbols listed account for {} of the \u{394}",
                pct(s * 100.0)
            )),
        );
        split_markdown(out, &table);
    }
}

/// Where each listed symbol's Δ modeled cycles went: one cycle for each
/// instruction, the cost table's classes beyond that, and misses; then
/// the classes whose counts changed. Absent without splits.
fn split_markdown(out: &mut String, table: &super::profile::ProfileTable) {
    let Some(phase) = &table.phase_split else {
        return;
    };
    let _ = writeln!(
        out,
        "\nWhere the \u{394} went, per sample: instructions at one cycle each, the \
         cost table's classes beyond that (docs/cost-model.md, \"Instruction costs\"), and \
         miss penalties (Mcycles); then each changed class's \u{394} count.\n\n\
         | symbol | instructions | classes | misses | class counts |\n|---|---:|---:|---:|---|"
    );
    let rows = table.splits.iter().map(|(s, d)| (code_span(s), d));
    for (name, d) in rows.chain([("(whole phase)".to_string(), phase)]) {
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} |",
            signed_mcycles(d.insns),
            signed_mcycles(d.class_cycles),
            signed_mcycles(d.miss_cycles),
            super::profile::classes_cell(d),
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
fn run_lines(out: &mut String, results: &Results, rows: &[ComparisonRecord]) {
    if let Some(line) = noise_line(results, max_boot_cv(rows)) {
        let _ = writeln!(out, "\n{line}");
    }
    let all: Vec<&ComparisonRecord> = rows.iter().collect();
    for line in [
        super::format::sequential_line(&all),
        super::format::time_line(results),
    ]
    .into_iter()
    .flatten()
    .chain(super::format::detectable_lines(results))
    {
        let _ = writeln!(out, "\n{line}");
    }
}
