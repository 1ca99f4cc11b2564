//! What every kind's campaign section shares: the parameters' words
//! (`N per cpu`, limits, swap devices), their deserializers, which name the
//! parameter in their errors, the guest a kind's parameters are checked
//! against ([`Guest`]), and the check itself ([`HostKind`]).

use std::time::Duration;

use bytesize::ByteSize;
use patchbench_agent::{BuildDriver, RefaultMemory, RefaultOrder, SwapBackend};
use serde::{Deserialize, Deserializer};

use super::planned::Planned;
use crate::model::{GuestShape, Limit};

/// Deserializers that put the parameter's name in the error (the YAML
/// library's own errors give only a line and a column).
macro_rules! named {
    ($vis:vis, $($name:ident: $ty:ty = $inner:expr;)*) => {$(
        $vis fn $name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
            $inner(d).map_err(|e| {
                serde::de::Error::custom(format!(concat!("workload.", stringify!($name), ": {}"), e))
            })
        }
    )*};
}
pub(crate) use named;

named! {
    pub(crate),
    workers: u32 = u32::deserialize;
    mib_per_worker: ByteSize = |d| u64::deserialize(d).map(ByteSize::mib);
    random_percent: u8 = u8::deserialize;
    zswap_max: Limit = limit;
    memory_max: Limit = limit;
    swap_max: Limit = limit;
    count_flushes: bool = bool::deserialize;
    compact: bool = bool::deserialize;
    settle: bool = bool::deserialize;
    cgroups: CgroupCount = CgroupCount::deserialize;
    dirty_size: ByteSize = ByteSize::deserialize;
    dirty_pause: Duration = humantime_serde::deserialize;
    reads: u32 = u32::deserialize;
    file_size: ByteSize = ByteSize::deserialize;
    swap: SwapBackend = SwapBackend::deserialize;
    memory: RefaultMemory = RefaultMemory::deserialize;
    limit_percent: u8 = u8::deserialize;
    reread: RefaultOrder = RefaultOrder::deserialize;
    driver: BuildDriver = BuildDriver::deserialize;
    targets: Vec<String> = Vec::<String>::deserialize;
    jobs: Option<u32> = Option::<u32>::deserialize;
}

/// A kind's campaign section, once parsed.
pub trait HostKind {
    /// Checks the parameters against the guest and resolves per-CPU counts.
    fn plan(self, guest: &Guest) -> Result<Planned, WorkloadError>;
}

/// What a kind's parameters are checked against: the guest's online CPUs
/// and memory.
#[derive(Debug, Clone, Copy)]
pub struct Guest {
    pub online: u32,
    pub memory: ByteSize,
    /// Half of `memory`: what tmpfs holds at most by default.
    pub half: ByteSize,
}

impl Guest {
    pub fn of(shape: &GuestShape) -> Guest {
        Guest {
            online: shape.cpus.online(),
            memory: shape.memory,
            half: ByteSize::b(shape.memory.as_u64() / 2),
        }
    }

    /// A number of cgroups, resolved and checked.
    pub fn cgroup_count(&self, count: CgroupCount) -> Result<u32, WorkloadError> {
        let online = self.online;
        let n = count.resolve(online);
        if n == 0 || n > MAX_CGROUPS {
            return Err(WorkloadError {
                param: "cgroups",
                value: n.to_string(),
                problem: format!(
                    "must be between 1 and {MAX_CGROUPS} (vm.cpus.online is {online})"
                ),
            });
        }
        Ok(n)
    }
}

/// A size as errors write it.
pub fn iec(b: ByteSize) -> String {
    b.display().iec().to_string()
}

/// A number of cgroups: `16`, or `2 per cpu` (times the guest's online CPUs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupCount {
    Total(u32),
    PerCpu(u32),
}

impl CgroupCount {
    pub fn resolve(self, online_cpus: u32) -> u32 {
        match self {
            CgroupCount::Total(n) => n,
            CgroupCount::PerCpu(n) => n.saturating_mul(online_cpus),
        }
    }

    pub fn parse(text: &str) -> Result<CgroupCount, String> {
        let bad = || format!("`{text}` is neither a count such as `16` nor `N per cpu`");
        let words: Vec<&str> = text.split_whitespace().collect();
        match words.as_slice() {
            [n] => n.parse().map(CgroupCount::Total).map_err(|_| bad()),
            [n, "per", "cpu"] => n.parse().map(CgroupCount::PerCpu).map_err(|_| bad()),
            _ => Err(bad()),
        }
    }
}

impl<'de> Deserialize<'de> for CgroupCount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u32),
            Text(String),
        }
        match Raw::deserialize(d) {
            Ok(Raw::Number(n)) => Ok(CgroupCount::Total(n)),
            Ok(Raw::Text(text)) => CgroupCount::parse(&text).map_err(serde::de::Error::custom),
            Err(_) => Err(serde::de::Error::custom(
                "expected a count such as `16` or `N per cpu`",
            )),
        }
    }
}

/// A workload parameter that cannot run on this VM.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("workload.{param} ({value}) {problem}")]
pub struct WorkloadError {
    pub param: &'static str,
    pub value: String,
    pub problem: String,
}

pub(crate) fn one() -> u32 {
    1
}

pub(crate) fn yes() -> bool {
    true
}

pub(crate) fn max() -> Limit {
    Limit::Max
}

pub(crate) fn disk() -> SwapBackend {
    SwapBackend::Disk
}

pub(crate) fn zram() -> SwapBackend {
    SwapBackend::Zram
}

/// A cgroup limit written as a byte size (`64 MiB`) or `max`.
fn limit<'de, D: Deserializer<'de>>(d: D) -> Result<Limit, D::Error> {
    Limit::deserialize(d)
}

/// The most cgroups a workload may ask for: each is a process in the guest.
const MAX_CGROUPS: u32 = 4096;

/// A swap backend as campaign files write it.
pub fn swap_text(swap: SwapBackend) -> &'static str {
    match swap {
        SwapBackend::Disk => "disk",
        SwapBackend::Zram => "zram",
        SwapBackend::Ram => "ram",
        SwapBackend::None => "none",
    }
}
