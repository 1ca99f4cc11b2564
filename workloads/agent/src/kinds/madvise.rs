//! `madvise`: populate, then advise. will-it-scale has no madvise
//! testcase (its tlb_flush1 calls MADV_DONTNEED a page at a time); this
//! follows the MADV_* semantics of madvise(2) with page_fault1's shape:
//! each task maps `size` of private anonymous memory, advised
//! MADV_NOHUGEPAGE, untimed; each operation writes one byte in every page
//! (the first operation's writes fault every page in, as page_fault1's)
//! and applies `advice` to the whole mapping:
//! - `dontneed`: MADV_DONTNEED zaps and frees every page, so the next
//!   operation's writes fault in zeroed pages again;
//! - `free`: MADV_FREE marks every page lazily freeable (clean, on the
//!   file LRU); with memory to spare nothing reclaims them, so the next
//!   writes only dirty them again, without a fault;
//! - `cold`: MADV_COLD deactivates every page, which stays mapped;
//! - `pageout`: MADV_PAGEOUT reclaims every page to swap (zram, twice
//!   every task's mapping), so the next writes swap each page back in.
//!
//! With `page: thp` the mapping is 2 MiB aligned and advised
//! MADV_HUGEPAGE instead, and written once before the window, which fails
//! unless huge pages back all of it: each advice then meets huge PMDs
//! (DONTNEED zaps them, FREE marks the huge pages lazily freeable whole).
//!
//! Spec: `workloads/madvise.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{Map, page_size};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;
use crate::kinds::page_fault_anon::PageSize;
use crate::memory::SwapBackend;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Madvise {
    pub tasks: u32,
    pub ops: u32,
    /// The mapping each operation writes and advises.
    pub size: Bytes,
    /// The advice each operation gives the whole mapping.
    pub advice: Advice,
    /// The mapping's pages: base, or THP.
    pub page: PageSize,
}

/// [`Madvise::advice`]: MADV_DONTNEED, MADV_FREE, MADV_COLD or
/// MADV_PAGEOUT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Advice {
    Dontneed,
    Free,
    Cold,
    Pageout,
}

impl Advice {
    fn flag(self) -> libc::c_int {
        match self {
            Advice::Dontneed => libc::MADV_DONTNEED,
            Advice::Free => libc::MADV_FREE,
            Advice::Cold => libc::MADV_COLD,
            Advice::Pageout => libc::MADV_PAGEOUT,
        }
    }
}

impl Default for Madvise {
    fn default() -> Self {
        Madvise {
            tasks: 1,
            ops: 16,
            size: Bytes::mib(16),
            advice: Advice::Dontneed,
            page: PageSize::Base,
        }
    }
}

impl Kind for Madvise {
    /// MADV_PAGEOUT needs a swap device; zram keeps the host's disk out of
    /// the window. The other advice needs none: the job's disk is set up
    /// as for any kind, and left alone.
    fn swap_backend(&self) -> SwapBackend {
        match self.advice {
            Advice::Pageout => SwapBackend::Zram,
            Advice::Dontneed | Advice::Free | Advice::Cold => SwapBackend::Disk,
        }
    }

    /// Room for every task's mapping twice over: all of it is paged out
    /// at once, and the swap allocator leaves slots unused (the header's
    /// page, each CPU's part-used cluster). Unwritten, zram costs nothing.
    fn zram_bytes(&self) -> u64 {
        match self.advice {
            Advice::Pageout => self
                .size
                .get()
                .saturating_mul(2)
                .saturating_mul(u64::from(self.tasks)),
            Advice::Dontneed | Advice::Free | Advice::Cold => 0,
        }
    }

    fn describe(&self) -> String {
        format!(
            "size={} advice={:?}{}",
            self.size,
            self.advice,
            self.page.describe()
        )
    }
}

impl Bench for Madvise {
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
        Ok(Box::new(Adviser::new(
            self.size.bytes(),
            self.advice,
            self.page,
        )?))
    }
}

struct Adviser {
    map: Map,
    advice: libc::c_int,
    page: usize,
}

impl Adviser {
    fn new(len: usize, advice: Advice, size: PageSize) -> io::Result<Adviser> {
        let mut map = size.map(len)?;
        let page = page_size();
        if size == PageSize::Thp {
            map.touch(page);
            size.check_backed(len)?;
        }
        Ok(Adviser {
            map,
            advice: advice.flag(),
            page,
        })
    }
}

impl Task for Adviser {
    fn op(&mut self) -> io::Result<()> {
        self.map.touch(self.page);
        self.map.advise(self.advice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_advice_is_given_after_the_writes() {
        for advice in [
            Advice::Dontneed,
            Advice::Free,
            Advice::Cold,
            Advice::Pageout,
        ] {
            let mut task = Adviser::new(256 << 10, advice, PageSize::Base).unwrap();
            for _ in 0..3 {
                task.op().unwrap();
            }
            if advice == Advice::Dontneed {
                assert_eq!(task.map.read(task.page), 0, "zapped: zero pages");
            }
        }
    }

    #[test]
    fn only_pageout_swaps_on_zram_sized_to_every_task() {
        let pageout = Madvise {
            tasks: 2,
            advice: Advice::Pageout,
            ..Madvise::default()
        };
        assert_eq!(pageout.swap_backend(), SwapBackend::Zram);
        assert_eq!(pageout.zram_bytes(), 64 << 20);
        assert_eq!(Madvise::default().swap_backend(), SwapBackend::Disk);
        assert_eq!(Madvise::default().zram_bytes(), 0);
    }
}
