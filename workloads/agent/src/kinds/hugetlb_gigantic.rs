//! `hugetlb-gigantic`: 1 GiB hugetlb pages allocated at run time, as
//! libhugetlbfs's `hugeadm --pool-pages-min 1G:1` and DPDK's and QEMU's
//! set-up scripts allocate them (a write to the size's `nr_hugepages`
//! under /sys/kernel/mm/hugepages), and demoted to 2 MiB pages, as the
//! kernel's `demote` file (Documentation/admin-guide/mm/hugetlbpage.rst)
//! lets an administrator split a gigantic page the pool no longer needs.
//!
//! A gigantic page is larger than the buddy allocator's largest block, so
//! the kernel takes it with `alloc_contig_pages()` (mm/page_alloc.c): it
//! scans each zone for a free, aligned 1 GiB range, isolates its
//! pageblocks (mm/page_isolation.c), migrates or reclaims whatever the
//! range still holds and takes its free pages; freeing it gives the range
//! back with `free_contig_range()`. No other workload allocates outside
//! the buddy allocator's orders.
//!
//! Each operation:
//! 1. writes 1 to the 1 GiB size's `nr_hugepages` and checks the pool
//!    holds the page, then writes 0 and checks it is gone (the range back
//!    to the buddy allocator);
//! 2. allocates it again through `nr_hugepages_mempolicy` (the same pool,
//!    allocated under the task's memory policy), writes `2048kB` to
//!    `demote_size` and 1 to `demote`: the gigantic page becomes 512 free
//!    2 MiB pages, which the task checks in the 2 MiB size's
//!    `nr_hugepages`, and then frees by writing 0 there.
//!
//! One task: the pool is the kernel's. Once per boot, untimed, the agent
//! checks the 1 GiB size exists (CONFIG_CONTIG_ALLOC, which COMPACTION and
//! MEMORY_ISOLATION give, and a CPU with 1 GiB pages: QEMU's `-cpu max`
//! has pdpe1gb) and that both pools are empty. Spec:
//! `workloads/hugetlb-gigantic.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{read_u64, write_file};
use crate::bench::{Bench, GuestSize, Load, ParamError, Task, check_one_task};
use crate::kind::Kind;

const GIGANTIC: &str = "/sys/kernel/mm/hugepages/hugepages-1048576kB";
pub(crate) const HUGE: &str = "/sys/kernel/mm/hugepages/hugepages-2048kB";
/// 2 MiB pages in one 1 GiB page.
const DEMOTED: u64 = 512;
/// The least guest memory that leaves a whole aligned 1 GiB range free
/// after boot. On q35, RAM beyond 2 GiB starts at 4 GiB; the kernel's
/// early allocations (memblock, top-down) take the highest 1 GiB range and
/// the boot's own pages the lowest one above 4 GiB, and below 4 GiB the
/// kernel image and the PCI hole's edge break every range. Measured: with
/// 4 GiB no page was allocated, with 6 GiB every one was. The check reads
/// MemTotal, which a 6 GiB guest shows as about 5.8 GiB and a 5 GiB one
/// as less than 5 GiB.
const LEAST_MEMORY: u64 = 5 << 30;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HugetlbGigantic {
    pub tasks: u32,
    pub ops: u32,
}

impl Default for HugetlbGigantic {
    fn default() -> Self {
        HugetlbGigantic { tasks: 1, ops: 4 }
    }
}

impl Kind for HugetlbGigantic {
    fn describe(&self) -> String {
        "one 1 GiB page allocated, freed, allocated, demoted".to_string()
    }
}

impl Bench for HugetlbGigantic {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_one_task(
            self.tasks,
            "the hugetlb pools are the kernel's, and two tasks would size them against each other",
        )?;
        if guest.memory < LEAST_MEMORY {
            return Err(ParamError::new(
                "memory",
                format!("{} MiB", guest.memory >> 20),
                "is too little: the campaign's vm.memory must be 6 GiB at least, as less leaves no whole aligned 1 GiB range free after boot",
            ));
        }
        Ok(())
    }

    fn prepare(&self) -> io::Result<()> {
        if !std::path::Path::new(GIGANTIC).exists() {
            return Err(io::Error::other(format!(
                "{GIGANTIC} is missing: this kernel has no 1 GiB hugetlb size (it needs CONFIG_CONTIG_ALLOC, and a CPU with 1 GiB pages, pdpe1gb)"
            )));
        }
        for dir in [GIGANTIC, HUGE] {
            let pool = read_u64(format!("{dir}/nr_hugepages"))?;
            if pool != 0 {
                return Err(io::Error::other(format!(
                    "{dir}/nr_hugepages reads {pool} at the start: this benchmark grows the pools from empty, so the campaign must reserve none (no hugepages= on its command line)"
                )));
            }
        }
        Ok(())
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        Ok(Box::new(Gigantic))
    }
}

struct Gigantic;

/// Writes `pages` to `dir`'s `file` and checks `dir`'s nr_hugepages reads
/// `expect` after.
pub(crate) fn set(dir: &str, file: &str, pages: u64, expect: u64) -> io::Result<()> {
    write_file(format!("{dir}/{file}"), &pages.to_string())?;
    let got = read_u64(format!("{dir}/nr_hugepages"))?;
    if got != expect {
        return Err(io::Error::other(format!(
            "{dir}/nr_hugepages reads {got} after writing {pages} to {file}, where {expect} was due{}",
            if expect > got && dir == GIGANTIC {
                ": alloc_contig_pages() found no free 1 GiB range"
            } else {
                ""
            }
        )));
    }
    Ok(())
}

impl Task for Gigantic {
    fn op(&mut self) -> io::Result<()> {
        set(GIGANTIC, "nr_hugepages", 1, 1)?;
        set(GIGANTIC, "nr_hugepages", 0, 0)?;
        set(GIGANTIC, "nr_hugepages_mempolicy", 1, 1)?;
        write_file(format!("{GIGANTIC}/demote_size"), "2048kB")?;
        set(GIGANTIC, "demote", 1, 0)?;
        let huge = read_u64(format!("{HUGE}/nr_hugepages"))?;
        if huge != DEMOTED {
            return Err(io::Error::other(format!(
                "{HUGE}/nr_hugepages reads {huge} after demoting one 1 GiB page, not {DEMOTED}"
            )));
        }
        set(HUGE, "nr_hugepages", 0, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_task_and_a_six_gib_guest() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: LEAST_MEMORY,
        };
        assert!(HugetlbGigantic::default().check(guest).is_ok());
        let two = HugetlbGigantic {
            tasks: 2,
            ..HugetlbGigantic::default()
        };
        assert_eq!(two.check(guest).unwrap_err().param, "tasks");
        let small = GuestSize {
            memory: (5 << 30) - 1,
            ..guest
        };
        assert_eq!(
            HugetlbGigantic::default().check(small).unwrap_err().param,
            "memory"
        );
    }
}
