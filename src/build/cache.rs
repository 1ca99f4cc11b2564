//! The build cache on disk: its entries, their locks, their last use, and
//! eviction to a size budget.
//!
//! Under `<cache>/builds/<tree>/` each finished kernel is an entry named by
//! its key, and each configuration has a work directory (`work-<key>`)
//! where builds run. Beside every entry is `<name>.lock`:
//! - a run that uses a kernel holds a shared `flock` on it until the run
//!   ends (a [`Lease`]), so no other run can evict it meanwhile;
//! - writing an entry, or evicting it, takes the lock exclusively;
//! - the lock file's mtime is the entry's last use.
//!
//! Builds of one tree share its working directory (checked out per build)
//! and its work directories, so a build holds the tree's lock
//! ([`crate::tree::lock_path`]) exclusively from checkout to the copy into
//! its entry; evicting a work directory takes it too. Waits for a lock poll every
//! 200 ms on the async side, so Ctrl-C stays responsive.
//!
//! The budget counts kernel builds only (`builds/`: entries and work
//! directories). Imported source trees (2.2 GB for Debian's 6.12) are
//! listed but not counted or evicted: a run cannot do without its tree,
//! and one tree serves every kernel built from it.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use bytesize::ByteSize;

use super::objects;

/// The default budget: a GitHub repository's caches share 10 GB, and an
/// imported tree (about 2.2 GB) sits beside the builds.
pub const DEFAULT_BUDGET: ByteSize = ByteSize::gib(8);

pub use crate::fsutil::{Lease, Mode, lock, try_lock};

/// The lock file of the entry directory `entry`.
pub fn lock_path(entry: &Path) -> PathBuf {
    let name = entry.file_name().unwrap_or_default().to_string_lossy();
    entry.with_file_name(format!("{name}.lock"))
}

/// Record that `entry` was used now (its lock file's mtime).
pub fn touch(entry: &Path) -> std::io::Result<()> {
    crate::fsutil::open_lock(&lock_path(entry))?.set_modified(SystemTime::now())
}

/// What kind of thing a cache entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A finished kernel: its manifest's commit, and its series' hash for B.
    Kernel {
        commit: String,
        series_sha256: Option<String>,
    },
    /// A configuration's work directory, where builds run.
    Work,
    /// A directory the cache does not recognise (a build killed before its
    /// entry was complete): counted, and evicted first among equals.
    Partial,
    /// An imported or cloned source tree: listed, not counted.
    Tree,
    /// A kernel-build workload's prepared tree: listed, not counted.
    KernelBuildTree,
}

impl Kind {
    /// Whether the budget counts it and eviction may remove it.
    pub fn counted(&self) -> bool {
        matches!(self, Kind::Kernel { .. } | Kind::Work | Kind::Partial)
    }

    pub fn describe(&self) -> String {
        match self {
            Kind::Kernel {
                commit,
                series_sha256: None,
            } => format!("kernel of commit {}", short(commit)),
            Kind::Kernel {
                commit,
                series_sha256: Some(series),
            } => format!(
                "kernel of commit {} (base + series {})",
                short(commit),
                short(series)
            ),
            Kind::Work => "work directory (incremental builds run here)".into(),
            Kind::Partial => "incomplete build (no manifest)".into(),
            Kind::Tree => "source tree (not counted)".into(),
            Kind::KernelBuildTree => "kernel-build workload tree (not counted)".into(),
        }
    }
}

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

/// One entry of the cache.
#[derive(Debug, Clone)]
pub struct Entry {
    pub path: PathBuf,
    pub kind: Kind,
    pub size: ByteSize,
    /// When a run last used it (the lock file's mtime, else the entry's).
    pub last_use: SystemTime,
    /// Whether a run holds it now.
    pub in_use: bool,
}

/// Disk usage of a directory tree: allocated blocks, symlinks not followed.
pub fn disk_usage(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.blocks() * 512)
        .sum()
}

fn mtime(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn kind_of(entry: &Path) -> Kind {
    let name = entry.file_name().unwrap_or_default().to_string_lossy();
    if name.starts_with("work-") {
        return Kind::Work;
    }
    let stamp = std::fs::read_to_string(entry.join(super::artifact::STAMP))
        .ok()
        .and_then(|t| serde_json::from_str::<super::artifact::KernelArtifact>(&t).ok());
    match stamp {
        Some(s) => Kind::Kernel {
            commit: s.commit,
            series_sha256: s.series_sha256,
        },
        None => Kind::Partial,
    }
}

/// Whether a run holds the lock of `entry` (or of its tree, for a work
/// directory).
fn busy(entry: &Path, kind: &Kind) -> bool {
    !matches!(
        try_lock(&guarding_lock(entry, kind), Mode::Exclusive),
        Ok(Some(_))
    )
}

/// The lock to hold exclusively before removing `entry`: its own, or for a
/// work directory its tree's (`<cache>/builds/<tree>/work-*` belongs to
/// `<cache>/trees/<tree>`).
fn guarding_lock(entry: &Path, kind: &Kind) -> PathBuf {
    match kind {
        Kind::Work => {
            let tree_dir = entry.parent().unwrap_or(entry);
            let cache = tree_dir.parent().and_then(Path::parent).unwrap_or(tree_dir);
            crate::tree::lock_path(
                &cache
                    .join("trees")
                    .join(tree_dir.file_name().unwrap_or_default()),
            )
        }
        _ => lock_path(entry),
    }
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = read
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    dirs.sort();
    dirs
}

/// Every entry under `cache`: kernels and work directories, then source
/// trees and kernel-build trees. Sizes are measured now.
pub fn entries(cache: &Path) -> Vec<Entry> {
    entries_measuring(cache, true)
}

/// [`entries`], measuring the source and kernel-build trees' sizes only
/// with `trees`: the budget does not count them, and walking their 180,000
/// files took most of an eviction pass's time (2 of 4 s on a 7 GB cache).
fn entries_measuring(cache: &Path, trees: bool) -> Vec<Entry> {
    let mut found = Vec::new();
    for tree in subdirs(&cache.join("builds")) {
        for entry in subdirs(&tree) {
            // `cp` stages a copy as `<key>.copying`: part of a build.
            let kind = if entry.extension().is_some_and(|x| x == "copying") {
                Kind::Partial
            } else {
                kind_of(&entry)
            };
            let last_use = mtime(&lock_path(&entry))
                .or_else(|| mtime(&entry))
                .unwrap_or(SystemTime::UNIX_EPOCH);
            found.push(Entry {
                size: ByteSize(disk_usage(&entry)),
                in_use: busy(&entry, &kind),
                path: entry,
                kind,
                last_use,
            });
        }
    }
    for (dir, kind) in [("trees", Kind::Tree), ("kbuild", Kind::KernelBuildTree)] {
        for entry in subdirs(&cache.join(dir)) {
            found.push(Entry {
                size: ByteSize(if trees { disk_usage(&entry) } else { 0 }),
                last_use: mtime(&entry).unwrap_or(SystemTime::UNIX_EPOCH),
                in_use: false,
                path: entry,
                kind: kind.clone(),
            });
        }
    }
    found
}

/// What an eviction pass did.
#[derive(Debug, Clone, Default)]
pub struct Eviction {
    pub evicted: Vec<Entry>,
    /// What the budget counts, after the pass.
    pub total: ByteSize,
    /// Still over budget because what is left is in use.
    pub over: bool,
}

/// Remove whole entries, least recently used first, until what the budget
/// counts fits in `budget`. An entry a run holds (this one included) is
/// never removed: its lock is taken exclusively before removal, and
/// skipped when that fails.
pub fn evict(cache: &Path, budget: ByteSize) -> std::io::Result<Eviction> {
    let mut counted: Vec<Entry> = entries_measuring(cache, false)
        .into_iter()
        .filter(|e| e.kind.counted())
        .collect();
    let mut total: u64 = counted.iter().map(|e| e.size.0).sum();
    counted.sort_by_key(|e| e.last_use);
    let mut evicted = Vec::new();
    for entry in counted {
        if total <= budget.0 {
            break;
        }
        let lock = guarding_lock(&entry.path, &entry.kind);
        // Held, or its lock cannot even be opened: leave it.
        let Ok(Some(_held)) = try_lock(&lock, Mode::Exclusive) else {
            continue;
        };
        let removed = remove_entry(&entry.path)?;
        total = total.saturating_sub(entry.size.0);
        if removed {
            evicted.push(entry);
        }
    }
    Ok(Eviction {
        evicted,
        total: ByteSize(total),
        over: total > budget.0,
    })
}

/// A finished kernel of the cache that a full build made: what a line of
/// `kconfigs/objects.tsv` needs to know of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FullBuild {
    /// The cache entry.
    pub entry: PathBuf,
    /// Its `.config`'s [`objects::config_digest`].
    pub config_digest: String,
    /// The objects its `make` compiled: the CC and AS lines of its log.
    pub objects: u64,
    /// The kernel release its `.config` names.
    pub kernel_release: Option<String>,
    /// The compiler that built it (its manifest's).
    pub compiler: String,
    /// When the build ended (its log's last write).
    pub built: SystemTime,
}

/// Every finished kernel under `cache` that a full build made, by tree and
/// entry name. An incremental build is left out (its log counts what it
/// rebuilt), and so is an entry without its `.config` or log. A full build
/// runs in a work directory emptied first, and its log holds what
/// configuring printed (host programs only: HOSTCC, never CC) and then the
/// whole `make bzImage`: the count a first build on a new machine reaches.
pub fn full_builds(cache: &Path) -> Vec<FullBuild> {
    let mut found = Vec::new();
    for tree in subdirs(&cache.join("builds")) {
        for entry in subdirs(&tree) {
            if let Some(build) = full_build(&entry) {
                found.push(build);
            }
        }
    }
    found
}

fn full_build(entry: &Path) -> Option<FullBuild> {
    let stamp = std::fs::read_to_string(entry.join(super::artifact::STAMP)).ok()?;
    let stamp: super::artifact::KernelArtifact = serde_json::from_str(&stamp).ok()?;
    if stamp.incremental {
        return None;
    }
    let config = std::fs::read_to_string(entry.join(".config")).ok()?;
    let log_path = entry.join(super::artifact::BUILD_LOG);
    let log = std::fs::read(&log_path).ok()?;
    Some(FullBuild {
        entry: entry.to_owned(),
        config_digest: objects::config_digest(&config),
        objects: objects::count_compiled(&String::from_utf8_lossy(&log)),
        kernel_release: objects::config_kernel_release(&config).map(str::to_owned),
        compiler: stamp.compiler,
        built: mtime(&log_path).unwrap_or(SystemTime::UNIX_EPOCH),
    })
}

/// Remove an entry whose guarding lock the caller holds exclusively.
/// `Ok(false)` when it is already gone: another run sharing the cache
/// listed it too, and evicted it between our listing and our lock (seen in
/// a clean-clone CI run: two builds started together, both over budget).
fn remove_entry(path: &Path) -> std::io::Result<bool> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_entry_another_run_evicted_first_is_no_error() {
        let cache = tempfile::tempdir().unwrap();
        let entry = kernel(&cache.path().join("builds/linux-1"), "aaaa", 4, 0);
        assert!(remove_entry(&entry).unwrap());
        assert!(!entry.exists());
        // The other run got there first: nothing to remove, and no error.
        assert!(!remove_entry(&entry).unwrap());
    }

    fn kernel(dir: &Path, name: &str, kib: usize, age_secs: u64) -> PathBuf {
        let entry = dir.join(name);
        std::fs::create_dir_all(entry.join("arch/x86/boot")).unwrap();
        std::fs::write(entry.join("arch/x86/boot/bzImage"), vec![7u8; kib * 1024]).unwrap();
        let stamp = serde_json::json!({
            "commit": format!("{name}000000000000"), "build_dir": entry, "bzimage": "x",
            "bzimage_sha256": "x", "config_sha256": "x", "compiler": "gcc", "key": name,
            "build_seconds": 0.0, "incremental": false, "reused": false, "objects_rebuilt": 0,
        });
        std::fs::write(entry.join(super::super::artifact::STAMP), stamp.to_string()).unwrap();
        touch(&entry).unwrap();
        let when = SystemTime::now() - Duration::from_secs(age_secs);
        crate::fsutil::open_lock(&lock_path(&entry))
            .unwrap()
            .set_modified(when)
            .unwrap();
        entry
    }

    #[test]
    fn the_least_recently_used_go_first_and_entries_in_use_stay() {
        let cache = tempfile::tempdir().unwrap();
        let tree = cache.path().join("builds/linux-1");
        let oldest = kernel(&tree, "aaaa", 400, 300);
        let in_use = kernel(&tree, "bbbb", 400, 200);
        let newer = kernel(&tree, "cccc", 400, 100);
        let newest = kernel(&tree, "dddd", 400, 0);
        std::fs::create_dir_all(cache.path().join("trees/linux-1")).unwrap();
        std::fs::write(cache.path().join("trees/linux-1/big"), vec![1u8; 4 << 20]).unwrap();
        let _lease = try_lock(&lock_path(&in_use), Mode::Shared)
            .unwrap()
            .unwrap();

        let listed = entries(cache.path());
        assert_eq!(listed.len(), 5);
        let entry = |p: &Path| listed.iter().find(|e| e.path == p).unwrap().clone();
        assert!(entry(&in_use).in_use && !entry(&oldest).in_use);
        assert_eq!(
            entry(&newest).kind,
            Kind::Kernel {
                commit: "dddd000000000000".into(),
                series_sha256: None
            }
        );
        let one = entry(&newest).size.0;
        assert!(one >= 400 * 1024, "{one}");

        // Room for two: the oldest goes, the one in use is skipped, the
        // next oldest goes. The tree is not counted.
        let done = evict(cache.path(), ByteSize(2 * one + one / 2)).unwrap();
        let gone: Vec<&Path> = done.evicted.iter().map(|e| e.path.as_path()).collect();
        assert_eq!(gone, [oldest.as_path(), newer.as_path()]);
        assert!(!oldest.exists() && !newer.exists());
        assert!(in_use.exists() && newest.exists());
        assert!(!done.over);
        assert!(cache.path().join("trees/linux-1/big").exists());

        // Nothing can go that is in use: still over, and says so.
        let done = evict(cache.path(), ByteSize(one / 2)).unwrap();
        assert_eq!(done.evicted.len(), 1);
        assert!(done.over && in_use.exists() && !newest.exists());
    }

    #[test]
    fn full_builds_are_found_with_their_digest_and_count() {
        let cache = tempfile::tempdir().unwrap();
        let tree = cache.path().join("builds/linux-1");
        let config = "#\n# Linux/x86 6.12.118 Kernel Configuration\n#\n\
                      CONFIG_CC_VERSION_TEXT=\"gcc 12\"\nCONFIG_MMU=y\n";
        let log = "  HOSTCC  scripts/basic/fixdep\n  CC      init/main.o\n\
                   \x20 AS      arch/x86/kernel/head_64.o\n  LD      vmlinux.o\n";
        let with = |entry: &Path, incremental: bool, log: Option<&str>| {
            let path = entry.join(super::super::artifact::STAMP);
            let mut stamp: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            stamp["incremental"] = incremental.into();
            std::fs::write(&path, stamp.to_string()).unwrap();
            std::fs::write(entry.join(".config"), config).unwrap();
            if let Some(log) = log {
                std::fs::write(entry.join(super::super::artifact::BUILD_LOG), log).unwrap();
            }
        };
        let full = kernel(&tree, "aaaa", 4, 0);
        with(&full, false, Some(log));
        with(&kernel(&tree, "bbbb", 4, 0), true, Some(log));
        with(&kernel(&tree, "cccc", 4, 0), false, None);
        std::fs::create_dir_all(tree.join("work-dddd")).unwrap();
        let found = full_builds(cache.path());
        assert_eq!(found.len(), 1, "{found:?}");
        let build = &found[0];
        assert_eq!(build.entry, full);
        assert_eq!(build.objects, 2);
        assert_eq!(build.config_digest, objects::config_digest(config));
        assert_eq!(build.kernel_release.as_deref(), Some("6.12.118"));
        assert_eq!(build.compiler, "gcc");
    }

    #[tokio::test]
    async fn a_shared_lease_keeps_an_exclusive_lock_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.lock");
        let shared = lock(&path, Mode::Shared).await.unwrap();
        let also = try_lock(&path, Mode::Shared).unwrap();
        assert!(also.is_some(), "shared leases coexist");
        assert!(try_lock(&path, Mode::Exclusive).unwrap().is_none());
        drop((shared, also));
        assert!(try_lock(&path, Mode::Exclusive).unwrap().is_some());
    }
}
