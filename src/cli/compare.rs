//! `patchbench compare`: render stored results again, as judged, or
//! compare the B kernels of two runs, without booting anything.

use std::path::PathBuf;

use crate::events::{Event, Sink};
use crate::exit::{Regressed, Stopped};
use crate::report;
use crate::results::Results;

#[derive(clap::Args)]
pub struct CompareArgs {
    /// results.json files (or the directories holding them).
    #[arg(required = true, value_name = "RESULTS")]
    pub(super) results: Vec<PathBuf>,
    /// Print Markdown (as report.md) instead of the terminal table.
    #[arg(long)]
    markdown: bool,
    /// A run whose B kernel becomes the baseline (A) for each RESULTS' B
    /// (a new comparison, judged under today's rule).
    #[arg(long, value_name = "RESULTS")]
    pub(super) against: Option<PathBuf>,
    /// Judge each document again under today's rule before rendering it,
    /// without writing it (`patchbench judge` writes it back).
    #[arg(long)]
    rejudge: bool,
}

pub(super) fn load(path: &std::path::Path) -> anyhow::Result<Results> {
    Ok(Results::load(&super::args::results_file(path))?)
}

/// `new`'s B boots against `old`'s B boots, as one document: old's B boots
/// become the baseline (variant A).
pub fn b_against_b(old: &Results, new: &Results) -> Results {
    let mut merged = new.clone();
    let b_of = |r: &Results| {
        r.candidates()
            .first()
            .map_or_else(String::new, |v| v.name.clone())
    };
    let (old_b, new_b) = (b_of(old), b_of(new));
    let baseline = new.baseline().to_string();
    let as_a = old.boots.iter().filter(|b| b.variant == old_b).map(|b| {
        let mut b = b.clone();
        b.variant = baseline.clone();
        b.label = format!("{} (run {})", b.label.replace('B', "A"), old.started_at);
        b
    });
    let keep_b = new.boots.iter().filter(|b| b.variant == new_b).cloned();
    merged.boots = as_a.chain(keep_b).collect();
    merged.protocol.boots = merged.boots.iter().map(|b| b.variant.clone()).collect();
    merged
}

/// The error that exits 1 when any metric regressed, from a stored
/// judgement.
pub fn fail_on_regression(results: &Results) -> anyhow::Result<()> {
    let metrics = results
        .judgement
        .as_ref()
        .map(|j| j.regressed.clone())
        .unwrap_or_default();
    if metrics.is_empty() {
        Ok(())
    } else {
        Err(Regressed { metrics }.into())
    }
}

pub(super) fn compare(args: CompareArgs, sink: &dyn Sink) -> anyhow::Result<()> {
    let baseline = args.against.as_deref().map(load).transpose()?;
    let mut regressed = Vec::new();
    let mut stopped = Vec::new();
    for path in &args.results {
        let mut results = load(path)?;
        if let Some(old) = &baseline {
            results = b_against_b(old, &results);
            crate::judge::judge_into(&mut results);
        } else if args.rejudge {
            crate::judge::judge_into(&mut results);
        }
        if args.results.len() > 1 {
            sink.emit(Event::Output(format!("== {}\n", path.display())));
        }
        sink.emit(Event::Output(if args.markdown {
            format!("{}\n", report::markdown(&results))
        } else {
            report::terminal(&results)
        }));
        regressed.extend(
            results
                .judgement
                .iter()
                .flat_map(|j| &j.regressed)
                .map(|m| format!("{m} in {}", path.display())),
        );
        stopped.extend(
            report::failed_boots(&results)
                .into_iter()
                .map(|b| format!("boot {} in {}", b.label, path.display())),
        );
    }
    verdict(regressed, stopped)
}

/// How `compare` exits: a stopped boot is a guest failure (exit 5) even
/// when something else regressed, since the comparison is missing that
/// boot's samples, and the run itself ended with 5; otherwise a regression
/// exits 1.
fn verdict(regressed: Vec<String>, stopped: Vec<String>) -> anyhow::Result<()> {
    if !stopped.is_empty() {
        Err(Stopped { boots: stopped }.into())
    } else if !regressed.is_empty() {
        Err(Regressed { metrics: regressed }.into())
    } else {
        Ok(())
    }
}

/// Where a finished run's files are, then its exit: 1 when a metric
/// regressed (`run` and `merge` end alike).
pub(super) fn written(outcome: &crate::campaign::Outcome, sink: &dyn Sink) -> anyhow::Result<()> {
    files_written(outcome, sink);
    fail_on_regression(&outcome.results)
}

/// Where a finished run's results.json and report.md are.
pub(super) fn files_written(outcome: &crate::campaign::Outcome, sink: &dyn Sink) {
    sink.emit(Event::Note(format!(
        "results: {}",
        outcome.results_path.display()
    )));
    sink.emit(Event::Note(format!(
        "report:  {}",
        outcome.markdown_path.display()
    )));
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::results::tests::fixture;

    #[test]
    fn a_stopped_boot_exits_as_a_guest_failure_before_a_regression() {
        use crate::exit::{GUEST, OK, REGRESSION, code_for};
        let code = |r: Vec<&str>, s: Vec<&str>| {
            let owned = |v: Vec<&str>| v.into_iter().map(String::from).collect();
            verdict(owned(r), owned(s)).map_or_else(|e| code_for(&e), |()| OK)
        };
        assert_eq!(code(vec![], vec![]), OK);
        assert_eq!(code(vec!["pageout_cpu_ns"], vec![]), REGRESSION);
        assert_eq!(code(vec!["pageout_cpu_ns"], vec!["boot B"]), GUEST);
        assert_eq!(code(vec![], vec!["boot B"]), GUEST);
    }

    #[test]
    fn a_run_against_itself_has_only_b_boots_on_both_sides() {
        let r = fixture();
        let mut merged = b_against_b(&r, &r);
        assert_eq!(merged.protocol.boots, ["A", "B"]);
        assert_eq!(merged.boots[0].samples, merged.boots[1].samples);
        // Identical samples: nothing can have regressed.
        crate::judge::judge_into(&mut merged);
        fail_on_regression(&merged).unwrap();
    }

    #[test]
    fn the_terminal_table_opens_with_the_headline_and_has_a_row_per_metric() {
        let mut r = fixture();
        crate::judge::judge_into(&mut r);
        let text = report::terminal(&r);
        assert!(text.starts_with("B: "), "{text}");
        assert!(text.contains("\nlane: TCG"), "{text}");
        assert!(text.contains("pageout_cpu_ns"), "{text}");
        assert!(text.contains("inconclusive"), "{text}");
    }

    #[test]
    fn an_unjudged_document_says_how_to_judge_it() {
        let text = report::terminal(&fixture());
        assert!(text.contains("patchbench judge RESULTS.json"), "{text}");
    }
}
