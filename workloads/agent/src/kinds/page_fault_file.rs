//! `page-fault-file`: will-it-scale's page_fault2. Each task creates a
//! file of `size` on a tmpfs, writes it whole (so every page of it is in
//! the page cache) and unlinks it, untimed, as page_fault2 makes its
//! file. Each operation maps the file MAP_PRIVATE, writes one byte in
//! every page and unmaps it: each write is a fault that finds the page
//! cache's page and copies it into a new anonymous page (a COW from the
//! page cache), and the munmap frees the copies. `page-fault-shmem`
//! (page_fault3) maps the same file MAP_SHARED: [`FileFaulter`] serves
//! both. Spec: `workloads/page-fault-file.yaml`.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{Map, mount, page_size};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held_twice};
use crate::kind::Kind;

/// The tmpfs each task's file is made on, mounted once per boot with no
/// huge pages (the file's pages are base pages whatever the campaign's
/// THP setting, as page_fault2's /tmp is on most systems).
pub const TMPFS: &str = "/tmp/patchbench-bench";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PageFaultFile {
    pub tasks: u32,
    pub ops: u32,
    /// The file each task maps, and so the mapping each operation faults
    /// in and unmaps.
    pub size: Bytes,
}

impl Default for PageFaultFile {
    fn default() -> Self {
        PageFaultFile {
            tasks: 1,
            ops: 16,
            size: Bytes::mib(16),
        }
    }
}

impl Kind for PageFaultFile {
    fn describe(&self) -> String {
        format!("size={}", self.size)
    }
}

impl Bench for PageFaultFile {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        // Each task holds its file and, inside an operation, as much again
        // in private copies.
        check_held_twice(
            "size",
            self.size,
            self.tasks,
            guest,
            "the file and its private copy",
        )
    }

    fn prepare(&self) -> io::Result<()> {
        mount_tmpfs()
    }

    fn task(&self, index: usize) -> io::Result<Box<dyn Task>> {
        let file = FileFaulter::new(Path::new(TMPFS), index, self.size, libc::MAP_PRIVATE)?;
        Ok(Box::new(file))
    }
}

/// Mounts [`TMPFS`], without huge pages.
pub fn mount_tmpfs() -> io::Result<()> {
    mount("tmpfs", TMPFS, "tmpfs", Some("huge=never"))
}

/// A task's file, written whole and unlinked, and the mapping each
/// operation makes of it: MAP_PRIVATE (page_fault2) or MAP_SHARED
/// (page_fault3).
pub struct FileFaulter {
    file: File,
    len: usize,
    flags: libc::c_int,
}

impl FileFaulter {
    /// Creates task `index`'s file of `size` in `dir`, writes every byte
    /// of it (so its pages are in the page cache before the first
    /// operation) and unlinks it; the open file keeps it.
    pub fn new(dir: &Path, index: usize, size: Bytes, flags: libc::c_int) -> io::Result<Self> {
        let path = dir.join(format!("task{index}"));
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("creating {}: {e}", path.display())))?;
        std::fs::remove_file(&path)?;
        let chunk = vec![0u8; 1 << 20];
        let mut left = size.bytes();
        while left > 0 {
            let n = left.min(chunk.len());
            file.write_all(&chunk[..n])?;
            left -= n;
        }
        Ok(FileFaulter {
            file,
            len: size.bytes(),
            flags,
        })
    }
}

impl Task for FileFaulter {
    fn op(&mut self) -> io::Result<()> {
        let mut map = Map::new(
            self.len,
            libc::PROT_READ | libc::PROT_WRITE,
            self.flags,
            self.file.as_raw_fd(),
            0,
        )?;
        map.touch(page_size());
        map.unmap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_file_mapping_is_faulted_in_and_unmapped() {
        let dir = tempfile::tempdir().unwrap();
        let mut task = FileFaulter::new(dir.path(), 0, Bytes::kib(64), libc::MAP_PRIVATE).unwrap();
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "unlinked"
        );
        for _ in 0..3 {
            task.op().unwrap();
        }
        // The private writes never reach the file.
        let mut back = vec![1u8; 64 << 10];
        std::os::unix::fs::FileExt::read_exact_at(&task.file, &mut back, 0).unwrap();
        assert!(back.iter().all(|&b| b == 0));
    }

    #[test]
    fn the_file_and_its_copy_must_fit_in_half_the_guest() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        assert!(PageFaultFile::default().check(guest).is_ok());
        let big = PageFaultFile {
            tasks: 2,
            size: Bytes::mib(200),
            ..PageFaultFile::default()
        };
        assert!(big.check(guest).unwrap_err().problem.contains("twice it"));
    }
}
