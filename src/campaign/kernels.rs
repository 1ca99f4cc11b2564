//! The kernel half of a campaign: obtain the tree, apply the series, and
//! build A and B (B incrementally from A). `patchbench build` runs this
//! alone; `patchbench run` goes on to boot what it produced.

use std::path::Path;

use anyhow::Context;

use super::Stages;
use crate::build::{self, BuildSpec, Built, KernelArtifact, cache};
use crate::config::{Plan, TreeSource, Variant};
use crate::events::{Event, Sink};
use crate::results::{KernelRecord, Timing};
use crate::{series, tree};

/// The tree, the applied series and both kernels.
pub(crate) struct Prepared {
    pub tree: tree::Tree,
    pub applied: AppliedSeries,
    pub a: KernelArtifact,
    pub b: KernelArtifact,
    /// Shared locks on both kernels' cache entries: keep them until the
    /// kernels are no longer needed, so that no run evicts them.
    pub leases: Vec<cache::Lease>,
}

/// Import (or reuse) the tree, apply the series and build both kernels,
/// then bring the build cache within `budget` (never evicting these two).
pub(crate) async fn prepare(
    stages: &mut Stages<'_>,
    plan: &Plan,
    cache_dir: &Path,
    fresh: bool,
    budget: bytesize::ByteSize,
) -> anyhow::Result<Prepared> {
    let sink = stages.sink;
    let tree = stages
        .time("import", &plan.tree.to_string(), async {
            Ok(tree::obtain(&plan.tree, cache_dir).await?)
        })
        .await?;
    if !tree.fresh {
        sink.emit(Event::Note(format!(
            "tree reused from {}",
            tree.repo_path.display()
        )));
    }
    let repo = tree.open()?;
    let applied = stages
        .time("apply", &plan.series.to_string(), async {
            apply_series(&repo, &tree, &plan.tree, &plan.series, &plan.lore_url).await
        })
        .await?;
    sink.emit(Event::Note(applied.summary()));
    for (patch, how) in applied.series.patches.iter().zip(&applied.patches) {
        if how.already_applied() {
            sink.emit(Event::Note(format!(
                "warning: \"{}\" is {}",
                patch.subject(),
                how.describe()
            )));
        } else if how.method() != Some(crate::apply::Method::Exact) {
            let warning = if how.has_fuzz() {
                "warning: applied with fuzz: "
            } else {
                ""
            };
            sink.emit(Event::Note(format!(
                "{warning}\"{}\" applied {}",
                patch.subject(),
                how.describe()
            )));
        }
    }
    let (a, b) = build_both(stages, plan, cache_dir, &tree, &repo, &applied, fresh).await?;
    evict(cache_dir, budget, sink).await?;
    Ok(Prepared {
        tree,
        applied,
        a: a.artifact,
        b: b.artifact,
        leases: vec![a.lease, b.lease],
    })
}

/// Bring the build cache within `budget`, saying what went and why.
async fn evict(
    cache_dir: &Path,
    budget: bytesize::ByteSize,
    sink: &dyn Sink,
) -> anyhow::Result<()> {
    let dir = cache_dir.to_owned();
    let done = crate::blocking::unblock(move || cache::evict(&dir, budget))
        .await
        .with_context(|| format!("cannot evict from the build cache {}", cache_dir.display()))?;
    for entry in &done.evicted {
        sink.emit(Event::Note(format!(
            "cache: evicted {} ({}, {}, last used {}) to stay within the {budget} budget",
            entry.path.display(),
            entry.kind.describe(),
            entry.size,
            jiff::Timestamp::try_from(entry.last_use)
                .map(|t| t.to_string())
                .unwrap_or_default(),
        )));
    }
    if done.over {
        sink.emit(Event::Note(format!(
            "warning: the build cache holds {} against a {budget} budget; the rest is in use by running campaigns",
            done.total
        )));
    }
    Ok(())
}

/// What `patchbench build` produced.
#[derive(Debug)]
pub struct BuildOutcome {
    pub kernels: Vec<KernelRecord>,
    pub timings: Vec<Timing>,
}

/// Import, apply and build, without booting anything.
pub async fn build_only(
    plan: &Plan,
    cache_dir: &Path,
    fresh: bool,
    budget: bytesize::ByteSize,
    sink: &dyn Sink,
) -> anyhow::Result<BuildOutcome> {
    let mut stages = Stages {
        sink,
        timings: Vec::new(),
    };
    let prepared = prepare(&mut stages, plan, cache_dir, fresh, budget).await?;
    Ok(BuildOutcome {
        kernels: vec![
            KernelRecord {
                variant: Variant::A,
                artifact: prepared.a,
            },
            KernelRecord {
                variant: Variant::B,
                artifact: prepared.b,
            },
        ],
        timings: stages.timings,
    })
}

/// A series applied on its chosen base.
#[derive(Debug)]
pub struct AppliedSeries {
    pub series: series::Series,
    pub base: git2::Oid,
    /// Which base was chosen and why.
    pub base_choice: String,
    /// The commit of the last patch: variant B.
    pub head: git2::Oid,
    /// How each patch applied, in order.
    pub patches: Vec<series::PatchApplied>,
}

impl AppliedSeries {
    /// One line for the user: how many patches, on which base, and why.
    pub fn summary(&self) -> String {
        let skipped = self.patches.iter().filter(|p| p.already_applied()).count();
        format!(
            "series: {} patch(es){}{} on base {} ({})",
            self.series.patches.len(),
            if skipped > 0 {
                format!(", {skipped} already applied and skipped")
            } else {
                String::new()
            },
            if self.series.cover_letters > 0 {
                ", cover letter skipped"
            } else {
                ""
            },
            &self.base.to_string()[..12],
            self.base_choice,
        )
    }
}

/// Load a series, choose its base, and apply it, one commit per patch.
pub async fn apply_series(
    repo: &git2::Repository,
    tree: &tree::Tree,
    tree_source: &TreeSource,
    source: &series::SeriesSource,
    lore_url: &str,
) -> anyhow::Result<AppliedSeries> {
    let series = series::load(source, lore_url).await?;
    let (base, base_choice) = tree::choose_base(
        repo,
        tree.base,
        tree::explicit_rev(tree_source),
        series.base_commit.as_deref(),
    );
    // git2's apply, merges and fuzz search block: off the async thread, so
    // Ctrl-C is seen while a long series applies.
    let (repo_path, to_apply) = (tree.repo_path.clone(), series.clone());
    let patches = crate::blocking::unblock(move || {
        let repo = tree::Tree::open_path(&repo_path)?;
        series::apply(&repo, base, &to_apply).map_err(anyhow::Error::from)
    })
    .await?;
    let head = patches.last().map_or(base, |p| p.commit);
    Ok(AppliedSeries {
        series,
        base,
        base_choice,
        head,
        patches,
    })
}

/// Build A from the base and B incrementally from A's build.
async fn build_both(
    stages: &mut Stages<'_>,
    plan: &Plan,
    cache_dir: &Path,
    tree: &tree::Tree,
    repo: &git2::Repository,
    applied: &AppliedSeries,
    fresh: bool,
) -> anyhow::Result<(Built, Built)> {
    let src = repo
        .workdir()
        .context("the cached tree has no working directory")?
        .to_owned();
    let builds_dir = cache_dir.join("builds").join(
        tree.repo_path
            .file_name()
            .map(|n| n.to_owned())
            .unwrap_or_default(),
    );
    std::fs::create_dir_all(&builds_dir)
        .with_context(|| format!("cannot create {}", builds_dir.display()))?;
    let spec_for = |commit, seed_from, series_sha256| BuildSpec {
        src: src.clone(),
        commit,
        base_config: plan.base_config.clone(),
        fragments: plan.fragments.clone(),
        builds_dir: builds_dir.clone(),
        seed_from,
        series_sha256,
        fresh,
    };
    let a = build_variant(stages, "build A", &spec_for(applied.base, None, None)).await?;
    let mut b_spec = spec_for(
        applied.head,
        Some(a.artifact.build_dir.clone()),
        Some(applied.series.sha256.clone()),
    );
    // An A/A self-check's B is A's very build, which this run holds: a
    // fresh B would wait forever for A's lock (and throw A away).
    b_spec.fresh = fresh && applied.head != applied.base;
    let b = build_variant(stages, "build B", &b_spec).await?;
    Ok((a, b))
}

async fn build_variant(
    stages: &mut Stages<'_>,
    stage: &str,
    spec: &BuildSpec,
) -> anyhow::Result<Built> {
    let built = stages
        .time(stage, &format!("commit {}", spec.commit), async {
            Ok(build::build(spec).await?)
        })
        .await?;
    let artifact = &built.artifact;
    stages
        .sink
        .emit(Event::Note(format!("{stage}: {}", describe(artifact))));
    let unexpected: Vec<&str> = artifact.unexpected_rebuilds().collect();
    if !unexpected.is_empty() {
        stages.sink.emit(Event::Note(format!(
            "warning: {stage} rebuilt {} object(s) that depend on nothing the series changed: {}",
            unexpected.len(),
            unexpected.join(", ")
        )));
    }
    Ok(built)
}

/// One line on how a kernel came to be.
pub fn describe(artifact: &KernelArtifact) -> String {
    if artifact.reused {
        return "reused from the build cache, no make run".to_string();
    }
    match &artifact.started_from {
        Some(from) => format!(
            "incremental build from {from} in {:.1}s, {} objects compiled",
            artifact.build_seconds, artifact.objects_rebuilt
        ),
        None => format!(
            "full build in {:.1}s, {} objects compiled",
            artifact.build_seconds, artifact.objects_rebuilt
        ),
    }
}
