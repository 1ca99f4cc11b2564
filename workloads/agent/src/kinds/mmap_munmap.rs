//! `mmap-munmap`: will-it-scale's mmap1. Each operation maps `size` of
//! private anonymous read-write memory and unmaps it without touching it:
//! no page is faulted in and no page table is made, so the work is the
//! VMA's (its allocation, the maple tree's stores, the commit accounting,
//! the address search) and the empty unmap. Spec:
//! `workloads/mmap-munmap.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use crate::bench::sys::Map;
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_size};
use crate::kind::Kind;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MmapMunmap {
    pub tasks: u32,
    pub ops: u32,
    /// The mapping each operation makes and unmaps (never touched).
    pub size: Bytes,
}

impl Default for MmapMunmap {
    fn default() -> Self {
        MmapMunmap {
            tasks: 1,
            ops: 16384,
            size: Bytes::mib(128),
        }
    }
}

impl Kind for MmapMunmap {
    fn describe(&self) -> String {
        format!("size={}", self.size)
    }
}

impl Bench for MmapMunmap {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    /// Nothing is faulted in, but a writable private mapping is charged
    /// to the commit limit, which the default overcommit heuristic checks
    /// each mapping against: the size is kept within half the guest's
    /// memory, as memory a task holds is.
    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_size("size", self.size, Bytes::kib(4), Bytes(guest.memory / 2))
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        Ok(Box::new(Mapper {
            len: self.size.bytes(),
        }))
    }
}

struct Mapper {
    len: usize,
}

impl Task for Mapper {
    fn op(&mut self) -> io::Result<()> {
        Map::anon(self.len)?.unmap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapping_is_made_and_unmapped_untouched() {
        let mut task = MmapMunmap::default().task(0).unwrap();
        for _ in 0..100 {
            task.op().unwrap();
        }
    }
}
