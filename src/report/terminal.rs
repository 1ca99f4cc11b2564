//! The terminal table: the same rows as the Markdown, aligned as plain
//! text.

use super::format::{control_title, format_value, noise_line, p_cell, signed_pct, unit_label};
use super::rows::{Row, by_condition, rows};
use crate::results::{Accel, Results};
use crate::workload::WorkloadSpec;

/// A plain-text table for a terminal: the same rows as the Markdown.
pub fn terminal(results: &Results, spec: Option<&WorkloadSpec>) -> String {
    terminal_of(results, &rows(results, spec))
}

/// [`terminal`] from rows already compared.
pub fn terminal_of(results: &Results, rows: &[Row]) -> String {
    let mut out = String::new();
    if results.host.accel == Accel::Tcg {
        out.push_str("accelerator: TCG (emulated CPU time; compare A with B only)\n");
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
            let of: Vec<&Row> = rows
                .iter()
                .copied()
                .filter(|r| r.variant == v.name)
                .collect();
            out.push_str(&format!("\n{} vs {}\n", v.name, results.baseline()));
            out.push_str(&terminal_table(&of));
        }
    }
    let max_cv =
        super::format::max_time_cv(rows.iter().map(|r| (r.unit, r.comparison.max_boot_cv_pct)));
    if let Some(line) = noise_line(results, max_cv) {
        out.push_str(&format!("{line}\n"));
    }
    out
}

/// One condition's rows as an aligned table.
fn terminal_table(rows: &[&Row]) -> String {
    let header = [
        "metric", "unit", "A mean", "B mean", "B vs A", "95% CI", "p", "verdict",
    ];
    let mut table: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    for row in rows {
        let c = &row.comparison;
        let ci = c
            .mean_change
            .as_ref()
            .and_then(|m| m.ci)
            .map_or("n/a".into(), |ci| {
                format!("{} .. {}", signed_pct(Some(ci.lo)), signed_pct(Some(ci.hi)))
            });
        table.push(vec![
            row.metric.clone(),
            unit_label(row.unit).to_string(),
            format_value(c.a.mean, row.unit),
            format_value(c.b.mean, row.unit),
            signed_pct(row.change_pct()),
            ci,
            p_cell(c),
            c.verdict.kind.marked().to_string(),
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
