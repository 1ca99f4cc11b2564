//! `patchbench judge`: judge kept runs again under today's rule, without
//! running anything: each results.json gets its new judgement (written
//! atomically in place) and its report.md beside it, and the verdicts that
//! changed from the stored ones are listed.

use std::path::{Path, PathBuf};

use crate::events::{Event, Sink};
use crate::results::Results;

#[derive(clap::Args)]
pub struct JudgeArgs {
    /// results.json files (or the directories holding them).
    #[arg(required = true, value_name = "RESULTS")]
    pub(super) results: Vec<PathBuf>,
}

/// The `after_help` of `patchbench judge`.
pub(super) const AFTER_HELP: &str = "\
Examples:
  patchbench judge results/smoke/results.json
  patchbench judge results/seeds/000-counter results/smoke   # two kept runs
  patchbench compare --rejudge out/          # the same judgement, shown, not written

Each document is judged under today's rule (docs/statistics.md, \"Rule
versions\"); results.json is rewritten with its judgement and report.md
beside it is rendered again. A document of an older schema loads, and is
written back in today's. Exit codes as for `compare`: 1 when a metric
regressed, 2 for a file that is not a results document.";

/// One verdict as a document stored it: its row's label and verdict key.
type Stored = Vec<(String, String)>;

/// The verdicts a document stored, from its raw JSON: schema 4's
/// `judgement.rows`, or the `comparisons` of schema 3 (which loading
/// drops), so that the change to today's rule can be told.
fn stored_verdicts(text: &str) -> Stored {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
        return Vec::new();
    };
    let rows = value
        .pointer("/judgement/rows")
        .or_else(|| value.get("comparisons"))
        .and_then(|r| r.as_array())
        .cloned()
        .unwrap_or_default();
    rows.iter()
        .filter_map(|r| {
            let field = |k: &str| r.get(k).and_then(|v| v.as_str()).map(str::to_string);
            let mut label = field("metric")?;
            if let Some(c) = field("condition") {
                label.push_str(&format!(" (control {c})"));
            }
            let (a, b) = (field("baseline")?, field("variant")?);
            if (a.as_str(), b.as_str()) != ("A", "B") {
                label.push_str(&format!(" ({b} vs {a})"));
            }
            Some((label, field("verdict")?))
        })
        .collect()
}

pub(super) fn judge(args: JudgeArgs, sink: &dyn Sink) -> anyhow::Result<()> {
    let mut regressed = Vec::new();
    for given in &args.results {
        let path = super::args::results_file(given);
        let before = std::fs::read_to_string(&path)
            .map(|t| stored_verdicts(&t))
            .unwrap_or_default();
        let mut results = Results::load(&path)?;
        // A kept run names no path of one machine (older documents did).
        results.portable_paths(None, path.parent());
        crate::judge::judge_into(&mut results);
        results.save(&path)?;
        let report = path.with_file_name("report.md");
        crate::fsutil::write_atomic(&report, crate::report::markdown(&results).as_bytes())?;
        sink.emit(Event::Output(summary(&path, &report, &results, &before)));
        regressed.extend(
            results
                .judgement
                .iter()
                .flat_map(|j| &j.regressed)
                .map(|m| format!("{m} in {}", path.display())),
        );
    }
    if regressed.is_empty() {
        Ok(())
    } else {
        Err(crate::exit::Regressed { metrics: regressed }.into())
    }
}

/// What judging one document did: its headline, and every verdict that
/// differs from the stored one.
fn summary(path: &Path, report: &Path, results: &Results, before: &Stored) -> String {
    let Some(j) = &results.judgement else {
        return String::new();
    };
    let mut out = format!(
        "{}: judged under rule {} ({}), {} rows; report {}\n",
        path.display(),
        j.rule,
        j.lane.label(),
        j.rows.len() + j.steps.len(),
        report.display()
    );
    for h in &j.headlines {
        out.push_str(&format!("  {}\n", h.text));
    }
    if before.is_empty() {
        out.push_str("  no stored verdicts to compare with\n");
        return out;
    }
    let mut changed = 0;
    for row in j.rows.iter().chain(&j.steps) {
        let label = row.label();
        let now = crate::model::Verdict::from(row.verdict).key();
        if let Some((_, was)) = before.iter().find(|(l, _)| *l == label)
            && was != now
        {
            changed += 1;
            out.push_str(&format!("  changed: {label}: {was} -> {now}\n"));
        }
    }
    out.push_str(&format!("  {changed} verdict(s) changed\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_verdicts_are_read_from_either_schema() {
        let v3 = r#"{"comparisons": [{"metric": "sys_ns", "baseline": "A", "variant": "B", "verdict": "no_clear_difference"},
                     {"condition": "unlimited", "metric": "x", "baseline": "base", "variant": "p1", "verdict": "inconclusive"}]}"#;
        assert_eq!(
            stored_verdicts(v3),
            [
                ("sys_ns".to_string(), "no_clear_difference".to_string()),
                (
                    "x (control unlimited) (p1 vs base)".to_string(),
                    "inconclusive".to_string()
                )
            ]
        );
        let v4 = r#"{"judgement": {"rows": [{"metric": "m", "baseline": "A", "variant": "B", "verdict": "context"}]}}"#;
        assert_eq!(
            stored_verdicts(v4),
            [("m".to_string(), "context".to_string())]
        );
        assert!(stored_verdicts("not json").is_empty());
    }
}
