//! `mm-stats`: the memory-management statistics that monitoring reads,
//! read as it reads them. mmtests runs monitors beside every benchmark
//! (`proc-vmstat`, `proc-meminfo`, `proc-zoneinfo`, `proc-buddyinfo`,
//! `proc-pagetypeinfo`, `proc-slabinfo`, `numa-meminfo`); procps's `free`
//! and `vmstat`, `numastat`, `smem` and systemd-oomd read the rest. Each
//! of those is a show function in mm/ (vmstat.c's walks of every zone and
//! free list, slab_common.c's slabinfo, memcontrol.c's memory.stat,
//! swapfile.c's /proc/swaps, the THP, KSM and hugetlb sysfs attributes,
//! the multi-gen LRU's debugfs walk, the fragmentation indices of
//! debugfs's extfrag that `extfrag_threshold` is set against, and the
//! other process memory ps(1) reads through `access_remote_vm()`: its
//! command line and environment) that otherwise runs in no window.
//!
//! At task start, untimed: the list of files, [`FILES`] and every
//! readable regular file of [`DIRS`] (the per-node files of every node,
//! the mm sysfs attributes, the memory tiers, the kmalloc caches' SLUB
//! attributes that the tree's tools/mm/slabinfo reads, `/proc/sys/vm` but
//! for [`LEFT_OUT`]), and the memory controller's files of the task's own
//! cgroup ([`CGROUP_PREFIXES`]), each checked readable once; a file that
//! does not open, or reads as an error, is left out and named on stderr.
//! Each operation reads each file of the list whole, in order, into one
//! buffer (as `cat` would, 4 KiB a read). Spec:
//! `workloads/mm-stats.yaml`.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::bench::{Bench, GuestSize, Load, ParamError, Task, TaskCgroups};
use crate::kind::Kind;
use crate::memory::SwapBackend;

/// Files read every operation where the kernel has them.
pub const FILES: &[&str] = &[
    "/proc/meminfo",
    "/proc/vmstat",
    "/proc/zoneinfo",
    "/proc/buddyinfo",
    "/proc/pagetypeinfo",
    "/proc/slabinfo",
    "/proc/vmallocinfo",
    "/proc/swaps",
    "/proc/self/status",
    "/proc/self/statm",
    "/proc/self/smaps",
    "/proc/self/smaps_rollup",
    "/proc/self/numa_maps",
    "/proc/pressure/memory",
    "/proc/self/cmdline",
    "/proc/self/environ",
    "/sys/kernel/debug/lru_gen",
    "/sys/kernel/debug/lru_gen_full",
    "/sys/kernel/debug/extfrag/unusable_index",
    "/sys/kernel/debug/extfrag/extfrag_index",
    "/sys/kernel/debug/zswap/stored_pages",
    "/sys/kernel/debug/zswap/pool_total_size",
];

/// Directories whose readable regular files are read every operation,
/// `*` standing for every entry that matches the rest.
pub const DIRS: &[&str] = &[
    "/sys/devices/system/node/node*",
    "/sys/kernel/mm/transparent_hugepage",
    "/sys/kernel/mm/transparent_hugepage/khugepaged",
    "/sys/kernel/mm/transparent_hugepage/hugepages-*",
    "/sys/kernel/mm/transparent_hugepage/hugepages-*/stats",
    "/sys/kernel/mm/swap",
    "/sys/kernel/mm/numa",
    "/sys/kernel/mm/mempolicy/weighted_interleave",
    "/sys/kernel/mm/ksm",
    "/sys/kernel/mm/hugepages/hugepages-*",
    "/sys/devices/system/node/node*/hugepages/hugepages-*",
    "/sys/class/bdi/*",
    "/sys/kernel/debug/bdi/*",
    "/sys/module/zswap/parameters",
    "/sys/kernel/mm/lru_gen",
    "/sys/kernel/slab/kmalloc-*",
    "/sys/devices/virtual/memory_tiering/memory_tier*",
    "/proc/sys/vm",
];

/// Files of [`DIRS`] left out: reading `stat_refresh` folds every CPU's
/// counters in work queued on each CPU, which no monitor asks for.
pub const LEFT_OUT: &[&str] = &["/proc/sys/vm/stat_refresh"];

/// The memory controller's files of the task's own cgroup, by prefix:
/// what systemd-oomd, senpai and `systemd-cgtop` read.
pub const CGROUP_PREFIXES: &[&str] = &["memory.", "swap.", "zswap."];

/// One `read(2)`'s size, as `cat` reads.
const CHUNK: usize = 4096;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MmStats {
    pub tasks: u32,
    pub ops: u32,
}

impl Default for MmStats {
    fn default() -> Self {
        MmStats { tasks: 1, ops: 16 }
    }
}

impl Kind for MmStats {
    /// Its files (/proc/swaps, the swap and zswap sysfs attributes) read a
    /// swap device's state, as on a machine that has one.
    fn swap_backend(&self) -> SwapBackend {
        SwapBackend::Disk
    }

    fn describe(&self) -> String {
        "procfs, sysfs and memcg mm statistics".to_string()
    }
}

impl Bench for MmStats {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, _guest: GuestSize) -> Result<(), ParamError> {
        Ok(())
    }

    /// A cgroup of its own, so that the task reads a memory cgroup's
    /// files (the root has few of them).
    fn task_cgroups(&self) -> Option<TaskCgroups> {
        Some(TaskCgroups { memory_max: None })
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        let mut files: Vec<PathBuf> = FILES.iter().map(PathBuf::from).collect();
        for dir in DIRS {
            for dir in expand(dir)? {
                files.extend(
                    regular_files(&dir)?
                        .into_iter()
                        .filter(|f| !LEFT_OUT.iter().any(|l| f == Path::new(l))),
                );
            }
        }
        let cgroup = crate::bench::sys::own_cgroup()?;
        files.extend(regular_files(&cgroup)?.into_iter().filter(|f| {
            let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
            CGROUP_PREFIXES.iter().any(|p| name.starts_with(p))
        }));
        let mut reader = Reader {
            files: Vec::new(),
            buf: vec![0; CHUNK],
        };
        for file in files {
            match read_whole(&file, &mut reader.buf) {
                Ok(_) => reader.files.push(file),
                Err(e) => eprintln!("mm-stats: leaving out {}: {e}", file.display()),
            }
        }
        if reader.files.is_empty() {
            return Err(io::Error::other("mm-stats: no statistics file is readable"));
        }
        Ok(Box::new(reader))
    }
}

/// The directories `pattern` names: each component ending in `*` stands
/// for every directory entry it prefixes (a symbolic link to a directory
/// included), in name order; none where nothing matches.
pub fn expand(pattern: &str) -> io::Result<Vec<PathBuf>> {
    let mut found = vec![PathBuf::from("/")];
    for part in Path::new(pattern).components().skip(1) {
        let part = part.as_os_str().to_string_lossy();
        let mut next = Vec::new();
        for dir in &found {
            match part.strip_suffix('*') {
                None => {
                    let path = dir.join(part.as_ref());
                    if path.is_dir() {
                        next.push(path);
                    }
                }
                Some(prefix) => {
                    let Ok(entries) = std::fs::read_dir(dir) else {
                        continue;
                    };
                    let mut matched = Vec::new();
                    for entry in entries {
                        let entry = entry?;
                        if entry.file_name().to_string_lossy().starts_with(prefix)
                            && entry.path().is_dir()
                        {
                            matched.push(entry.path());
                        }
                    }
                    matched.sort();
                    next.extend(matched);
                }
            }
        }
        found = next;
    }
    Ok(found)
}

/// The regular files directly in `dir`, sorted.
fn regular_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            files.push(entry.path());
        }
    }
    files.sort();
    Ok(files)
}

struct Reader {
    files: Vec<PathBuf>,
    buf: Vec<u8>,
}

/// Reads `path` whole into `buf`, a read at a time; its length.
fn read_whole(path: &Path, buf: &mut [u8]) -> io::Result<usize> {
    let mut file = File::open(path)?;
    let mut total = 0;
    loop {
        match file.read(buf)? {
            0 => return Ok(total),
            n => total += n,
        }
    }
}

impl Task for Reader {
    fn op(&mut self) -> io::Result<()> {
        for path in &self.files {
            read_whole(path, &mut self.buf).map_err(|e| {
                io::Error::new(e.kind(), format!("reading {}: {e}", path.display()))
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_expands_a_star_in_any_component() {
        let dir = tempfile::tempdir().unwrap();
        for d in ["n0/h-1/s", "n0/h-2/s", "n1/h-1/s", "n1/x/s", "m0/h-1/s"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        std::fs::write(dir.path().join("n0/h-3"), "a file").unwrap();
        let pattern = format!("{}/n*/h-*/s", dir.path().display());
        let got: Vec<String> = expand(&pattern)
            .unwrap()
            .iter()
            .map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string())
            .collect();
        assert_eq!(got, ["n0/h-1/s", "n0/h-2/s", "n1/h-1/s"]);
        assert!(
            expand(&format!("{}/none*", dir.path().display()))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_star_matches_every_directory_with_the_prefix() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["node0", "node1", "nodes.txt", "other"] {
            let path = dir.path().join(name);
            if name.ends_with(".txt") {
                std::fs::write(path, "x").unwrap();
            } else {
                std::fs::create_dir(path).unwrap();
            }
        }
        std::fs::write(dir.path().join("node1/meminfo"), "MemTotal: 1 kB\n").unwrap();
        let pattern = format!("{}/node*", dir.path().display());
        let found = expand(&pattern).unwrap();
        assert_eq!(found, [dir.path().join("node0"), dir.path().join("node1")]);
        assert_eq!(
            regular_files(&found[1]).unwrap(),
            [dir.path().join("node1/meminfo")]
        );
        assert!(expand("/no/such/dir*").unwrap().is_empty());
    }

    #[test]
    fn an_operation_reads_every_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'a'; 3 * CHUNK + 5]).unwrap();
        let mut reader = Reader {
            files: vec![big.clone()],
            buf: vec![0; CHUNK],
        };
        assert_eq!(read_whole(&big, &mut reader.buf).unwrap(), 3 * CHUNK + 5);
        reader.op().unwrap();
        std::fs::remove_file(&big).unwrap();
        let e = reader.op().unwrap_err().to_string();
        assert!(e.contains("big"), "{e}");
    }
}
