//! `zswap-pageout` (seed 000): MADV_PAGEOUT over compressible anonymous
//! memory in a private cgroup with a zswap limit; its spec is
//! `workloads/zswap-pageout.yaml`, its run the agent's `pageout`.

use serde::{Deserialize, Serialize};

use crate::kind::{Kind, disk, is_disk, is_false};
use crate::memory::{Limit, SwapBackend};

/// Seed 000: MADV_PAGEOUT over compressible anonymous memory in a private
/// cgroup with a zswap limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZswapPageout {
    /// Worker processes, each pinned to its own online CPU.
    pub workers: u32,
    /// Anonymous memory per worker, in MiB.
    pub mib_per_worker: u64,
    /// Share of each page's words filled with random (incompressible)
    /// data, 0 to 100; the rest is a 16-byte repeating pattern. Left out
    /// of the JSON at 0, the content before protocol 3.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub random_percent: u8,
    /// `memory.zswap.max` of the private cgroup.
    pub zswap_max: Limit,
    /// `memory.max` of the private cgroup.
    pub memory_max: Limit,
    /// `memory.swap.max` of the private cgroup.
    pub swap_max: Limit,
    /// Count the memcg stats flushes of each PAGEOUT with ftrace's function
    /// profiler (`pageout_flushes`). The profiler's hook adds a little
    /// time to every counted call. Absent (documents of protocol 1): off.
    #[serde(default)]
    pub count_flushes: bool,
    /// The swap device zswap sits in front of: the job's disk, or zram
    /// (no host I/O at all). Left out of the JSON for the disk, the
    /// only device before.
    #[serde(default = "disk", skip_serializing_if = "is_disk")]
    pub swap: SwapBackend,
    /// Compact memory (`/proc/sys/vm/compact_memory`) before each
    /// sample's timed pass, outside every clock and window, so that
    /// every sample allocates from compacted free memory. Left out of
    /// the JSON when off, the only behaviour before.
    #[serde(default, skip_serializing_if = "is_false")]
    pub compact: bool,
    /// Before each pass, outside every clock and window, free the last
    /// pass's workers' mms (the agent runs once on each worker CPU), and
    /// before each timed pass run every pending RCU callback
    /// (`rcutree.do_rcu_barrier`) and refresh the VM statistics
    /// (`/proc/sys/vm/stat_refresh`). Left out of the JSON when off,
    /// the only behaviour before.
    #[serde(default, skip_serializing_if = "is_false")]
    pub settle: bool,
}

fn is_zero(value: &u8) -> bool {
    *value == 0
}

impl Kind for ZswapPageout {
    fn swap_backend(&self) -> SwapBackend {
        self.swap
    }

    /// Room for every worker's memory, should zswap refuse or write back
    /// all of it.
    fn zram_bytes(&self) -> u64 {
        (u64::from(self.workers) * self.mib_per_worker) << 20
    }

    fn profile_candidates(&self) -> &'static [&'static str] {
        // In 6.12 obj_cgroup_may_zswap() calls do_flush_stats() directly;
        // cgroup_rstat_flush() is what it calls, should it be inlined.
        if self.count_flushes {
            &["do_flush_stats", "cgroup_rstat_flush"]
        } else {
            &[]
        }
    }

    fn describe(&self) -> String {
        let ZswapPageout {
            workers,
            mib_per_worker,
            random_percent,
            zswap_max,
            memory_max,
            swap_max,
            count_flushes,
            swap,
            compact,
            settle,
        } = self;
        format!(
            "workers={workers} mib_per_worker={mib_per_worker} random_percent={random_percent} zswap_max={} memory_max={} swap_max={} count_flushes={count_flushes} swap={swap:?} compact={compact} settle={settle}",
            zswap_max.cgroup_value(),
            memory_max.cgroup_value(),
            swap_max.cgroup_value()
        )
    }
}
