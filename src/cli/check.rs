//! What a command checks before its first slow step: the campaign file and
//! its overrides, flags that cannot go together, and that every local path
//! it names (tree, series, kernel, results) is there and readable. Each
//! command calls its check first, so a mistake costs no import or build;
//! [`Cli::check`] runs them alone, which is how tests/docs.rs holds every
//! documented command to what the CLI accepts.

use std::path::{Path, PathBuf};

use super::args::{self, CampaignArgs, SourceArgs};
use super::{ApplyArgs, Cli, Command, RunArgs};
use crate::config::{self, ConfigError, TreeSource};

/// What `run` goes on with once its flags are checked.
pub(super) enum RunCheck {
    /// `--series` without a campaign file: the series chooses the campaigns.
    Chosen,
    /// One campaign (or the built-in smoke campaign), with its shard.
    Plan {
        plan: Box<config::Plan>,
        shard: Option<crate::model::Shard>,
    },
}

impl Cli {
    /// Every check the command makes before it imports, builds, boots or
    /// fetches anything. `Ok` means the command would start its work.
    pub fn check(&self) -> anyhow::Result<()> {
        match &self.command {
            Command::Run(a) => run(a).map(drop),
            Command::Apply(a) => apply_tree(a).map(drop),
            Command::Build(a) => super::build::check(a).map(drop),
            Command::Boot(a) => super::boot::check(a).map(drop),
            Command::Plan(a) => super::plan::check(a),
            Command::Compare(a) => results_paths(a.results.iter().chain(&a.against)),
            Command::Judge(a) => results_paths(&a.results),
            Command::Merge(a) => results_paths(&a.shards),
            Command::Publish(a) => results_paths(&a.results),
            Command::Cache(_) | Command::Doctor { .. } => Ok(()),
        }
    }
}

/// `run`'s checks: with `--series` and no campaign file the series chooses
/// the campaigns (no `--kernels` or `--shard` then); else the campaign with
/// its overrides, its shard, and the local paths it names.
pub(super) fn run(a: &RunArgs) -> anyhow::Result<RunCheck> {
    if super::choose::wanted(
        usize::from(a.campaign.campaign.is_some()),
        &a.campaign.sources,
    ) {
        for (flag, given) in [
            ("--kernels", a.kernels.is_some()),
            ("--shard", a.shard.is_some()),
        ] {
            if given {
                return Err(ConfigError::Invalid {
                    path: PathBuf::from(flag),
                    message: "needs a campaign file: with --series alone the series chooses the campaigns, each with kernels and boots of its own".into(),
                }
                .into());
            }
        }
        sources_paths(&a.campaign.sources)?;
        return Ok(RunCheck::Chosen);
    }
    let shard = a
        .shard
        .as_deref()
        .map(|text| crate::model::Shard::parse(text, a.round))
        .transpose()
        .map_err(|message| ConfigError::Invalid {
            path: PathBuf::from("--shard"),
            message,
        })?;
    let plan = args::load_run_plan(&a.campaign, a.accel.map(Into::into), a.bisect)?;
    if a.kernels.is_none() {
        plan_paths(&plan)?;
    }
    Ok(RunCheck::Plan {
        plan: Box::new(plan),
        shard,
    })
}

/// `apply`'s tree: `--tree` (with `--rev`), else the built-in smoke
/// campaign's, as `run` and `plan` default to; and its series, read.
pub(super) fn apply_tree(a: &ApplyArgs) -> anyhow::Result<TreeSource> {
    let tree = match &a.tree {
        Some(t) => args::tree_override(t.clone(), a.rev.clone()),
        None => {
            let default = CampaignArgs {
                campaign: None,
                sources: SourceArgs::default(),
                cache_dir: None,
                cache_max: crate::build::cache::DEFAULT_BUDGET,
            };
            args::load_plan(&default, None)?.tree
        }
    };
    tree_exists(&tree)?;
    series_readable(&crate::series::SeriesSource::parse(
        &a.series,
        Path::new(""),
    ))?;
    Ok(tree)
}

/// The tree and series a plan names, where they are local.
pub(super) fn plan_paths(plan: &config::Plan) -> anyhow::Result<()> {
    tree_exists(&plan.tree)?;
    series_readable(&plan.series)
}

/// `--tree` and `--series` as given, where they are local.
pub(super) fn sources_paths(s: &SourceArgs) -> anyhow::Result<()> {
    if let Some(t) = &s.tree {
        tree_exists(&args::tree_override(t.clone(), s.rev.clone()))?;
    }
    if let Some(text) = &s.series {
        series_readable(&crate::series::SeriesSource::parse(text, Path::new("")))?;
    }
    Ok(())
}

/// A tarball that is a file, a repository that git opens; a URL is fetched
/// later and is not checked here.
fn tree_exists(tree: &TreeSource) -> anyhow::Result<()> {
    match tree {
        TreeSource::Tarball(p) if !p.is_file() => Err(ConfigError::Invalid {
            path: p.clone(),
            message: "no such tarball or directory: --tree takes a source tarball, a git repository or a git URL".into(),
        }
        .into()),
        TreeSource::Git { path, .. } => match git2::Repository::open(path) {
            Ok(_) => Ok(()),
            Err(e) => Err(ConfigError::Invalid {
                path: path.clone(),
                message: format!("is a directory but not a git repository git can open: {}", e.message()),
            }
            .into()),
        },
        _ => Ok(()),
    }
}

/// A local series, read and parsed as the run will (a `lore:` thread is
/// fetched later).
fn series_readable(source: &crate::series::SeriesSource) -> anyhow::Result<()> {
    if let crate::series::SeriesSource::Path(p) = source {
        crate::series::load_path(p)?;
    }
    Ok(())
}

/// Results a command reads: each a results.json or a directory with one.
fn results_paths<'a>(given: impl IntoIterator<Item = &'a PathBuf>) -> anyhow::Result<()> {
    for path in given {
        let file = if path.is_dir() {
            path.join("results.json")
        } else {
            path.clone()
        };
        anyhow::ensure!(
            file.is_file(),
            "{} is not a results.json or a directory holding one",
            path.display()
        );
    }
    Ok(())
}
