//! `writeback`: file pages dirtied through a shared mapping and written
//! back, dropped and read ahead again, on ext2 on the RAM disk. It follows
//! vm-scalability's case-msync (each process writes its sparse file
//! through a shared mapping, then msyncs it) and case-mincore (mincore(2)
//! counts the mapping's resident pages), with posix_fadvise(2)'s
//! DONTNEED and WILLNEED, as LTP's and stress-ng's fadvise tests call it,
//! to drop the clean pages and read them back.
//!
//! Each task has one file (created and unlinked at once), `size` long and
//! sparse. Each operation:
//! 1. maps the file shared and writes one byte in every page: a page
//!    cache fault each (a hole: a zeroed page, no read) and
//!    `page_mkwrite` (ext2 allocates the block);
//! 2. msync(MS_SYNC)s the mapping: `vfs_fsync_range()` writes the dirty
//!    pages back through ext2's `writepages` (mpage bios, from the block
//!    layer's mempool, to the RAM disk) and waits for them;
//! 3. mincore(2)s the mapping and checks every page is resident;
//! 4. unmaps it, posix_fadvise(DONTNEED)s the file (the clean, unmapped
//!    pages invalidated) and posix_fadvise(WILLNEED)s it (read ahead from
//!    the RAM disk);
//! 5. truncates it to 0 and back to `size` (pages and blocks freed).
//!
//! Once per boot, untimed, as `page-cache` does: ext2 is made on
//! `/dev/ram0` and the flusher's periodic pass is turned off
//! (`vm.dirty_writeback_centisecs` 0), so that only msync writes back,
//! inside the window. Spec: `workloads/writeback.yaml`.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{self, Map, ext2_on_ram_disk, page_size, scratch_file};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;
use crate::kinds::page_cache::{MOUNT, RAM_DISK};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Writeback {
    pub tasks: u32,
    pub ops: u32,
    /// Each task's file.
    pub size: Bytes,
}

impl Default for Writeback {
    fn default() -> Self {
        Writeback {
            tasks: 1,
            ops: 8,
            size: Bytes::mib(4),
        }
    }
}

impl Kind for Writeback {
    fn describe(&self) -> String {
        format!("size={} on ext2", self.size)
    }
}

impl Bench for Writeback {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_held("size", self.size, self.tasks, guest)?;
        if self.size.bytes() == 0 || self.size.bytes() % page_size() != 0 {
            return Err(ParamError::new(
                "size",
                self.size,
                "must be a whole number of pages, at least one",
            ));
        }
        Ok(())
    }

    fn prepare(&self) -> io::Result<()> {
        // Room for every task's file, and as much again for ext2's own
        // metadata and free-block slack.
        let need = 2 * self.size.get() * u64::from(self.tasks);
        ext2_on_ram_disk(RAM_DISK, MOUNT, need)?;
        sys::write_file("/proc/sys/vm/dirty_writeback_centisecs", "0")
    }

    fn task(&self, index: usize) -> io::Result<Box<dyn Task>> {
        let path = format!("{MOUNT}/writeback{index}");
        Ok(Box::new(Synced::new(&path, self.size.bytes())?))
    }
}

struct Synced {
    file: File,
    size: usize,
    page: usize,
    resident: Vec<u8>,
}

impl Synced {
    fn new(path: &str, size: usize) -> io::Result<Synced> {
        let file = scratch_file(path)?;
        file.set_len(size as u64)?;
        let page = page_size();
        Ok(Synced {
            file,
            size,
            page,
            resident: vec![0; size / page],
        })
    }
}

impl Task for Synced {
    fn op(&mut self) -> io::Result<()> {
        let mut map = Map::new(
            self.size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            self.file.as_raw_fd(),
            0,
        )?;
        map.touch(self.page);
        // SAFETY: the whole of a live mapping.
        if unsafe { libc::msync(map.ptr.cast(), map.len, libc::MS_SYNC) } != 0 {
            return Err(sys::last("msync(MS_SYNC)"));
        }
        // SAFETY: the whole of a live mapping, a byte per page out.
        if unsafe { libc::mincore(map.ptr.cast(), map.len, self.resident.as_mut_ptr()) } != 0 {
            return Err(sys::last("mincore"));
        }
        let resident = self.resident.iter().filter(|&&b| b & 1 == 1).count();
        if resident != self.resident.len() {
            return Err(io::Error::other(format!(
                "mincore: {resident} of the {} pages just written are resident",
                self.resident.len()
            )));
        }
        map.unmap()?;
        sys::fadvise(&self.file, libc::POSIX_FADV_DONTNEED, "DONTNEED")?;
        sys::fadvise(&self.file, libc::POSIX_FADV_WILLNEED, "WILLNEED")?;
        self.file.set_len(0)?;
        self.file.set_len(self.size as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operation_leaves_the_file_sparse_and_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut task = Synced::new(path.to_str().unwrap(), 64 << 10).unwrap();
        assert!(!path.exists(), "unlinked at once");
        for _ in 0..3 {
            task.op().unwrap();
            assert_eq!(task.file.metadata().unwrap().len(), 64 << 10);
        }
    }

    #[test]
    fn the_size_is_whole_pages() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        assert!(Writeback::default().check(guest).is_ok());
        let odd = Writeback {
            size: Bytes::kib(6),
            ..Writeback::default()
        };
        assert_eq!(odd.check(guest).unwrap_err().param, "size");
    }
}
