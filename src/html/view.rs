//! The view model of the HTML pages: one [`Run`] per results document,
//! with the rows of its stored judgement (`judge` made them; a page never
//! judges), apart from rendering.

use std::path::Path;

use crate::model::Verdict;
use crate::results::{ComparisonRecord, Results};

/// Links from a page to the rest of the site; empty for a page on its own.
#[derive(Debug, Clone, Default)]
pub struct Nav {
    pub home: Option<String>,
    pub trend: Option<String>,
}

/// A percentage as the pages write a change: signed, two decimals.
pub fn signed_pct(p: f64) -> String {
    // U+2212 MINUS SIGN, as the Markdown report writes it.
    if p < 0.0 {
        format!("\u{2212}{:.2}%", -p)
    } else {
        format!("+{p:.2}%")
    }
}

/// A commit id or digest as the pages abbreviate it: its first 12
/// characters.
pub fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// One run, as the site shows it: its results document, the rows of its
/// judgement, and the directory that held its `results.json` (console
/// logs below it are linked relative to it).
#[derive(Debug, Clone)]
pub struct Run<'a> {
    pub results: &'a Results,
    /// Every variant against the baseline, as judged.
    pub rows: &'a [ComparisonRecord],
    /// A per-patch campaign's steps, each against the one before (the
    /// waterfall); empty otherwise.
    pub steps: &'a [ComparisonRecord],
    pub run_dir: &'a Path,
    /// The watch history's night this run measured (its index), when it
    /// comes from one (`Run::of_night`).
    pub night: Option<usize>,
}

/// What a row is to its table, read from its stored judgement, in the
/// order a table shows them: the seed's own figures decided in this lane,
/// then the other verdicts, then the figures this lane shows only as
/// context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// `primary` in its spec, and a verdict of this lane.
    Primary,
    /// Any other verdict of this lane.
    Other,
    /// Verdict `context`: not this lane's measurement, primary or not.
    Context,
}

impl Role {
    pub fn of(row: &ComparisonRecord) -> Role {
        match (row.measured(), row.primary) {
            (false, _) => Role::Context,
            (true, true) => Role::Primary,
            (true, false) => Role::Other,
        }
    }

    /// A fixed identifier for styling and for the layout tests (never
    /// user text).
    pub fn key(self) -> &'static str {
        match self {
            Role::Primary => "primary",
            Role::Other => "other",
            Role::Context => "context",
        }
    }
}

/// The metric in its condition, whatever the variant: the key of its
/// samples plot.
pub fn plot_key(row: &ComparisonRecord) -> String {
    match &row.condition {
        Some(c) => format!("{} (control {c})", row.metric),
        None => row.metric.clone(),
    }
}

impl<'a> Run<'a> {
    /// A run with the rows of its judgement (none without one) and, for
    /// a per-patch campaign, its steps.
    pub fn new(results: &'a Results, run_dir: &'a Path) -> Self {
        let (rows, steps) = results.judgement.as_ref().map_or((&[][..], &[][..]), |j| {
            (j.rows.as_slice(), j.steps.as_slice())
        });
        Run {
            results,
            rows,
            steps,
            run_dir,
            night: None,
        }
    }

    /// This run as night `index` of a watch history: its trend page puts
    /// it in the nights' order and its change points between the nights.
    pub fn of_night(self, index: usize) -> Self {
        Run {
            night: Some(index),
            ..self
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
    /// leaving out verdicts no row has and context rows, which are no
    /// verdict.
    pub fn verdict_counts(&self) -> Vec<(Verdict, usize)> {
        Verdict::ALL
            .iter()
            .filter(|v| v.is_verdict())
            .map(|v| (*v, self.rows.iter().filter(|r| r.kind() == *v).count()))
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
}
