//! What the host and the guest ask of every workload kind ([`Kind`]), and
//! the serde helpers the kinds' wire parameters share.

use crate::memory::SwapBackend;

/// What the host and the guest ask of every kind. Only
/// [`Kind::describe`] has no default: a kind that needs no swap device,
/// no zram, no profiler and no host root says nothing more.
pub trait Kind {
    /// The swap device it runs with (set up once per boot). None by
    /// default: the virtio swap disk's completions reach the guest when the
    /// host's thread pool finishes them, so under icount a boot with the
    /// disk diverges from the next (docs/cost-model-design.md,
    /// Determinism). A kind that reclaims to swap, or whose code acts on a
    /// swap device, asks for one.
    fn swap_backend(&self) -> SwapBackend {
        SwapBackend::None
    }

    /// The size of `/dev/zram0` it needs when [`Kind::swap_backend`] is
    /// zram: its whole data set, or room for what it may swap.
    fn zram_bytes(&self) -> u64 {
        0
    }

    /// Kernel functions to count with the function profiler, most wanted
    /// first: the first one the kernel can trace is used (and reported as
    /// [`crate::GuestFacts::profiled_symbol`]). Empty: no profiling.
    fn profile_candidates(&self) -> &'static [&'static str] {
        &[]
    }

    /// The cost-lane metric the host derives from the profiled function
    /// ([`Kind::profile_candidates`]), if the kind has one.
    fn per_call_cost(&self) -> Option<PerCallCost> {
        None
    }

    /// Whether it runs host programs, so needs [`crate::Job::host_root`].
    fn needs_host_root(&self) -> bool {
        false
    }

    /// Archives (host paths) the host appends to the boot's initramfs for
    /// it, such as a kernel build's staged root.
    fn initramfs_archives(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether the plugin lanes count the boot for it: every instruction
    /// from the guest's first to the agent's start as PID 1, in a `boot`
    /// window (kernel-boot).
    fn counts_boot(&self) -> bool {
        false
    }

    /// Its parameters on one console line, after its name.
    fn describe(&self) -> String;
}

/// A cost-lane metric per call of the profiled function: its own modeled
/// cycles (its instructions and their misses, not its callees') in the
/// `phase` window, over the calls the agent's `calls` metric counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerCallCost {
    pub phase: &'static str,
    pub calls: &'static str,
    pub metric: &'static str,
}

/// Serde helpers the kinds share: a default left out of the JSON, so that
/// a parameter added later leaves the earlier jobs' shape as it was.
pub(crate) fn disk() -> SwapBackend {
    SwapBackend::Disk
}

pub(crate) fn is_disk(swap: &SwapBackend) -> bool {
    *swap == SwapBackend::Disk
}

pub(crate) fn is_false(value: &bool) -> bool {
    !value
}
