//! `compaction`: fragment memory, then compact all of it through
//! `/proc/sys/vm/compact_memory`. It follows the kernel's selftest
//! `tools/testing/selftests/mm/compaction_test.c`, which fills 80% of free
//! memory with 100 MiB mappings (MAP_LOCKED, every page written), unmaps
//! every other one and then asks `/proc/sys/vm/nr_hugepages` for huge
//! pages, which only compaction can supply. Here the holes are single
//! pages rather than 100 MiB, and compaction is asked for directly.
//!
//! Each operation maps `size` of anonymous memory with base pages
//! (MADV_NOHUGEPAGE), writes every page, frees every other one
//! (MADV_DONTNEED: no two of its free pages are buddies), writes `1` to
//! `/proc/sys/vm/compact_memory` (a full, synchronous compaction of every
//! zone, in the writing task: the migrate scanner walks up from the
//! zone's start moving every movable page it isolates to free pages the
//! free scanner finds down from its end, until they meet) and unmaps the
//! region. The window thus holds the faults, the frees, one whole-memory
//! compaction and the unmap. Each task compacts once before its window
//! (untimed), so that a window starts from compacted memory as its later
//! operations do, not from the layout the previous sample's exit left.
//!
//! Once per boot `/proc/sys/vm/compaction_proactiveness` is written 0, so
//! that kcompactd does not compact in the background, between and during
//! operations, what the operations fragment. Spec:
//! `workloads/compaction.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{Map, page_size, write_file};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;

const COMPACT_MEMORY: &str = "/proc/sys/vm/compact_memory";
const PROACTIVENESS: &str = "/proc/sys/vm/compaction_proactiveness";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Compaction {
    pub tasks: u32,
    pub ops: u32,
    /// The region each operation fragments before compacting.
    pub size: Bytes,
}

impl Default for Compaction {
    fn default() -> Self {
        Compaction {
            tasks: 1,
            ops: 4,
            size: Bytes::mib(64),
        }
    }
}

impl Kind for Compaction {
    fn describe(&self) -> String {
        format!("size={}", self.size)
    }
}

impl Bench for Compaction {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_held("size", self.size, self.tasks, guest)
    }

    fn prepare(&self) -> io::Result<()> {
        if !std::path::Path::new(COMPACT_MEMORY).exists() {
            return Err(io::Error::other(format!(
                "{COMPACT_MEMORY} is missing: the kernel has no CONFIG_COMPACTION"
            )));
        }
        write_file(PROACTIVENESS, "0")
    }

    /// Compacts once, untimed, so that every window starts from memory
    /// the last operation of the previous one left compacted, rather than
    /// from what the previous sample's tasks left behind as they exited.
    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        write_file(COMPACT_MEMORY, "1")?;
        Ok(Box::new(Compactor {
            len: self.size.bytes(),
        }))
    }
}

struct Compactor {
    len: usize,
}

impl Task for Compactor {
    fn op(&mut self) -> io::Result<()> {
        let page = page_size();
        let mut map = Map::anon(self.len)?;
        map.advise(libc::MADV_NOHUGEPAGE)?;
        map.touch(page);
        map.free_alternate_pages(page)?;
        write_file(COMPACT_MEMORY, "1")?;
        map.unmap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_region_fits_in_half_the_guest() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        assert!(Compaction::default().check(guest).is_ok());
        let big = Compaction {
            size: Bytes::mib(600),
            ..Compaction::default()
        };
        assert_eq!(big.check(guest).unwrap_err().param, "size");
    }
}
