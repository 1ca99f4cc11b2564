//! `patchbench merge`: the results of a campaign's shards (`run --shard`,
//! one per runner of a matrix) as one run: checked to be shards of one
//! experiment (campaign, kernels by sha256, protocol, lane), combined, and
//! judged, with results.json and report.md written as a run writes them.
//! A sequential campaign gets its looks again, one per round the shards
//! ran, and the output says whether another round is needed.

use std::path::PathBuf;

use crate::events::{Event, Sink};
use crate::results::{Results, SequentialStop};

#[derive(clap::Args)]
pub struct MergeArgs {
    /// Every shard's results.json (or the directory holding it), of every
    /// round run so far.
    #[arg(required = true, value_name = "SHARD")]
    pub(super) shards: Vec<PathBuf>,
    /// Where the merged results.json and report.md go.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// The `after_help` of `patchbench merge`.
pub(super) const AFTER_HELP: &str = "\
Examples:
  # four runners, one shard each, on the same kernels:
  patchbench build --out k ci/seeds/000-counter.yaml
  patchbench run --kernels k --shard 1/4 --out s1 ci/seeds/000-counter.yaml   # ... 2/4, 3/4, 4/4
  patchbench merge s1 s2 s3 s4 --out merged
  # a sequential campaign undecided after round 1: each runner runs round 2
  patchbench run --kernels k --shard 1/4 --round 2 --out s1-r2 ci/seeds/000-counter.yaml
  patchbench merge s1 s2 s3 s4 s1-r2 s2-r2 s3-r2 s4-r2 --out merged

Refused: a results.json that is not a shard's, shards of another campaign,
other kernels (sha256), another protocol or lane, another patchbench, a
boot in two shards, and a missing or unfinished boot. Exit codes as for
`run`: 1 when a metric regressed.";

pub(super) fn merge(args: MergeArgs, sink: &dyn Sink) -> anyhow::Result<()> {
    let mut shards = Vec::new();
    for path in &args.shards {
        let file = super::args::results_file(path);
        let results = Results::load(&file)?;
        shards.push((file, results));
    }
    let (merged, round_walls) = crate::results::merge::merge(shards)?;
    let outcome = crate::campaign::judge_merged(merged, &round_walls, &args.out)?;
    sink.emit(Event::Output(crate::report::terminal(&outcome.results)));
    if let Some(s) = &outcome.results.protocol.sequential
        && let Some(last) = s.looks.last()
    {
        let next = match s.stop() {
            SequentialStop::Running => format!(
                "undecided after round {} of {}: {}; run round {} on every runner (`run --shard I/N --round {}`) and merge all the shards again",
                last.round,
                s.rounds,
                last.undecided.join(", "),
                last.round + 1,
                last.round + 1
            ),
            SequentialStop::Decided => {
                format!("decided after round {} of {}", last.round, s.rounds)
            }
            SequentialStop::Rounds | SequentialStop::Time => format!(
                "the budget is spent after round {}: undecided {}",
                last.round,
                last.undecided.join(", ")
            ),
        };
        sink.emit(Event::Output(format!("sequential: {next}\n")));
    }
    super::compare::written(&outcome, sink)
}
