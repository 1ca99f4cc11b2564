//! Renderings of a [`Results`] document. Pure functions from the model to
//! text: the same document always renders the same report.

use std::fmt::Write;

use crate::config::Variant;
use crate::results::Results;
use crate::stats::{Summary, pct_change};
use crate::vm::accel::Accel;
use crate::workload::{MetricSpec, Unit, WorkloadSpec};

/// One metric's comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub metric: String,
    pub unit: Option<Unit>,
    pub a: Summary,
    pub b: Summary,
    /// B's mean against A's pooled mean, in percent.
    pub change_pct: Option<f64>,
    /// The last A boot's mean against the first A boot's, in percent.
    pub drift_pct: Option<f64>,
    /// The largest coefficient of variation within any one boot.
    pub max_boot_cv_pct: Option<f64>,
}

fn values(samples: &[patchbench_agent::Sample], metric: &str) -> Vec<f64> {
    samples
        .iter()
        .filter_map(|s| s.metrics.get(metric).map(|v| *v as f64))
        .collect()
}

/// Compare A and B for every metric, in the spec's order, then any metric
/// the spec does not list.
pub fn rows(results: &Results, spec: Option<&WorkloadSpec>) -> Vec<Row> {
    let a_boots = results.samples_by_boot(Variant::A);
    let b_boots = results.samples_by_boot(Variant::B);
    let mut names: Vec<(String, Option<Unit>)> = spec
        .map(|s| {
            s.metrics
                .iter()
                .map(|m: &MetricSpec| (m.name.clone(), Some(m.unit)))
                .collect()
        })
        .unwrap_or_default();
    for boot in &results.boots {
        for sample in &boot.samples {
            for name in sample.metrics.keys() {
                if !names.iter().any(|(n, _)| n == name) {
                    names.push((name.clone(), None));
                }
            }
        }
    }
    names
        .into_iter()
        .filter_map(|(metric, unit)| {
            let pooled = |boots: &[(&crate::results::Boot, &[patchbench_agent::Sample])]| {
                boots
                    .iter()
                    .flat_map(|(_, s)| values(s, &metric))
                    .collect::<Vec<_>>()
            };
            let a = Summary::of(&pooled(&a_boots))?;
            let b = Summary::of(&pooled(&b_boots))?;
            let boot_mean = |i: usize| {
                a_boots
                    .get(i)
                    .and_then(|(_, s)| Summary::of(&values(s, &metric)))
                    .map(|s| s.mean)
            };
            let drift_pct = if a_boots.len() > 1 {
                boot_mean(0)
                    .zip(boot_mean(a_boots.len() - 1))
                    .and_then(|(first, last)| pct_change(first, last))
            } else {
                None
            };
            let max_boot_cv_pct = a_boots
                .iter()
                .chain(b_boots.iter())
                .filter_map(|(_, s)| Summary::of(&values(s, &metric)).and_then(|s| s.cv_pct()))
                .fold(None, |acc: Option<f64>, cv| {
                    Some(acc.map_or(cv, |m| m.max(cv)))
                });
            Some(Row {
                change_pct: pct_change(a.mean, b.mean),
                metric,
                unit,
                a,
                b,
                drift_pct,
                max_boot_cv_pct,
            })
        })
        .collect()
}

/// A value in the unit people read: nanoseconds as milliseconds.
pub fn format_value(v: f64, unit: Option<Unit>) -> String {
    match unit {
        Some(Unit::Ns) => format!("{:.3}", v / 1e6),
        _ if v.fract() == 0.0 => format!("{v:.0}"),
        _ => format!("{v:.1}"),
    }
}

fn unit_label(unit: Option<Unit>) -> &'static str {
    match unit {
        Some(Unit::Ns) => "ms",
        Some(Unit::Pages) => "pages",
        Some(Unit::Count) => "count",
        Some(Unit::PerSecond) => "per s",
        None => "",
    }
}

fn signed_pct(p: Option<f64>) -> String {
    match p {
        // U+2212 MINUS SIGN, as the mails write it.
        Some(p) if p < 0.0 => format!("\u{2212}{:.2}%", -p),
        Some(p) => format!("+{p:.2}%"),
        None => "n/a".into(),
    }
}

/// Markdown for a PR comment or a job summary.
pub fn markdown(results: &Results, spec: Option<&WorkloadSpec>) -> String {
    let mut out = String::new();
    let workload = spec.map_or("workload", |s| s.name.as_str());
    let subject = results
        .series
        .patches
        .first()
        .map(|p| p.subject.as_str())
        .unwrap_or("series");
    let _ = writeln!(
        out,
        "### patchbench: {workload}, A = base, B = base + \"{subject}\"\n"
    );
    if results.host.accel == Accel::Tcg {
        let _ = writeln!(
            out,
            "> **Accelerator: TCG** \u{2014} {}. Times are emulated CPU time: compare A with B, not with hardware.\n",
            results.host.accel_reason
        );
    }
    let _ = writeln!(
        out,
        "| metric | unit | A mean | B mean | B vs A | A drift | max CV |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|");
    for row in rows(results, spec) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            row.metric,
            unit_label(row.unit),
            format_value(row.a.mean, row.unit),
            format_value(row.b.mean, row.unit),
            signed_pct(row.change_pct),
            signed_pct(row.drift_pct),
            row.max_boot_cv_pct
                .map_or("n/a".into(), |c| format!("{c:.2}%")),
        );
    }
    let order: Vec<String> = (0..results.protocol.boots.len())
        .map(|i| crate::results::boot_label(&results.protocol.boots, i))
        .collect();
    let _ = writeln!(
        out,
        "\nMethod: fresh boots in the order {}, {} warm-up(s) then {} sample(s) per boot; A pools every A boot. \
         Drift is the last A boot's mean against the first's; max CV is the largest within-boot coefficient of variation. \
         Accelerator: {}. Base {} ({}), chosen from {}; B adds {} patch(es), series sha256 {}.",
        order.join("/"),
        results.protocol.warmups,
        results.protocol.samples,
        results.host.accel,
        short(&results.tree.base_commit),
        results.tree.origin,
        results.tree.base_choice,
        results.series.patches.len(),
        short(&results.series.sha256),
    );
    out
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_in_milliseconds_and_signed_percentages() {
        assert_eq!(format_value(23_903_000.0, Some(Unit::Ns)), "23.903");
        assert_eq!(format_value(8192.0, Some(Unit::Pages)), "8192");
        assert_eq!(format_value(8191.5, Some(Unit::Pages)), "8191.5");
        assert_eq!(signed_pct(Some(-44.694)), "\u{2212}44.69%");
        assert_eq!(signed_pct(Some(0.8)), "+0.80%");
        assert_eq!(signed_pct(None), "n/a");
    }
}
