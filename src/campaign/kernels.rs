//! The kernel half of a campaign: obtain the tree, apply the series,
//! resolve the variants against it, and build each distinct kernel once
//! (a prefix of the series incrementally from its nearest built ancestor).
//! `patchbench build` runs this alone; `patchbench run` goes on to boot
//! what it produced. With prebuilt kernels (`patchbench run --kernels
//! DIR`, what `patchbench build --out DIR` wrote) nothing is built: see
//! [`Prebuilt`].

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::stages::Stages;
use crate::build::{self, BuildProgress, BuildSpec, Built, KernelArtifact, cache};
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
    prebuilt: Option<&Path>,
) -> anyhow::Result<Kernels> {
    let sources = obtain(stages, plan, cache_dir, prebuilt).await?;
    build(stages, plan, cache_dir, fresh, budget, sources).await
}

/// What the kernels are built from: the tree, the applied series and the
/// variants, with the prebuilt kernels if the run was given some.
pub(crate) struct Sources {
    pub tree: tree::Tree,
    pub applied: AppliedSeries,
    /// Every variant, the baseline first.
    pub variants: Vec<Variant>,
    prebuilt: Option<Prebuilt>,
}

/// Import (or reuse) the tree, apply the series and resolve the variants:
/// [`prepare`] up to its first kernel build.
pub(crate) async fn obtain(
    stages: &mut Stages<'_>,
    plan: &Plan,
    cache_dir: &Path,
    prebuilt: Option<&Path>,
) -> anyhow::Result<Sources> {
    let sink = stages.sink;
    // Prebuilt images are checked before anything else, their commits
    // once the series is applied.
    let prebuilt = prebuilt.map(Prebuilt::load).transpose()?;
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
            apply_plan_series(&repo, &tree, plan, sink).await
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
    Ok(Sources {
        tree,
        applied,
        variants,
        prebuilt,
    })
}

/// Build the kernels of [`obtain`]'s variants (or take the prebuilt
/// ones), then bring the build cache within `budget`: the rest of
/// [`prepare`].
pub(crate) async fn build(
    stages: &mut Stages<'_>,
    plan: &Plan,
    cache_dir: &Path,
    fresh: bool,
    budget: bytesize::ByteSize,
    sources: Sources,
) -> anyhow::Result<Kernels> {
    let sink = stages.sink;
    let Sources {
        tree,
        applied,
        variants,
        prebuilt,
    } = sources;
    let repo = tree.open()?;
    let (kernels, leases) = match prebuilt {
        Some(prebuilt) => (
            prebuilt.for_variants(&variants, &applied, sink)?,
            Vec::new(),
        ),
        None => {
            let built = build_all(
                stages, plan, cache_dir, &tree, &repo, &applied, &variants, fresh,
            )
            .await?;
            evict(cache_dir, budget, sink).await?;
            built
        }
    };
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
    let prepared = prepare(&mut stages, plan, cache_dir, fresh, budget, None).await?;
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

/// [`apply_series`] with a campaign plan's tree, series, archive and fuzz.
pub async fn apply_plan_series(
    repo: &git2::Repository,
    tree: &tree::Tree,
    plan: &Plan,
    sink: &dyn Sink,
) -> anyhow::Result<AppliedSeries> {
    apply_series(
        repo,
        tree,
        &plan.tree,
        &plan.series,
        &plan.lore_url,
        plan.fuzz,
        sink,
    )
    .await
}

/// Load a series, choose its base, and apply it, one commit per patch.
/// How a patch was read, when the user should know it (a file with no
/// mail header, a mail with no date), is said as a note.
pub async fn apply_series(
    repo: &git2::Repository,
    tree: &tree::Tree,
    tree_source: &TreeSource,
    source: &series::SeriesSource,
    lore_url: &str,
    fuzz: u32,
    sink: &dyn Sink,
) -> anyhow::Result<AppliedSeries> {
    let series = series::load(source, lore_url).await?;
    for note in series.patches.iter().filter_map(series::Patch::note) {
        sink.emit(Event::Note(note));
    }
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
        series::apply(&repo, base, &to_apply, fuzz).map_err(anyhow::Error::from)
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
    let sink = stages.sink;
    let progress = |step| match step {
        BuildProgress::Compiled { done, expected } => sink.emit(Event::Count {
            stage: stage.to_string(),
            done,
            total: expected,
            unit: "objects",
        }),
        BuildProgress::Waiting(lock) => sink.emit(Event::Progress {
            stage: stage.to_string(),
            detail: lock.to_string(),
        }),
        BuildProgress::Building => sink.emit(Event::Progress {
            stage: stage.to_string(),
            detail: "the lock is free, building".into(),
        }),
    };
    let built = stages
        .time(stage, &format!("commit {}", spec.commit), async {
            Ok(build::build(spec, &progress).await?)
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

/// The manifest `patchbench build --out` writes, and `run --kernels` reads.
pub const MANIFEST: &str = "kernels.json";

/// The files of a variant's kernel that an `--out` directory holds, by
/// name: the bzImage as `bzImage-<variant>`, and the PVH `vmlinux` (when it
/// has one) as `vmlinux-<variant>`; with the path and sha256 the manifest
/// records for each.
fn image_files<'k>(variant: &str, k: &'k KernelArtifact) -> Vec<(String, &'k Path, &'k str)> {
    let mut files = vec![(
        format!("bzImage-{variant}"),
        k.bzimage.as_path(),
        k.bzimage_sha256.as_str(),
    )];
    if let Some(v) = &k.vmlinux {
        files.push((
            format!("vmlinux-{variant}"),
            v.path.as_path(),
            v.sha256.as_str(),
        ));
    }
    files
}

/// Write the kernels' manifest into `dir`, with a copy of each variant's
/// images beside it (so the directory alone can be uploaded and booted
/// elsewhere). Returns the manifest's path.
pub fn export(kernels: &[KernelManifest], dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create output directory {}", dir.display()))?;
    for k in kernels {
        for (name, from, _) in image_files(&k.variant, &k.artifact) {
            let to = dir.join(name);
            std::fs::copy(from, &to)
                .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
        }
    }
    let path = dir.join(MANIFEST);
    let mut text = serde_json::to_string_pretty(kernels).expect("kernels serialize");
    text.push('\n');
    crate::fsutil::write_atomic(&path, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// Why prebuilt kernels were refused. Every check runs before any boot.
#[derive(Debug, thiserror::Error)]
pub enum PrebuiltError {
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a kernels manifest written by `patchbench build --out`", path.display())]
    Manifest {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{} holds no kernel for variant {variant} (one per variant expected)", manifest.display())]
    Missing { manifest: PathBuf, variant: String },
    #[error(
        "{} has sha256 {actual}, but {} records {expected} for variant {variant}; refusing to boot it",
        image.display(),
        manifest.display()
    )]
    Sha256 {
        image: PathBuf,
        manifest: PathBuf,
        variant: String,
        expected: String,
        actual: String,
    },
    #[error(
        "variant {variant}'s kernel in {} was built from commit {built}, but this campaign's {variant} is {wanted}: those kernels are for another base or series",
        manifest.display()
    )]
    Commit {
        manifest: PathBuf,
        variant: String,
        built: String,
        wanted: String,
    },
}

/// Kernels built elsewhere (`patchbench build --out DIR`), each boot image's
/// sha256 checked against the manifest when loaded.
#[derive(Debug)]
pub struct Prebuilt {
    manifest: PathBuf,
    /// Each variant's kernel, booting the checked copies in the directory.
    kernels: Vec<KernelManifest>,
}

impl Prebuilt {
    /// Read `DIR/kernels.json` and check each kernel's images in `DIR`
    /// against it. The artifacts returned boot those images.
    pub fn load(dir: &Path) -> Result<Prebuilt, PrebuiltError> {
        let manifest = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&manifest).map_err(|source| PrebuiltError::Read {
            path: manifest.clone(),
            source,
        })?;
        let records: Vec<KernelManifest> =
            serde_json::from_str(&text).map_err(|source| PrebuiltError::Manifest {
                path: manifest.clone(),
                source,
            })?;
        let mut kernels = Vec::new();
        for record in records {
            for (name, _, expected) in image_files(&record.variant, &record.artifact) {
                let image = dir.join(name);
                let actual =
                    crate::tree::sha256_file(&image).map_err(|source| PrebuiltError::Read {
                        path: image.clone(),
                        source,
                    })?;
                if actual != expected {
                    return Err(PrebuiltError::Sha256 {
                        image,
                        manifest: manifest.clone(),
                        variant: record.variant.clone(),
                        expected: expected.to_string(),
                        actual,
                    });
                }
            }
            // The same kernel, booted from the copies checked above.
            let mut artifact = record.artifact.clone();
            artifact.bzimage = dir.join(format!("bzImage-{}", record.variant));
            if let Some(v) = &mut artifact.vmlinux {
                v.path = dir.join(format!("vmlinux-{}", record.variant));
            }
            kernels.push(KernelManifest {
                variant: record.variant,
                artifact,
            });
        }
        Ok(Prebuilt { manifest, kernels })
    }

    /// Each variant's kernel, if the manifest has one built from that
    /// variant's commit.
    fn for_variants(
        self,
        variants: &[Variant],
        applied: &AppliedSeries,
        sink: &dyn Sink,
    ) -> Result<Vec<KernelArtifact>, PrebuiltError> {
        let mut out = Vec::new();
        for v in variants {
            let Some(k) = self.kernels.iter().find(|k| k.variant == v.name.as_str()) else {
                return Err(PrebuiltError::Missing {
                    manifest: self.manifest.clone(),
                    variant: v.name.to_string(),
                });
            };
            let wanted = match v.patches {
                0 => applied.base,
                n => applied.patches[n - 1].commit,
            };
            if k.artifact.commit != wanted.to_string() {
                return Err(PrebuiltError::Commit {
                    manifest: self.manifest.clone(),
                    variant: v.name.to_string(),
                    built: k.artifact.commit.clone(),
                    wanted: wanted.to_string(),
                });
            }
            out.push(k.artifact.clone());
        }
        for (v, kernel) in variants.iter().zip(&out) {
            sink.emit(Event::Note(format!(
                "kernel {}: prebuilt {} (commit {}; sha256 as {} records)",
                v.name,
                kernel.boot_image().display(),
                &kernel.commit[..kernel.commit.len().min(12)],
                self.manifest.display()
            )));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn artifact(bzimage: &Path, commit: &str) -> KernelArtifact {
        let vmlinux = bzimage.with_extension("vmlinux");
        std::fs::write(&vmlinux, format!("vmlinux of {commit}")).unwrap();
        KernelArtifact {
            commit: commit.into(),
            build_dir: "/cache/builds/x".into(),
            bzimage: bzimage.to_owned(),
            bzimage_sha256: crate::tree::sha256_file(bzimage).unwrap(),
            vmlinux: Some(crate::build::Image {
                sha256: crate::tree::sha256_file(&vmlinux).unwrap(),
                path: vmlinux,
            }),
            config_sha256: "c".repeat(64),
            hz: None,
            compiler: "gcc 12".into(),
            key: "0123456789abcdef".into(),
            series_sha256: None,
            build_seconds: 1.0,
            incremental: false,
            started_from: None,
            reused: false,
            objects_rebuilt: 1,
            rebuilt: Vec::new(),
        }
    }

    /// A `build --out` directory with two small "kernels".
    fn exported(dir: &Path) -> PathBuf {
        let src = dir.join("src");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("a"), "kernel A").unwrap();
        std::fs::write(src.join("b"), "kernel B").unwrap();
        let kernels = vec![
            KernelManifest {
                variant: "A".into(),
                artifact: artifact(&src.join("a"), &"a".repeat(40)),
            },
            KernelManifest {
                variant: "B".into(),
                artifact: artifact(&src.join("b"), &"b".repeat(40)),
            },
        ];
        let out = dir.join("kernels");
        export(&kernels, &out).unwrap();
        out
    }

    fn kernel<'p>(p: &'p Prebuilt, variant: &str) -> &'p KernelArtifact {
        &p.kernels
            .iter()
            .find(|k| k.variant == variant)
            .unwrap()
            .artifact
    }

    #[test]
    fn exported_kernels_load_and_boot_the_copies() {
        let tmp = tempfile::tempdir().unwrap();
        let out = exported(tmp.path());
        let prebuilt = Prebuilt::load(&out).unwrap();
        assert_eq!(kernel(&prebuilt, "A").bzimage, out.join("bzImage-A"));
        assert_eq!(kernel(&prebuilt, "B").bzimage, out.join("bzImage-B"));
        assert_eq!(
            std::fs::read_to_string(&kernel(&prebuilt, "B").bzimage).unwrap(),
            "kernel B"
        );
        // The PVH vmlinux is what boots, from the copy.
        assert_eq!(kernel(&prebuilt, "B").boot_image(), out.join("vmlinux-B"));
    }

    #[test]
    fn an_image_whose_sha256_differs_from_the_manifest_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let out = exported(tmp.path());
        std::fs::write(out.join("bzImage-B"), "not kernel B").unwrap();
        let err = Prebuilt::load(&out).unwrap_err();
        assert!(
            matches!(&err, PrebuiltError::Sha256 { variant, .. } if variant == "B"),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(
            text.contains("bzImage-B") && text.contains("refusing to boot it"),
            "{text}"
        );
        // The vmlinux is checked as well: it is what boots.
        let out = exported(&tmp.path().join("again"));
        std::fs::write(out.join("vmlinux-A"), "tampered").unwrap();
        assert!(matches!(
            Prebuilt::load(&out).unwrap_err(),
            PrebuiltError::Sha256 { variant, .. } if variant == "A"
        ));
        std::fs::write(out.join(MANIFEST), "{}").unwrap();
        assert!(matches!(
            Prebuilt::load(&out).unwrap_err(),
            PrebuiltError::Manifest { .. }
        ));
    }

    fn applied_with(base: &str, head: &str) -> AppliedSeries {
        let oid = |c: &str| git2::Oid::from_str(&c.repeat(40)).unwrap();
        AppliedSeries {
            series: crate::series::Series {
                source: crate::series::SeriesSource::None,
                patches: Vec::new(),
                cover_letters: 0,
                base_commit: None,
                sha256: String::new(),
            },
            base: oid(base),
            base_choice: String::new(),
            head: oid(head),
            patches: vec![crate::series::PatchApplied {
                commit: oid(head),
                landing: crate::series::Landing::Applied {
                    method: crate::apply::Method::Exact,
                    files: Vec::new(),
                },
            }],
        }
    }

    fn ab() -> Vec<Variant> {
        crate::variants::plan(None, None, crate::variants::PerPatch::Off, Path::new("/"))
            .unwrap()
            .resolve(&["x".into()])
            .unwrap()
    }

    #[test]
    fn kernels_of_another_series_or_variant_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let out = exported(tmp.path());
        let sink = crate::events::Recorder::default();
        let err = Prebuilt::load(&out)
            .unwrap()
            .for_variants(&ab(), &applied_with("a", "c"), &sink)
            .unwrap_err();
        assert!(
            sink.0.lock().unwrap().is_empty(),
            "nothing said before the check"
        );
        assert!(
            matches!(&err, PrebuiltError::Commit { variant, .. } if variant == "B"),
            "{err:?}"
        );
        let kernels = Prebuilt::load(&out)
            .unwrap()
            .for_variants(&ab(), &applied_with("a", "b"), &sink)
            .unwrap();
        assert_eq!(
            (kernels[0].commit.clone(), kernels[1].commit.clone()),
            ("a".repeat(40), "b".repeat(40))
        );
        assert_eq!(sink.0.lock().unwrap().len(), 2, "one note per kernel");
        let mut text = std::fs::read_to_string(out.join(MANIFEST)).unwrap();
        text = text.replace("\"B\"", "\"C\"");
        std::fs::write(out.join(MANIFEST), text).unwrap();
        std::fs::rename(out.join("bzImage-B"), out.join("bzImage-C")).unwrap();
        std::fs::rename(out.join("vmlinux-B"), out.join("vmlinux-C")).unwrap();
        let err = Prebuilt::load(&out)
            .unwrap()
            .for_variants(&ab(), &applied_with("a", "b"), &sink)
            .unwrap_err();
        assert!(matches!(&err, PrebuiltError::Missing { variant, .. } if variant == "B"));
    }
}
