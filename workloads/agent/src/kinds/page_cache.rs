//! `page-cache`: will-it-scale's write1, read1 and fallocate1
//! (tests/write1.c, read1.c, fallocate1.c) as one operation on one file
//! per task. Each operation writes `size` into the empty file in 4 KiB
//! write(2)s (a page cache page allocated, charged and dirtied each),
//! reads it back in 4 KiB read(2)s (page cache hits), truncates it to 0
//! (every page freed), and on tmpfs also fallocates it back in
//! `size`/128 steps and truncates it again (shmem pages allocated without
//! data, then freed). The file is on a tmpfs (`fs: tmpfs`: shmem pages,
//! swap-backed) or on ext2 on the RAM disk `/dev/ram0` (`fs: ext2`: a
//! block file system's page cache, buffer heads and block allocation;
//! ext2 has no fallocate, so that step is left out). Spec:
//! `workloads/page-cache.yaml`.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{self, ext2_on_ram_disk, mount_once, scratch_file};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;

/// Where the file system is mounted.
pub const MOUNT: &str = "/run/patchbench-page-cache";
/// The RAM disk ext2 is made on (`brd.rd_nr=1 brd.rd_size=<KiB>` on the
/// campaign's kernel command line).
pub const RAM_DISK: &str = "/dev/ram0";
/// write1's and read1's BUFLEN: one page per call.
pub const CHUNK: usize = 4096;
/// fallocate1 fallocates FILESIZE in this many steps (BUFLEN =
/// FILESIZE / 128).
pub const FALLOCATE_STEPS: usize = 128;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PageCache {
    pub tasks: u32,
    pub ops: u32,
    /// The file each operation writes, reads back and truncates
    /// (will-it-scale's FILESIZE).
    pub size: Bytes,
    /// The file system the files are on.
    pub fs: FileSystem,
}

/// The file system a [`PageCache`] file is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileSystem {
    /// A tmpfs mounted for the benchmark: shmem pages.
    Tmpfs,
    /// ext2 on the RAM disk, made and mounted for the benchmark.
    Ext2,
}

impl Default for PageCache {
    fn default() -> Self {
        PageCache {
            tasks: 1,
            ops: 64,
            size: Bytes::mib(1),
            fs: FileSystem::Tmpfs,
        }
    }
}

impl Kind for PageCache {
    fn describe(&self) -> String {
        format!("size={} fs={:?}", self.size, self.fs)
    }
}

impl Bench for PageCache {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_held("size", self.size, self.tasks, guest)?;
        let step = CHUNK * FALLOCATE_STEPS;
        if self.size.bytes() % step != 0 {
            return Err(ParamError::new(
                "size",
                self.size,
                format!("must be a whole number of {} KiB", step >> 10),
            ));
        }
        Ok(())
    }

    fn prepare(&self) -> io::Result<()> {
        match self.fs {
            FileSystem::Tmpfs => mount_once("tmpfs", MOUNT, "tmpfs", 0, None),
            FileSystem::Ext2 => {
                // Room for every task's file, and as much again for
                // ext2's own metadata and free-block slack.
                let need = 2 * self.size.get() * u64::from(self.tasks);
                ext2_on_ram_disk(RAM_DISK, MOUNT, need)?;
                // The flusher's periodic pass off: each file is truncated
                // long before its pages could expire, and the bitmaps the
                // writes dirty would otherwise be written back every
                // dirty_expire_centisecs, in some windows and not others.
                sys::write_file("/proc/sys/vm/dirty_writeback_centisecs", "0")
            }
        }
    }

    fn task(&self, index: usize) -> io::Result<Box<dyn Task>> {
        let path = format!("{MOUNT}/task{index}");
        Ok(Box::new(FileCycle::new(
            &path,
            self.size.bytes(),
            self.fs == FileSystem::Tmpfs,
        )?))
    }
}

/// One task's file, created and unlinked at once as will-it-scale's
/// mkstemp and unlink do: it lives as long as the descriptor.
struct FileCycle {
    file: File,
    size: usize,
    fallocate: bool,
    buf: Vec<u8>,
}

impl FileCycle {
    fn new(path: &str, size: usize, fallocate: bool) -> io::Result<FileCycle> {
        let file = scratch_file(path)?;
        Ok(FileCycle {
            file,
            size,
            fallocate,
            buf: vec![0; CHUNK],
        })
    }
}

impl Task for FileCycle {
    fn op(&mut self) -> io::Result<()> {
        for off in (0..self.size).step_by(CHUNK) {
            let n = self.file.write_at(&self.buf, off as u64)?;
            if n != CHUNK {
                return Err(io::Error::other(format!("short write at {off}: {n}")));
            }
        }
        for off in (0..self.size).step_by(CHUNK) {
            let n = self.file.read_at(&mut self.buf, off as u64)?;
            if n != CHUNK {
                return Err(io::Error::other(format!("short read at {off}: {n}")));
            }
        }
        self.file.set_len(0)?;
        if self.fallocate {
            let step = self.size / FALLOCATE_STEPS;
            for place in (0..self.size).step_by(step) {
                // SAFETY: a descriptor this task owns.
                let ret =
                    unsafe { libc::fallocate(self.file.as_raw_fd(), 0, place as i64, step as i64) };
                if ret != 0 {
                    return Err(sys::last(&format!("fallocate at {place}")));
                }
            }
            self.file.set_len(0)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cycle_leaves_the_file_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut cycle = FileCycle::new(path.to_str().unwrap(), 512 << 10, true).unwrap();
        assert!(!path.exists(), "unlinked at once");
        for _ in 0..3 {
            cycle.op().unwrap();
            assert_eq!(cycle.file.metadata().unwrap().len(), 0);
        }
    }

    #[test]
    fn the_size_is_whole_fallocate_steps() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        assert!(PageCache::default().check(guest).is_ok());
        let odd = PageCache {
            size: Bytes::kib(260),
            ..PageCache::default()
        };
        assert_eq!(odd.check(guest).unwrap_err().param, "size");
    }
}
