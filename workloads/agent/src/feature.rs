//! The kernel features a workload may need ([`Feature`]): each is a
//! kconfig option the host checks the campaign's configuration for
//! before anything is built, and a file the guest reads back at boot
//! (`GuestFacts::features`), so that a workload the kernel cannot run is
//! refused by name rather than failing in the guest.

use serde::{Deserialize, Serialize};

/// One kernel feature, as a workload's spec names it (`needs:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Feature {
    /// Transparent huge pages.
    Thp,
    /// Kernel same-page merging.
    Ksm,
    /// hugetlbfs and `MAP_HUGETLB`.
    Hugetlb,
    /// NUMA, with the nodes `numa=fake=` makes.
    Numa,
    /// Page migration (`move_pages`, `migrate_pages`).
    Migration,
    /// Memory compaction.
    Compaction,
    /// `userfaultfd(2)`.
    Userfaultfd,
    /// The multi-generational LRU.
    LruGen,
    /// The memory controller of cgroup v2.
    Memcg,
    /// zswap.
    Zswap,
    /// zram.
    Zram,
    /// tmpfs and shared anonymous memory.
    Shmem,
    /// The RAM block device (brd).
    RamDisk,
    /// The ext2 file system (on a RAM disk).
    Ext2,
    /// DAMON and its sysfs interface.
    Damon,
    /// DAMON_RECLAIM, DAMON's proactive reclaim module.
    DamonReclaim,
    /// Recovery from memory errors: MADV_HWPOISON, MADV_SOFT_OFFLINE.
    MemoryFailure,
    /// The hwpoison injector's debugfs files (`unpoison-pfn`).
    HwpoisonInject,
    /// The kernel memory leak detector, on at boot.
    Kmemleak,
}

impl Feature {
    pub const ALL: [Feature; 19] = [
        Feature::Thp,
        Feature::Ksm,
        Feature::Hugetlb,
        Feature::Numa,
        Feature::Migration,
        Feature::Compaction,
        Feature::Userfaultfd,
        Feature::LruGen,
        Feature::Memcg,
        Feature::Zswap,
        Feature::Zram,
        Feature::Shmem,
        Feature::RamDisk,
        Feature::Ext2,
        Feature::Damon,
        Feature::DamonReclaim,
        Feature::MemoryFailure,
        Feature::HwpoisonInject,
        Feature::Kmemleak,
    ];

    /// The kconfig option that builds it.
    pub const fn config(self) -> &'static str {
        match self {
            Feature::Thp => "CONFIG_TRANSPARENT_HUGEPAGE",
            Feature::Ksm => "CONFIG_KSM",
            Feature::Hugetlb => "CONFIG_HUGETLBFS",
            Feature::Numa => "CONFIG_NUMA",
            Feature::Migration => "CONFIG_MIGRATION",
            Feature::Compaction => "CONFIG_COMPACTION",
            Feature::Userfaultfd => "CONFIG_USERFAULTFD",
            Feature::LruGen => "CONFIG_LRU_GEN",
            Feature::Memcg => "CONFIG_MEMCG",
            Feature::Zswap => "CONFIG_ZSWAP",
            Feature::Zram => "CONFIG_ZRAM",
            Feature::Shmem => "CONFIG_SHMEM",
            Feature::RamDisk => "CONFIG_BLK_DEV_RAM",
            Feature::Ext2 => "CONFIG_EXT2_FS",
            Feature::Damon => "CONFIG_DAMON_SYSFS",
            Feature::DamonReclaim => "CONFIG_DAMON_RECLAIM",
            Feature::MemoryFailure => "CONFIG_MEMORY_FAILURE",
            Feature::HwpoisonInject => "CONFIG_HWPOISON_INJECT",
            Feature::Kmemleak => "CONFIG_DEBUG_KMEMLEAK",
        }
    }

    /// Its name as specs write it.
    pub fn name(self) -> &'static str {
        match self {
            Feature::Thp => "thp",
            Feature::Ksm => "ksm",
            Feature::Hugetlb => "hugetlb",
            Feature::Numa => "numa",
            Feature::Migration => "migration",
            Feature::Compaction => "compaction",
            Feature::Userfaultfd => "userfaultfd",
            Feature::LruGen => "lru-gen",
            Feature::Memcg => "memcg",
            Feature::Zswap => "zswap",
            Feature::Zram => "zram",
            Feature::Shmem => "shmem",
            Feature::RamDisk => "ram-disk",
            Feature::Ext2 => "ext2",
            Feature::Damon => "damon",
            Feature::DamonReclaim => "damon-reclaim",
            Feature::MemoryFailure => "memory-failure",
            Feature::HwpoisonInject => "hwpoison-inject",
            Feature::Kmemleak => "kmemleak",
        }
    }
}

/// How a boot reads a feature back: a path that exists only when the
/// kernel has it, or a file holding a word only then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    Exists(&'static str),
    Holds(&'static str, &'static str),
}

impl Feature {
    /// Where a boot reads it back.
    pub const fn probe(self) -> Probe {
        match self {
            Feature::Thp => Probe::Exists("/sys/kernel/mm/transparent_hugepage/enabled"),
            Feature::Ksm => Probe::Exists("/sys/kernel/mm/ksm/run"),
            Feature::Hugetlb => Probe::Exists("/sys/kernel/mm/hugepages"),
            Feature::Numa => Probe::Exists("/sys/devices/system/node/node0"),
            // Only a kernel with MIGRATION counts migrations.
            Feature::Migration => Probe::Holds("/proc/vmstat", "pgmigrate_success"),
            Feature::Compaction => Probe::Exists("/proc/sys/vm/compact_memory"),
            Feature::Userfaultfd => Probe::Exists("/proc/sys/vm/unprivileged_userfaultfd"),
            Feature::LruGen => Probe::Exists("/sys/kernel/mm/lru_gen/enabled"),
            Feature::Memcg => Probe::Holds("/sys/fs/cgroup/cgroup.controllers", "memory"),
            Feature::Zswap => Probe::Exists("/sys/module/zswap/parameters/enabled"),
            Feature::Zram => Probe::Exists("/sys/class/zram-control"),
            // Without SHMEM, tmpfs is ramfs under tmpfs's name, and has no
            // huge page or size accounting of its own: shmem's vmstat
            // counter of THP allocations exists only with SHMEM and THP,
            // so the file system list is what a kernel of either says.
            Feature::Shmem => Probe::Holds("/proc/filesystems", "tmpfs"),
            Feature::RamDisk => Probe::Exists("/sys/module/brd"),
            Feature::Ext2 => Probe::Holds("/proc/filesystems", "ext2"),
            Feature::Damon => Probe::Exists("/sys/kernel/mm/damon/admin/kdamonds"),
            Feature::DamonReclaim => Probe::Exists("/sys/module/damon_reclaim/parameters/enabled"),
            Feature::MemoryFailure => Probe::Exists("/proc/sys/vm/memory_failure_recovery"),
            // debugfs, which the agent mounts at boot where the kernel has it.
            Feature::HwpoisonInject => Probe::Exists("/sys/kernel/debug/hwpoison/unpoison-pfn"),
            // Present but refusing writes (EPERM) when off at boot; the
            // workload's prepare says so.
            Feature::Kmemleak => Probe::Exists("/sys/kernel/debug/kmemleak"),
        }
    }

    /// Whether this kernel has it, read back (in the guest).
    pub fn present(self) -> bool {
        match self.probe() {
            Probe::Exists(path) => std::path::Path::new(path).exists(),
            Probe::Holds(path, word) => std::fs::read_to_string(path)
                .is_ok_and(|text| text.split_whitespace().any(|w| w == word)),
        }
    }

    /// Every feature this kernel has, read back (in the guest).
    pub fn read_back() -> Vec<Feature> {
        Feature::ALL.into_iter().filter(|f| f.present()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_feature_is_named_as_serde_names_it() {
        for f in Feature::ALL {
            let json = serde_json::to_string(&f).unwrap();
            assert_eq!(json, format!("\"{}\"", f.name()));
            assert!(f.config().starts_with("CONFIG_"));
        }
    }
}
