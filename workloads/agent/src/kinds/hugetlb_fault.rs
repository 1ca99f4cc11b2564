//! `hugetlb-fault`: faults of hugetlb pages from the reserved pool, as the
//! kernel's selftest `tools/testing/selftests/mm/map_hugetlb.c` does: it
//! maps 256 MiB with `MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB` (the
//! default huge page size), writes and reads back every byte, and unmaps.
//!
//! Once per boot the pool is reserved: `/proc/sys/vm/nr_hugepages` is
//! raised to what every task maps at once (`tasks` x `size` / 2 MiB) if the
//! campaign's `hugepages=` reserved fewer, and read back. Each operation
//! maps `size` with MAP_HUGETLB (reserving its pages from the pool), writes
//! one byte in each 2 MiB page (a hugetlb fault each: take a page from the
//! pool, zero its 2 MiB, map it by its PMD) and unmaps it (every page back
//! to the pool, the reservation returned). Spec:
//! `workloads/hugetlb-fault.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{Map, read_file, read_u64, write_file};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;

/// The default huge page size this benchmark maps (x86-64's PMD).
pub const HUGE_PAGE: usize = 2 << 20;
const NR_HUGEPAGES: &str = "/proc/sys/vm/nr_hugepages";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HugetlbFault {
    pub tasks: u32,
    pub ops: u32,
    /// The mapping each operation faults in (a whole number of 2 MiB).
    pub size: Bytes,
}

impl Default for HugetlbFault {
    fn default() -> Self {
        HugetlbFault {
            tasks: 1,
            ops: 16,
            size: Bytes::mib(16),
        }
    }
}

impl HugetlbFault {
    /// The pool every task's mapping needs at once.
    pub fn pool_pages(&self) -> u64 {
        (self.size.get() / HUGE_PAGE as u64) * u64::from(self.tasks)
    }
}

impl Kind for HugetlbFault {
    fn describe(&self) -> String {
        format!("size={} pool={} pages", self.size, self.pool_pages())
    }
}

impl Bench for HugetlbFault {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_held("size", self.size, self.tasks, guest)?;
        if self.size.bytes() % HUGE_PAGE != 0 {
            return Err(ParamError::new(
                "size",
                self.size,
                "must be a whole number of 2 MiB huge pages",
            ));
        }
        Ok(())
    }

    fn prepare(&self) -> io::Result<()> {
        reserve_pool(self.pool_pages())
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        Ok(Box::new(Faulter {
            len: self.size.bytes(),
        }))
    }
}

/// Checks that the default huge page size is 2 MiB, and raises
/// `/proc/sys/vm/nr_hugepages` to `want` if the campaign's `hugepages=`
/// reserved fewer, reading it back.
pub fn reserve_pool(want: u64) -> io::Result<()> {
    let meminfo = read_file("/proc/meminfo")?;
    let size = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("Hugepagesize:"))
        .map(str::trim);
    if size != Some("2048 kB") {
        return Err(io::Error::other(format!(
            "the default huge page size is {size:?}, not 2048 kB (CONFIG_HUGETLBFS, default_hugepagesz=)"
        )));
    }
    if read_u64(NR_HUGEPAGES)? < want {
        write_file(NR_HUGEPAGES, &want.to_string())?;
    }
    let got = read_u64(NR_HUGEPAGES)?;
    if got < want {
        return Err(io::Error::other(format!(
            "reserved {got} of {want} huge pages in {NR_HUGEPAGES}; add hugepages={want} to the campaign's kernel.cmdline"
        )));
    }
    Ok(())
}

struct Faulter {
    len: usize,
}

impl Task for Faulter {
    fn op(&mut self) -> io::Result<()> {
        let mut map = Map::new(
            self.len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_HUGETLB,
            -1,
            0,
        )?;
        map.touch(HUGE_PAGE);
        map.unmap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_holds_every_tasks_mapping() {
        let bench = HugetlbFault {
            tasks: 2,
            ..HugetlbFault::default()
        };
        assert_eq!(bench.pool_pages(), 16);
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        assert!(bench.check(guest).is_ok());
        let odd = HugetlbFault {
            size: Bytes::mib(5),
            ..HugetlbFault::default()
        };
        assert_eq!(odd.check(guest).unwrap_err().param, "size");
    }
}
