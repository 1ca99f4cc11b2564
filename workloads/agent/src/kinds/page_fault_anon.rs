//! `page-fault-anon`: will-it-scale's page_fault1. Each operation maps
//! `size` of private anonymous memory, writes one byte in every page (a
//! write fault each: allocate, zero, charge, map), and unmaps it (free,
//! uncharge, TLB flush). With `page: thp` the mapping is aligned to 2 MiB
//! and advised MADV_HUGEPAGE, so each fault maps a huge page (`thp:
//! madvise` or `always` in the campaign); with `page: base` it is advised
//! MADV_NOHUGEPAGE. Spec: `workloads/page-fault-anon.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{Map, page_size, read_file};
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PageSize {
    #[default]
    Base,
    Thp,
}

impl PageSize {
    /// Private anonymous memory of `len` bytes in pages of this size:
    /// `base` advised MADV_NOHUGEPAGE; `thp` aligned to 2 MiB and advised
    /// MADV_HUGEPAGE, so that a huge page backs each 2 MiB of it where the
    /// campaign's `thp:` allows (madvise or always).
    pub fn map(self, len: usize) -> io::Result<Map> {
        let map = match self {
            PageSize::Base => Map::anon(len)?,
            PageSize::Thp => Map::anon_aligned(len, THP_SIZE)?,
        };
        map.advise(self.advice())?;
        Ok(map)
    }

    /// The madvise(2) advice that asks for pages of this size.
    pub fn advice(self) -> libc::c_int {
        match self {
            PageSize::Base => libc::MADV_NOHUGEPAGE,
            PageSize::Thp => libc::MADV_HUGEPAGE,
        }
    }

    /// With `thp`, `size` (the parameter `param`) must be whole huge pages.
    pub fn check(self, param: &'static str, size: Bytes) -> Result<(), ParamError> {
        if self == PageSize::Thp && size.bytes() % THP_SIZE != 0 {
            return Err(ParamError::new(
                param,
                size,
                "must be a whole number of 2 MiB huge pages with page: thp",
            ));
        }
        Ok(())
    }

    /// The bytes one page of this size spans.
    pub fn bytes(self) -> usize {
        match self {
            PageSize::Base => page_size(),
            PageSize::Thp => THP_SIZE,
        }
    }

    /// With `thp`, fails unless huge pages back at least `len` bytes of
    /// this process's anonymous memory (`/proc/self/smaps_rollup`'s
    /// AnonHugePages), so that a benchmark of huge pages does not time
    /// base pages where the campaign's `thp:` is `never`.
    pub fn check_backed(self, len: usize) -> io::Result<()> {
        if self == PageSize::Base {
            return Ok(());
        }
        let kib = anon_huge_kib()?;
        if kib * 1024 < len as u64 {
            return Err(io::Error::other(format!(
                "page: thp, but huge pages back {kib} KiB of the {len}-byte region (/proc/self/smaps_rollup AnonHugePages): the campaign's thp: must be madvise or always, and the guest 512 MiB or more"
            )));
        }
        Ok(())
    }

    /// ` page=thp` for a description, nothing for base pages (the default).
    pub fn describe(self) -> &'static str {
        match self {
            PageSize::Base => "",
            PageSize::Thp => " page=thp",
        }
    }
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
        self.page.check("size", self.size)
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
        let mut map = self.page.map(self.len)?;
        map.touch(page_size());
        map.unmap()
    }
}

/// The KiB of this process's anonymous memory that huge pages back
/// (`/proc/self/smaps_rollup`'s AnonHugePages).
pub fn anon_huge_kib() -> io::Result<u64> {
    read_file("/proc/self/smaps_rollup")?
        .lines()
        .find_map(|l| l.strip_prefix("AnonHugePages:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| io::Error::other("/proc/self/smaps_rollup has no AnonHugePages line"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_pages_must_back_a_thp_region_and_sizes_must_be_whole() {
        // No process has a TiB of huge pages: refused, and the message
        // names the campaign setting to change.
        let err = PageSize::Thp.check_backed(1 << 40).unwrap_err();
        assert!(
            err.to_string().contains("thp: must be madvise or always"),
            "{err}"
        );
        PageSize::Base.check_backed(1 << 40).unwrap();
        assert_eq!(
            PageSize::Thp
                .check("size", Bytes::mib(3))
                .unwrap_err()
                .param,
            "size"
        );
        PageSize::Thp.check("size", Bytes::mib(4)).unwrap();
        PageSize::Base.check("size", Bytes::mib(3)).unwrap();
        assert_eq!(PageSize::Thp.bytes(), THP_SIZE);
    }
}
