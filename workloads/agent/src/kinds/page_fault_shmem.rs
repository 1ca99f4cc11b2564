//! `page-fault-shmem`: will-it-scale's page_fault3. Each task creates a
//! file of `size` on a tmpfs, writes it whole and unlinks it, untimed, as
//! `page-fault-file` does. Each operation maps the file MAP_SHARED,
//! writes one byte in every page and unmaps it: each write is a shared
//! fault on tmpfs (shmem) that finds the page in the page cache, maps it
//! writable and dirties it; the munmap only unmaps, the pages staying in
//! the file. Spec: `workloads/page-fault-shmem.yaml`.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::page_fault_file::{FileFaulter, TMPFS, mount_tmpfs};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PageFaultShmem {
    pub tasks: u32,
    pub ops: u32,
    /// The file each task maps, and so the mapping each operation faults
    /// in and unmaps.
    pub size: Bytes,
}

impl Default for PageFaultShmem {
    fn default() -> Self {
        PageFaultShmem {
            tasks: 1,
            ops: 16,
            size: Bytes::mib(16),
        }
    }
}

impl Kind for PageFaultShmem {
    fn describe(&self) -> String {
        format!("size={}", self.size)
    }
}

impl Bench for PageFaultShmem {
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
        mount_tmpfs()
    }

    fn task(&self, index: usize) -> io::Result<Box<dyn Task>> {
        let file = FileFaulter::new(Path::new(TMPFS), index, self.size, libc::MAP_SHARED)?;
        Ok(Box::new(file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_file_mapping_is_faulted_in_and_unmapped() {
        let dir = tempfile::tempdir().unwrap();
        let mut task = FileFaulter::new(dir.path(), 1, Bytes::kib(64), libc::MAP_SHARED).unwrap();
        for _ in 0..3 {
            task.op().unwrap();
        }
    }
}
