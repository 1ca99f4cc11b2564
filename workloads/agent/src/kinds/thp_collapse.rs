//! `thp-collapse`: MADV_COLLAPSE of base-page memory into huge pages, as
//! the kernel's selftest `tools/testing/selftests/mm/khugepaged.c` does in
//! its `collapse_full` test (madvise context): a region of 4 huge pages'
//! size, fully populated with base pages, collapsed by one
//! `madvise(MADV_COLLAPSE)`, retried once if it fails with EAGAIN.
//!
//! Each operation maps `size` aligned to 2 MiB with no advice, writes one
//! word in every page (base-page faults: under `thp: madvise` an unadvised
//! region gets no huge pages, and khugepaged does not scan it), collapses
//! it with MADV_COLLAPSE (Linux 6.1+: for each 2 MiB, allocate a huge
//! page, copy the 512 pages into it, map it by its PMD and free them) and
//! unmaps it. MADV_COLLAPSE is synchronous, so the window holds the
//! collapse; khugepaged's own scan would run after it. It succeeds only if
//! every 2 MiB was collapsed; a failure fails the operation. Spec:
//! `workloads/thp-collapse.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use super::page_fault_anon::THP_SIZE;
use crate::bench::sys::{Map, last, page_size, read_file};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;

const ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/enabled";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ThpCollapse {
    pub tasks: u32,
    pub ops: u32,
    /// The region each operation faults in and collapses (a whole number
    /// of 2 MiB).
    pub size: Bytes,
}

impl Default for ThpCollapse {
    fn default() -> Self {
        ThpCollapse {
            tasks: 1,
            ops: 8,
            size: Bytes::mib(8),
        }
    }
}

impl Kind for ThpCollapse {
    fn describe(&self) -> String {
        format!("size={}", self.size)
    }
}

impl Bench for ThpCollapse {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_held("size", self.size, self.tasks, guest)?;
        if self.size.bytes() % THP_SIZE != 0 {
            return Err(ParamError::new(
                "size",
                self.size,
                "must be a whole number of 2 MiB huge pages",
            ));
        }
        Ok(())
    }

    /// Refuses `thp: always`, under which the faults would map huge pages
    /// already and leave nothing to collapse.
    fn prepare(&self) -> io::Result<()> {
        let mode = read_file(ENABLED)?;
        if mode.contains("[always]") {
            return Err(io::Error::other(format!(
                "{ENABLED} reads {mode:?}: the faults would map huge pages already; run with thp: madvise or never"
            )));
        }
        Ok(())
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        Ok(Box::new(Collapser {
            len: self.size.bytes(),
        }))
    }
}

struct Collapser {
    len: usize,
}

impl Task for Collapser {
    fn op(&mut self) -> io::Result<()> {
        let mut map = Map::anon_aligned(self.len, THP_SIZE)?;
        map.touch(page_size());
        collapse(&map)?;
        map.unmap()
    }
}

/// MADV_COLLAPSE of the whole mapping, retried once on EAGAIN as the
/// selftest does (a resource the collapse needed was busy for a moment).
fn collapse(map: &Map) -> io::Result<()> {
    for attempt in 0..2 {
        // SAFETY: the whole mapping.
        let ret = unsafe { libc::madvise(map.ptr.cast(), map.len, libc::MADV_COLLAPSE) };
        if ret == 0 {
            return Ok(());
        }
        let busy = io::Error::last_os_error().raw_os_error() == Some(libc::EAGAIN);
        if !busy || attempt == 1 {
            return Err(last(&format!("MADV_COLLAPSE of {} bytes", map.len)));
        }
    }
    unreachable!("the second attempt returns")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_region_is_whole_huge_pages() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        assert!(ThpCollapse::default().check(guest).is_ok());
        let odd = ThpCollapse {
            size: Bytes::mib(3),
            ..ThpCollapse::default()
        };
        assert_eq!(odd.check(guest).unwrap_err().param, "size");
    }

    #[test]
    fn an_operation_collapses_its_region_on_this_host() {
        let mut task = ThpCollapse::default().task(0).unwrap();
        for _ in 0..2 {
            task.op().unwrap();
        }
    }
}
