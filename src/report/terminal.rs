//! The terminal table: the same rows as the Markdown, aligned as plain
//! text.

use super::format::{control_title, noise_line, p_cell, row_scale, show, signed_pct};
use super::rows::{by_condition, context_lines, layouts_line, repeats_line, rows, undecided_note};
use crate::model::Accel;
use crate::model::Verdict;
use crate::results::{ComparisonRecord, Results};

/// A plain-text table for a terminal, from the stored judgement: the
/// headline first, then the same rows as the Markdown.
pub fn terminal(results: &Results) -> String {
    let rows = rows(results);
    let mut out = String::new();
    for h in results.judgement.iter().flat_map(|j| &j.headlines) {
        out.push_str(&format!("{}\n", h.text));
    }
    if let Some(line) = super::rows::unjudged(results) {
        out.push_str(&format!("{line}\n"));
    }
    if let Some(banner) = super::profile::cost_banner(results) {
        out.push_str(&format!("{banner}\n"));
    } else if results.host.lane == crate::model::Lane::Kvm {
        out.push_str(&format!(
            "lane: KVM: real time on the host's CPU, judged by boot; {}\n",
            results.host.accel_reason
        ));
    } else if results.host.lane.accel() == Accel::Tcg {
        out.push_str(&format!(
            "lane: TCG{}: emulated CPU time, compare A with B only\n",
            super::format::tcg_mode(results)
        ));
    }
    if let Some(line) = super::format::cputime_line(results) {
        out.push_str(&format!("{line}\n"));
    }
    if let Some(facts) = &results.host.host_facts {
        out.push_str(&format!("{}\n", facts.line()));
    }
    for line in results.reach.iter().flat_map(|r| r.lines()) {
        out.push_str(&format!("{line}\n"));
    }
    for failed in super::failures::failed_boots(results) {
        out.push_str(&format!(
            "stopped: {}\n",
            failed.sentence(super::failures::plain)
        ));
    }
    if let Some(line) = super::failures::nothing_compared(results) {
        out.push_str(&format!("{line}\n"));
    }
    let names: Vec<&str> = results.variants.iter().map(|v| v.name.as_str()).collect();
    let many = names != ["A", "B"];
    for (control, rows) in by_condition(results, rows) {
        if let Some(control) = control {
            out.push_str(&format!("\n{}\n", control_title(control).replace('`', "")));
        }
        if !many {
            out.push_str(&terminal_table(&rows));
            continue;
        }
        // One table per variant, each against the baseline.
        for v in results.candidates() {
            let of: Vec<&ComparisonRecord> = rows
                .iter()
                .copied()
                .filter(|r| r.variant == v.name)
                .collect();
            out.push_str(&format!("\n{} vs {}\n", v.name, results.baseline()));
            out.push_str(&terminal_table(&of));
        }
    }
    for row in rows.iter().filter(|r| r.coverage().is_some()) {
        out.push_str(&format!(
            "{}: {}\n",
            row.label(),
            row.coverage().unwrap_or_default()
        ));
    }
    let all: Vec<&ComparisonRecord> = rows.iter().collect();
    for row in all
        .iter()
        .filter(|r| r.kind() == Verdict::Inconclusive && r.ruled_out.is_some())
    {
        out.push_str(&format!(
            "{}: inconclusive{}\n",
            row.label(),
            undecided_note(row)
        ));
    }
    for line in context_lines(&all) {
        out.push_str(&format!("{line}\n"));
    }
    for line in [
        repeats_line(&all),
        layouts_line(results.host.lane, &all),
        super::format::sequential_line(&all),
    ]
    .into_iter()
    .flatten()
    .chain(super::format::detectable_lines(results))
    {
        out.push_str(&format!("{line}\n"));
    }
    for missing in results.judgement.iter().flat_map(|j| &j.uncompared) {
        out.push_str(&format!("{}\n", missing.sentence()));
    }
    out.push_str(&profile_text(results));
    let max_cv = super::format::max_time_cv(
        rows.iter()
            .filter(|r| r.measured())
            .map(|r| (r.unit, Some(r.direction.into()), r.max_boot_cv_pct)),
    );
    if let Some(line) = noise_line(results, max_cv) {
        out.push_str(&format!("{line}\n"));
    }
    if let Some(line) = super::format::time_line(results) {
        out.push_str(&format!("{line}\n"));
    }
    out
}

/// One condition's rows as an aligned table.
fn terminal_table(rows: &[&ComparisonRecord]) -> String {
    let header = [
        "metric", "unit", "A mean", "B mean", "B vs A", "95% CI", "p", "verdict",
    ];
    let mut table: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    for row in rows {
        let ci = row.change_ci().map_or("n/a".into(), |ci| {
            format!("{} .. {}", signed_pct(Some(ci.lo)), signed_pct(Some(ci.hi)))
        });
        let scale = row_scale(row);
        table.push(vec![
            row.metric.clone(),
            scale.label.to_string(),
            show(row.a.mean, scale),
            show(row.b.mean, scale),
            signed_pct(row.change_pct()),
            ci,
            p_cell(row),
            row.kind().marked().to_string(),
        ]);
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            table
                .iter()
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in &table {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, w))| {
                let pad = w - cell.chars().count();
                // Text columns left-aligned, numbers right-aligned.
                if i < 2 || i == 7 {
                    format!("{cell}{}", " ".repeat(pad))
                } else {
                    format!("{}{cell}", " ".repeat(pad))
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// The cost lane's top symbols per phase, as aligned text.
fn profile_text(results: &Results) -> String {
    let mut out = String::new();
    for table in super::profile::profile_tables(results) {
        out.push_str(&format!("\n{}\n", table.title()));
        let header = [
            "symbol".to_string(),
            format!("{} {}", table.baseline, table.unit()),
            format!("{} {}", table.variant, table.unit()),
            "delta".to_string(),
            "share".to_string(),
        ];
        let mut rows: Vec<Vec<String>> = vec![header.to_vec()];
        let listed = table.rows.iter().map(|r| (r, ""));
        let changed = table.series_rows.iter().map(|r| (r, " (changed)"));
        for (r, mark) in listed.chain(changed) {
            rows.push(vec![
                format!("{}{mark}", r.symbol),
                format!("{:.3}", r.a_mean / 1e6),
                format!("{:.3}", r.b_mean / 1e6),
                format!("{:+.3}", r.delta / 1e6),
                r.share
                    .map_or_else(|| "n/a".into(), |s| format!("{:.1}%", s * 100.0)),
            ]);
        }
        rows.push(vec![
            "(whole phase)".into(),
            format!("{:.3}", table.a_total / 1e6),
            format!("{:.3}", table.b_total / 1e6),
            format!("{:+.3}", table.total_delta() / 1e6),
            table
                .listed_share()
                .map_or_else(String::new, |s| format!("listed {:.1}%", s * 100.0)),
        ]);
        out.push_str(&aligned(&rows, |c| c == 0));
        out.push_str(&split_text(&table));
    }
    out
}

/// Where each listed symbol's Δ went (the cost lane with splits): its
/// instructions, the cost table's classes, its misses, in Mcycles.
fn split_text(table: &super::profile::ProfileTable) -> String {
    let Some(phase) = &table.phase_split else {
        return String::new();
    };
    let mut rows = vec![
        [
            "delta went to",
            "insns",
            "classes",
            "misses",
            "class counts",
        ]
        .map(String::from)
        .to_vec(),
    ];
    let listed = table.splits.iter().map(|(s, d)| (s.as_str(), d));
    for (name, d) in listed.chain([("(whole phase)", phase)]) {
        rows.push(vec![
            name.to_string(),
            format!("{:+.3}", d.insns / 1e6),
            format!("{:+.3}", d.class_cycles / 1e6),
            format!("{:+.3}", d.miss_cycles / 1e6),
            super::profile::classes_cell(d),
        ]);
    }
    format!("\n{}", aligned(&rows, |c| c == 0 || c == 4))
}

/// Rows as aligned text, two spaces apart: the columns `left` says are
/// left-aligned, the others right-aligned; trailing blanks trimmed.
pub(super) fn aligned(rows: &[Vec<String>], left: impl Fn(usize) -> bool) -> String {
    let columns = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, w))| {
                if left(c) {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}
