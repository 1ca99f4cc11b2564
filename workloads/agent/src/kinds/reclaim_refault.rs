//! `reclaim-refault` (seed 003, Yosry Ahmed's script): cgroups each fill
//! and read back more than their `memory.max`; its spec is
//! `workloads/reclaim-refault.yaml`, its run the agent's `refault`.

use serde::{Deserialize, Serialize};

use crate::kind::Kind;
use crate::memory::SwapBackend;

/// Seed 003: `cgroups` cgroups, each with `memory.max` at a quarter of
/// `file_mib`; a worker in each writes a tmpfs file of `file_mib` MiB and
/// reads it back, all workers at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReclaimRefault {
    pub cgroups: u32,
    /// The tmpfs file (or anonymous region) each worker writes and reads
    /// back, in MiB.
    pub file_mib: u64,
    /// Where reclaimed pages go.
    pub swap: SwapBackend,
    /// What each worker fills and reads back: a tmpfs file (the seed's
    /// script) or anonymous memory (large-folio swap-in, seed 004).
    /// Left out of the JSON for tmpfs, the only memory before it existed.
    #[serde(default, skip_serializing_if = "RefaultMemory::is_tmpfs")]
    pub memory: RefaultMemory,
    /// Each cgroup's `memory.max` as a percentage of `file_mib`, 1 to
    /// 100. Left out of the JSON at 25, the seed's quarter.
    #[serde(
        default = "refault_quarter",
        skip_serializing_if = "is_refault_quarter"
    )]
    pub limit_percent: u8,
    /// The order anonymous memory is read back in (`memory: anon`
    /// only). Left out of the JSON when sequential, the only order
    /// before it existed.
    #[serde(default, skip_serializing_if = "RefaultOrder::is_sequential")]
    pub reread: RefaultOrder,
}

impl Kind for ReclaimRefault {
    fn swap_backend(&self) -> SwapBackend {
        self.swap
    }

    /// The workload's whole data set, as seed 003's script sizes it.
    fn zram_bytes(&self) -> u64 {
        (u64::from(self.cgroups) * self.file_mib) << 20
    }

    fn describe(&self) -> String {
        let ReclaimRefault {
            cgroups,
            file_mib,
            swap,
            memory,
            limit_percent,
            reread,
        } = self;
        format!(
            "cgroups={cgroups} file_mib={file_mib} swap={swap:?} memory={memory:?} limit_percent={limit_percent} reread={reread:?}"
        )
    }
}

/// What a [`ReclaimRefault`] worker writes and reads back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefaultMemory {
    /// A tmpfs file, written and read with write(2)/pread(2): shmem pages.
    #[default]
    Tmpfs,
    /// A private anonymous mapping, filled then read page by page: anon
    /// faults, and (with mTHP sizes enabled) large folios swapped out and
    /// back in.
    Anon,
}

impl RefaultMemory {
    fn is_tmpfs(&self) -> bool {
        *self == RefaultMemory::Tmpfs
    }
}

/// The order a [`ReclaimRefault`] worker reads its anonymous
/// memory back in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefaultOrder {
    /// Page 0, 1, 2...: each large folio swapped in brings the pages read
    /// next.
    #[default]
    Sequential,
    /// Every page once, in a random order drawn from [`REREAD_SEED`] (the
    /// same order in every sample, boot and kernel): a large folio swapped
    /// in mostly brings pages not read soon.
    Random,
}

impl RefaultOrder {
    fn is_sequential(&self) -> bool {
        *self == RefaultOrder::Sequential
    }
}

/// The seed of [`RefaultOrder::Random`]'s permutation: fixed, so the order
/// is repeatable (an arbitrary constant, "patchrer" in ASCII, fixed
/// before any run).
pub const REREAD_SEED: u64 = 0x7061_7463_6872_6572;

/// The seed's `memory.max`: a quarter of each worker's file.
pub const REFAULT_QUARTER: u8 = 25;

fn refault_quarter() -> u8 {
    REFAULT_QUARTER
}

fn is_refault_quarter(value: &u8) -> bool {
    *value == REFAULT_QUARTER
}
