//! `mm-tune`: the mm tunables written as a tuning profile writes them and
//! put back, as tuned(8)'s profiles (throughput-performance sets
//! vm.dirty_ratio, vm.dirty_background_ratio, vm.swappiness and THP;
//! virtual-guest the dirty ratios and swappiness) and sysctl.d files do at
//! boot or on a profile switch. Each write runs its handler: new zone
//! watermarks and lowmem reserves (`setup_per_zone_wmarks`), new per-CPU
//! page list sizes, the dirty limits' ratelimit, the overcommit limit,
//! THP's, khugepaged's, KSM's and the multi-gen LRU's sysfs stores,
//! zswap's parameters (a new compressor makes a new pool) and each backing
//! device's writeback limits. What they cost matters only when a profile
//! is applied; this benchmark is here so that a series changing these
//! handlers has a workload that runs them (`mm-stats` reads the same
//! files).
//!
//! The task, before its window, reads each tunable of [`TUNABLES`] and,
//! for every backing device, of [`BDI_TUNABLES`]; one
//! the kernel lacks (a file that does not read) is left out and named on
//! stderr. Each operation writes each present tunable's values in order
//! (a profile's value, then the one read, or an order that puts both of a
//! pair back: writing vm.dirty_bytes zeroes vm.dirty_ratio, and writing
//! vm.dirty_ratio then zeroes vm.dirty_bytes) and then checks that every
//! tunable whose last write is its own value reads what it read before. One task: the tunables are global.
//! Spec: `workloads/mm-tune.yaml`.

use std::io;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::mm_stats::expand;
use crate::bench::sys::{read_file, write_file};
use crate::bench::{Bench, GuestSize, Load, ParamError, Task, check_one_task};
use crate::kind::Kind;
use crate::memory::SwapBackend;
use crate::sysfs::setting;

/// Written as the value the tunable read at task start.
const BACK: &str = "";
/// Every backing device's directory.
const BDIS: &str = "/sys/class/bdi/*";

/// Each tunable, and the values each operation writes to it in order
/// (`BACK`: the value it read at task start).
const TUNABLES: &[(&str, &[&str])] = &[
    // THP first: switching it (start_stop_khugepaged) raises
    // min_free_kbytes to what huge pages want, which the write of
    // vm.min_free_kbytes below then puts back.
    (
        "/sys/kernel/mm/transparent_hugepage/enabled",
        &["always", BACK],
    ),
    (
        "/sys/kernel/mm/transparent_hugepage/defrag",
        &["defer", BACK],
    ),
    (
        "/sys/kernel/mm/transparent_hugepage/use_zero_page",
        &["0", BACK],
    ),
    (
        "/sys/kernel/mm/transparent_hugepage/shmem_enabled",
        &["within_size", BACK],
    ),
    (
        "/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled",
        &["inherit", BACK],
    ),
    (
        "/sys/kernel/mm/transparent_hugepage/hugepages-64kB/shmem_enabled",
        &["inherit", BACK],
    ),
    (
        "/sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan",
        &["1024", BACK],
    ),
    (
        "/sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs",
        &["5000", BACK],
    ),
    (
        "/sys/kernel/mm/transparent_hugepage/khugepaged/alloc_sleep_millisecs",
        &["30000", BACK],
    ),
    (
        "/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none",
        &["255", BACK],
    ),
    (
        "/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_swap",
        &["32", BACK],
    ),
    (
        "/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_shared",
        &["128", BACK],
    ),
    (
        "/sys/kernel/mm/transparent_hugepage/khugepaged/defrag",
        &["0", BACK],
    ),
    ("/proc/sys/vm/min_free_kbytes", &["8192", BACK]),
    ("/proc/sys/vm/watermark_scale_factor", &["20", BACK]),
    ("/proc/sys/vm/watermark_boost_factor", &["0", BACK]),
    ("/proc/sys/vm/lowmem_reserve_ratio", &[BACK]),
    ("/proc/sys/vm/percpu_pagelist_high_fraction", &["8", BACK]),
    ("/proc/sys/vm/dirty_bytes", &["67108864"]),
    ("/proc/sys/vm/dirty_ratio", &["30", BACK]),
    ("/proc/sys/vm/dirty_background_bytes", &["33554432"]),
    ("/proc/sys/vm/dirty_background_ratio", &["5", BACK]),
    ("/proc/sys/vm/dirty_expire_centisecs", &["1500", BACK]),
    ("/proc/sys/vm/dirty_writeback_centisecs", &["1000", BACK]),
    ("/proc/sys/vm/dirtytime_expire_seconds", &["3600", BACK]),
    ("/proc/sys/vm/overcommit_kbytes", &["1048576"]),
    ("/proc/sys/vm/overcommit_ratio", &["60", BACK]),
    ("/proc/sys/vm/overcommit_memory", &["1", BACK]),
    ("/proc/sys/vm/swappiness", &["10", BACK]),
    ("/proc/sys/vm/vfs_cache_pressure", &["50", BACK]),
    ("/proc/sys/vm/page-cluster", &["0", BACK]),
    ("/proc/sys/vm/compaction_proactiveness", &["0", BACK]),
    ("/proc/sys/vm/extfrag_threshold", &["600", BACK]),
    ("/proc/sys/vm/compact_unevictable_allowed", &["0", BACK]),
    ("/proc/sys/vm/stat_interval", &["2", BACK]),
    ("/proc/sys/vm/numa_stat", &["0", BACK]),
    ("/proc/sys/vm/zone_reclaim_mode", &["1", BACK]),
    ("/proc/sys/vm/min_unmapped_ratio", &["2", BACK]),
    ("/proc/sys/vm/min_slab_ratio", &["6", BACK]),
    ("/proc/sys/vm/nr_overcommit_hugepages", &["4", BACK]),
    ("/proc/sys/vm/memory_failure_early_kill", &["1", BACK]),
    ("/sys/kernel/mm/ksm/pages_to_scan", &["200", BACK]),
    ("/sys/kernel/mm/ksm/sleep_millisecs", &["50", BACK]),
    ("/sys/kernel/mm/ksm/max_page_sharing", &["128", BACK]),
    ("/sys/kernel/mm/ksm/use_zero_pages", &["1", BACK]),
    (
        "/sys/kernel/mm/ksm/stable_node_chains_prune_millisecs",
        &["1000", BACK],
    ),
    ("/sys/kernel/mm/ksm/smart_scan", &["0", BACK]),
    ("/sys/kernel/mm/lru_gen/enabled", &["n", BACK]),
    ("/sys/kernel/mm/lru_gen/min_ttl_ms", &["1000", BACK]),
    (
        "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_overcommit_hugepages",
        &["2", BACK],
    ),
    ("/sys/kernel/mm/numa/demotion_enabled", &["1", BACK]),
    (
        "/sys/kernel/mm/mempolicy/weighted_interleave/node0",
        &["2", BACK],
    ), // zswap's module parameters, as a profile turns zswap on and picks its
    // compressor: a new compressor makes a new pool.
    (
        "/sys/module/zswap/parameters/compressor",
        &["lzo-rle", BACK],
    ),
    (
        "/sys/module/zswap/parameters/max_pool_percent",
        &["10", BACK],
    ),
    (
        "/sys/module/zswap/parameters/accept_threshold_percent",
        &["80", BACK],
    ),
    (
        "/sys/module/zswap/parameters/shrinker_enabled",
        &["Y", BACK],
    ),
    ("/sys/module/zswap/parameters/enabled", &["N", BACK]),
];

/// Each backing device's writeback tunables (`/sys/class/bdi/<dev>/`), as
/// [`TUNABLES`]: min_bytes and max_bytes set their ratios, which the
/// ratio's own write then puts back.
const BDI_TUNABLES: &[(&str, &[&str])] = &[
    ("read_ahead_kb", &["512", BACK]),
    ("strict_limit", &["1", BACK]),
    ("min_ratio_fine", &["10000", BACK]),
    ("max_ratio_fine", &["500000", BACK]),
    ("min_bytes", &["1048576"]),
    ("min_ratio", &["1", BACK]),
    ("max_bytes", &["67108864"]),
    ("max_ratio", &["50", BACK]),
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MmTune {
    pub tasks: u32,
    pub ops: u32,
}

impl Default for MmTune {
    fn default() -> Self {
        MmTune { tasks: 1, ops: 16 }
    }
}

impl Kind for MmTune {
    /// Its writes include zswap's parameters and vm.swappiness, which act
    /// on a swap device.
    fn swap_backend(&self) -> SwapBackend {
        SwapBackend::Disk
    }

    fn describe(&self) -> String {
        format!("{} tunables", TUNABLES.len())
    }
}

impl Bench for MmTune {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, _guest: GuestSize) -> Result<(), ParamError> {
        check_one_task(self.tasks, "the tunables are global")
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        let mut wanted: Vec<(PathBuf, &'static [&'static str])> = TUNABLES
            .iter()
            .map(|&(path, values)| (PathBuf::from(path), values))
            .collect();
        for bdi in expand(BDIS)? {
            wanted.extend(
                BDI_TUNABLES
                    .iter()
                    .map(|&(name, values)| (bdi.join(name), values)),
            );
        }
        let mut present = Vec::new();
        for (path, values) in wanted {
            match read_file(&path) {
                Ok(text) => present.push(Tunable {
                    read: setting(&text),
                    path,
                    values,
                }),
                Err(e) => eprintln!("mm-tune: leaving out {}: {e}", path.display()),
            }
        }
        if present.is_empty() {
            return Err(io::Error::other("no tunable of mm-tune's list reads here"));
        }
        Ok(Box::new(Profile { present }))
    }
}

struct Tunable {
    path: PathBuf,
    /// What it read at task start, which each operation leaves it at.
    read: String,
    values: &'static [&'static str],
}

struct Profile {
    present: Vec<Tunable>,
}

impl Task for Profile {
    fn op(&mut self) -> io::Result<()> {
        for t in &self.present {
            for &value in t.values {
                let value = if value == BACK {
                    t.read.as_str()
                } else {
                    value
                };
                write_file(&t.path, value)?;
            }
        }
        // A tunable put back by its pair is not checked: a device's
        // min_bytes and max_bytes read its ratio of a dirty limit that
        // follows free memory.
        for t in self
            .present
            .iter()
            .filter(|t| t.values.last() == Some(&BACK))
        {
            let now = setting(&read_file(&t.path)?);
            if now != t.read {
                return Err(io::Error::other(format!(
                    "{} reads {now:?} after the profile was put back, where it read {:?}",
                    t.path.display(),
                    t.read
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_choice_file_reads_as_its_bracketed_choice() {
        assert_eq!(setting("always [madvise] never"), "madvise");
        assert_eq!(setting("  60\n"), "60");
        assert_eq!(setting("256\t256\t32\t0\t0"), "256\t256\t32\t0\t0");
    }

    #[test]
    fn every_tunable_is_put_back_by_its_own_writes_or_its_pair() {
        // A tunable written without BACK last is one of a pair whose
        // partner, written next, zeroes it again.
        for list in [TUNABLES, BDI_TUNABLES] {
            for (i, &(path, values)) in list.iter().enumerate() {
                if values.last() == Some(&BACK) {
                    continue;
                }
                let (next, next_values) = list[i + 1];
                assert!(
                    next_values.last() == Some(&BACK),
                    "{path} is followed by {next}, which is not put back"
                );
            }
        }
    }
}
