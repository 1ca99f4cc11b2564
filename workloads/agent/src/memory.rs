//! The memory a workload asks for: cgroup v2 limits and the swap device it
//! runs with.

use serde::{Deserialize, Serialize};

/// A cgroup v2 limit: a byte count, or `max` for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limit {
    Bytes(u64),
    Max,
}

impl Limit {
    /// The text a cgroup v2 limit file takes.
    pub fn cgroup_value(self) -> String {
        match self {
            Limit::Bytes(n) => n.to_string(),
            Limit::Max => "max".to_string(),
        }
    }
}

/// The swap device a workload runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SwapBackend {
    /// The job's [`SwapSetup`] device (the host's virtio-blk disk).
    Disk,
    /// `/dev/zram0`, sized by the workload, instead of the job's device.
    Zram,
    /// [`RAM_SWAP_DEVICE`], a RAM block device (brd) in the guest's own
    /// memory, instead of the job's device: a disk that swaps without
    /// compressing, whose every read and write completes inside the guest,
    /// so no swap I/O of a window is timed by the host (the virtio disk's
    /// completions are, even under icount). The host boots the kernel with
    /// [`ram_swap_cmdline`]; the kernel needs `CONFIG_BLK_DEV_RAM`
    /// (`kconfigs/variants/ram-swap.config`). Its pages are the kernel's,
    /// charged to no cgroup, as a disk's blocks are to none.
    Ram,
    /// No swap at all, and no disk: kernel-boot, whose window ends before
    /// the agent could set any up (a disk's probe at boot would be I/O
    /// the host times, inside the window).
    None,
}

/// The RAM block device a [`SwapBackend::Ram`] workload swaps on.
pub const RAM_SWAP_DEVICE: &str = "/dev/ram0";

/// The kernel parameters that make [`RAM_SWAP_DEVICE`] `bytes` large (brd
/// counts in KiB), and no other RAM disk.
pub fn ram_swap_cmdline(bytes: u64) -> Vec<String> {
    vec![
        "brd.rd_nr=1".to_string(),
        format!("brd.rd_size={}", bytes >> 10),
    ]
}
