//! `rstat-flush`'s campaign section: its parameters, checked against the
//! guest, and as the results document records them.

use std::time::Duration;

use bytesize::ByteSize;
use patchbench_agent::SwapBackend;
use patchbench_agent::kinds::rstat_flush::RstatFlush;
use serde::Deserialize;

use crate::model::guest::size_text;
use crate::workload::param::*;
use crate::workload::planned::{Params, Planned, Prepared};

named! {
    ,
    dirtying: Dirtying = Dirtying::deserialize;
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(deserialize_with = "cgroups", default = "eight_per_cpu")]
    pub cgroups: CgroupCount,
    #[serde(deserialize_with = "dirty_size", default = "default_dirty_size")]
    pub dirty_size: ByteSize,
    #[serde(deserialize_with = "dirty_pause", default = "default_dirty_pause")]
    pub dirty_pause: Duration,
    #[serde(deserialize_with = "reads", default = "default_reads")]
    pub reads: u32,
    #[serde(deserialize_with = "swap", default = "disk")]
    pub swap: SwapBackend,
    #[serde(deserialize_with = "dirtying", default)]
    pub dirtying: Dirtying,
}

impl HostKind for Config {
    fn plan(self, guest: &Guest) -> Result<Planned, WorkloadError> {
        let Config {
            cgroups,
            dirty_size,
            dirty_pause,
            reads,
            swap,
            dirtying,
        } = self;
        let Guest { memory, half, .. } = *guest;
        let cgroups = guest.cgroup_count(cgroups)?;
        // Each dirtier holds its anonymous region and its tmpfs file.
        let held = dirty_size.as_u64().saturating_mul(2 * u64::from(cgroups));
        if dirty_size.as_u64() < 4096 || held > half.as_u64() {
            return Err(WorkloadError {
                param: "dirty_size",
                value: iec(dirty_size),
                problem: format!(
                    "must be at least 4 KiB, and twice it for each of {cgroups} cgroups at most half of vm.memory ({})",
                    iec(memory)
                ),
            });
        }
        if reads == 0 {
            return Err(WorkloadError {
                param: "reads",
                value: reads.to_string(),
                problem: "must be at least 1".into(),
            });
        }
        Ok(Planned::Ready(Prepared::new(RstatFlush {
            cgroups,
            dirty_kib: dirty_size.as_u64().div_ceil(1024),
            dirty_pause,
            reads,
            swap,
            lockstep: dirtying == Dirtying::Lockstep,
        })))
    }
}

impl Params for RstatFlush {
    fn params(&self) -> Vec<(&'static str, String)> {
        let RstatFlush {
            cgroups,
            dirty_kib,
            dirty_pause,
            reads,
            swap,
            lockstep,
        } = self;
        {
            let mut params = vec![
                ("cgroups", cgroups.to_string()),
                ("dirty_size", size_text(ByteSize::kib(*dirty_kib))),
                (
                    "dirty_pause",
                    humantime::format_duration(*dirty_pause).to_string(),
                ),
                ("reads", reads.to_string()),
            ];
            // Each left out at its default (the only way before it
            // existed), so earlier results still resume.
            if *swap == SwapBackend::Zram {
                params.push(("swap", swap_text(*swap).into()));
            }
            if *lockstep {
                params.push(("dirtying", "lockstep".into()));
            }
            params
        }
    }
}

/// How rstat-flush's dirtiers run against the read loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dirtying {
    /// Each loops on its own, `dirty_pause` apart, through the read loop
    /// (the seed's shape).
    #[default]
    Concurrent,
    /// Each does one round before a sample and none during it: each
    /// sample's flushes find the same pending updates.
    Lockstep,
}

fn eight_per_cpu() -> CgroupCount {
    CgroupCount::PerCpu(8)
}

fn default_dirty_size() -> ByteSize {
    ByteSize::kib(256)
}

fn default_dirty_pause() -> Duration {
    Duration::from_millis(1)
}

fn default_reads() -> u32 {
    1000
}
