//! The kernel half of a campaign: obtain the tree, apply the series,
//! resolve the variants against it, and build each distinct kernel once
//! (a prefix of the series incrementally from its nearest built ancestor).
//! `patchbench build` runs this alone; `patchbench run` goes on to boot
//! what it produced.

use std::path::Path;

use anyhow::Context;

use super::stages::Stages;
use crate::build::{self, BuildSpec, Built, KernelArtifact, cache};
use crate::config::{Plan, TreeSource};
use crate::events::{Event, Sink};
use crate::results::Timing;
use crate::variants::Variant;
use crate::{series, tree};

/// The tree, the applied series, the variants and their kernels.
pub(crate) struct Kernels {
    pub tree: tree::Tree,
    pub applied: AppliedSeries,
    /// Every variant, the baseline first.
    pub variants: Vec<Variant>,
    /// Each variant's kernel, by variant index (variants that differ only
    /// at run time share one).
    pub kernels: Vec<KernelArtifact>,
    /// Shared locks on the kernels' cache entries: keep them until the
    /// kernels are no longer needed, so that no run evicts them.
    pub _leases: Vec<cache::Lease>,
}

/// Import (or reuse) the tree, apply the series, resolve the variants and
/// build their kernels, then bring the build cache within `budget` (never
/// evicting the kernels this run holds).
pub(crate) async fn prepare(
    stages: &mut Stages<'_>,
    plan: &Plan,
    cache_dir: &Path,
    fresh: bool,
    budget: bytesize::ByteSize,
) -> anyhow::Result<Kernels> {
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
    let subjects: Vec<String> = applied
        .series
        .patches
        .iter()
        .map(|p| p.subject().to_string())
        .collect();
    let variants = plan.variants.resolve(&subjects)?;
    let (kernels, leases) = build_all(
        stages, plan, cache_dir, &tree, &repo, &applied, &variants, fresh,
    )
    .await?;
    evict(cache_dir, budget, sink).await?;
    Ok(Kernels {
        tree,
        applied,
        variants,
        kernels,
        _leases: leases,
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
    pub kernels: Vec<KernelManifest>,
    pub timings: Vec<Timing>,
}

/// One kernel of `kernels.json` (`patchbench build --out DIR`): the
/// variant's name and the build's manifest.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct KernelManifest {
    pub variant: String,
    #[serde(flatten)]
    pub artifact: KernelArtifact,
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
        kernels: prepared
            .variants
            .iter()
            .zip(prepared.kernels)
            .map(|(v, artifact)| KernelManifest {
                variant: v.name.to_string(),
                artifact,
            })
            .collect(),
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
    /// The commit of the last patch (the base for an empty series).
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

/// Build each distinct kernel of `variants` once, in order of the series
/// prefix it carries, each from the nearest built kernel of the same
/// configuration with fewer patches (the base from nothing). Returns each
/// variant's kernel.
#[allow(clippy::too_many_arguments)]
async fn build_all(
    stages: &mut Stages<'_>,
    plan: &Plan,
    cache_dir: &Path,
    tree: &tree::Tree,
    repo: &git2::Repository,
    applied: &AppliedSeries,
    variants: &[Variant],
    fresh: bool,
) -> anyhow::Result<(Vec<KernelArtifact>, Vec<cache::Lease>)> {
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
    let commit_of = |patches: usize| match patches {
        0 => applied.base,
        k => applied.patches[k - 1].commit,
    };
    let mut built: Vec<((git2::Oid, Vec<std::path::PathBuf>), KernelArtifact)> = Vec::new();
    let mut leases = Vec::new();
    for ((patches, fragments), stage) in build_order(variants) {
        let commit = commit_of(patches);
        // A prefix whose last patch was already applied has its
        // predecessor's commit: the same kernel, built once (a second,
        // fresh build would wait on this run's own lock).
        let key = (commit, fragments.clone());
        if built.iter().any(|(k, _)| *k == key) {
            continue;
        }
        let seed_from = built
            .last()
            .filter(|((_, f), _)| *f == fragments)
            .map(|(_, k)| k.build_dir.clone());
        let spec = BuildSpec {
            src: src.clone(),
            commit,
            base_config: plan.base_config.clone(),
            fragments: plan.fragments.iter().chain(&fragments).cloned().collect(),
            builds_dir: builds_dir.clone(),
            fresh,
            seed_from,
            series_sha256: (patches > 0).then(|| applied.series.prefix_sha256(patches)),
        };
        let b = build_variant(stages, &stage, &spec).await?;
        leases.push(b.lease);
        built.push((key, b.artifact));
    }
    let kernels = variants
        .iter()
        .map(|v| {
            let key = (commit_of(v.patches), v.fragments.clone());
            built
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, a)| a.clone())
                .expect("every variant's kernel was built")
        })
        .collect();
    Ok((kernels, leases))
}

/// The distinct kernels of `variants`, in build order (by configuration,
/// then by series prefix, so each prefix follows the one it builds from),
/// each with its stage name: `build A` for the kernel of a variant named
/// A, else the names of the variants that boot it (`build p1`,
/// `build on+off`).
fn build_order(variants: &[Variant]) -> Vec<((usize, Vec<std::path::PathBuf>), String)> {
    let mut keys: Vec<(usize, Vec<std::path::PathBuf>)> = Vec::new();
    for v in variants {
        let key = (v.patches, v.fragments.clone());
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
    keys.into_iter()
        .map(|key| {
            let names: Vec<&str> = variants
                .iter()
                .filter(|v| v.patches == key.0 && v.fragments == key.1)
                .map(|v| v.name.as_str())
                .collect();
            let stage = format!("build {}", names.join("+"));
            (key, stage)
        })
        .collect()
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
