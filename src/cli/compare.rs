//! `patchbench compare`: render stored results again, or compare the B
//! kernels of two runs, without booting anything.

use std::path::PathBuf;

use crate::config::Variant;
use crate::exit::Regressed;
use crate::report;
use crate::results::Results;
use crate::workload;

#[derive(clap::Args)]
pub struct CompareArgs {
    /// results.json files (or the directories holding them).
    #[arg(required = true, value_name = "RESULTS")]
    results: Vec<PathBuf>,
    /// Print Markdown (as report.md) instead of the terminal table.
    #[arg(long)]
    markdown: bool,
    /// A run whose B kernel becomes the baseline (A) for each RESULTS' B.
    #[arg(long, value_name = "RESULTS")]
    against: Option<PathBuf>,
}

fn load(path: &std::path::Path) -> anyhow::Result<Results> {
    let file = if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_owned()
    };
    Results::load(&file)
}

/// `new`'s B boots against `old`'s B boots, as one document: old's B boots
/// become variant A.
pub fn b_against_b(old: &Results, new: &Results) -> Results {
    let mut merged = new.clone();
    let as_a = old
        .boots
        .iter()
        .filter(|b| b.variant == Variant::B)
        .map(|b| {
            let mut b = b.clone();
            b.variant = Variant::A;
            b.label = format!("{} (run {})", b.label.replace('B', "A"), old.started_at);
            b
        });
    let keep_b = new
        .boots
        .iter()
        .filter(|b| b.variant == Variant::B)
        .cloned();
    merged.boots = as_a.chain(keep_b).collect();
    merged.protocol.boots = merged.boots.iter().map(|b| b.variant).collect();
    merged
}

/// The error that exits 1 when any metric regressed.
pub fn fail_on_regression(rows: &[report::Row]) -> anyhow::Result<()> {
    let metrics = report::regressed_metrics(rows);
    if metrics.is_empty() {
        Ok(())
    } else {
        Err(Regressed { metrics }.into())
    }
}

pub(super) fn compare(args: CompareArgs) -> anyhow::Result<()> {
    let baseline = args.against.as_deref().map(load).transpose()?;
    let mut regressed = Vec::new();
    for path in &args.results {
        let mut results = load(path)?;
        if let Some(old) = &baseline {
            results = b_against_b(old, &results);
        }
        let spec = workload::spec_for(&results.workload);
        if args.results.len() > 1 {
            println!("== {}", path.display());
        }
        let rows = report::rows(&results, spec.as_ref());
        if args.markdown {
            println!("{}", report::markdown_of(&results, spec.as_ref(), &rows));
        } else {
            print!("{}", report::terminal_of(&results, &rows));
        }
        if let Err(e) = fail_on_regression(&rows) {
            regressed.push(format!("{}: {e}", path.display()));
        }
    }
    if regressed.is_empty() {
        Ok(())
    } else {
        anyhow::bail!(Regressed { metrics: regressed })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> Results {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/smoke-results.json");
        Results::load(&path).unwrap()
    }

    #[test]
    fn a_run_against_itself_has_only_b_boots_on_both_sides() {
        let r = fixture();
        let merged = b_against_b(&r, &r);
        assert_eq!(merged.protocol.boots, [Variant::A, Variant::B]);
        assert_eq!(merged.boots[0].samples, merged.boots[1].samples);
        // Identical samples: nothing can have regressed.
        let spec = workload::spec_for(&merged.workload);
        fail_on_regression(&report::rows(&merged, spec.as_ref())).unwrap();
    }

    #[test]
    fn the_terminal_table_has_a_row_per_metric_and_a_verdict() {
        let r = fixture();
        let text = report::terminal(&r, workload::spec_for(&r.workload).as_ref());
        assert!(text.starts_with("accelerator: TCG"), "{text}");
        assert!(text.contains("pageout_cpu_ns"), "{text}");
        assert!(text.contains("inconclusive"), "{text}");
        assert_eq!(text.lines().count(), 2 + 6, "{text}");
    }
}
