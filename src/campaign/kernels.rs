//! The kernel half of a campaign: obtain the tree, apply the series, and
//! build A and B (B incrementally from A). `patchbench build` runs this
//! alone; `patchbench run` goes on to boot what it produced. With prebuilt
//! kernels (`patchbench run --kernels DIR`, what `patchbench build --out
//! DIR` wrote) nothing is built: see [`Prebuilt`].

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::Stages;
use crate::build::{self, BuildSpec, KernelArtifact};
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
}

/// Import (or reuse) the tree, apply the series and build both kernels, or
/// take them from `prebuilt` (`run --kernels DIR`): their images are
/// checked before anything else, their commits once the series is applied.
pub(crate) async fn prepare(
    stages: &mut Stages<'_>,
    plan: &Plan,
    cache_dir: &Path,
    fresh: bool,
    prebuilt: Option<&Path>,
) -> anyhow::Result<Prepared> {
    let sink = stages.sink;
    let prebuilt = prebuilt.map(Prebuilt::load).transpose()?;
    let tree = stages
        .time("import", &plan.tree.to_string(), async {
            let files = |done, total| {
                sink.emit(Event::Count {
                    stage: "import".into(),
                    done,
                    total,
                    unit: "files",
                })
            };
            Ok(tree::obtain(&plan.tree, cache_dir, &files).await?)
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
        if how.method != crate::apply::Method::Exact {
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
    let (a, b) = match prebuilt {
        Some(prebuilt) => prebuilt.for_commits(applied.base, applied.head, sink)?,
        None => build_both(stages, plan, cache_dir, &tree, &repo, &applied, fresh).await?,
    };
    Ok(Prepared {
        tree,
        applied,
        a,
        b,
    })
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
    sink: &dyn Sink,
) -> anyhow::Result<BuildOutcome> {
    let mut stages = Stages {
        sink,
        timings: Vec::new(),
    };
    let prepared = prepare(&mut stages, plan, cache_dir, fresh, None).await?;
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
        format!(
            "series: {} patch(es){} on base {} ({})",
            self.series.patches.len(),
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
    let patches = series::apply(repo, base, &series)?;
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
) -> anyhow::Result<(KernelArtifact, KernelArtifact)> {
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
    let a = build_variant(stages, "build A", &spec_for(applied.base, None, None), repo).await?;
    let b_spec = spec_for(
        applied.head,
        Some(a.build_dir.clone()),
        Some(applied.series.sha256.clone()),
    );
    let b = build_variant(stages, "build B", &b_spec, repo).await?;
    Ok((a, b))
}

async fn build_variant(
    stages: &mut Stages<'_>,
    stage: &str,
    spec: &BuildSpec,
    repo: &git2::Repository,
) -> anyhow::Result<KernelArtifact> {
    let sink = stages.sink;
    let progress = |done, total| {
        sink.emit(Event::Count {
            stage: stage.to_string(),
            done,
            total,
            unit: "objects",
        })
    };
    let artifact = stages
        .time(stage, &format!("commit {}", spec.commit), async {
            build::build(spec, repo, &progress).await
        })
        .await?;
    stages
        .sink
        .emit(Event::Note(format!("{stage}: {}", describe(&artifact))));
    let unexpected: Vec<&str> = artifact.unexpected_rebuilds().collect();
    if !unexpected.is_empty() {
        stages.sink.emit(Event::Note(format!(
            "warning: {stage} rebuilt {} object(s) that depend on nothing the series changed: {}",
            unexpected.len(),
            unexpected.join(", ")
        )));
    }
    Ok(artifact)
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

/// The manifest `patchbench build --out DIR` writes, and `run --kernels DIR` reads.
pub const MANIFEST: &str = "kernels.json";

/// The files of a kernel that an `--out` directory holds, by name: the
/// bzImage as `bzImage-A`, and the PVH `vmlinux` (when it has one) as
/// `vmlinux-A`; with the path and sha256 the manifest records for each.
fn image_files(variant: Variant, k: &KernelArtifact) -> Vec<(String, &Path, &str)> {
    let mut files = vec![(
        format!("bzImage-{variant:?}"),
        k.bzimage.as_path(),
        k.bzimage_sha256.as_str(),
    )];
    if let Some(v) = &k.vmlinux {
        files.push((
            format!("vmlinux-{variant:?}"),
            v.path.as_path(),
            v.sha256.as_str(),
        ));
    }
    files
}

/// Write the kernels' manifest into `dir`, with a copy of each kernel's
/// images beside it (so the directory alone can be uploaded and booted
/// elsewhere). Returns the manifest's path.
pub fn export(kernels: &[KernelRecord], dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create output directory {}", dir.display()))?;
    for k in kernels {
        for (name, from, _) in image_files(k.variant, &k.artifact) {
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
    #[error("{} holds no kernel {variant:?} (exactly one A and one B expected)", manifest.display())]
    Missing { manifest: PathBuf, variant: Variant },
    #[error(
        "{} has sha256 {actual}, but {} records {expected} for kernel {variant:?}; refusing to boot it",
        image.display(),
        manifest.display()
    )]
    Sha256 {
        image: PathBuf,
        manifest: PathBuf,
        variant: Variant,
        expected: String,
        actual: String,
    },
    #[error(
        "kernel {variant:?} in {} was built from commit {built}, but this campaign's {variant:?} is {wanted}: those kernels are for another base or series",
        manifest.display()
    )]
    Commit {
        manifest: PathBuf,
        variant: Variant,
        built: String,
        wanted: String,
    },
}

/// Kernels built elsewhere (`patchbench build --out DIR`), each boot image's
/// sha256 checked against the manifest when loaded.
#[derive(Debug)]
pub struct Prebuilt {
    manifest: PathBuf,
    a: KernelArtifact,
    b: KernelArtifact,
}

impl Prebuilt {
    /// Read `DIR/kernels.json` and check each kernel's image in `DIR`
    /// against it. The artifacts returned boot those images.
    pub fn load(dir: &Path) -> Result<Prebuilt, PrebuiltError> {
        let manifest = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&manifest).map_err(|source| PrebuiltError::Read {
            path: manifest.clone(),
            source,
        })?;
        let records: Vec<KernelRecord> =
            serde_json::from_str(&text).map_err(|source| PrebuiltError::Manifest {
                path: manifest.clone(),
                source,
            })?;
        let take = |variant: Variant| -> Result<KernelArtifact, PrebuiltError> {
            let mut found = records.iter().filter(|r| r.variant == variant);
            let (Some(record), None) = (found.next(), found.next()) else {
                return Err(PrebuiltError::Missing {
                    manifest: manifest.clone(),
                    variant,
                });
            };
            for (name, _, expected) in image_files(variant, &record.artifact) {
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
                        variant,
                        expected: expected.to_string(),
                        actual,
                    });
                }
            }
            // The same kernel, booted from the copies checked above.
            let mut artifact = record.artifact.clone();
            artifact.bzimage = dir.join(format!("bzImage-{variant:?}"));
            if let Some(v) = &mut artifact.vmlinux {
                v.path = dir.join(format!("vmlinux-{variant:?}"));
            }
            Ok(artifact)
        };
        Ok(Prebuilt {
            a: take(Variant::A)?,
            b: take(Variant::B)?,
            manifest: manifest.clone(),
        })
    }

    /// The two kernels, if they were built from this series' base and head.
    fn for_commits(
        self,
        base: git2::Oid,
        head: git2::Oid,
        sink: &dyn Sink,
    ) -> Result<(KernelArtifact, KernelArtifact), PrebuiltError> {
        let pairs = [(Variant::A, &self.a, base), (Variant::B, &self.b, head)];
        if let Some((variant, kernel, wanted)) = pairs
            .iter()
            .find(|(_, kernel, wanted)| kernel.commit != wanted.to_string())
        {
            return Err(PrebuiltError::Commit {
                manifest: self.manifest.clone(),
                variant: *variant,
                built: kernel.commit.clone(),
                wanted: wanted.to_string(),
            });
        }
        for (variant, kernel, _) in pairs {
            sink.emit(Event::Note(format!(
                "kernel {variant:?}: prebuilt {} (commit {}; sha256 as {} records)",
                kernel.boot_image().display(),
                &kernel.commit[..kernel.commit.len().min(12)],
                self.manifest.display()
            )));
        }
        Ok((self.a, self.b))
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
            KernelRecord {
                variant: Variant::A,
                artifact: artifact(&src.join("a"), &"a".repeat(40)),
            },
            KernelRecord {
                variant: Variant::B,
                artifact: artifact(&src.join("b"), &"b".repeat(40)),
            },
        ];
        let out = dir.join("kernels");
        export(&kernels, &out).unwrap();
        out
    }

    #[test]
    fn exported_kernels_load_and_boot_the_copies() {
        let tmp = tempfile::tempdir().unwrap();
        let out = exported(tmp.path());
        let prebuilt = Prebuilt::load(&out).unwrap();
        assert_eq!(prebuilt.a.bzimage, out.join("bzImage-A"));
        assert_eq!(prebuilt.b.bzimage, out.join("bzImage-B"));
        assert_eq!(
            std::fs::read_to_string(&prebuilt.b.bzimage).unwrap(),
            "kernel B"
        );
        // The PVH vmlinux is what boots, from the copy.
        assert_eq!(prebuilt.b.boot_image(), out.join("vmlinux-B"));
    }

    #[test]
    fn an_image_whose_sha256_differs_from_the_manifest_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let out = exported(tmp.path());
        std::fs::write(out.join("bzImage-B"), "not kernel B").unwrap();
        let err = Prebuilt::load(&out).unwrap_err();
        assert!(
            matches!(
                &err,
                PrebuiltError::Sha256 {
                    variant: Variant::B,
                    ..
                }
            ),
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
            PrebuiltError::Sha256 {
                variant: Variant::A,
                ..
            }
        ));
    }

    #[test]
    fn a_manifest_without_both_kernels_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let out = exported(tmp.path());
        let text = std::fs::read_to_string(out.join(MANIFEST)).unwrap();
        let mut records: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        records.truncate(1);
        std::fs::write(out.join(MANIFEST), serde_json::to_string(&records).unwrap()).unwrap();
        assert!(matches!(
            Prebuilt::load(&out).unwrap_err(),
            PrebuiltError::Missing {
                variant: Variant::B,
                ..
            }
        ));
        std::fs::write(out.join(MANIFEST), "{}").unwrap();
        assert!(matches!(
            Prebuilt::load(&out).unwrap_err(),
            PrebuiltError::Manifest { .. }
        ));
    }

    #[test]
    fn kernels_of_another_series_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let out = exported(tmp.path());
        let prebuilt = Prebuilt::load(&out).unwrap();
        let oid = |c: &str| git2::Oid::from_str(&c.repeat(40)).unwrap();
        let sink = crate::events::Recorder::default();
        let err = prebuilt.for_commits(oid("a"), oid("c"), &sink).unwrap_err();
        assert!(
            sink.0.lock().unwrap().is_empty(),
            "nothing said before the check"
        );
        assert!(
            matches!(
                &err,
                PrebuiltError::Commit {
                    variant: Variant::B,
                    ..
                }
            ),
            "{err:?}"
        );
        let ok = Prebuilt::load(&out).unwrap();
        let (a, b) = ok.for_commits(oid("a"), oid("b"), &sink).unwrap();
        assert_eq!((a.commit, b.commit), ("a".repeat(40), "b".repeat(40)));
        assert_eq!(sink.0.lock().unwrap().len(), 2, "one note per kernel");
    }
}
