//! `hugetlb-pool`: the hugetlb pool grown and shrunk through
//! `/proc/sys/vm/nr_hugepages`, as vm-scalability's case-hugetlb does
//! (it writes a third of memory's worth of huge pages to nr_hugepages,
//! then 0), with the pool's pages used in between through a hugetlbfs
//! file, as the kernel's hugetlbfs selftests and fallocate users (QEMU's
//! memory backends) use them.
//!
//! Each operation:
//! 1. writes `pages` to nr_hugepages: the pool grows by that many fresh
//!    2 MiB pages from the buddy allocator (with `optimize_vmemmap`, each
//!    page's struct-page array is remapped to free most of it: HVO,
//!    mm/hugetlb_vmemmap.c), and reads it back;
//! 2. creates a file on a hugetlbfs mount, fallocates the whole pool into
//!    it (each page taken from the pool, zeroed, added to the file's page
//!    cache), maps it shared and writes one byte in each huge page (a
//!    hugetlb fault that finds the page in the file), unmaps it, truncates
//!    the file to 0 (every page back to the pool) and closes it (it was
//!    unlinked when made);
//! 3. writes 0 to nr_hugepages: every page is freed to the buddy
//!    allocator (its vmemmap restored first with HVO), and reads it back.
//!
//! One task: the pool is the kernel's. Once per boot, untimed: hugetlbfs
//! is mounted, the pool checked empty (the campaign reserves none), and
//! `vm.hugetlb_optimize_vmemmap` set to `optimize_vmemmap`. Spec:
//! `workloads/hugetlb-pool.yaml`.

use std::io;
use std::os::fd::AsRawFd;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{self, Map, mount_once, read_u64, scratch_file, write_file};
use crate::bench::{Bench, GuestSize, Load, ParamError, Task, check_one_task};
use crate::kind::Kind;
use crate::kinds::hugetlb_fault::HUGE_PAGE;

const NR_HUGEPAGES: &str = "/proc/sys/vm/nr_hugepages";
const OPTIMIZE_VMEMMAP: &str = "/proc/sys/vm/hugetlb_optimize_vmemmap";
/// Where hugetlbfs is mounted.
pub const MOUNT: &str = "/run/patchbench-hugetlbfs";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HugetlbPool {
    pub tasks: u32,
    pub ops: u32,
    /// 2 MiB pages the pool grows by and shrinks by each operation.
    pub pages: u32,
    /// HVO: free most of each huge page's struct pages while it is in
    /// the pool.
    pub optimize_vmemmap: bool,
}

impl Default for HugetlbPool {
    fn default() -> Self {
        HugetlbPool {
            tasks: 1,
            ops: 4,
            pages: 32,
            optimize_vmemmap: false,
        }
    }
}

impl Kind for HugetlbPool {
    fn describe(&self) -> String {
        format!(
            "pages={} ({} MiB){}",
            self.pages,
            u64::from(self.pages) * (HUGE_PAGE as u64 >> 20),
            if self.optimize_vmemmap {
                " optimize_vmemmap"
            } else {
                ""
            }
        )
    }
}

impl Bench for HugetlbPool {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_one_task(
            self.tasks,
            "the hugetlb pool is the kernel's, and two tasks would size it against each other",
        )?;
        // vm-scalability's case-hugetlb takes a third of memory.
        let most = guest.memory / 3 / HUGE_PAGE as u64;
        if self.pages == 0 || u64::from(self.pages) > most {
            return Err(ParamError::new(
                "pages",
                self.pages,
                format!(
                    "must be 1 to {most}: a third of the guest's memory at most, as case-hugetlb takes"
                ),
            ));
        }
        Ok(())
    }

    fn prepare(&self) -> io::Result<()> {
        mount_once("none", MOUNT, "hugetlbfs", 0, None)?;
        let pool = read_u64(NR_HUGEPAGES)?;
        if pool != 0 {
            return Err(io::Error::other(format!(
                "{NR_HUGEPAGES} reads {pool} at the start: this benchmark grows the pool from empty, so the campaign must reserve none (no hugepages= on its command line)"
            )));
        }
        write_file(
            OPTIMIZE_VMEMMAP,
            if self.optimize_vmemmap { "1" } else { "0" },
        )
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        Ok(Box::new(Pool {
            pages: u64::from(self.pages),
        }))
    }
}

struct Pool {
    pages: u64,
}

/// Sets the pool's size and checks the kernel made it so.
fn resize(pages: u64) -> io::Result<()> {
    write_file(NR_HUGEPAGES, &pages.to_string())?;
    let got = read_u64(NR_HUGEPAGES)?;
    if got != pages {
        return Err(io::Error::other(format!(
            "{NR_HUGEPAGES} reads {got} after writing {pages}: the buddy allocator had too few free 2 MiB blocks"
        )));
    }
    Ok(())
}

impl Task for Pool {
    fn op(&mut self) -> io::Result<()> {
        resize(self.pages)?;
        let path = format!("{MOUNT}/pool");
        let file = scratch_file(&path)?;
        let len = self.pages as usize * HUGE_PAGE;
        // SAFETY: a descriptor this task owns.
        if unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len as i64) } != 0 {
            return Err(sys::last(&format!("fallocate of {len} bytes on hugetlbfs")));
        }
        let mut map = Map::new(
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )?;
        map.touch(HUGE_PAGE);
        map.unmap()?;
        file.set_len(0)?;
        drop(file);
        resize(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_task_and_a_third_of_memory_at_most() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        assert!(HugetlbPool::default().check(guest).is_ok());
        let two = HugetlbPool {
            tasks: 2,
            ..HugetlbPool::default()
        };
        assert_eq!(two.check(guest).unwrap_err().param, "tasks");
        // A third of 1 GiB is 170 pages of 2 MiB.
        let most = HugetlbPool {
            pages: 170,
            ..HugetlbPool::default()
        };
        assert!(most.check(guest).is_ok());
        let over = HugetlbPool { pages: 171, ..most };
        assert_eq!(over.check(guest).unwrap_err().param, "pages");
    }
}
