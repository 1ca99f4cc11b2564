//! `fork-cow`: fork, then copy-on-write in the child. It follows
//! vm-scalability's case-anon-cow-seq (`usemem --prealloc --prefault`: the
//! parent maps and populates private anonymous memory, then forked
//! children write all of it, each page a COW fault), with the fork itself
//! in the window as vm-scalability's case-fork times forks.
//!
//! Each task maps `size` of private anonymous memory, advised
//! MADV_NOHUGEPAGE (with `page: thp`, 2 MiB aligned and advised
//! MADV_HUGEPAGE: the fork copies huge PMDs, and the child's first write
//! to each huge page splits its PMD before the base-page copy), and writes
//! every page, untimed. Each operation forks
//! a child, which writes one byte in every page of the region (a COW
//! fault each: a new page, a copy, the parent's page left mapped) and
//! exits (its copies freed); the task waits for it. The fork copies the
//! task's page tables, the region's among them, and write-protects them.
//! Spec: `workloads/fork-cow.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{Map, fork_child, page_size, wait_ok};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held_twice};
use crate::kind::Kind;
use crate::kinds::page_fault_anon::PageSize;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ForkCow {
    pub tasks: u32,
    pub ops: u32,
    /// The populated region each operation's child writes.
    pub size: Bytes,
    /// Its pages: base, or THP.
    pub page: PageSize,
}

impl Default for ForkCow {
    fn default() -> Self {
        ForkCow {
            tasks: 1,
            ops: 16,
            size: Bytes::mib(16),
            page: PageSize::Base,
        }
    }
}

impl Kind for ForkCow {
    fn describe(&self) -> String {
        format!("size={}{}", self.size, self.page.describe())
    }
}

impl Bench for ForkCow {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        // Each task holds its region and its child as much again in copies.
        check_held_twice(
            "size",
            self.size,
            self.tasks,
            guest,
            "the region and the child's copy",
        )?;
        self.page.check("size", self.size)
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        Ok(Box::new(Forker::new(self.size.bytes(), self.page)?))
    }
}

struct Forker {
    map: Map,
    page: usize,
}

impl Forker {
    fn new(len: usize, size: PageSize) -> io::Result<Forker> {
        let mut map = size.map(len)?;
        let page = page_size();
        map.touch(page);
        size.check_backed(len)?;
        Ok(Forker { map, page })
    }
}

impl Task for Forker {
    fn op(&mut self) -> io::Result<()> {
        let (ptr, len, page) = (self.map.ptr, self.map.len, self.page);
        let child = fork_child(move || {
            let mut off = 0;
            while off < len {
                // SAFETY: inside the child's copy of the region, writable.
                unsafe { ptr.add(off).write_volatile(2) };
                off += page;
            }
            Ok(())
        })?;
        wait_ok(child)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_child_writes_its_own_copy() {
        let mut task = Forker::new(256 << 10, PageSize::Base).unwrap();
        for _ in 0..3 {
            task.op().unwrap();
        }
        // The parent's pages kept the ones it wrote.
        assert_eq!(task.map.read(task.page), (256 << 10) / task.page as u64);
    }
}
