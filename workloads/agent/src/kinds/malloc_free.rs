//! `malloc-free`: will-it-scale's malloc1 as glibc runs it. Each operation
//! is one `malloc(size); free()` of a size above glibc's mmap threshold:
//! glibc maps `size` plus a page for its chunk header (128 MiB + 4 KiB for
//! malloc1's 128 MiB), writes the header at the mapping's start, and unmaps
//! it on free. The header's write is the one fault. Whether it faults a
//! base page or a whole 2 MiB THP depends on where the kernel placed the
//! mapping: Linux 6.8 to 6.12-rc5 aligned every anonymous mapping of 2 MiB
//! or more to 2 MiB (efa7df3e3bb5), so under `thp: always` the header's
//! fault zeroed a THP; d4148aeab412 aligns only lengths that are multiples
//! of 2 MiB. The agent is not linked against glibc, so it makes glibc's
//! calls itself. Spec: `workloads/malloc-free.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{Map, page_size};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_size};
use crate::kind::Kind;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MallocFree {
    pub tasks: u32,
    pub ops: u32,
    /// What each `malloc` asks for; the mapping is a page more.
    pub size: Bytes,
}

impl Default for MallocFree {
    fn default() -> Self {
        MallocFree {
            tasks: 1,
            ops: 1024,
            size: Bytes::mib(128),
        }
    }
}

impl Kind for MallocFree {
    fn describe(&self) -> String {
        format!("size={}", self.size)
    }
}

impl Bench for MallocFree {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    /// glibc serves only requests of at least its mmap threshold (128 KiB
    /// by default) with a mapping of their own; the mapping is charged to
    /// the commit limit, so it is kept within half the guest's memory.
    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_size("size", self.size, Bytes::kib(128), Bytes(guest.memory / 2))
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        Ok(Box::new(Allocator {
            len: self.size.bytes() + page_size(),
        }))
    }
}

struct Allocator {
    len: usize,
}

impl Task for Allocator {
    fn op(&mut self) -> io::Result<()> {
        let map = Map::anon(self.len)?;
        // glibc's mmapped chunk: prev_size and size at the start, the
        // size with IS_MMAPPED set.
        // SAFETY: the mapping is at least a page, readable and writable.
        unsafe {
            let header = map.ptr.cast::<u64>();
            header.write_volatile(0);
            header.add(1).write_volatile(self.len as u64 | 2);
        }
        map.unmap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapping_of_a_page_more_is_made_written_at_its_start_and_unmapped() {
        let bench = MallocFree {
            size: Bytes::mib(4),
            ..MallocFree::default()
        };
        let mut task = bench.task(0).unwrap();
        for _ in 0..100 {
            task.op().unwrap();
        }
    }

    #[test]
    fn a_size_under_glibcs_mmap_threshold_is_refused() {
        let bench = MallocFree {
            size: Bytes::kib(64),
            ..MallocFree::default()
        };
        let guest = GuestSize {
            online_cpus: 1,
            memory: 1 << 30,
        };
        assert!(bench.check(guest).is_err());
    }
}
