//! Kernel builds: configure from a base target plus fragments, verify the
//! result, and build `bzImage` out of tree, one build directory per variant.
//!
//! A build directory is keyed by the commit, the configuration inputs and the
//! compiler, so a repeated run reuses it. A variant's first build starts from
//! a copy of the base's build directory, so `make` recompiles only what the
//! series changed.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use git2::Oid;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::BaseConfig;
use crate::kconfig;
use crate::process::{self, Cmd};

/// A whole kernel build may take this long before it is killed.
const BUILD_DEADLINE: Duration = Duration::from_secs(4 * 3600);
/// Configuration steps are quick.
const CONFIG_DEADLINE: Duration = Duration::from_secs(600);
/// The file in a build directory that records a finished build.
const STAMP: &str = "patchbench-build.json";

/// What a build needs.
#[derive(Debug, Clone)]
pub struct BuildSpec {
    /// The source tree (the cached repository's working directory).
    pub src: PathBuf,
    pub commit: Oid,
    pub base_config: BaseConfig,
    pub fragments: Vec<PathBuf>,
    /// The directory that holds every build directory.
    pub builds_dir: PathBuf,
    /// A build directory to start from when this one does not exist yet.
    pub seed_from: Option<PathBuf>,
}

/// A built kernel and how it came to be.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KernelArtifact {
    pub commit: String,
    pub build_dir: PathBuf,
    pub bzimage: PathBuf,
    pub bzimage_sha256: String,
    pub config_sha256: String,
    pub compiler: String,
    pub key: String,
    /// Seconds spent in `make` (0 for a reused build).
    pub build_seconds: f64,
    /// Started from another variant's build directory.
    pub incremental: bool,
    /// Reused as it was, with no `make` run.
    pub reused: bool,
    /// Object files written by this build.
    pub objects_rebuilt: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("the kernel configuration lost options the fragments asked for:\n  {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n  "))]
    ConfigMismatch(Vec<kconfig::Mismatch>),
    #[error("`make {target}` failed{}", first_error.as_ref().map(|e| format!(" at {e}")).unwrap_or_default())]
    Make {
        target: String,
        first_error: Option<String>,
        #[source]
        source: Box<process::ProcessError>,
    },
    #[error("i/o on {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("copying build directory {} failed", from.display())]
    Seed {
        from: PathBuf,
        #[source]
        source: Box<process::ProcessError>,
    },
    #[error("cannot determine the compiler version")]
    Compiler(#[source] Box<process::ProcessError>),
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> BuildError {
    let path = path.to_owned();
    move |source| BuildError::Io { path, source }
}

/// The first compiler or linker error in build output: `file:line:col: error: ...`.
pub fn first_error(lines: &[String]) -> Option<String> {
    lines
        .iter()
        .find(|l| l.contains(": error: ") || l.contains(": fatal error: "))
        .or_else(|| lines.iter().find(|l| l.contains("undefined reference to")))
        .map(|l| l.trim().to_string())
}

/// The cache key of a build: commit, configuration inputs and compiler.
pub fn build_key(
    commit: Oid,
    base: BaseConfig,
    fragments: &[(PathBuf, String)],
    compiler: &str,
) -> String {
    let mut h = Sha256::new();
    h.update(commit.as_bytes());
    h.update(base.make_target().as_bytes());
    for (_, text) in fragments {
        h.update(b"\0fragment\0");
        h.update(text.as_bytes());
    }
    h.update(b"\0compiler\0");
    h.update(compiler.as_bytes());
    hex::encode(h.finalize())[..16].to_string()
}

/// `make` arguments shared by every step: the source, the build directory,
/// and settings that make builds reproducible (and so cache-friendly).
pub fn make_args(src: &Path, out: &Path, jobs: usize, ccache: bool) -> Vec<String> {
    let mut args = vec![
        "-C".to_string(),
        src.display().to_string(),
        format!("O={}", out.display()),
        format!("-j{jobs}"),
        // Fixed identity strings: the same sources give the same bzImage.
        "KBUILD_BUILD_USER=patchbench".to_string(),
        "KBUILD_BUILD_HOST=patchbench".to_string(),
    ];
    if ccache {
        // One make variable whose value holds a space; no shell is involved.
        args.push("CC=ccache gcc".to_string());
    }
    args
}

/// The compiler identity that enters the cache key.
pub async fn compiler_version() -> Result<String, BuildError> {
    let out = process::run(&Cmd::new("gcc").arg("--version"))
        .await
        .map_err(|e| BuildError::Compiler(Box::new(e)))?;
    Ok(out.stdout.lines().next().unwrap_or_default().to_string())
}

async fn have_ccache() -> bool {
    process::run(&Cmd::new("ccache").arg("--version"))
        .await
        .is_ok()
}

fn jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Build (or reuse) the kernel for `spec`. The source tree must already be
/// checked out at `spec.commit` unless the build is reused; `checkout` is
/// called only when a build is needed.
pub async fn build(
    spec: &BuildSpec,
    checkout: impl FnOnce() -> anyhow::Result<()>,
) -> anyhow::Result<KernelArtifact> {
    let fragments = kconfig::read_fragments(&spec.fragments)
        .map_err(io_err(spec.fragments.first().map_or(Path::new("."), |p| p)))?;
    let compiler = compiler_version().await?;
    let key = build_key(spec.commit, spec.base_config, &fragments, &compiler);
    let dir = spec.builds_dir.join(&key);
    let stamp_path = dir.join(STAMP);
    if let Ok(text) = std::fs::read_to_string(&stamp_path)
        && let Ok(mut stamp) = serde_json::from_str::<KernelArtifact>(&text)
        && stamp.bzimage.is_file()
        && tree_sha256(&stamp.bzimage)? == stamp.bzimage_sha256
    {
        stamp.reused = true;
        stamp.build_seconds = 0.0;
        stamp.objects_rebuilt = 0;
        return Ok(stamp);
    }
    checkout()?;
    let mut incremental = false;
    if !dir.exists() {
        if let Some(seed) = spec.seed_from.as_ref().filter(|p| p.is_dir()) {
            let staging = spec.builds_dir.join(format!(".{key}.copy"));
            let _ = std::fs::remove_dir_all(&staging);
            // -a keeps mtimes, so make sees the copied objects as up to date.
            let cp = Cmd::new("cp")
                .arg("-a")
                .arg("--reflink=auto")
                .arg(seed)
                .arg(&staging);
            process::run(&cp).await.map_err(|source| BuildError::Seed {
                from: seed.clone(),
                source: Box::new(source),
            })?;
            let _ = std::fs::remove_file(staging.join(STAMP));
            std::fs::rename(&staging, &dir).map_err(io_err(&dir))?;
            incremental = true;
        } else {
            std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        }
    }
    let log = dir.join("build.log");
    let ccache = have_ccache().await;
    configure(spec, &dir, &fragments, &log, ccache).await?;

    let started_wall = SystemTime::now();
    let started = Instant::now();
    let make = Cmd::new("make")
        .args(make_args(&spec.src, &dir, jobs(), ccache))
        .arg("bzImage")
        .log_to(&log)
        .deadline(BUILD_DEADLINE);
    process::run(&make).await.map_err(|source| {
        let first_error = match &source {
            process::ProcessError::Failed { .. } => std::fs::read_to_string(&log)
                .ok()
                .and_then(|t| first_error(&t.lines().map(str::to_string).collect::<Vec<_>>())),
            _ => None,
        };
        BuildError::Make {
            target: "bzImage".into(),
            first_error,
            source: Box::new(source),
        }
    })?;
    let build_seconds = started.elapsed().as_secs_f64();
    let objects_rebuilt = count_newer_objects(&dir, started_wall).map_err(io_err(&dir))?;
    let bzimage = dir.join("arch/x86/boot/bzImage");
    let config_path = dir.join(".config");
    let artifact = KernelArtifact {
        commit: spec.commit.to_string(),
        build_dir: dir.clone(),
        bzimage_sha256: tree_sha256(&bzimage)?,
        config_sha256: tree_sha256(&config_path)?,
        bzimage,
        compiler,
        key,
        build_seconds,
        incremental,
        reused: false,
        objects_rebuilt,
    };
    let stamp = serde_json::to_string_pretty(&artifact).expect("artifact serializes");
    crate::fsutil::write_atomic(&stamp_path, stamp.as_bytes()).map_err(io_err(&stamp_path))?;
    Ok(artifact)
}

fn tree_sha256(path: &Path) -> Result<String, BuildError> {
    crate::tree::sha256_file(path).map_err(io_err(path))
}

/// Make the build directory's `.config` the merge of base and fragments, and
/// fail before building if any requested option did not survive. The
/// configuration is produced in a scratch directory and copied in only if it
/// differs, so an unchanged configuration never triggers a rebuild.
async fn configure(
    spec: &BuildSpec,
    dir: &Path,
    fragments: &[(PathBuf, String)],
    log: &Path,
    ccache: bool,
) -> anyhow::Result<()> {
    let scratch = tempfile::TempDir::with_prefix_in(".config-", &spec.builds_dir)
        .map_err(io_err(&spec.builds_dir))?;
    let make = |target: &str| {
        Cmd::new("make")
            .args(make_args(&spec.src, scratch.path(), jobs(), ccache))
            .arg(target)
            .log_to(log)
            .deadline(CONFIG_DEADLINE)
    };
    let run_make = |target: &'static str| {
        let cmd = make(target);
        async move {
            process::run(&cmd)
                .await
                .map(|_| ())
                .map_err(|source| BuildError::Make {
                    target: target.into(),
                    first_error: None,
                    source: Box::new(source),
                })
        }
    };
    run_make(spec.base_config.make_target()).await?;
    let config_path = scratch.path().join(".config");
    let base = std::fs::read_to_string(&config_path).map_err(io_err(&config_path))?;
    let requests = kconfig::requests(fragments);
    std::fs::write(&config_path, kconfig::merge(&base, &requests)).map_err(io_err(&config_path))?;
    run_make("olddefconfig").await?;
    let merged = std::fs::read_to_string(&config_path).map_err(io_err(&config_path))?;
    let mismatches = kconfig::verify(&kconfig::parse(&merged), &requests);
    if !mismatches.is_empty() {
        return Err(BuildError::ConfigMismatch(mismatches).into());
    }
    let target = dir.join(".config");
    if std::fs::read_to_string(&target).ok().as_deref() != Some(merged.as_str()) {
        std::fs::write(&target, merged).map_err(io_err(&target))?;
    }
    Ok(())
}

/// Object files under `dir` modified at or after `since`.
fn count_newer_objects(dir: &Path, since: SystemTime) -> std::io::Result<usize> {
    crate::fsutil::count_files(
        dir,
        |_| true,
        |e| Ok(e.path().extension().is_some_and(|x| x == "o") && e.metadata()?.modified()? >= since),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_compiler_error_is_found() {
        let lines: Vec<String> = [
            "  CC      mm/memcontrol.o",
            "mm/memcontrol.c:4540:9: error: 'nr' undeclared (first use in this function)",
            "mm/memcontrol.c:4541:9: error: another",
            "make[3]: *** [scripts/Makefile.build:229: mm/memcontrol.o] Error 1",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            first_error(&lines).as_deref(),
            Some("mm/memcontrol.c:4540:9: error: 'nr' undeclared (first use in this function)")
        );
        assert_eq!(first_error(&lines[..1]), None);
    }

    #[test]
    fn keys_change_with_commit_fragments_and_compiler() {
        let c1 = Oid::from_str("1111111111111111111111111111111111111111").unwrap();
        let c2 = Oid::from_str("2222222222222222222222222222222222222222").unwrap();
        let f = vec![(PathBuf::from("a"), "CONFIG_SWAP=y\n".to_string())];
        let g = vec![(PathBuf::from("a"), "CONFIG_SWAP=n\n".to_string())];
        let k = build_key(c1, BaseConfig::Tinyconfig, &f, "gcc 12");
        assert_eq!(k, build_key(c1, BaseConfig::Tinyconfig, &f, "gcc 12"));
        assert_ne!(k, build_key(c2, BaseConfig::Tinyconfig, &f, "gcc 12"));
        assert_ne!(k, build_key(c1, BaseConfig::Tinyconfig, &g, "gcc 12"));
        assert_ne!(k, build_key(c1, BaseConfig::Tinyconfig, &f, "gcc 13"));
        assert_ne!(k, build_key(c1, BaseConfig::Defconfig, &f, "gcc 12"));
    }

    #[test]
    fn make_args_pass_ccache_as_one_variable() {
        let args = make_args(Path::new("/src"), Path::new("/out"), 2, true);
        assert_eq!(&args[..4], ["-C", "/src", "O=/out", "-j2"]);
        assert!(args.contains(&"CC=ccache gcc".to_string()));
        assert!(
            !make_args(Path::new("/s"), Path::new("/o"), 1, false)
                .iter()
                .any(|a| a.starts_with("CC="))
        );
    }
}
