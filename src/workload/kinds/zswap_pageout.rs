//! `zswap-pageout`'s campaign section: its parameters, checked against
//! the guest, and as the results document records them.

use bytesize::ByteSize;
use patchbench_agent::SwapBackend;
use patchbench_agent::kinds::zswap_pageout::ZswapPageout;
use serde::Deserialize;

use crate::model::Limit;
use crate::workload::param::*;
use crate::workload::planned::{Params, Planned, Prepared, limit_text, wire_limit};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(deserialize_with = "workers", default = "one")]
    pub workers: u32,
    /// Written as a whole number of MiB (the key names the unit).
    #[serde(deserialize_with = "mib_per_worker")]
    pub mib_per_worker: ByteSize,
    #[serde(deserialize_with = "random_percent", default)]
    pub random_percent: u8,
    #[serde(deserialize_with = "zswap_max")]
    pub zswap_max: Limit,
    #[serde(deserialize_with = "memory_max", default = "max")]
    pub memory_max: Limit,
    #[serde(deserialize_with = "swap_max", default = "max")]
    pub swap_max: Limit,
    #[serde(deserialize_with = "count_flushes", default = "yes")]
    pub count_flushes: bool,
    #[serde(deserialize_with = "swap", default = "disk")]
    pub swap: SwapBackend,
    #[serde(deserialize_with = "compact", default)]
    pub compact: bool,
    #[serde(deserialize_with = "settle", default)]
    pub settle: bool,
}

impl HostKind for Config {
    fn plan(self, guest: &Guest) -> Result<Planned, WorkloadError> {
        let Config {
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
        let Guest { online, memory, .. } = *guest;
        if workers == 0 || workers > online {
            return Err(WorkloadError {
                param: "workers",
                value: workers.to_string(),
                problem: format!(
                    "must be between 1 and vm.cpus.online ({online}): each worker is pinned to its own CPU"
                ),
            });
        }
        let mib = mib_per_worker.as_u64() >> 20;
        let total = mib.saturating_mul(u64::from(workers));
        // Leave room for the kernel and the initramfs.
        if mib == 0 || total.saturating_mul(2 << 20) > memory.as_u64() {
            return Err(WorkloadError {
                param: "mib_per_worker",
                value: mib.to_string(),
                problem: format!(
                    "must be at least 1, and {workers} worker(s) of it at most half of vm.memory ({})",
                    iec(memory)
                ),
            });
        }
        if random_percent > 100 {
            return Err(WorkloadError {
                param: "random_percent",
                value: random_percent.to_string(),
                problem: "is a share of each page, from 0 to 100".into(),
            });
        }
        Ok(Planned::Ready(Prepared::new(ZswapPageout {
            workers,
            mib_per_worker: mib,
            random_percent,
            zswap_max: wire_limit(zswap_max),
            memory_max: wire_limit(memory_max),
            swap_max: wire_limit(swap_max),
            count_flushes,
            swap,
            compact,
            settle,
        })))
    }
}

impl Params for ZswapPageout {
    fn params(&self) -> Vec<(&'static str, String)> {
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
        vec![
            ("workers", workers.to_string()),
            ("mib_per_worker", mib_per_worker.to_string()),
            ("random_percent", random_percent.to_string()),
            ("zswap_max", limit_text(zswap_max)),
            ("memory_max", limit_text(memory_max)),
            ("swap_max", limit_text(swap_max)),
            ("count_flushes", count_flushes.to_string()),
            ("swap", swap_text(*swap).into()),
            ("compact", compact.to_string()),
            ("settle", settle.to_string()),
        ]
    }
}
