//! `page-alloc`: the page allocator at one order, reached through
//! anonymous faults, as will-it-scale's page_fault1 reaches it (there is
//! no way to call the allocator from user space: mmtests' pagealloc
//! microbenchmark is a kernel module, which this library does not load).
//! Each task maps `size` of private anonymous memory once; each operation
//! writes every folio of it (a fault allocating one folio of 2^`order`
//! pages, zeroed) and frees them all with MADV_DONTNEED (back to the
//! per-CPU lists and the buddy allocator), keeping the mapping, so no
//! mmap or munmap is timed. `order: 0` advises MADV_NOHUGEPAGE (base
//! pages); `order: 9` aligns the region to 2 MiB and advises
//! MADV_HUGEPAGE (a PMD THP per fault: the campaign's `thp` must be
//! `madvise` or `always`); orders 2 to 8 advise MADV_HUGEPAGE with that
//! mTHP size set to `madvise` and every other size (the PMD's too) to
//! `never` in `/sys/kernel/mm/transparent_hugepage/hugepages-<N>kB/enabled`
//! (kernels since 6.8). Spec: `workloads/page-alloc.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{self, Map, page_size};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;

/// The PMD order on x86-64: a 2 MiB THP.
pub const PMD_ORDER: u8 = 9;
const THP: &str = "/sys/kernel/mm/transparent_hugepage";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PageAlloc {
    pub tasks: u32,
    pub ops: u32,
    /// The region each operation faults in and frees.
    pub size: Bytes,
    /// The order of every allocation: 0, or 2 to 9.
    pub order: u8,
}

impl Default for PageAlloc {
    fn default() -> Self {
        PageAlloc {
            tasks: 1,
            ops: 16,
            size: Bytes::mib(16),
            order: 0,
        }
    }
}

impl PageAlloc {
    fn folio(&self) -> usize {
        page_size() << self.order
    }

    /// The sysfs directory of this order's mTHP size.
    fn size_dir(&self) -> String {
        format!("{THP}/hugepages-{}kB", self.folio() >> 10)
    }

    /// Folios of this order allocated by anonymous faults so far: the
    /// per-size counter for mTHP orders, `thp_fault_alloc` for the PMD
    /// order (which 6.1 has too).
    fn faults_allocated(&self) -> io::Result<u64> {
        let text;
        let (path, value) = if self.order == PMD_ORDER {
            text = sys::read_file("/proc/vmstat")?;
            let v = text
                .lines()
                .find_map(|l| l.strip_prefix("thp_fault_alloc "))
                .unwrap_or("");
            ("/proc/vmstat thp_fault_alloc".to_string(), v.to_string())
        } else {
            let path = format!("{}/stats/anon_fault_alloc", self.size_dir());
            let v = sys::read_file(&path)?;
            (path, v)
        };
        value
            .trim()
            .parse()
            .map_err(|e| io::Error::other(format!("{path} reads {value:?}: {e}")))
    }
}

impl Kind for PageAlloc {
    fn describe(&self) -> String {
        format!("size={} order={}", self.size, self.order)
    }
}

impl Bench for PageAlloc {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        if self.order == 1 || self.order > PMD_ORDER {
            return Err(ParamError::new(
                "order",
                self.order,
                "must be 0 (base pages) or 2 to 9 (anonymous mTHP and THP sizes)",
            ));
        }
        check_held("size", self.size, self.tasks, guest)?;
        let folio = 4096usize << self.order;
        if self.size.bytes() % folio != 0 {
            return Err(ParamError::new(
                "size",
                self.size,
                format!("must be a whole number of order-{} folios", self.order),
            ));
        }
        Ok(())
    }

    fn prepare(&self) -> io::Result<()> {
        if self.order == 0 {
            return Ok(());
        }
        if self.order == PMD_ORDER {
            let mode = sys::read_file(format!("{THP}/enabled"))?;
            if !mode.contains("[madvise]") && !mode.contains("[always]") {
                return Err(io::Error::other(format!(
                    "order 9 needs the campaign's thp: madvise or always; {THP}/enabled reads {mode:?}"
                )));
            }
            return Ok(());
        }
        let dir = self.size_dir();
        if !std::path::Path::new(&dir).exists() {
            return Err(io::Error::other(format!(
                "{dir} is missing: order {} needs anonymous mTHP (Linux 6.8 or later)",
                self.order
            )));
        }
        // This size alone: a fault takes the largest size allowed, so
        // every other one (the PMD size too) is set to never.
        for entry in std::fs::read_dir(THP)? {
            let path = entry?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.starts_with("hugepages-") && path.to_str() != Some(dir.as_str()) {
                sys::write_file(path.join("enabled"), "never")?;
            }
        }
        sys::write_file(format!("{dir}/enabled"), "madvise")
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        let len = self.size.bytes();
        let map = if self.order == 0 {
            let map = Map::anon(len)?;
            map.advise(libc::MADV_NOHUGEPAGE)?;
            map
        } else {
            let map = Map::anon_aligned(len, self.folio())?;
            map.advise(libc::MADV_HUGEPAGE)?;
            map
        };
        let mut cycle = Cycle {
            map,
            step: self.folio(),
        };
        // One cycle untimed: every fault got a folio of the order asked
        // for, not a fallback to smaller ones.
        if self.order > 0 {
            let before = self.faults_allocated()?;
            cycle.op()?;
            let got = self.faults_allocated()? - before;
            let want = (len / self.folio()) as u64;
            if got < want {
                return Err(io::Error::other(format!(
                    "{got} of {want} faults allocated an order-{} folio",
                    self.order
                )));
            }
        }
        Ok(Box::new(cycle))
    }
}

struct Cycle {
    map: Map,
    step: usize,
}

impl Task for Cycle {
    fn op(&mut self) -> io::Result<()> {
        self.map.touch(self.step);
        self.map.advise(libc::MADV_DONTNEED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_zero_cycles_and_leaves_the_region_empty() {
        let bench = PageAlloc {
            size: Bytes::kib(256),
            ..PageAlloc::default()
        };
        let mut task = bench.task(0).unwrap();
        for _ in 0..3 {
            task.op().unwrap();
        }
    }

    #[test]
    fn orders_are_zero_or_an_anonymous_thp_size() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        for order in [0, 2, 4, 9] {
            let bench = PageAlloc {
                order,
                ..PageAlloc::default()
            };
            assert!(bench.check(guest).is_ok(), "{order}");
        }
        for order in [1, 10] {
            let bench = PageAlloc {
                order,
                ..PageAlloc::default()
            };
            assert_eq!(bench.check(guest).unwrap_err().param, "order");
        }
    }
}
