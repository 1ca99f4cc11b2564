//! `mremap`: moving a populated anonymous region with
//! mremap(MREMAP_MAYMOVE | MREMAP_FIXED), after the kernel's
//! tools/testing/selftests/mm/mremap_test.c, whose timed cases move a
//! populated region to a fixed address at page, PMD and PUD alignment
//! (`remap_region`).
//!
//! Each task reserves address space (PROT_NONE), maps `size` of private
//! anonymous memory at a 2 MiB aligned address A inside it, advised
//! MADV_NOHUGEPAGE, writes every page, and leaves a hole of `size` at a
//! second address B further up, all untimed; the reservation around both
//! keeps other mappings from merging with the region. Each operation
//! moves the region from A to B and back. With `align: pmd` B is 2 MiB
//! aligned too, so every whole page table moves at once (a PMD entry
//! each); with `align: page` B is one page past a 2 MiB boundary, so every
//! page table entry moves on its own. With `page: thp` the region is
//! advised MADV_HUGEPAGE instead, and the task fails before its window
//! unless huge pages back all of it: with `align: pmd` each huge page then
//! moves as one PMD entry (move_huge_pmd). Spec: `workloads/mremap.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use super::page_fault_anon::{PageSize, THP_SIZE};
use crate::bench::sys::{Map, last, page_size};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;

/// The span of one page table (x86-64's PMD).
const PMD: usize = THP_SIZE;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Mremap {
    pub tasks: u32,
    pub ops: u32,
    /// The populated region each operation moves there and back.
    pub size: Bytes,
    /// The destination's alignment: `pmd` (whole page tables move) or
    /// `page` (page table entries move one by one).
    pub align: Align,
    /// The region's pages: base, or THP.
    pub page: PageSize,
}

/// [`Mremap::align`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Align {
    Pmd,
    Page,
}

impl Default for Mremap {
    fn default() -> Self {
        Mremap {
            tasks: 1,
            ops: 16384,
            size: Bytes::mib(16),
            align: Align::Pmd,
            page: PageSize::Base,
        }
    }
}

impl Kind for Mremap {
    fn describe(&self) -> String {
        format!(
            "size={} align={:?}{}",
            self.size,
            self.align,
            self.page.describe()
        )
    }
}

impl Bench for Mremap {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_held("size", self.size, self.tasks, guest)?;
        let unit = match self.align {
            Align::Pmd => PMD as u64,
            Align::Page => 4096,
        };
        if self.size.get() % unit != 0 {
            return Err(ParamError::new(
                "size",
                self.size,
                format!(
                    "must be a whole number of {} with align: {:?}",
                    Bytes(unit),
                    self.align
                ),
            ));
        }
        self.page.check("size", self.size)
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        Ok(Box::new(Mover::new(
            self.size.bytes(),
            self.align,
            self.page,
        )?))
    }
}

struct Mover {
    /// The reservation holding both addresses; dropping it unmaps the
    /// region wherever it is.
    _reserved: Map,
    a: usize,
    b: usize,
    len: usize,
}

impl Mover {
    fn new(len: usize, align: Align, size: PageSize) -> io::Result<Mover> {
        let span = len.next_multiple_of(PMD);
        // A PMD of slack to align A, a PMD below A and between the two
        // ranges, and a PMD above B (its page of offset included).
        let reserved = Map::new(
            2 * span + 4 * PMD,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )?;
        let a = (reserved.ptr as usize).next_multiple_of(PMD) + PMD;
        let b = a
            + span
            + PMD
            + match align {
                Align::Pmd => 0,
                Align::Page => page_size(),
            };
        // SAFETY: A's range is inside the reservation, which is ours.
        let at = unsafe {
            libc::mmap(
                a as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if at != a as *mut libc::c_void {
            return Err(last("mmap of the region at A"));
        }
        let mover = Mover {
            _reserved: reserved,
            a,
            b,
            len,
        };
        // SAFETY: the region just mapped at A, and B's range inside the
        // reservation, left a hole so that every move lands in one.
        unsafe {
            let advice = size.advice();
            if libc::madvise(a as *mut libc::c_void, len, advice) != 0 {
                return Err(last(&format!("madvise({advice}) of the region")));
            }
            let mut off = 0;
            while off < len {
                ((a + off) as *mut u8).write_volatile(1);
                off += page_size();
            }
            if libc::munmap(b as *mut libc::c_void, len) != 0 {
                return Err(last("munmap of B's range"));
            }
        }
        size.check_backed(len)?;
        Ok(mover)
    }

    fn moved(&self, from: usize, to: usize) -> io::Result<()> {
        // SAFETY: the region is at `from` and `to`'s range is a hole in
        // this task's reservation.
        let at = unsafe {
            libc::mremap(
                from as *mut libc::c_void,
                self.len,
                self.len,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                to as *mut libc::c_void,
            )
        };
        if at != to as *mut libc::c_void {
            return Err(last(&format!("mremap of {} bytes", self.len)));
        }
        Ok(())
    }
}

impl Task for Mover {
    fn op(&mut self) -> io::Result<()> {
        self.moved(self.a, self.b)?;
        self.moved(self.b, self.a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_region_moves_there_and_back_with_its_contents() {
        for align in [Align::Pmd, Align::Page] {
            let mut task = Mover::new(4 << 20, align, PageSize::Base).unwrap();
            assert!(task.b > task.a);
            assert!(task.b + task.len <= task._reserved.ptr as usize + task._reserved.len);
            assert_eq!(task.a % PMD, 0);
            assert_eq!(task.b % PMD == 0, align == Align::Pmd);
            for _ in 0..3 {
                task.op().unwrap();
            }
            // SAFETY: the region is back at A, populated with ones.
            let first = unsafe { (task.a as *const u8).read_volatile() };
            assert_eq!(first, 1, "{align:?}");
        }
    }

    #[test]
    fn a_pmd_aligned_move_is_whole_page_tables() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        assert!(Mremap::default().check(guest).is_ok());
        let odd = Mremap {
            size: Bytes::mib(3),
            ..Mremap::default()
        };
        assert_eq!(odd.check(guest).unwrap_err().param, "size");
        let paged = Mremap {
            align: Align::Page,
            ..odd
        };
        assert!(paged.check(guest).is_ok());
    }
}
