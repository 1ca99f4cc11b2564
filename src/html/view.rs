//! The view model of the HTML pages: one [`MetricRow`] per metric and one
//! [`Run`] per results document, built from the report's comparisons
//! ([`default_rows`]) apart from rendering.

use std::path::Path;

use crate::model::{Direction, Unit, Verdict};
use crate::report;
use crate::results::Results;
use crate::workload::WorkloadSpec;

/// One metric's comparison, as the pages show it. Values are in the
/// metric's raw unit (nanoseconds for times); pages convert for display.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricRow {
    /// The control condition; `None` for the main workload.
    pub condition: Option<String>,
    /// The variant compared against (the baseline).
    pub baseline: String,
    /// The variant compared.
    pub variant: String,
    pub name: String,
    pub unit: Option<Unit>,
    /// From the workload spec; `None` when the spec does not list the metric.
    pub direction: Option<Direction>,
    pub a_mean: f64,
    pub b_mean: f64,
    /// Confidence interval of A's mean, in the raw unit.
    pub a_ci: Option<(f64, f64)>,
    /// Confidence interval of B's mean, in the raw unit.
    pub b_ci: Option<(f64, f64)>,
    /// B's mean against A's, in percent.
    pub change_pct: Option<f64>,
    /// Confidence interval of `change_pct`, in percent.
    pub change_ci: Option<(f64, f64)>,
    pub p_value: Option<f64>,
    pub verdict: Verdict,
    /// A short remark shown next to the verdict (drift, noise...).
    pub note: String,
    /// The largest within-boot CV of this metric, in percent.
    pub max_cv: Option<f64>,
}

/// Rows from the report's comparisons: means with their 95% intervals,
/// the change with its bootstrap interval, Welch's p and the verdict.
pub fn default_rows(results: &Results, spec: Option<&WorkloadSpec>) -> Vec<MetricRow> {
    metric_rows(results, &report::rows(results, spec))
}

/// The page rows of some report rows.
pub fn metric_rows(results: &Results, rows: &[report::Row]) -> Vec<MetricRow> {
    rows.iter()
        .cloned()
        .map(|row| {
            let c = &row.comparison;
            let mut notes = vec![c.verdict.reason.clone()];
            if let Some(noisy) = report::noisy_host(results, c.verdict.kind) {
                notes.push(noisy);
            }
            if let Some(drift) = c.drift_pct.filter(|d| d.abs() >= 5.0) {
                // U+2212 MINUS SIGN, as the tables write it.
                let sign = if drift < 0.0 { '\u{2212}' } else { '+' };
                notes.push(format!(
                    "A drifted {sign}{:.1}% between its first and last boot",
                    drift.abs()
                ));
            }
            if let Some(cv) = c.max_boot_cv_pct.filter(|c| *c >= 10.0) {
                notes.push(format!("within-boot CV up to {cv:.1}%"));
            }
            notes.extend(row.coverage());
            notes.extend(row.repeat_note());
            let interval = |i: Option<crate::stats::Interval>| i.map(|i| (i.lo, i.hi));
            MetricRow {
                condition: row.condition.clone(),
                unit: row.unit,
                direction: row.direction,
                a_mean: c.a.mean,
                b_mean: c.b.mean,
                a_ci: interval(c.a.mean_ci),
                b_ci: interval(c.b.mean_ci),
                change_pct: row.change_pct(),
                change_ci: interval(c.mean_change.as_ref().and_then(|m| m.ci)),
                p_value: c.welch.as_ref().map(|w| w.p),
                verdict: c.verdict.kind,
                note: notes.join("; "),
                max_cv: c.max_boot_cv_pct,
                baseline: row.baseline,
                variant: row.variant,
                name: row.metric,
            }
        })
        .collect()
}

/// One run, as the site shows it: its results document, its rows, and the
/// directory that held its `results.json` (console logs below it are linked
/// relative to it).
#[derive(Debug, Clone)]
pub struct Run<'a> {
    pub results: &'a Results,
    /// Every variant against the baseline.
    pub rows: Vec<MetricRow>,
    /// The report's rows behind `rows`, and, for a per-patch campaign,
    /// each step against the one before (the waterfall).
    pub report_rows: Vec<report::Row>,
    pub steps: Vec<report::Row>,
    pub run_dir: &'a Path,
}

impl MetricRow {
    /// The metric, with its control's name when it is a control's, and
    /// the variant's when it is not the B of an A/B campaign.
    pub fn label(&self) -> String {
        let mut label = self.name.clone();
        if let Some(c) = &self.condition {
            label.push_str(&format!(" (control {c})"));
        }
        if (self.baseline.as_str(), self.variant.as_str()) != ("A", "B") {
            label.push_str(&format!(" ({} vs {})", self.variant, self.baseline));
        }
        label
    }

    /// The metric in its condition, whatever the variant: the key of its
    /// samples plot.
    pub fn plot_key(&self) -> String {
        match &self.condition {
            Some(c) => format!("{} (control {c})", self.name),
            None => self.name.clone(),
        }
    }
}

impl<'a> Run<'a> {
    /// A run with every variant compared with the baseline
    /// ([`default_rows`]) and, for a per-patch campaign, its steps.
    pub fn new(results: &'a Results, spec: Option<&WorkloadSpec>, run_dir: &'a Path) -> Self {
        let report_rows = report::rows(results, spec);
        Run {
            results,
            rows: metric_rows(results, &report_rows),
            steps: report::steps(results, spec),
            report_rows,
            run_dir,
        }
    }

    /// Whether the run is other than an A/B campaign: more variants, or
    /// variants of their own names; its tables then name the variant.
    pub fn multi(&self) -> bool {
        let names: Vec<&str> = self
            .results
            .variants
            .iter()
            .map(|v| v.name.as_str())
            .collect();
        names != ["A", "B"]
    }

    /// How many rows carry each verdict, in [`Verdict::ALL`]'s order,
    /// leaving out verdicts no row has.
    pub fn verdict_counts(&self) -> Vec<(Verdict, usize)> {
        Verdict::ALL
            .iter()
            .map(|v| (*v, self.rows.iter().filter(|r| r.verdict == *v).count()))
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// The file-name-safe identity of this run: its start time, then its
    /// campaign name reduced to `[a-z0-9-]`.
    pub fn slug(&self) -> String {
        format!(
            "{}-{}",
            self.results.started_at.strftime("%Y%m%dT%H%M%SZ"),
            slugify(&self.results.campaign)
        )
    }
}

/// `[a-z0-9-]` only, at most 40 characters, never empty.
pub fn slugify(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
        if out.len() >= 40 {
            break;
        }
    }
    let out = out.trim_end_matches('-');
    if out.is_empty() {
        "run".into()
    } else {
        out.into()
    }
}

/// The values of `metric` in one condition (`None`: the main workload) in
/// each complete boot's measured samples, in boot order, with the boot's
/// label and its variant's index in the results (0: the baseline): the
/// samples the means pool (`Results::samples_by_boot`). Boots without the
/// metric are left out.
pub fn samples_by_boot<'r>(
    results: &'r Results,
    condition: Option<&str>,
    metric: &str,
) -> Vec<(&'r str, usize, Vec<f64>)> {
    results
        .boots
        .iter()
        .filter(|b| b.complete)
        .map(|b| {
            let values = b
                .samples_of(condition)
                .into_iter()
                .filter_map(|s| s.metrics.get(metric).map(|v| *v as f64))
                .collect::<Vec<_>>();
            let variant = results
                .variants
                .iter()
                .position(|v| v.name == b.variant)
                .unwrap_or(usize::MAX);
            (b.label.as_str(), variant, values)
        })
        .filter(|(_, _, v)| !v.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_keep_only_safe_characters() {
        assert_eq!(slugify("smoke"), "smoke");
        assert_eq!(slugify("../<script>x"), "script-x");
        assert_eq!(slugify("Zswap Pageout, 4K"), "zswap-pageout-4k");
        assert_eq!(slugify("\"><"), "run");
        assert!(slugify(&"a".repeat(100)).len() <= 40);
    }

    #[test]
    fn a_metric_some_samples_lack_says_so_in_its_note() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/smoke-results.json");
        let mut results = Results::load(&path).unwrap();
        results.boots[1].samples[0].metrics.remove("elapsed_ns");
        let rows = default_rows(&results, None);
        let note = |name: &str| rows.iter().find(|r| r.name == name).unwrap().note.clone();
        assert!(
            note("elapsed_ns").contains("measured in 6 of 6 A samples and 2 of 3 B samples"),
            "{}",
            note("elapsed_ns")
        );
        assert!(!note("total_cpu_ns").contains("measured in"));
    }
}
