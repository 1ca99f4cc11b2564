//! `page-fault-anon`: will-it-scale's page_fault1. Each operation maps
//! `size` of private anonymous memory, writes one byte in every page (a
//! write fault each: allocate, zero, charge, map), and unmaps it (free,
//! uncharge, TLB flush). With `page: thp` the mapping is aligned to 2 MiB
//! and advised MADV_HUGEPAGE, so each fault maps a huge page (`thp:
//! madvise` or `always` in the campaign); with `page: base` it is advised
//! MADV_NOHUGEPAGE. Spec: `workloads/page-fault-anon.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{Map, page_size};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;

/// The huge page size the `thp` page size aligns to (x86-64's PMD).
pub const THP_SIZE: usize = 2 << 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PageFaultAnon {
    pub tasks: u32,
    pub ops: u32,
    /// The mapping each operation faults in and unmaps.
    pub size: Bytes,
    /// `base` pages (MADV_NOHUGEPAGE) or `thp` (2 MiB aligned,
    /// MADV_HUGEPAGE).
    pub page: PageSize,
}

/// The page size a fault maps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PageSize {
    Base,
    Thp,
}

impl Default for PageFaultAnon {
    fn default() -> Self {
        PageFaultAnon {
            tasks: 1,
            ops: 16,
            size: Bytes::mib(16),
            page: PageSize::Base,
        }
    }
}

impl Kind for PageFaultAnon {
    fn describe(&self) -> String {
        format!("size={} page={:?}", self.size, self.page)
    }
}

impl Bench for PageFaultAnon {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_held("size", self.size, self.tasks, guest)?;
        if self.page == PageSize::Thp && self.size.bytes() % THP_SIZE != 0 {
            return Err(ParamError::new(
                "size",
                self.size,
                "must be a whole number of 2 MiB huge pages with page: thp",
            ));
        }
        Ok(())
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        Ok(Box::new(Faulter {
            len: self.size.bytes(),
            page: self.page,
        }))
    }
}

struct Faulter {
    len: usize,
    page: PageSize,
}

impl Task for Faulter {
    fn op(&mut self) -> io::Result<()> {
        let mut map = match self.page {
            PageSize::Base => {
                let map = Map::anon(self.len)?;
                map.advise(libc::MADV_NOHUGEPAGE)?;
                map
            }
            PageSize::Thp => {
                let map = Map::anon_aligned(self.len, THP_SIZE)?;
                map.advise(libc::MADV_HUGEPAGE)?;
                map
            }
        };
        map.touch(page_size());
        map.unmap()
    }
}
