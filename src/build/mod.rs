//! Kernel builds: configure from a base target plus fragments, verify the
//! result, and build `bzImage` out of tree, one build directory per variant.
//!
//! A build directory is keyed by the commit, the configuration inputs and the
//! compiler, so a repeated run reuses it. A variant's first build starts from
//! the base's build directory, restored in place into the work directory
//! (only differing files are copied, see [`seed`]), so `make` recompiles only
//! what the series changed.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use git2::Oid;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::BaseConfig;
use crate::kconfig;
use crate::process::{self, Cmd};

mod artifact;
pub mod cache;
mod checkout;
mod error;
pub mod objects;
mod progress;
pub mod seed;
pub mod toolchain;

use artifact::STAMP;
pub use artifact::{Image, KernelArtifact};
use checkout::checkout_for_make;
pub use error::BuildError;
use error::io_err;
pub use progress::{BuildProgress, WaitingFor};
use progress::{compiled_in_log, watch_compiles};

/// A whole kernel build may take this long before it is killed: a cold
/// tinyconfig-based build took 15 min at -j2 here (domain notes), and a
/// defconfig one is about ten times the work; 4 h covers that on a slow,
/// shared runner and still ends a hung make well inside a CI day.
pub(crate) const BUILD_DEADLINE: Duration = Duration::from_secs(4 * 3600);
/// Configuration steps (`make tinyconfig`, `olddefconfig`) build only the
/// kconfig tools and take seconds; 10 minutes is generous on any host.
pub(crate) const CONFIG_DEADLINE: Duration = Duration::from_secs(600);
/// `gcc --version` and `ccache --version` print one line and exit in
/// milliseconds; 30 s allows for a cold page cache on a loaded host.
const VERSION_DEADLINE: Duration = Duration::from_secs(30);

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
    /// A finished build (a cache entry) to start from, so that `make`
    /// recompiles only what differs: variant A's build, for variant B.
    pub seed_from: Option<PathBuf>,
    /// The hash of the series this commit carries, for the manifest.
    pub series_sha256: Option<String>,
    /// Ignore the build cache and the work directory: build from nothing.
    pub fresh: bool,
}

/// The `System.map` built with a `bzImage` (the cost lane attributes
/// instructions to its symbols): kbuild writes it at the top of the build
/// directory, whose `arch/x86/boot/bzImage` the kernel is, and a cache entry
/// keeps the whole build directory. `None` if it is not there.
pub fn system_map(bzimage: &Path) -> Option<PathBuf> {
    let build_dir = bzimage.ancestors().nth(4)?;
    let map = build_dir.join("System.map");
    (bzimage.ends_with("arch/x86/boot/bzImage") && map.is_file()).then_some(map)
}

/// The kernel's CONFIG_HZ, from the `.config` at the top of the build
/// directory of `image` (its `arch/x86/boot/bzImage` or its `vmlinux`);
/// `None` where no build directory is at hand (a kernel from elsewhere).
pub fn kernel_hz(image: &Path) -> Option<u32> {
    let build_dir = if image.ends_with("arch/x86/boot/bzImage") {
        image.ancestors().nth(4)?
    } else if image.file_name()? == "vmlinux" {
        image.parent()?
    } else {
        return None;
    };
    let config = std::fs::read_to_string(build_dir.join(".config")).ok()?;
    config_hz(&crate::kconfig::parse(&config))
}

/// CONFIG_HZ of a parsed `.config`.
fn config_hz(values: &kconfig::Values) -> Option<u32> {
    values.get("HZ")?.parse().ok()
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
///
/// The series is covered by the commit: variant B's commit is the base plus
/// the series' patches, so a changed series is a different commit. A base
/// `.config` file enters by its content (`base_identity`, see
/// [`base_identity`]).
pub fn build_key(
    commit: Oid,
    base_identity: &str,
    fragments: &[(PathBuf, String)],
    compiler: &str,
) -> String {
    let mut h = Sha256::new();
    h.update(commit.as_bytes());
    h.update(base_identity.as_bytes());
    for (_, text) in fragments {
        h.update(b"\0fragment\0");
        h.update(text.as_bytes());
    }
    h.update(b"\0compiler\0");
    h.update(compiler.as_bytes());
    h.update(b"\0recipe\0");
    h.update(BUILD_RECIPE.as_bytes());
    hex::encode(h.finalize())[..16].to_string()
}

/// What identifies the base configuration in a cache key: the make target,
/// or the hash of a base `.config` file's content.
pub fn base_identity(base: &BaseConfig) -> Result<String, BuildError> {
    match base {
        BaseConfig::File(path) => Ok(format!("file:{}", tree_sha256(path)?)),
        other => Ok(other.make_target().unwrap_or_default().to_string()),
    }
}

/// Every kernel's build time, in `date`'s format (the kernel parses it for
/// an embedded initramfs's file times): the day the cost lane's guest clock
/// starts on (`vm::cost_args`).
pub const BUILD_TIMESTAMP: &str = "Wed Jan  1 00:00:00 UTC 2020";

/// What a cached build was made by beyond its inputs: bumped when the way
/// a kernel is built changes what the same inputs give, so that no cached
/// kernel of the old recipe is reused. 2: a fixed build time and number.
const BUILD_RECIPE: &str = "2";

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
        // The version string's time and build number too
        // (Documentation/kbuild/reproducible-builds.rst). The kernel mixes
        // that string into its randomness at boot, so without them kernels
        // built from the same sources minutes apart, or A and the B built
        // after it, start from different random state (slab freelists,
        // hash seeds) that no patch made.
        format!("KBUILD_BUILD_TIMESTAMP={BUILD_TIMESTAMP}"),
        "KBUILD_BUILD_VERSION=1".to_string(),
    ];
    if ccache {
        // One make variable whose value holds a space; no shell is involved.
        args.push("CC=ccache gcc".to_string());
    }
    args
}

/// The environment `make` runs ccache with: its depend mode, unless the
/// user chose a mode (`CCACHE_DEPEND` or `CCACHE_NODEPEND` set, as `set`
/// tells). On a miss, ccache's default mode runs the preprocessor to hash
/// the source and then compiles it, and with the kernel's headers that made
/// a cold build of the smoke kernel cost 740 CPU-seconds against 497
/// without ccache (make 367 s against 242 s on 2 cores). Depend mode hashes
/// the headers the compiler's own `-MMD` output lists instead: 262 s cold,
/// and a rebuild from the same ccache hit every object (ccache's manual,
/// "The depend mode"; measured in kconfigs/README.md).
pub fn ccache_env(
    ccache: bool,
    set: impl Fn(&str) -> bool,
) -> Option<(&'static str, &'static str)> {
    (ccache && !set("CCACHE_DEPEND") && !set("CCACHE_NODEPEND")).then_some(("CCACHE_DEPEND", "1"))
}

/// `make` with ccache's mode ([`ccache_env`]) in its environment.
fn make_cmd(deadline: std::time::Duration, ccache: bool) -> Cmd {
    let cmd = Cmd::new("make", deadline);
    match ccache_env(ccache, |name| std::env::var_os(name).is_some()) {
        Some((name, value)) => cmd.env(name, value),
        None => cmd,
    }
}

/// The compiler identity that enters the cache key.
pub async fn compiler_version() -> Result<String, BuildError> {
    let out = process::run(&Cmd::new("gcc", VERSION_DEADLINE).arg("--version"))
        .await
        .map_err(|e| BuildError::Compiler(Box::new(e)))?;
    Ok(out.stdout.lines().next().unwrap_or_default().to_string())
}

async fn have_ccache() -> bool {
    process::run(&Cmd::new("ccache", VERSION_DEADLINE).arg("--version"))
        .await
        .is_ok()
}

fn jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The marker in a work directory naming the build it holds.
const WORK_MARKER: &str = "patchbench-work.json";

/// What a work directory holds: the finished build of `key` at `commit`.
#[derive(Debug, Serialize, Deserialize)]
struct WorkState {
    key: String,
    commit: String,
    /// Objects the last full build of this configuration compiled: what
    /// the next full build is expected to compile (its progress total).
    #[serde(default)]
    full_build_objects: Option<u64>,
    /// Objects the last incremental build compiled, likewise.
    #[serde(default)]
    incremental_build_objects: Option<u64>,
}

/// Read a finished build's manifest, if its bzImage is still intact.
fn cached(dir: &Path) -> Result<Option<KernelArtifact>, BuildError> {
    let Ok(text) = std::fs::read_to_string(dir.join(STAMP)) else {
        return Ok(None);
    };
    let Ok(mut stamp) = serde_json::from_str::<KernelArtifact>(&text) else {
        return Ok(None);
    };
    if !stamp.bzimage.is_file() || tree_sha256(&stamp.bzimage)? != stamp.bzimage_sha256 {
        return Ok(None);
    }
    if let Some(v) = &stamp.vmlinux
        && (!v.path.is_file() || tree_sha256(&v.path)? != v.sha256)
    {
        return Ok(None);
    }
    // A build stamped before its HZ was recorded: read it now, so that the
    // kernel carries it wherever it is exported.
    if stamp.hz.is_none() {
        stamp.hz = kernel_hz(&stamp.bzimage);
    }
    Ok(Some(stamp))
}

/// Fail before building when the toolchain or the disk cannot do it.
fn preflight(builds_dir: &Path) -> Result<(), BuildError> {
    let missing = toolchain::missing();
    if !missing.is_empty() {
        return Err(BuildError::Toolchain(missing));
    }
    let dir = toolchain::existing_ancestor(builds_dir);
    let free = toolchain::free_space(&dir).map_err(io_err(&dir))?;
    if free < toolchain::MIN_FREE {
        return Err(BuildError::NoSpace { dir, free });
    }
    Ok(())
}

/// A kernel ready to boot, and the shared lock on its cache entry: while
/// the lease lives, no run (this one included) can evict the entry.
#[derive(Debug)]
pub struct Built {
    pub artifact: KernelArtifact,
    pub lease: cache::Lease,
}

/// Build (or reuse) the kernel for `spec`.
///
/// Every build of one configuration runs in the same work directory
/// (`work-<config>`), because some build products (objtool's) record their
/// absolute output path, and a build directory that moves is rebuilt from
/// scratch there. A finished build is then copied into its cache entry
/// (`<key>`), which is what later runs reuse and what seeds the next
/// incremental build. The repository at `spec.src` is checked out at
/// `spec.commit` only when a build is needed.
///
/// The checkout, the mtime pass over the tree and the walk over the built
/// objects run off the async thread, so Ctrl-C is seen during them.
///
/// Runs sharing the cache directory coordinate through the entry's lock
/// and the tree's (see [`cache`]): a run that finds another building the
/// same kernel waits and then reuses it; builds of one tree take turns.
///
/// `progress` hears when the build waits for another run's lock, and,
/// while `make` runs, how many objects it compiled, of those expected when
/// that is known: as many as the last build of the same kind (full or
/// incremental) of this configuration compiled.
pub async fn build(
    spec: &BuildSpec,
    progress: &(dyn Fn(BuildProgress) + Sync),
) -> Result<Built, BuildError> {
    let fragments = kconfig::read_fragments(&spec.fragments)
        .map_err(io_err(spec.fragments.first().map_or(Path::new("."), |p| p)))?;
    let compiler = compiler_version().await?;
    let base = base_identity(&spec.base_config)?;
    let key = build_key(spec.commit, &base, &fragments, &compiler);
    let entry = spec.builds_dir.join(&key);
    let entry_lock = cache::lock_path(&entry);
    let mut fresh = spec.fresh;
    let mut waited = false;
    // Reuse under a shared lock, or get the exclusive one to build.
    let writing = loop {
        if !fresh
            && let Some(lease) =
                cache::try_lock(&entry_lock, cache::Mode::Shared).map_err(io_err(&entry_lock))?
            && let Some(mut stamp) = cached(&entry)?
        {
            cache::touch(&entry).map_err(io_err(&entry_lock))?;
            stamp.reused = true;
            stamp.build_seconds = 0.0;
            stamp.objects_rebuilt = 0;
            stamp.rebuilt.clear();
            return Ok(Built {
                artifact: stamp,
                lease,
            });
        }
        if let Some(lease) =
            cache::try_lock(&entry_lock, cache::Mode::Exclusive).map_err(io_err(&entry_lock))?
        {
            if fresh {
                let _ = std::fs::remove_dir_all(&entry);
                fresh = false;
            }
            if cached(&entry)?.is_none() {
                break lease;
            }
            // Another run finished it meanwhile: reuse it, shared.
            continue;
        }
        if !waited {
            progress(BuildProgress::Waiting(WaitingFor::SameKernel));
            waited = true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    preflight(&spec.builds_dir)?;
    let tree_lock = crate::tree::lock_path(&spec.src);
    let tree_lease =
        match cache::try_lock(&tree_lock, cache::Mode::Exclusive).map_err(io_err(&tree_lock))? {
            Some(lease) => lease,
            None => {
                progress(BuildProgress::Waiting(WaitingFor::Tree));
                waited = true;
                cache::lock(&tree_lock, cache::Mode::Exclusive)
                    .await
                    .map_err(io_err(&tree_lock))?
            }
        };
    if waited {
        progress(BuildProgress::Building);
    }
    let config_key = build_key(Oid::ZERO_SHA1, &base, &fragments, &compiler);
    let work = spec.builds_dir.join(format!("work-{config_key}"));
    let marker = work.join(WORK_MARKER);
    let holds = std::fs::read_to_string(&marker)
        .ok()
        .and_then(|t| serde_json::from_str::<WorkState>(&t).ok());
    let full_build_objects = holds.as_ref().and_then(|h| h.full_build_objects);
    let incremental_build_objects = holds.as_ref().and_then(|h| h.incremental_build_objects);
    let seed = match &spec.seed_from {
        Some(dir) => {
            let _ = cache::touch(dir);
            cached(dir)?
        }
        None => None,
    };
    // From here until the build finishes, the work directory is in flux.
    let _ = std::fs::remove_file(&marker);
    let started_from = match (seed, holds) {
        (Some(seed), holds) => {
            if holds.as_ref().map(|h| &h.key) != Some(&seed.key) {
                // Whatever the work directory holds (another series' B, a
                // failed build, nothing), it becomes the seed's build.
                let (from, to) = (seed.build_dir.clone(), work.clone());
                crate::blocking::unblock(move || seed::restore(&from, &to))
                    .await
                    .map_err(io_err(&work))?;
            }
            Some((seed.key, seed.commit))
        }
        (None, Some(holds)) if work.is_dir() && !spec.fresh => Some((holds.key, holds.commit)),
        (None, _) => {
            let _ = std::fs::remove_dir_all(&work);
            None
        }
    };
    std::fs::create_dir_all(&work).map_err(io_err(&work))?;
    let _ = std::fs::remove_file(work.join(STAMP));
    let objects_from = started_from
        .as_ref()
        .and_then(|(_, commit)| Oid::from_str(commit).ok());
    let touched = {
        let (src, commit, dir) = (spec.src.clone(), spec.commit, work.clone());
        crate::blocking::unblock(move || checkout_for_make(&src, commit, objects_from, &dir))
            .await?
    };

    let log = work.join(artifact::BUILD_LOG);
    let _ = std::fs::remove_file(&log);
    let ccache = have_ccache().await;
    // The work directory holds a build of this same configuration (base,
    // fragments, compiler); unless the tree's Kconfig changed since, its
    // verified .config is what configuring again would give, and the two
    // `make`s that would rebuild kconfig's tools are skipped.
    let still_configured = started_from.is_some()
        && work.join(".config").is_file()
        && !touched.iter().any(|p| shapes_config(p));
    if !still_configured {
        configure(spec, &work, &fragments, &log, ccache).await?;
    }

    let expected = match &started_from {
        // A configuration never built here may still be a known one.
        None => full_build_objects.or_else(|| {
            std::fs::read_to_string(work.join(".config"))
                .ok()
                .and_then(|config| objects::known_full_build(&objects::config_digest(&config)))
        }),
        Some(_) => incremental_build_objects,
    };
    let log_from = std::fs::metadata(&log).map_or(0, |m| m.len());
    let started_wall = SystemTime::now();
    let started = Instant::now();
    let make = make_cmd(BUILD_DEADLINE, ccache)
        .args(make_args(&spec.src, &work, jobs(), ccache))
        .arg("bzImage")
        .log_to(&log);
    let made = tokio::select! {
        made = process::run(&make) => made,
        () = watch_compiles(&log, log_from, expected, progress) => unreachable!("the watch never ends"),
    };
    if let Err(source) = made {
        return Err(make_failed("bzImage", &log, &work, source));
    }
    let build_seconds = started.elapsed().as_secs_f64();
    let compiled = compiled_in_log(&log, log_from);
    progress(BuildProgress::Compiled {
        done: compiled,
        expected: expected.map(|e| e.max(compiled)),
    });
    let rebuilt = {
        let dir = work.clone();
        crate::blocking::unblock(move || objects::rebuilt_since(&dir, started_wall, &touched))
            .await
            .map_err(io_err(&work))?
    };
    let state = WorkState {
        key: key.clone(),
        commit: spec.commit.to_string(),
        full_build_objects: match started_from {
            None => Some(compiled),
            Some(_) => full_build_objects,
        },
        incremental_build_objects: match started_from {
            None => incremental_build_objects,
            Some(_) => Some(compiled),
        },
    };
    let state = serde_json::to_string(&state).expect("work state serializes");
    crate::fsutil::write_atomic(&marker, state.as_bytes()).map_err(io_err(&marker))?;

    // The entry the build started from shares every file this build did
    // not rewrite (a cache entry is never written again).
    let previous = started_from
        .as_ref()
        .map(|(from, _)| spec.builds_dir.join(from))
        .filter(|dir| *dir != entry && dir.join(STAMP).is_file());
    {
        let (from, to) = (work.clone(), entry.clone());
        crate::blocking::unblock(move || {
            seed::snapshot(&from, &to, previous.as_deref(), &[WORK_MARKER])
        })
        .await
        .map_err(io_err(&entry))?;
    }
    let bzimage = entry.join("arch/x86/boot/bzImage");
    let config_path = entry.join(".config");
    let config = std::fs::read_to_string(&config_path).map_err(io_err(&config_path))?;
    let values = kconfig::parse(&config);
    let vmlinux = match values.get("PVH").map(String::as_str) {
        Some("y") => {
            let path = entry.join("vmlinux");
            Some(Image {
                sha256: tree_sha256(&path)?,
                path,
            })
        }
        _ => None,
    };
    let artifact = KernelArtifact {
        commit: spec.commit.to_string(),
        build_dir: entry.clone(),
        bzimage_sha256: tree_sha256(&bzimage)?,
        vmlinux,
        config_sha256: tree_sha256(&config_path)?,
        hz: config_hz(&values),
        bzimage,
        compiler,
        key,
        series_sha256: spec.series_sha256.clone(),
        build_seconds,
        incremental: started_from.is_some(),
        objects_rebuilt: rebuilt.len(),
        rebuilt: if started_from.is_some() {
            rebuilt
        } else {
            Vec::new()
        },
        started_from: started_from.map(|(key, _)| key),
        reused: false,
    };
    let stamp_path = entry.join(STAMP);
    let stamp = serde_json::to_string_pretty(&artifact).expect("artifact serializes");
    crate::fsutil::write_atomic(&stamp_path, stamp.as_bytes()).map_err(io_err(&stamp_path))?;
    drop(tree_lease);
    cache::touch(&work).map_err(io_err(&work))?;
    // Written: hold it shared from now on. Between the two locks another
    // run may take it shared too, which is fine; an eviction would need
    // it exclusive and finds it fresh, so it is last in line.
    cache::touch(&entry).map_err(io_err(&entry_lock))?;
    drop(writing);
    let lease = cache::lock(&entry_lock, cache::Mode::Shared)
        .await
        .map_err(io_err(&entry_lock))?;
    Ok(Built { artifact, lease })
}

/// Find where each mismatched option is defined, and its dependencies,
/// in the tree's Kconfig files; or that none defines it.
fn explain(src: &Path, mismatches: &mut [kconfig::Mismatch]) {
    let kconfigs = walkdir::WalkDir::new(src)
        .into_iter()
        .filter_entry(|e| e.file_name() != ".git")
        // An unreadable directory only hides its Kconfig files.
        .flatten()
        .filter(|e| {
            !e.file_type().is_dir() && e.file_name().to_string_lossy().starts_with("Kconfig")
        });
    for entry in kconfigs {
        let path = entry.path();
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        for m in mismatches
            .iter_mut()
            .filter(|m| m.defined == kconfig::Defined::Unsearched)
        {
            if let Some(depends) = kconfig::depends_in(&text, &m.request.option) {
                m.defined = kconfig::Defined::In(kconfig::Definition {
                    file: path.strip_prefix(src).unwrap_or(path).to_owned(),
                    depends,
                });
            }
        }
    }
    for m in mismatches
        .iter_mut()
        .filter(|m| m.defined == kconfig::Defined::Unsearched)
    {
        m.defined = kconfig::Defined::Nowhere;
    }
}

/// Whether a change to this file of the tree can change the `.config` that
/// a base and fragments give: Kconfig files, kconfig itself and the scripts
/// Kconfig runs (compiler checks), the `configs/` fragments make targets
/// such as tinyconfig merge, and the top Makefile.
pub fn shapes_config(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("Kconfig"))
        || path.starts_with("scripts")
        || path.components().any(|c| c.as_os_str() == "configs")
        || path == Path::new("Makefile")
}

/// The error for a failed `make`: a full disk, or the first compiler error.
fn make_failed(target: &str, log: &Path, dir: &Path, source: process::ProcessError) -> BuildError {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    if toolchain::disk_full_in(&text) {
        return BuildError::DiskFull {
            target: target.into(),
            log: log.to_owned(),
            dir: dir.to_owned(),
        };
    }
    let first_error = match &source {
        process::ProcessError::Failed { .. } => {
            first_error(&text.lines().map(str::to_string).collect::<Vec<_>>())
        }
        _ => None,
    };
    BuildError::Make {
        target: target.into(),
        first_error,
        source: Box::new(source),
    }
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
) -> Result<(), BuildError> {
    let scratch = tempfile::TempDir::with_prefix_in(".config-", &spec.builds_dir)
        .map_err(io_err(&spec.builds_dir))?;
    let make = |target: &str| {
        make_cmd(CONFIG_DEADLINE, ccache)
            .args(make_args(&spec.src, scratch.path(), jobs(), ccache))
            .arg(target)
            .log_to(log)
    };
    let run_make = |target: &'static str| {
        let cmd = make(target);
        async move {
            process::run(&cmd)
                .await
                .map(|_| ())
                .map_err(|source| make_failed(target, log, &spec.builds_dir, source))
        }
    };
    let config_path = scratch.path().join(".config");
    match (&spec.base_config, spec.base_config.make_target()) {
        (_, Some(target)) => run_make(target).await?,
        (BaseConfig::File(file), None) => {
            std::fs::copy(file, &config_path).map_err(io_err(file))?;
        }
        (other, None) => unreachable!("{other} has a make target"),
    }
    let base = std::fs::read_to_string(&config_path).map_err(io_err(&config_path))?;
    let makefile = spec.src.join("Makefile");
    let version = std::fs::read_to_string(&makefile)
        .map_err(io_err(&makefile))
        .and_then(|text| {
            kconfig::tree_version(&text).ok_or(BuildError::TreeVersion {
                makefile: makefile.clone(),
            })
        })?;
    let kconfig::Requests {
        wanted: requests,
        skipped,
    } = kconfig::requests(fragments, version)?;
    if !skipped.is_empty() {
        // Noted in build.log (kept in the cache entry), between the output
        // of the base's make and olddefconfig's.
        use std::io::Write;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .and_then(|mut f| f.write_all(kconfig::left_out(&skipped, version).as_bytes()))
            .map_err(io_err(log))?;
    }
    std::fs::write(&config_path, kconfig::merge(&base, &requests)).map_err(io_err(&config_path))?;
    run_make("olddefconfig").await?;
    let merged = std::fs::read_to_string(&config_path).map_err(io_err(&config_path))?;
    let mut mismatches = kconfig::verify(&kconfig::parse(&merged), &requests);
    if !mismatches.is_empty() {
        let src = spec.src.clone();
        let mismatches = crate::blocking::unblock(move || {
            explain(&src, &mut mismatches);
            mismatches
        })
        .await;
        return Err(BuildError::ConfigMismatch(mismatches));
    }
    let target = dir.join(".config");
    if std::fs::read_to_string(&target).ok().as_deref() != Some(merged.as_str()) {
        std::fs::write(&target, merged).map_err(io_err(&target))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernels_hz_comes_from_its_build_directory_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let boot = dir.path().join("arch/x86/boot");
        std::fs::create_dir_all(&boot).unwrap();
        let bzimage = boot.join("bzImage");
        std::fs::write(&bzimage, "").unwrap();
        assert_eq!(kernel_hz(&bzimage), None, "no .config");
        std::fs::write(
            dir.path().join(".config"),
            "CONFIG_HZ_250=y\nCONFIG_HZ=250\n",
        )
        .unwrap();
        assert_eq!(kernel_hz(&bzimage), Some(250));
        assert_eq!(kernel_hz(&dir.path().join("vmlinux")), Some(250));
        // A kernel copied out of its build (`bzImage-A`): nothing to read.
        assert_eq!(kernel_hz(&dir.path().join("bzImage-A")), None);
    }

    #[test]
    fn the_kconfig_walk_finds_definitions_below_the_tree_but_not_in_git() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("mm")).unwrap();
        std::fs::create_dir_all(dir.path().join(".git/mm")).unwrap();
        let swap = "config SWAP\n\tbool \"swap\"\n\tdepends on BLOCK\n";
        std::fs::write(dir.path().join("mm/Kconfig"), swap).unwrap();
        std::fs::write(dir.path().join(".git/mm/Kconfig"), swap).unwrap();
        let request = |option: &str| kconfig::Mismatch {
            request: kconfig::Request {
                option: option.into(),
                value: "y".into(),
                fragment: "f.config".into(),
                versions: kconfig::Versions::default(),
            },
            got: "n".into(),
            defined: kconfig::Defined::Unsearched,
        };
        let mut mismatches = [request("SWAP"), request("NOWHERE")];
        explain(dir.path(), &mut mismatches);
        let kconfig::Defined::In(found) = &mismatches[0].defined else {
            panic!("SWAP is defined: {:?}", mismatches[0].defined);
        };
        assert_eq!(found.file, Path::new("mm/Kconfig"));
        assert_eq!(found.depends, ["depends on BLOCK"]);
        assert_eq!(mismatches[1].defined, kconfig::Defined::Nowhere);
    }

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
        let k = build_key(c1, "tinyconfig", &f, "gcc 12");
        assert_eq!(k, build_key(c1, "tinyconfig", &f, "gcc 12"));
        assert_ne!(k, build_key(c2, "tinyconfig", &f, "gcc 12"));
        assert_ne!(k, build_key(c1, "tinyconfig", &g, "gcc 12"));
        assert_ne!(k, build_key(c1, "tinyconfig", &f, "gcc 13"));
        assert_ne!(k, build_key(c1, "defconfig", &f, "gcc 12"));
    }

    #[test]
    fn only_what_kconfig_reads_forces_a_new_configuration() {
        for path in [
            "mm/Kconfig",
            "arch/x86/Kconfig.cpu",
            "scripts/kconfig/conf.c",
            "scripts/Kconfig.include",
            "kernel/configs/tiny.config",
            "arch/x86/configs/tiny.config",
            "Makefile",
        ] {
            assert!(shapes_config(Path::new(path)), "{path}");
        }
        for path in ["mm/zswap.c", "include/linux/memcontrol.h", "mm/Makefile"] {
            assert!(!shapes_config(Path::new(path)), "{path}");
        }
    }

    #[test]
    fn ccache_runs_in_depend_mode_unless_the_user_chose() {
        let none = |_: &str| false;
        assert_eq!(ccache_env(true, none), Some(("CCACHE_DEPEND", "1")));
        assert_eq!(ccache_env(false, none), None);
        assert_eq!(ccache_env(true, |n| n == "CCACHE_NODEPEND"), None);
        assert_eq!(ccache_env(true, |n| n == "CCACHE_DEPEND"), None);
    }

    #[test]
    fn make_args_pass_ccache_as_one_variable() {
        let args = make_args(Path::new("/src"), Path::new("/out"), 2, true);
        assert_eq!(&args[..4], ["-C", "/src", "O=/out", "-j2"]);
        assert!(args.contains(&"CC=ccache gcc".to_string()));
        // A kernel's version string does not say when or how often it was
        // built: the same sources give the same bytes, and the same
        // randomness at boot.
        assert!(args.contains(&"KBUILD_BUILD_VERSION=1".to_string()));
        assert!(args.contains(&format!("KBUILD_BUILD_TIMESTAMP={BUILD_TIMESTAMP}")));
        assert!(
            !make_args(Path::new("/s"), Path::new("/o"), 1, false)
                .iter()
                .any(|a| a.starts_with("CC="))
        );
    }

    #[test]
    fn the_system_map_is_found_at_the_top_of_the_bzimages_build_directory() {
        let dir = tempfile::tempdir().unwrap();
        let boot = dir.path().join("key/arch/x86/boot");
        std::fs::create_dir_all(&boot).unwrap();
        let bzimage = boot.join("bzImage");
        std::fs::write(&bzimage, b"kernel").unwrap();
        assert_eq!(system_map(&bzimage), None, "no map yet");
        std::fs::write(dir.path().join("key/System.map"), b"").unwrap();
        assert_eq!(
            system_map(&bzimage),
            Some(dir.path().join("key/System.map"))
        );
        // A kernel elsewhere has no build directory to look in.
        let loose = dir.path().join("key/bzImage");
        std::fs::write(&loose, b"kernel").unwrap();
        assert_eq!(system_map(&loose), None);
    }
}
