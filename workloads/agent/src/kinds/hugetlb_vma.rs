//! `hugetlb-vma`: the VMA operations on a hugetlb mapping that the
//! kernel's hugetlb selftests make one by one (tools/testing/selftests/mm:
//! hugetlb-mremap.c moves a mapping, hugetlb-madvise.c zaps pages with
//! MADV_DONTNEED, hugetlb_fault_after_madv.c faults them back,
//! protection_keys and mprotect tests change protection, and
//! hugetlb-read-hwpoison / the fork tests copy a private mapping into a
//! child), in one operation over populated memory: the code of
//! mm/hugetlb.c beside the fault and the pool, which `hugetlb-fault` and
//! `hugetlb-pool` run.
//!
//! Once per boot the pool is reserved as `hugetlb-fault` reserves it, for
//! every task's mapping and one page more each (the child's copy on
//! write). Each operation of a task maps `size` with MAP_PRIVATE |
//! MAP_ANONYMOUS | MAP_HUGETLB and writes each 2 MiB page; forks a child
//! that checks the first page's word and writes the last page (a hugetlb
//! copy on write: a page from the pool, 2 MiB copied) and exits; moves the
//! mapping elsewhere with mremap(2) (its page tables moved) and checks a
//! word; makes its first half read-only and the whole read-write again
//! (the VMA split, each page table entry changed; hugetlb VMAs are never
//! merged back, as VM_DONTEXPAND keeps them apart); zaps its first page
//! with MADV_DONTNEED and faults it back; and unmaps it. Spec: `workloads/hugetlb-vma.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use super::hugetlb_fault::{HUGE_PAGE, reserve_pool};
use crate::bench::sys::{Map, fork_child, last, wait_ok};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;

/// The word each huge page's first bytes hold.
const WORD: u64 = 0x6875_6765_746c_6221;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HugetlbVma {
    pub tasks: u32,
    pub ops: u32,
    /// The mapping each operation populates and works on (a whole, even
    /// number of 2 MiB).
    pub size: Bytes,
}

impl Default for HugetlbVma {
    fn default() -> Self {
        HugetlbVma {
            tasks: 1,
            ops: 8,
            size: Bytes::mib(8),
        }
    }
}

impl HugetlbVma {
    /// The pool every task needs at once: its mapping, and its child's
    /// copy of one page.
    pub fn pool_pages(&self) -> u64 {
        (self.size.get() / HUGE_PAGE as u64 + 1) * u64::from(self.tasks)
    }
}

impl Kind for HugetlbVma {
    fn describe(&self) -> String {
        format!("size={} pool={} pages", self.size, self.pool_pages())
    }
}

impl Bench for HugetlbVma {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_held("size", self.size, self.tasks, guest)?;
        if self.size.bytes() % (2 * HUGE_PAGE) != 0 {
            return Err(ParamError::new(
                "size",
                self.size,
                "must be a whole, even number of 2 MiB huge pages (the first half is protected apart)",
            ));
        }
        Ok(())
    }

    fn prepare(&self) -> io::Result<()> {
        reserve_pool(self.pool_pages())
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        Ok(Box::new(Worker {
            len: self.size.bytes(),
        }))
    }
}

struct Worker {
    len: usize,
}

/// The word at `offset` of the mapping at `ptr`.
fn word_at(ptr: *mut u8, offset: usize) -> u64 {
    // SAFETY: callers pass an offset inside a live, readable mapping,
    // aligned to a huge page.
    unsafe { ptr.add(offset).cast::<u64>().read_volatile() }
}

impl Task for Worker {
    fn op(&mut self) -> io::Result<()> {
        let mut map = Map::new(
            self.len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_HUGETLB,
            -1,
            0,
        )?;
        for off in (0..self.len).step_by(HUGE_PAGE) {
            // SAFETY: inside the writable mapping, aligned.
            unsafe { map.ptr.add(off).cast::<u64>().write_volatile(WORD) };
        }
        let (ptr, len) = (map.ptr, self.len);
        let child = fork_child(move || {
            if word_at(ptr, 0) != WORD {
                return Err(io::Error::other(
                    "the child's copy of the first huge page lost its word",
                ));
            }
            // SAFETY: the child's private copy of the mapping, writable.
            unsafe { ptr.add(len - HUGE_PAGE).cast::<u64>().write_volatile(!WORD) };
            Ok(())
        })?;
        wait_ok(child)?;
        if word_at(map.ptr, self.len - HUGE_PAGE) != WORD {
            return Err(io::Error::other(
                "the child's write to its copy of the last huge page reached the parent's",
            ));
        }
        // A huge-page-aligned place to move to, as hugetlb-mremap.c
        // reserves one; the move replaces it.
        let mut place = Map::anon_aligned(self.len, HUGE_PAGE)?;
        // SAFETY: moves the whole mapping onto `place`, which is then
        // forgotten; `map` names the mapping at its new address.
        let moved = unsafe {
            libc::mremap(
                map.ptr.cast(),
                self.len,
                self.len,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                place.ptr.cast::<libc::c_void>(),
            )
        };
        if moved == libc::MAP_FAILED {
            return Err(last("mremap of the hugetlb mapping"));
        }
        place.len = 0;
        map.ptr = moved.cast();
        if word_at(map.ptr, HUGE_PAGE) != WORD {
            return Err(io::Error::other(
                "the second huge page lost its word when mremap moved the mapping",
            ));
        }
        // Last before the zap: mremap cannot move a mapping of two VMAs,
        // and hugetlb's are never merged back (VM_DONTEXPAND).
        map.protect(0, self.len / 2, libc::PROT_READ)?;
        map.protect(0, self.len, libc::PROT_READ | libc::PROT_WRITE)?;
        map.advise_range(0, HUGE_PAGE, libc::MADV_DONTNEED)?;
        if word_at(map.ptr, 0) != 0 {
            return Err(io::Error::other(
                "the first huge page kept its word through MADV_DONTNEED",
            ));
        }
        map.unmap()
    }
}
