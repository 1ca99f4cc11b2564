//! Settling the guest before a window opens, and letting the window's
//! own deferred work finish before it closes: what the mm library's
//! harness ([`crate::ops`]) and zswap-pageout's `settle` do, so that a
//! window holds the work of its own operations, from the same start,
//! sample after sample.

use std::path::Path;

use crate::error::{Context, Result};
use crate::files;
use crate::sys;

/// The module parameter whose write of `1` runs `rcu_barrier()`: it
/// returns once every RCU callback queued before it has run. Made for
/// user-space tests (kernel-parameters.txt, `rcutree.do_rcu_barrier`);
/// Linux 6.12 has it, 6.1 does not.
pub const RCU_BARRIER: &str = "/sys/module/rcutree/parameters/do_rcu_barrier";

/// The sysctl whose every write runs, on every CPU and before it returns,
/// what `vmstat_update` runs every `vm.stat_interval`: fold the CPU's VM
/// counters and trim its per-CPU page lists (`decay_pcp_high`).
pub const STAT_REFRESH: &str = "/proc/sys/vm/stat_refresh";

/// Whether this kernel can run [`rcu_barrier`] (`GuestFacts::rcu_barrier`).
pub fn has_rcu_barrier() -> bool {
    Path::new(RCU_BARRIER).exists()
}

/// Runs `rcu_barrier()`: returns once every RCU callback queued before
/// the call has run, on every CPU.
pub fn rcu_barrier() -> Result<()> {
    files::write(RCU_BARRIER, "1")
        .with_context(|| format!("waiting for RCU callbacks ({RCU_BARRIER})"))
}

/// Folds every CPU's VM counters and trims its per-CPU page lists.
pub fn refresh_vm_stats() -> Result<()> {
    files::write(STAT_REFRESH, "1")
        .with_context(|| format!("refreshing the VM statistics ({STAT_REFRESH})"))
}

/// Before a window: the callbacks of everything before it run (when the
/// kernel can, `barrier`), the per-CPU counters and page lists are
/// trimmed, and the guest idles to a whole second
/// ([`sys::sleep_to_next_second`]), so the window starts at the same
/// offset from the tick and from every timer rounded to a second.
pub fn before_window(barrier: bool) -> Result<()> {
    if barrier {
        rcu_barrier()?;
    }
    refresh_vm_stats()?;
    sys::sleep_to_next_second().context("sleeping to the next whole second")
}

/// At a window's end, inside it: the RCU callbacks its operations queued
/// run now, counted in the window that caused them, and not in the next.
pub fn end_window(barrier: bool) -> Result<()> {
    if barrier { rcu_barrier() } else { Ok(()) }
}
