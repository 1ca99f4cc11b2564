//! The workload kinds, one module each: a kind's parameters as the wire
//! carries them ([`crate::Workload`]'s payload) and what both the host and
//! the guest ask of it ([`Kind`]: its swap device, its zram size, the
//! functions it profiles, its one-line description). The agent binary runs
//! a kind through its own `Run` trait; the host reads its campaign section
//! through `patchbench::workload::kinds`.
//!
//! [`with_kinds!`](crate::with_kinds) is the one list of kinds: the wire's
//! [`crate::Workload`] enum and every dispatch over it are generated from
//! it, on this side, in the agent binary and on the host, so no match over
//! kinds is written by hand and none has a wildcard arm. Adding a kind is a
//! line there, a module here, its run function in the binary, its
//! campaign section on the host, and its spec, `workloads/<name>.yaml`
//! (ARCHITECTURE.md, "Adding a workload kind").

use crate::kind::{Kind, PerCallCost};
use crate::memory::SwapBackend;

pub mod brk;
pub mod compaction;
pub mod cpu_hotplug;
pub mod damon;
pub mod damon_tune;
pub mod drop_caches;
pub mod exec;
pub mod file_io;
pub mod fork_cow;
pub mod fork_exec;
pub mod global_reclaim;
pub mod guest_fault;
pub mod hugetlb_fault;
pub mod hugetlb_gigantic;
pub mod hugetlb_pool;
pub mod hugetlb_vma;
pub mod hwpoison;
pub mod kernel_boot;
pub mod kernel_build;
pub mod kmemleak_scan;
pub mod ksm_merge;
pub mod madvise;
pub mod malloc_free;
pub mod memcg_charge;
pub mod memcg_lifecycle;
pub mod memcg_reclaim;
pub mod mempolicy;
pub mod mlock;
pub mod mm_selftest;
pub mod mm_stats;
pub mod mm_tune;
pub mod mmap_lock_trace;
pub mod mmap_munmap;
pub mod mprotect;
pub mod mremap;
pub mod numa_migrate;
pub mod oom_kill;
pub mod page_alloc;
pub mod page_cache;
pub mod page_fault_anon;
pub mod page_fault_file;
pub mod page_fault_shmem;
pub mod process_mrelease;
pub mod reclaim_refault;
pub mod rstat_flush;
pub mod slab_churn;
pub mod slab_debug;
pub mod stress_ng;
pub mod swap;
pub mod thp_collapse;
pub mod thp_fragmented;
pub mod tmpfs_ops;
pub mod uffd_ioctls;
pub mod userfaultfd;
pub mod writeback;
pub mod zram_device;
pub mod zswap_pageout;

/// The one list of workload kinds. Each entry is the wire's variant, the
/// kind's name (the wire's `kind` tag, the campaign's `kind:`, the spec's
/// file name), its module (under `kinds` here and under the host's
/// `workload::kinds`) and type, and whether `workloads/<name>.yaml` specs
/// it (`spec`) or it measures nothing (`unspecified`: a kind for testing
/// the host's failure handling). The macro calls `$callback!` with that
/// list; [`crate::Workload`], the agent's run dispatch and the host's
/// campaign section are each such a callback.
///
/// `exec` (`patchbench boot -- CMD`) is not listed: no campaign names it,
/// so the host has no campaign section for it; [`crate::Workload`] adds it.
#[macro_export]
macro_rules! with_kinds {
    ($callback:ident) => {
        $callback! {
            ZswapPageout("zswap-pageout", zswap_pageout::ZswapPageout, spec),
            RstatFlush("rstat-flush", rstat_flush::RstatFlush, spec),
            ReclaimRefault("reclaim-refault", reclaim_refault::ReclaimRefault, spec),
            KernelBuild("kernel-build", kernel_build::KernelBuild, spec),
            GuestFault("guest-fault", guest_fault::GuestFault, unspecified),
            PageFaultAnon("page-fault-anon", page_fault_anon::PageFaultAnon, bench),
            PageFaultFile("page-fault-file", page_fault_file::PageFaultFile, bench),
            PageFaultShmem("page-fault-shmem", page_fault_shmem::PageFaultShmem, bench),
            MmapMunmap("mmap-munmap", mmap_munmap::MmapMunmap, bench),
            MallocFree("malloc-free", malloc_free::MallocFree, bench),
            Mprotect("mprotect", mprotect::Mprotect, bench),
            Mremap("mremap", mremap::Mremap, bench),
            Madvise("madvise", madvise::Madvise, bench),
            Brk("brk", brk::Brk, bench),
            ForkCow("fork-cow", fork_cow::ForkCow, bench),
            ForkExec("fork-exec", fork_exec::ForkExec, bench),
            ThpFragmented("thp-fragmented", thp_fragmented::ThpFragmented, bench),
            ThpCollapse("thp-collapse", thp_collapse::ThpCollapse, bench),
            Compaction("compaction", compaction::Compaction, bench),
            HugetlbFault("hugetlb-fault", hugetlb_fault::HugetlbFault, bench),
            KsmMerge("ksm-merge", ksm_merge::KsmMerge, bench),
            NumaMigrate("numa-migrate", numa_migrate::NumaMigrate, bench),
            PageCache("page-cache", page_cache::PageCache, bench),
            Mlock("mlock", mlock::Mlock, bench),
            MemcgCharge("memcg-charge", memcg_charge::MemcgCharge, bench),
            SlabChurn("slab-churn", slab_churn::SlabChurn, bench),
            PageAlloc("page-alloc", page_alloc::PageAlloc, bench),
            OomKill("oom-kill", oom_kill::OomKill, bench),
            Userfaultfd("userfaultfd", userfaultfd::Userfaultfd, bench),
            MemcgReclaim("memcg-reclaim", memcg_reclaim::MemcgReclaim, bench),
            Swap("swap", swap::Swap, bench),
            StressNg("stress-ng", stress_ng::StressNg, spec),
            MmSelftest("mm-selftest", mm_selftest::MmSelftest, spec),
            Damon("damon", damon::Damon, bench),
            Hwpoison("hwpoison", hwpoison::Hwpoison, bench),
            Writeback("writeback", writeback::Writeback, bench),
            MmStats("mm-stats", mm_stats::MmStats, bench),
            HugetlbPool("hugetlb-pool", hugetlb_pool::HugetlbPool, bench),
            ZramDevice("zram-device", zram_device::ZramDevice, bench),
            Mempolicy("mempolicy", mempolicy::Mempolicy, bench),
            MemcgLifecycle("memcg-lifecycle", memcg_lifecycle::MemcgLifecycle, bench),
            DropCaches("drop-caches", drop_caches::DropCaches, bench),
            HugetlbVma("hugetlb-vma", hugetlb_vma::HugetlbVma, bench),
            DamonTune("damon-tune", damon_tune::DamonTune, bench),
            FileIo("file-io", file_io::FileIo, bench),
            MmTune("mm-tune", mm_tune::MmTune, bench),
            UffdIoctls("uffd-ioctls", uffd_ioctls::UffdIoctls, bench),
            CpuHotplug("cpu-hotplug", cpu_hotplug::CpuHotplug, bench),
            GlobalReclaim("global-reclaim", global_reclaim::GlobalReclaim, bench),
            HugetlbGigantic("hugetlb-gigantic", hugetlb_gigantic::HugetlbGigantic, bench),
            SlabDebug("slab-debug", slab_debug::SlabDebug, bench),
            TmpfsOps("tmpfs-ops", tmpfs_ops::TmpfsOps, bench),
            MmapLockTrace("mmap-lock-trace", mmap_lock_trace::MmapLockTrace, bench),
            ProcessMrelease("process-mrelease", process_mrelease::ProcessMrelease, bench),
            KmemleakScan("kmemleak-scan", kmemleak_scan::KmemleakScan, bench),
            KernelBoot("kernel-boot", kernel_boot::KernelBoot, spec),
        }
    };
}

/// Generates [`crate::Workload`] from the list and forwards [`Kind`] to
/// the kind it holds.
macro_rules! wire_enum {
    ($($variant:ident($name:literal, $module:ident::$ty:ident, $spec:ident)),* $(,)?) => {
        /// The workload the agent runs, with its parameters: one variant
        /// per kind ([`with_kinds!`](crate::with_kinds)), each holding its
        /// module's parameters, plus `exec`. On the wire a JSON object whose
        /// `kind` names the kind, beside its parameters.
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "kind")]
        pub enum Workload {
            $(
                #[serde(rename = $name)]
                $variant($module::$ty),
            )*
            /// Run one command (`patchbench boot -- CMD`), its output on
            /// the console; a non-zero exit is a workload error. For
            /// debugging a kernel.
            #[serde(rename = "exec")]
            Exec(exec::Exec),
        }

        $(
            impl From<$module::$ty> for Workload {
                fn from(kind: $module::$ty) -> Workload {
                    Workload::$variant(kind)
                }
            }
        )*

        impl From<exec::Exec> for Workload {
            fn from(exec: exec::Exec) -> Workload {
                Workload::Exec(exec)
            }
        }

        impl Workload {
            /// Every kind's name, in the list's order (`exec` last).
            pub const KINDS: &'static [&'static str] = &[$($name,)* "exec"];

            /// The kind's name, as campaign files, specs and the wire
            /// name it.
            pub fn kind(&self) -> &'static str {
                match self {
                    $(Workload::$variant(_) => $name,)*
                    Workload::Exec(_) => "exec",
                }
            }

            /// The kind it holds, to ask [`Kind`]'s questions of.
            pub fn as_kind(&self) -> &dyn Kind {
                match self {
                    $(Workload::$variant(k) => k,)*
                    Workload::Exec(k) => k,
                }
            }
        }
    };
}

with_kinds!(wire_enum);

impl Workload {
    /// The swap device the workload needs.
    pub fn swap_backend(&self) -> SwapBackend {
        self.as_kind().swap_backend()
    }

    /// See [`Kind::zram_bytes`].
    pub fn zram_bytes(&self) -> u64 {
        self.as_kind().zram_bytes()
    }

    /// See [`Kind::profile_candidates`].
    pub fn profile_candidates(&self) -> &'static [&'static str] {
        self.as_kind().profile_candidates()
    }

    /// See [`Kind::per_call_cost`].
    pub fn per_call_cost(&self) -> Option<PerCallCost> {
        self.as_kind().per_call_cost()
    }

    /// See [`Kind::needs_host_root`].
    pub fn needs_host_root(&self) -> bool {
        self.as_kind().needs_host_root()
    }

    /// See [`Kind::counts_boot`].
    pub fn counts_boot(&self) -> bool {
        self.as_kind().counts_boot()
    }

    /// See [`Kind::initramfs_archives`].
    pub fn initramfs_archives(&self) -> Vec<String> {
        self.as_kind().initramfs_archives()
    }

    /// The kind and its parameters on one console line.
    pub fn describe(&self) -> String {
        format!("{} {}", self.kind(), self.as_kind().describe())
    }
}

#[cfg(test)]
mod tests {
    use super::reclaim_refault::{REFAULT_QUARTER, ReclaimRefault, RefaultMemory, RefaultOrder};
    use super::zswap_pageout::ZswapPageout;
    use crate::{Limit, SwapBackend, Workload};

    #[test]
    fn profiling_follows_the_workload() {
        let pageout = |count_flushes| {
            Workload::ZswapPageout(ZswapPageout {
                workers: 1,
                mib_per_worker: 32,
                random_percent: 0,
                zswap_max: Limit::Max,
                memory_max: Limit::Max,
                swap_max: Limit::Max,
                count_flushes,
                swap: SwapBackend::Disk,
                compact: false,
                settle: false,
            })
        };
        assert_eq!(pageout(true).profile_candidates()[0], "do_flush_stats");
        assert!(pageout(false).profile_candidates().is_empty());
        let refault = Workload::ReclaimRefault(ReclaimRefault {
            cgroups: 4,
            file_mib: 16,
            swap: SwapBackend::Zram,
            memory: RefaultMemory::Tmpfs,
            limit_percent: REFAULT_QUARTER,
            reread: RefaultOrder::Sequential,
        });
        assert!(refault.profile_candidates().is_empty());
        assert_eq!(refault.swap_backend(), SwapBackend::Zram);
        assert_eq!(pageout(true).swap_backend(), SwapBackend::Disk);
        let mut on_zram = pageout(true);
        if let Workload::ZswapPageout(ZswapPageout { swap, .. }) = &mut on_zram {
            *swap = SwapBackend::Zram;
        }
        assert_eq!(on_zram.swap_backend(), SwapBackend::Zram);
    }

    /// The virtio disk's completions are host-timed, so only a kind that
    /// swaps (or acts on a swap device) boots with it.
    #[test]
    fn a_kind_has_the_swap_disk_only_if_it_asks() {
        let brk = Workload::Brk(super::brk::Brk::default());
        assert_eq!(brk.swap_backend(), SwapBackend::None);
        let mprotect = Workload::Mprotect(super::mprotect::Mprotect::default());
        assert_eq!(mprotect.swap_backend(), SwapBackend::None);
        let reclaim = Workload::GlobalReclaim(super::global_reclaim::GlobalReclaim::default());
        assert_eq!(reclaim.swap_backend(), SwapBackend::Disk);
        let soak = Workload::ThpFragmented(super::thp_fragmented::ThpFragmented::default());
        assert_eq!(soak.swap_backend(), SwapBackend::Disk);
    }

    #[test]
    fn every_kind_is_tagged_with_its_listed_name_on_the_wire() {
        let exec = Workload::Exec(super::exec::Exec {
            argv: vec!["true".into()],
        });
        let json = serde_json::to_value(&exec).unwrap();
        assert_eq!(json["kind"], "exec");
        assert_eq!(serde_json::from_value::<Workload>(json).unwrap(), exec);
        assert_eq!(Workload::KINDS.last(), Some(&"exec"));
        let mut names = Workload::KINDS.to_vec();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Workload::KINDS.len(), "{:?}", Workload::KINDS);
    }

    #[test]
    fn a_kind_on_the_wire_refuses_a_field_it_does_not_have() {
        let json = r#"{"kind":"guest-fault","fault":"hang","bogus":1}"#;
        let err = serde_json::from_str::<Workload>(json).unwrap_err();
        assert!(err.to_string().contains("bogus"), "{err}");
        let err = serde_json::from_str::<Workload>(r#"{"kind":"nope"}"#).unwrap_err();
        assert!(err.to_string().contains("nope"), "{err}");
    }
}
