//! `rstat-flush` (seed 002): many cgroups keep dirtying memcg counters
//! while the agent reads their parent's `memory.stat`; its spec is
//! `workloads/rstat-flush.yaml`, its run the agent's `rstat`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::kind::{Kind, PerCallCost, disk, is_disk};
use crate::memory::SwapBackend;

/// Seed 002: `cgroups` cgroups each hold a process that keeps dirtying
/// anon, file (tmpfs) and slab counters, while the agent reads their
/// parent's `memory.stat` `reads` times per sample with `pread()`; the
/// function profiler counts and times `mem_cgroup_css_rstat_flush`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RstatFlush {
    /// Child cgroups, one dirtying process in each.
    pub cgroups: u32,
    /// Anonymous memory and tmpfs file size each dirtier cycles through
    /// per round, in KiB.
    pub dirty_kib: u64,
    /// A dirtier sleeps this long between rounds (0: never).
    pub dirty_pause: Duration,
    /// `memory.stat` reads per sample.
    pub reads: u32,
    /// The swap device: the job's disk, or zram. The workload never
    /// swaps; with zram a boot has no disk, whose host-timed
    /// completions would make the cost lane's boots differ. Left out
    /// of the JSON for the disk, the only device before.
    #[serde(default = "disk", skip_serializing_if = "is_disk")]
    pub swap: SwapBackend,
    /// Each dirtier does one round when asked, before a sample, and none
    /// during it, instead of looping on its own (`dirtying: lockstep`):
    /// each sample's flushes then find the same pending updates. Left
    /// out of the JSON when off, the only way before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lockstep: bool,
}

impl Kind for RstatFlush {
    fn swap_backend(&self) -> SwapBackend {
        self.swap
    }

    /// Room for what every dirtier holds at once: its anonymous region and
    /// its tmpfs file.
    fn zram_bytes(&self) -> u64 {
        (2 * u64::from(self.cgroups) * self.dirty_kib) << 10
    }

    fn profile_candidates(&self) -> &'static [&'static str] {
        &["mem_cgroup_css_rstat_flush"]
    }

    fn per_call_cost(&self) -> Option<PerCallCost> {
        // Seed 002 timed mem_cgroup_css_rstat_flush per call; this is the
        // same, in modeled cycles.
        Some(PerCallCost {
            phase: "read_loop",
            calls: "flush_calls",
            metric: "flush_modeled_cycles",
        })
    }

    fn describe(&self) -> String {
        let RstatFlush {
            cgroups,
            dirty_kib,
            dirty_pause,
            reads,
            swap,
            lockstep,
        } = self;
        format!(
            "cgroups={cgroups} dirty_kib={dirty_kib} dirty_pause={dirty_pause:?} reads={reads} swap={swap:?} lockstep={lockstep}"
        )
    }
}
