//! The host's half of the kernel-build workload: a kernel tree, configured
//! and prepared once on the host, that every guest sample builds from (read
//! through host-root mode).
//!
//! In the cache directory:
//! - `kbuild/src-<commit>`: the campaign's base commit, checked out with
//!   git2 (not the shared tree, whose checkout moves between A and B);
//! - `kbuild/<key>`: the out-of-tree build directory: configured with the
//!   workload's `config`, `make prepare`d, the targets built once (which
//!   proves they exist for this config) and recorded
//!   ([`patchbench_agent::RECORDED_MAKEFILE`]), then their outputs deleted.
//!   `patchbench-kbuild.json` marks it complete. The key covers the commit,
//!   the config, the targets and the compiler.
//! - `kbuild/<key>.stage`: every file a sample's build reads, toolchain
//!   and tree, under their host paths ([`stage`]). The guest copies it into
//!   its memory before the first sample and builds there, so no timed
//!   window reads the host.

mod error;
mod stage;

pub use error::KbuildError;
use error::io_err;
pub use stage::{CopyError, Staged, stage_path, write_archive};

use std::path::{Path, PathBuf};

use git2::{Oid, Repository, build::CheckoutBuilder};
use patchbench_agent::RECORDED_MAKEFILE;
use sha2::{Digest, Sha256};

use crate::events::{Event, Sink};
use crate::process::{self, Cmd};
use crate::workload::KernelBuildPlan;

/// Marks a finished source export.
const EXPORTED: &str = ".patchbench-exported";
/// Marks a finished build directory, and says what it holds.
const STAMP: &str = "patchbench-kbuild.json";

/// A prepared tree of `commit` for `plan`, preparing it if the cache
/// does not hold one yet.
pub async fn prepare(
    plan: &KernelBuildPlan,
    repo: &Repository,
    commit: Oid,
    cache_dir: &Path,
    sink: &dyn Sink,
) -> Result<PreparedTree, KbuildError> {
    let config = plan.config.make_target();
    let targets = &plan.targets;
    let compiler = crate::build::compiler_version()
        .await
        .map_err(KbuildError::Compiler)?;
    let root = cache_dir.join("kbuild");
    let src = export(repo.path(), commit, &root, sink).await?;
    let build = root.join(key(commit, config, targets, &compiler));
    if build.join(STAMP).is_file() {
        sink.emit(Event::Note(format!(
            "kernel-build: reusing the prepared tree {}",
            build.display()
        )));
    } else {
        configure(&src, &build, config, targets, sink).await?;
        let stamp = serde_json::json!({
            "commit": commit.to_string(),
            "config": config,
            "targets": targets,
            "compiler": compiler,
        });
        crate::fsutil::write_atomic(&build.join(STAMP), stamp.to_string().as_bytes())
            .map_err(io_err(&build.join(STAMP)))?;
    }
    let stage = PathBuf::from(patchbench_agent::kbuild_stage(&build.display().to_string()));
    let staged = stage::ensure(
        &stage::Build {
            driver: plan.driver,
            src: &src,
            build: &build,
            jobs: plan.jobs,
            targets,
        },
        &stage,
    )
    .await?;
    sink.emit(Event::Note(format!(
        "kernel-build: {} files ({}) staged for the guest's memory: {}",
        staged.files,
        bytesize::ByteSize::b(staged.bytes),
        stage.display()
    )));
    Ok(PreparedTree { src, build, stage })
}

/// Where a kernel build's prepared tree is on the host.
#[derive(Debug, Clone)]
pub struct PreparedTree {
    /// The source tree, checked out at the campaign's base commit.
    pub src: PathBuf,
    /// The configured, prepared build directory (`O=`), without the
    /// targets' outputs.
    pub build: PathBuf,
    /// The staged root: every file a sample's build reads, under its host
    /// path.
    pub stage: PathBuf,
}

/// The build directory's cache key.
pub fn key(commit: Oid, config: &str, targets: &[String], compiler: &str) -> String {
    let mut h = Sha256::new();
    h.update(commit.as_bytes());
    for part in std::iter::once(config)
        .chain(targets.iter().map(String::as_str))
        .chain([compiler])
    {
        h.update(b"\0");
        h.update(part.as_bytes());
    }
    hex::encode(h.finalize())[..16].to_string()
}

/// Checks out `commit` into `root/src-<commit>` unless it is there already.
/// Writing a kernel tree's 87k files runs off the async thread. A staged
/// selftest is built from the same checkout (`crate::staged`).
pub(crate) async fn export(
    repo_path: &Path,
    commit: Oid,
    root: &Path,
    sink: &dyn Sink,
) -> Result<PathBuf, KbuildError> {
    let dir = root.join(format!("src-{}", &commit.to_string()[..16]));
    if dir.join(EXPORTED).is_file() {
        return Ok(dir);
    }
    sink.emit(Event::Progress {
        stage: "kernel-build".into(),
        detail: format!("checking out {commit} into {}", dir.display()),
    });
    let (repo_path, target) = (repo_path.to_owned(), dir.clone());
    crate::blocking::unblock(move || export_blocking(&repo_path, commit, &target)).await?;
    Ok(dir)
}

fn export_blocking(repo_path: &Path, commit: Oid, dir: &Path) -> Result<(), KbuildError> {
    let git = |what: String| {
        let repo = repo_path.to_owned();
        move |source| KbuildError::Git { repo, what, source }
    };
    let repo = Repository::open(repo_path).map_err(git("open the repository".into()))?;
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(io_err(dir))?;
    }
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let tree = repo
        .find_commit(commit)
        .map_err(git(format!("find commit {commit}")))?;
    let mut opts = CheckoutBuilder::new();
    // Write every file into the other directory; leave the repository's
    // own index and working tree alone.
    opts.force().target_dir(dir).update_index(false);
    repo.checkout_tree(tree.as_object(), Some(&mut opts))
        .map_err(git(format!("check out {commit} into {}", dir.display())))?;
    std::fs::write(dir.join(EXPORTED), commit.to_string()).map_err(io_err(&dir.join(EXPORTED)))?;
    Ok(())
}

/// Configures, prepares, builds and records the targets, then deletes them.
async fn configure(
    src: &Path,
    build: &Path,
    config: &str,
    targets: &[String],
    sink: &dyn Sink,
) -> Result<(), KbuildError> {
    if build.exists() {
        std::fs::remove_dir_all(build).map_err(io_err(build))?;
    }
    std::fs::create_dir_all(build).map_err(io_err(build))?;
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let log = build.join("patchbench-prepare.log");
    // Configuring is as quick as a kernel build's own configuration step;
    // `make prepare` and the targets are parts of a kernel build, so they
    // get a whole build's deadline (see `build::BUILD_DEADLINE` for why).
    let steps: [(&str, Vec<String>, std::time::Duration); 3] = [
        (
            "configure",
            vec![config.to_string()],
            crate::build::CONFIG_DEADLINE,
        ),
        (
            "prepare",
            vec!["prepare".to_string()],
            crate::build::BUILD_DEADLINE,
        ),
        (
            "build the targets",
            targets.to_vec(),
            crate::build::BUILD_DEADLINE,
        ),
    ];
    for (what, make_targets, deadline) in steps {
        sink.emit(Event::Progress {
            stage: "kernel-build".into(),
            detail: format!("{what}: make {}", make_targets.join(" ")),
        });
        let cmd = Cmd::new("make", deadline)
            .args(crate::build::make_args(src, build, jobs, false))
            .args(&make_targets)
            .log_to(&log);
        process::run(&cmd)
            .await
            .map_err(|source| KbuildError::Make {
                what,
                config: config.to_string(),
                targets: targets.to_vec(),
                first_error: match &source {
                    process::ProcessError::Failed { tail, .. } => crate::build::first_error(tail),
                    _ => None,
                },
                source: Box::new(source),
            })?;
    }
    let makefile = recorded_makefile(build, targets)?;
    std::fs::write(build.join(RECORDED_MAKEFILE), makefile)
        .map_err(io_err(&build.join(RECORDED_MAKEFILE)))?;
    for target in targets {
        let path = build.join(target);
        std::fs::remove_file(&path).map_err(io_err(&path))?;
    }
    Ok(())
}

/// A makefile that reruns the commands kbuild recorded for `targets` (the
/// `savedcmd_` lines of their `.cmd` files, already in make's syntax).
pub fn recorded_makefile(build: &Path, targets: &[String]) -> Result<String, KbuildError> {
    let mut text = String::from(
        "# Written by patchbench: the commands kbuild ran for these targets,\n\
         # from their .cmd files. `make -f patchbench-targets.mk` runs them again.\n\
         pound := \\#\n.PHONY: all\n",
    );
    text.push_str(&format!("all: {}\n", targets.join(" ")));
    for target in targets {
        let cmd_file = cmd_file(build, target);
        let saved =
            std::fs::read_to_string(&cmd_file).map_err(|source| KbuildError::NoCmdFile {
                target: target.clone(),
                cmd_file: cmd_file.clone(),
                source,
            })?;
        let command = saved_command(&saved, target).ok_or_else(|| KbuildError::NoSavedCommand {
            cmd_file: cmd_file.clone(),
        })?;
        text.push_str(&format!("{target}:\n\t{command}\n"));
    }
    Ok(text)
}

/// `dir/.name.cmd` for a target `dir/name`.
fn cmd_file(build: &Path, target: &str) -> PathBuf {
    let path = build.join(target);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{}.cmd", name.unwrap_or_default()))
}

/// The value of `savedcmd_<target> := ...` in a `.cmd` file.
pub fn saved_command<'a>(cmd_text: &'a str, target: &str) -> Option<&'a str> {
    let prefix = format!("savedcmd_{target} := ");
    cmd_text
        .lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_saved_command_is_found_by_target() {
        let text = "savedcmd_mm/mmzone.o := gcc -c -o mm/mmzone.o mm/mmzone.c ; objtool mm/mmzone.o\n\nsource_mm/mmzone.o := mm/mmzone.c\n";
        assert_eq!(
            saved_command(text, "mm/mmzone.o"),
            Some("gcc -c -o mm/mmzone.o mm/mmzone.c ; objtool mm/mmzone.o")
        );
        assert_eq!(saved_command(text, "mm/other.o"), None);
    }

    #[test]
    fn the_recorded_makefile_has_a_rule_per_target() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("mm")).unwrap();
        std::fs::write(
            dir.path().join("mm/.mmzone.o.cmd"),
            "savedcmd_mm/mmzone.o := gcc -DX=$$HOME -o mm/mmzone.o\n",
        )
        .unwrap();
        let text = recorded_makefile(dir.path(), &["mm/mmzone.o".to_string()]).unwrap();
        assert!(text.contains("all: mm/mmzone.o\n"), "{text}");
        // Already make-escaped: copied verbatim.
        assert!(
            text.ends_with("mm/mmzone.o:\n\tgcc -DX=$$HOME -o mm/mmzone.o\n"),
            "{text}"
        );
        let err = recorded_makefile(dir.path(), &["mm/vmscan.o".to_string()]).unwrap_err();
        assert!(matches!(err, KbuildError::NoCmdFile { .. }), "{err}");
        assert!(err.to_string().contains(".vmscan.o.cmd"), "{err}");
    }

    #[test]
    fn keys_change_with_every_input() {
        let c = Oid::from_str("29911c2a00000000000000000000000000000000").unwrap();
        let t = |s: &str| vec![s.to_string()];
        let base = key(c, "defconfig", &t("mm/mmzone.o"), "gcc 14");
        assert_eq!(base.len(), 16);
        assert_ne!(base, key(c, "tinyconfig", &t("mm/mmzone.o"), "gcc 14"));
        assert_ne!(base, key(c, "defconfig", &t("mm/vmscan.o"), "gcc 14"));
        assert_ne!(base, key(c, "defconfig", &t("mm/mmzone.o"), "gcc 15"));
    }
}
