//! `reclaim-refault`'s campaign section: its parameters, checked against
//! the guest, and as the results document records them.

use bytesize::ByteSize;
use patchbench_agent::kinds::reclaim_refault::ReclaimRefault;
use patchbench_agent::{REFAULT_QUARTER, RefaultMemory, RefaultOrder, SwapBackend};
use serde::Deserialize;

use crate::model::guest::size_text;
use crate::workload::param::*;
use crate::workload::planned::{Params, Planned, Prepared};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(deserialize_with = "cgroups", default = "two_per_cpu")]
    pub cgroups: CgroupCount,
    #[serde(deserialize_with = "file_size", default = "default_file_size")]
    pub file_size: ByteSize,
    #[serde(deserialize_with = "swap", default = "zram")]
    pub swap: SwapBackend,
    #[serde(deserialize_with = "memory", default)]
    pub memory: RefaultMemory,
    #[serde(deserialize_with = "limit_percent", default = "quarter")]
    pub limit_percent: u8,
    #[serde(deserialize_with = "reread", default)]
    pub reread: RefaultOrder,
}

impl HostKind for Config {
    fn plan(self, guest: &Guest) -> Result<Planned, WorkloadError> {
        let Config {
            cgroups,
            file_size,
            swap,
            memory: refault_memory,
            limit_percent,
            reread,
        } = self;
        let Guest { memory, half, .. } = *guest;
        let cgroups = guest.cgroup_count(cgroups)?;
        if reread == RefaultOrder::Random && refault_memory != RefaultMemory::Anon {
            return Err(WorkloadError {
                param: "reread",
                value: "random".into(),
                problem: "needs memory: anon (a tmpfs file is read back in order)".into(),
            });
        }
        if !(1..=100).contains(&limit_percent) {
            return Err(WorkloadError {
                param: "limit_percent",
                value: limit_percent.to_string(),
                problem: "must be 1 to 100 (memory.max as a percentage of file_size)".into(),
            });
        }
        let mib = 1 << 20;
        if file_size.as_u64() < 4 * mib || file_size.as_u64() % mib != 0 {
            return Err(WorkloadError {
                param: "file_size",
                value: iec(file_size),
                problem:
                    "must be a whole number of MiB, at least 4 MiB (memory.max is a quarter of it)"
                        .into(),
            });
        }
        // tmpfs holds at most half of memory by default.
        let total = file_size.as_u64().saturating_mul(u64::from(cgroups));
        if total > half.as_u64() {
            return Err(WorkloadError {
                param: "file_size",
                value: iec(file_size),
                problem: format!(
                    "for each of {cgroups} cgroups is {}, more than half of vm.memory ({}), the tmpfs's size",
                    iec(ByteSize::b(total)),
                    iec(memory)
                ),
            });
        }
        Ok(Planned::Ready(Prepared::new(ReclaimRefault {
            cgroups,
            file_mib: file_size.as_u64() / mib,
            swap,
            memory: refault_memory,
            limit_percent,
            reread,
        })))
    }
}

impl Params for ReclaimRefault {
    fn params(&self) -> Vec<(&'static str, String)> {
        let ReclaimRefault {
            cgroups,
            file_mib,
            swap,
            memory,
            limit_percent,
            reread,
        } = self;
        {
            let mut params = vec![
                ("cgroups", cgroups.to_string()),
                ("file_size", size_text(ByteSize::mib(*file_mib))),
                ("swap", swap_text(*swap).into()),
                (
                    "memory",
                    match memory {
                        RefaultMemory::Tmpfs => "tmpfs",
                        RefaultMemory::Anon => "anon",
                    }
                    .into(),
                ),
                ("limit_percent", limit_percent.to_string()),
            ];
            // Left out when sequential (the only order before it
            // existed), so earlier results still resume.
            if *reread == RefaultOrder::Random {
                params.push(("reread", "random".into()));
            }
            params
        }
    }
}

fn two_per_cpu() -> CgroupCount {
    CgroupCount::PerCpu(2)
}

fn default_file_size() -> ByteSize {
    ByteSize::mib(50)
}

fn quarter() -> u8 {
    REFAULT_QUARTER
}
