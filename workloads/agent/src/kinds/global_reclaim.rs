//! `global-reclaim`: the whole guest's memory overcommitted, as
//! vm-scalability's usemem cases do when their size exceeds memory
//! (case-anon-w-seq with a size above MemTotal, whose writes kswapd and
//! direct reclaim make room for by swapping): no memory cgroup limit, so
//! reclaim is global. kswapd wakes when a zone falls below its low
//! watermark and balances the node, allocations that find none free
//! reclaim directly and may be throttled, and anonymous pages go to swap
//! (through zswap, when the campaign enables it): mm/vmscan.c's kswapd and
//! direct reclaim paths, which the memcg-limited workloads do not take.
//!
//! Each operation of a task maps `size` of private anonymous memory
//! (MADV_NOHUGEPAGE), writes a distinct word to each page (so that zswap
//! compresses rather than skips it), reads every page back checking its
//! word (swap-ins of what reclaim took), and unmaps it. `size` should be
//! above what the guest has free, so that each operation reclaims.
//! Spec: `workloads/global-reclaim.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{Map, check_stamps, page_size, stamp};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task};
use crate::kind::Kind;
use crate::memory::SwapBackend;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GlobalReclaim {
    pub tasks: u32,
    pub ops: u32,
    /// The region each operation writes and reads back: above the guest's
    /// free memory.
    pub size: Bytes,
}

impl Default for GlobalReclaim {
    fn default() -> Self {
        GlobalReclaim {
            tasks: 1,
            ops: 2,
            size: Bytes::mib(512),
        }
    }
}

impl Kind for GlobalReclaim {
    /// Its anonymous pages go to swap (through zswap when the campaign
    /// enables it): the swap disk is what global reclaim writes to.
    fn swap_backend(&self) -> SwapBackend {
        SwapBackend::Disk
    }

    fn describe(&self) -> String {
        format!("size={}", self.size)
    }
}

impl Bench for GlobalReclaim {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        let all = self.size.get() * u64::from(self.tasks);
        if self.size.get() % 4096 != 0 || all == 0 || all > 2 * guest.memory {
            return Err(ParamError::new(
                "size",
                self.size,
                format!(
                    "must be whole pages, and every task's region together at most twice the guest's memory ({} bytes): the rest must fit in swap",
                    2 * guest.memory
                ),
            ));
        }
        Ok(())
    }

    fn task(&self, index: usize) -> io::Result<Box<dyn Task>> {
        Ok(Box::new(Overcommit {
            len: self.size.bytes(),
            seed: index as u64,
        }))
    }
}

struct Overcommit {
    len: usize,
    seed: u64,
}

impl Task for Overcommit {
    fn op(&mut self) -> io::Result<()> {
        let page = page_size();
        let mut map = Map::anon(self.len)?;
        map.advise(libc::MADV_NOHUGEPAGE)?;
        stamp(&mut map, page, self.seed);
        check_stamps(&map, page, self.seed)?;
        map.unmap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_regions_fit_in_memory_and_swap() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 512 << 20,
        };
        assert!(GlobalReclaim::default().check(guest).is_ok());
        let two = GlobalReclaim {
            tasks: 3,
            ..GlobalReclaim::default()
        };
        assert_eq!(two.check(guest).unwrap_err().param, "size");
    }

    #[test]
    fn an_operation_reads_back_what_it_wrote() {
        let mut task = Overcommit {
            len: 1 << 20,
            seed: 7,
        };
        task.op().unwrap();
    }
}
