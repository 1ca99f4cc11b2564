//! Renderings of a [`Results`] document. Pure functions from the model to
//! text: the same document always renders the same report.

use std::fmt::Write;

use crate::model::{Direction, Unit, Verdict};
use crate::results::{Accel, Boot, ControlRecord, Results, SampleRecord};
use crate::stats::{self, CompareOptions, Comparison};
use crate::workload::{MetricSpec, WorkloadSpec};

/// One metric's comparison in one condition.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The control condition; `None` for the main workload.
    pub condition: Option<String>,
    pub metric: String,
    pub unit: Option<Unit>,
    /// From the workload's spec; `None` for a metric the spec does not list.
    pub direction: Option<Direction>,
    pub comparison: Comparison,
}

impl Row {
    /// B's mean against A's pooled mean, in percent.
    pub fn change_pct(&self) -> Option<f64> {
        self.comparison.mean_change.as_ref().map(|c| c.pct)
    }

    /// The metric, with its control's name when it is a control's.
    pub fn label(&self) -> String {
        match &self.condition {
            Some(c) => format!("{} (control {c})", self.metric),
            None => self.metric.clone(),
        }
    }
}

fn values(samples: &[&SampleRecord], metric: &str) -> Vec<f64> {
    samples
        .iter()
        .filter_map(|s| s.metrics.get(metric).map(|v| *v as f64))
        .collect()
}

/// Compare A and B for every metric of every condition (the main workload,
/// then each control), in the spec's order, then any metric the spec does
/// not list, with the statistics' default options and each metric's
/// `negligible` level from the spec.
pub fn rows(results: &Results, spec: Option<&WorkloadSpec>) -> Vec<Row> {
    results
        .conditions()
        .into_iter()
        .flat_map(|c| condition_rows(results, spec, c.map(|c| c.name.as_str())))
        .collect()
}

/// [`rows`] of one condition (`None`: the main workload).
pub fn condition_rows(
    results: &Results,
    spec: Option<&WorkloadSpec>,
    condition: Option<&str>,
) -> Vec<Row> {
    let a_boots = results.samples_by_boot(results.baseline(), condition);
    let b_boots = results
        .candidates()
        .first()
        .map(|v| results.samples_by_boot(&v.name, condition))
        .unwrap_or_default();
    let mut names: Vec<(String, Option<&MetricSpec>)> = spec
        .map(|s| {
            s.metrics
                .iter()
                .map(|m| (m.name.clone(), Some(m)))
                .collect()
        })
        .unwrap_or_default();
    for boot in &results.boots {
        for sample in boot.samples_of(condition) {
            for name in sample.metrics.keys() {
                if !names.iter().any(|(n, _)| n == name) {
                    names.push((name.clone(), None));
                }
            }
        }
    }
    names
        .into_iter()
        .filter_map(|(metric, metric_spec)| {
            let unit = metric_spec.map(|m| m.unit);
            let direction = metric_spec.map(|m| m.better);
            let negligible = metric_spec.and_then(|m| m.negligible);
            let per_boot = |boots: &[(&Boot, Vec<&SampleRecord>)]| {
                boots
                    .iter()
                    .map(|(_, s)| values(s, &metric))
                    .collect::<Vec<_>>()
            };
            let options = CompareOptions {
                negligible,
                ..CompareOptions::default()
            };
            let comparison = stats::compare(
                &per_boot(&a_boots),
                &per_boot(&b_boots),
                direction.unwrap_or(Direction::Neither),
                &options,
            )
            .ok()?;
            Some(Row {
                condition: condition.map(str::to_string),
                metric,
                unit,
                direction,
                comparison,
            })
        })
        .collect()
}

/// The metrics that regressed, in any condition (a control's are named
/// with it): the campaign's exit code says so.
pub fn regressed_metrics(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .filter(|r| r.comparison.verdict.kind == Verdict::Regression)
        .map(Row::label)
        .collect()
}

/// The rows of each condition, in the document's order: the main
/// workload's first (`None`), then each control's.
fn by_condition<'r>(
    results: &'r Results,
    rows: &'r [Row],
) -> Vec<(Option<&'r ControlRecord>, Vec<&'r Row>)> {
    results
        .conditions()
        .into_iter()
        .map(|c| {
            let name = c.map(|c| c.name.as_str());
            let of = rows
                .iter()
                .filter(|r| r.condition.as_deref() == name)
                .collect();
            (c, of)
        })
        .collect()
}

/// `Control `unlimited` (zswap_max: max)`: a control's table title.
pub fn control_title(control: &ControlRecord) -> String {
    format!("Control `{}` ({})", control.name, control.describe_set())
}

/// The change with its interval, bold when a change was called.
fn change_cell(c: &Comparison) -> String {
    let Some(change) = &c.mean_change else {
        return "n/a".into();
    };
    let called = c.verdict.kind.is_change();
    let pct = signed_pct(Some(change.pct));
    let pct = if called { format!("**{pct}**") } else { pct };
    match &change.ci {
        Some(ci) => format!(
            "{pct} [{}, {}]",
            signed_pct(Some(ci.lo)),
            signed_pct(Some(ci.hi))
        ),
        None => pct,
    }
}

fn p_cell(c: &Comparison) -> String {
    match &c.welch {
        Some(w) if w.p < 0.001 => "<0.001".into(),
        Some(w) => format!("{:.3}", w.p),
        None => "n/a".into(),
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// A value in the unit people read: nanoseconds as milliseconds, bytes as
/// MiB.
pub fn format_value(v: f64, unit: Option<Unit>) -> String {
    match unit {
        Some(Unit::Ns) => format!("{:.3}", v / 1e6),
        Some(Unit::Bytes) => format!("{:.1}", v / MIB),
        _ if v.fract() == 0.0 => format!("{v:.0}"),
        _ => format!("{v:.1}"),
    }
}

fn unit_label(unit: Option<Unit>) -> &'static str {
    unit.map_or("", Unit::label)
}

fn signed_pct(p: Option<f64>) -> String {
    match p {
        // U+2212 MINUS SIGN, as the mails write it.
        Some(p) if p < 0.0 => format!("\u{2212}{:.2}%", -p),
        Some(p) => format!("+{p:.2}%"),
        None => "n/a".into(),
    }
}

/// Untrusted text (a patch subject) for Markdown: a code span renders
/// literally, so the text can carry no HTML, link, image or @mention into a
/// PR comment. Backticks become quotes and control characters spaces, so
/// the span cannot be closed early or broken across lines.
pub fn code_span(text: &str) -> String {
    let inner: String = text
        .chars()
        .map(|c| match c {
            '`' => '\'',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    format!("`{inner}`")
}

/// Markdown for a PR comment or a job summary.
pub fn markdown(results: &Results, spec: Option<&WorkloadSpec>) -> String {
    markdown_of(results, spec, &rows(results, spec))
}

/// [`markdown`] from rows already compared (the bootstrap is not free).
pub fn markdown_of(results: &Results, spec: Option<&WorkloadSpec>, rows: &[Row]) -> String {
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
    if results.host.accel == Accel::Tcg {
        let _ = writeln!(
            out,
            "> **Accelerator: TCG{}** \u{2014} {}. Times are emulated CPU time: compare A with B, not with hardware.\n",
            if results.host.icount {
                " with icount (deterministic guest clock)"
            } else {
                ""
            },
            results.host.accel_reason
        );
    }
    for (control, rows) in by_condition(results, rows) {
        if let Some(control) = control {
            let _ = writeln!(out, "\n#### {}\n", control_title(control));
        }
        condition_markdown(&mut out, &rows);
    }
    if self_check {
        let _ = writeln!(out, "\n{}", self_check_line(results, rows));
    }
    let order: Vec<String> = (0..results.protocol.boots.len())
        .map(|i| crate::model::boot_label(&results.protocol.boots, i))
        .collect();
    let _ = writeln!(
        out,
        "\nMethod: fresh boots in the order {}, {} warm-up(s) then {} sample(s) per boot; A pools every A boot. \
         Drift is the last A boot's mean against the first's; max CV is the largest within-boot coefficient of variation. \
         B vs A is the change of the mean with a 95% percentile-bootstrap interval ({} resamples, seed {:#x}); p is Welch's t-test. \
         A change is called only when p < {} and the whole interval lies outside \u{b1}{}% (widened to the A drift when that is larger); \
         see docs/statistics.md.{} Accelerator: {}. Base {} ({}), chosen from {}; B adds {} patch(es), series sha256 {}.",
        order.join("/"),
        results.protocol.warmups,
        results.protocol.samples,
        CompareOptions::default().resamples,
        CompareOptions::default().seed,
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
fn condition_markdown(out: &mut String, rows: &[&Row]) {
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
    if let Some(g) = stats::geomean_change(rows.iter().map(|r| &r.comparison)) {
        let _ = writeln!(
            out,
            "\nGeometric mean of B/A over {} metric(s) with a direction (lower is better): {}.",
            g.metrics,
            signed_pct(Some(g.change_pct))
        );
    }
    // Every verdict but "no clear difference" is explained, and so is one
    // that only the metric's negligible level decided (its change may look
    // large, or have no interval).
    let mut reasons = rows
        .iter()
        .filter(|r| {
            r.comparison.verdict.kind != Verdict::NoClearDifference || r.comparison.negligible()
        })
        .peekable();
    if reasons.peek().is_some() {
        let _ = writeln!(out);
        for r in reasons {
            let _ = writeln!(
                out,
                "- {}: {} \u{2014} {}",
                r.metric,
                r.comparison.verdict.kind.marked(),
                r.comparison.verdict.reason
            );
        }
    }
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
    for (control, rows) in by_condition(results, rows) {
        if let Some(control) = control {
            out.push_str(&format!("\n{}\n", control_title(control).replace('`', "")));
        }
        out.push_str(&terminal_table(&rows));
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

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

#[cfg(test)]
mod tests {

    #[test]
    fn an_a_a_run_reports_its_self_check_and_false_positive_rate() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/smoke-results.json");
        let mut results = Results::load(&path).unwrap();
        results.series.patches.clear();
        let spec = crate::workload::spec_for_kind(&results.workload.kind);
        let text = markdown(&results, spec.as_ref());
        assert!(text.contains("A/A self-check: A = B = the base"), "{text}");
        assert!(text.contains("**A/A self-check passed**"), "{text}");
        assert!(text.contains("simulated: "), "{text}");
    }
    use super::*;

    #[test]
    fn each_condition_has_its_own_table_and_a_control_regression_counts() {
        let results = crate::results::tests::with_control(Some(2_000_000_000));
        let spec = crate::workload::spec_for_kind(&results.workload.kind);
        let rows = rows(&results, spec.as_ref());
        let main = condition_rows(&results, spec.as_ref(), None);
        assert_eq!(rows.len(), 2 * main.len());
        assert!(rows[..main.len()].iter().all(|r| r.condition.is_none()));
        let text = markdown_of(&results, spec.as_ref(), &rows);
        let heading = "#### Control `unlimited` (zswap_max: max)";
        assert_eq!(text.matches("| metric | unit |").count(), 2, "{text}");
        let (before, after) = text.split_once(heading).expect(&text);
        // The main table first, as without controls; then the control's.
        assert!(before.contains("| pageout_cpu_ns |"), "{text}");
        assert!(after.contains("| pageout_cpu_ns |"), "{text}");
        assert!(after.contains("- pageout_cpu_ns: regression"), "{text}");
        assert!(!before.contains("regression"), "{text}");
        assert!(
            text.contains("Each control ran in the same boots"),
            "{text}"
        );
        // The exit code sees the control's regression, named with it.
        assert_eq!(
            regressed_metrics(&rows),
            ["pageout_cpu_ns (control unlimited)"]
        );
        let terminal = terminal_of(&results, &rows);
        assert!(
            terminal.contains("\nControl unlimited (zswap_max: max)\nmetric"),
            "{terminal}"
        );
        assert_eq!(terminal.matches("pageout_cpu_ns").count(), 2, "{terminal}");
    }

    #[test]
    fn a_verdict_of_the_negligible_level_is_explained() {
        let mut results = crate::results::tests::with_control(None);
        // Background flushes in the control only: 0 or 1 per sample.
        for boot in &mut results.boots {
            for s in boot.samples.iter_mut().filter(|s| s.condition.is_some()) {
                s.metrics
                    .insert("pageout_flushes".into(), u64::from(s.index % 2));
            }
        }
        let spec = crate::workload::spec_for_kind(&results.workload.kind);
        let text = markdown(&results, spec.as_ref());
        let (_, control) = text.split_once("#### Control").expect(&text);
        assert!(
            control.contains("| pageout_flushes | count |")
                && control.contains(
                    "- pageout_flushes: no clear difference \u{2014} negligible on both sides: every A and B sample is within ±80"
                ),
            "{text}"
        );
    }

    #[test]
    fn untrusted_subjects_render_literally_in_markdown() {
        let hostile = "mm: <img src=x onerror=alert(1)> @maintainer [x](javascript:1) `a`\n# b";
        assert_eq!(
            code_span(hostile),
            "`mm: <img src=x onerror=alert(1)> @maintainer [x](javascript:1) 'a' # b`"
        );
    }

    #[test]
    fn values_read_in_milliseconds_and_signed_percentages() {
        assert_eq!(format_value(23_903_000.0, Some(Unit::Ns)), "23.903");
        assert_eq!(format_value(8192.0, Some(Unit::Pages)), "8192");
        assert_eq!(format_value(8191.5, Some(Unit::Pages)), "8191.5");
        assert_eq!(format_value(100_663_296.0, Some(Unit::Bytes)), "96.0");
        assert_eq!(signed_pct(Some(-44.694)), "\u{2212}44.69%");
        assert_eq!(signed_pct(Some(0.8)), "+0.80%");
        assert_eq!(signed_pct(None), "n/a");
    }
}
