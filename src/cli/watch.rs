//! `patchbench watch`: measure a branch's new head, find the history's
//! change points, hunt the new ones across their commits (`crate::watch`).

use std::path::{Path, PathBuf};

use super::args::{default_cache_dir, load_plan_with};
use crate::config::{Overrides, TreeSource};
use crate::events::{Event, Sink};
use crate::watch::{self, Chosen, Next, Watch};

pub const AFTER_HELP: &str = "Examples:\n  patchbench watch --tree ~/linux --branch mm-unstable --history ~/pb-history ci/smoke.yaml\n  patchbench watch --tree ~/linux --branch mm-unstable --history ~/pb-history   # campaigns chosen by what the new commits change\n  patchbench publish --history ~/pb-history --pages site/                        # trend pages with the change points\n\nEach call measures the branch's head once, against the head measured before (the first call: against itself). A head already measured is not measured again (exit 0, nothing run). The history (history.json, each night's runs, the hunts and the reports) is the --history directory: keep it in git, a data branch, as ci/workflows/patchbench-watch.yml does.\n\nExit codes as `run`'s: 1 when this night's run regressed or a new change point is a regression.";

#[derive(clap::Args)]
pub struct WatchArgs {
    /// The campaign files every night runs (the default A/B variants: B is
    /// the new head, A the head before). Without any, each night runs the
    /// campaigns that execute what its commits change, as `plan --series`
    /// chooses them (ci/seeds/, and the mm library's); the first night
    /// then only records its head.
    pub campaigns: Vec<PathBuf>,
    /// The kernel tree: a local git repository (clone or fetch it first).
    #[arg(long, value_name = "PATH")]
    pub tree: PathBuf,
    /// The branch (or any revision) whose head each night measures.
    #[arg(long, value_name = "REV")]
    pub branch: String,
    /// The history directory: history.json, each night's runs, the hunts
    /// and the change points' reports. Created on the first night.
    #[arg(long, value_name = "DIR")]
    pub history: PathBuf,
    /// Do not hunt a new change point across its commits (the report then
    /// names the commits between the two heads).
    #[arg(long)]
    pub no_hunt: bool,
    /// Boot every kernel, even one whose exact inputs ran before (in a
    /// deterministic lane such a boot is replayed from the cache).
    #[arg(long, env = "PATCHBENCH_FRESH_BOOTS")]
    pub fresh_boots: bool,
    /// Imported trees and kernel build directories, kept between nights
    /// [default: $XDG_CACHE_HOME/patchbench or ~/.cache/patchbench].
    #[arg(long, value_name = "DIR", env = "PATCHBENCH_CACHE")]
    pub cache_dir: Option<PathBuf>,
    /// The size budget of the kernel builds in the cache.
    #[arg(long, value_name = "SIZE", env = "PATCHBENCH_CACHE_MAX", default_value_t = crate::build::cache::DEFAULT_BUDGET)]
    pub cache_max: bytesize::ByteSize,
}

/// What `watch` checks before it reads the branch: the tree is a git
/// repository and every campaign loads.
pub fn check(a: &WatchArgs) -> anyhow::Result<()> {
    watch::commits::open(&a.tree)?;
    for c in &a.campaigns {
        plan(c, tree_at(&a.tree, "HEAD"), "none", false)?;
    }
    Ok(())
}

fn tree_at(tree: &Path, rev: &str) -> TreeSource {
    TreeSource::Git {
        path: tree.to_owned(),
        rev: Some(rev.to_string()),
    }
}

fn plan(
    file: &Path,
    tree: TreeSource,
    series: &str,
    bisect: bool,
) -> anyhow::Result<crate::config::Plan> {
    load_plan_with(
        Some(file),
        Overrides {
            tree: Some(tree),
            series: Some(series.to_string()),
            bisect,
            ..Overrides::default()
        },
    )
}

pub async fn watch(a: WatchArgs, sink: &dyn Sink) -> anyhow::Result<()> {
    check(&a)?;
    let cache_dir = a.cache_dir.clone().unwrap_or_else(default_cache_dir);
    let w = Watch {
        tree: a.tree.clone(),
        branch: a.branch.clone(),
        history_dir: a.history.clone(),
        run: crate::campaign::RunOptions {
            out_dir: PathBuf::new(),
            cache_dir: cache_dir.clone(),
            agent: crate::find_agent()?,
            cache_max: a.cache_max,
            kernels: None,
            shard: None,
            reach: None,
            replay: !a.fresh_boots,
        },
        hunt: !a.no_hunt,
        planner: &plan,
    };
    let night = match watch::next(&w).await? {
        Next::Measured { night, head } => {
            sink.emit(Event::Output(format!(
                "{} at {} was measured on night {night}: nothing new to measure\n",
                a.branch,
                &head[..12]
            )));
            return Ok(());
        }
        Next::Night(night) => night,
    };
    let chosen = match (&night.series, a.campaigns.is_empty()) {
        (_, false) => a
            .campaigns
            .iter()
            .map(|f| Chosen {
                file: f.clone(),
                why: "named on the command line".into(),
            })
            .collect(),
        (None, true) => {
            sink.emit(Event::Note(
                "watch: the first night records its head; the nights after run the campaigns its commits reach".into(),
            ));
            Vec::new()
        }
        (Some(series), true) => {
            let sources = super::args::SourceArgs {
                tree: Some(a.tree.clone()),
                rev: night.previous.map(|p| p.to_string()),
                series: Some(series.display().to_string()),
                ..Default::default()
            };
            let chose = super::choose::choose(&sources, &cache_dir, sink).await?;
            sink.emit(Event::Output(chose.text.clone()));
            chose
                .runs
                .iter()
                .map(|r| Chosen {
                    file: r.file.clone(),
                    why: format!(
                        "the new commits change {}",
                        r.record
                            .executes
                            .iter()
                            .map(|h| h.function.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                })
                .collect()
        }
    };
    let outcome = watch::measure(&w, *night, chosen, sink).await?;
    let last = outcome.history.nights.last().expect("a night was recorded");
    sink.emit(Event::Output(format!(
        "night {}: {} at {} measured by {} campaign(s); {} change point(s) in the history, {} new\n",
        last.index,
        a.branch,
        &last.head.commit[..12],
        last.runs.len(),
        outcome.history.change_points.len(),
        outcome.new_change_points.len()
    )));
    sink.emit(Event::Note(format!(
        "history: {}",
        a.history
            .join(crate::results::history::HISTORY_FILE)
            .display()
    )));
    if outcome.regressed.is_empty() {
        Ok(())
    } else {
        Err(crate::exit::Regressed {
            metrics: outcome.regressed,
        }
        .into())
    }
}
