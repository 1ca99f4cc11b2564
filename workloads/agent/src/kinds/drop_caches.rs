//! `drop-caches`: the kernel's caches dropped whole, as mmtests does
//! between iterations (`echo 3 > /proc/sys/vm/drop_caches`) and slabinfo
//! -s (tools/mm/slabinfo.c) does to every slab cache (`shrink`): the page
//! cache invalidated file by file, every shrinker run to the end (the
//! dentry and inode caches through their list_lrus, THP's deferred split
//! queue, the page cache's shadow nodes), and each slab cache's per-CPU
//! and partial slabs given back.
//!
//! The operation is global, so there is one task. Once per boot, untimed:
//! ext2 on the RAM disk, as `page-cache` makes it, with `files` files of
//! `file_size` written and synced. Each operation:
//! 1. opens and reads every file (its page cache, dentry and inode come
//!    back after the last operation's drop);
//! 2. writes a THP-aligned anonymous region of `thp_pages` huge pages
//!    (MADV_HUGEPAGE) and MADV_DONTNEEDs the second half of each, which
//!    queues each for a deferred split, then MADV_NOHUGEPAGE (or khugepaged
//!    could collapse them back);
//! 3. writes 3 to /proc/sys/vm/drop_caches;
//! 4. writes 1 to every slab cache's `shrink` in /sys/kernel/slab (the
//!    caches themselves, not their aliases' links);
//! 5. checks that no page of the first file is cached (mincore(2) of a
//!    mapping of it) and that the deferred split shrinker split each huge
//!    page (/proc/vmstat's thp_split_page), then unmaps the region.
//!
//! Spec: `workloads/drop-caches.yaml`.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::page_fault_anon::{THP_SIZE, anon_huge_kib};
use super::thp_fragmented::vmstat;
use crate::bench::sys::{Map, ext2_on_ram_disk, page_size, resident_pages, write_file};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task};
use crate::kind::Kind;
use crate::kinds::page_cache::{MOUNT, RAM_DISK};

const SLAB: &str = "/sys/kernel/slab";
/// The /proc/vmstat event a huge page split to base pages counts.
const SPLITS: &str = "thp_split_page";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DropCaches {
    pub tasks: u32,
    pub ops: u32,
    /// The files each operation reads back into the caches.
    pub files: u32,
    pub file_size: Bytes,
    /// Huge pages of the region each operation half unmaps.
    pub thp_pages: u32,
}

impl Default for DropCaches {
    fn default() -> Self {
        DropCaches {
            tasks: 1,
            ops: 4,
            files: 64,
            file_size: Bytes::kib(64),
            thp_pages: 4,
        }
    }
}

impl Kind for DropCaches {
    fn describe(&self) -> String {
        format!(
            "files={} file_size={} thp_pages={} on ext2",
            self.files, self.file_size, self.thp_pages
        )
    }
}

impl Bench for DropCaches {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        if self.tasks != 1 {
            return Err(ParamError::new(
                "tasks",
                self.tasks,
                "must be 1: dropping the caches is global, so a second task would drop the first one's",
            ));
        }
        if self.files == 0 || self.files > 4096 {
            return Err(ParamError::new("files", self.files, "must be 1 to 4096"));
        }
        let page = 4096;
        if self.file_size.get() == 0 || self.file_size.get() % page != 0 {
            return Err(ParamError::new(
                "file_size",
                self.file_size,
                "must be a whole number of pages, at least one",
            ));
        }
        let files = self.file_size.get() * u64::from(self.files);
        let thp = THP_SIZE as u64 * u64::from(self.thp_pages);
        if self.thp_pages == 0 || files + thp > guest.memory / 4 {
            return Err(ParamError::new(
                "thp_pages",
                self.thp_pages,
                "must be at least 1, and the files and huge pages together at most a quarter of the guest's memory",
            ));
        }
        Ok(())
    }

    fn prepare(&self) -> io::Result<()> {
        // The files, and as much again for ext2's metadata and slack.
        let need = 2 * self.file_size.get() * u64::from(self.files);
        ext2_on_ram_disk(RAM_DISK, MOUNT, need)
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        let dir = Path::new(MOUNT).join("drop-caches");
        if !dir.exists() {
            std::fs::create_dir(&dir).map_err(|e| {
                io::Error::new(e.kind(), format!("creating {}: {e}", dir.display()))
            })?;
        }
        let data = vec![0x5a; self.file_size.bytes()];
        let mut files = Vec::with_capacity(self.files as usize);
        for i in 0..self.files {
            let path = dir.join(format!("f{i}"));
            std::fs::write(&path, &data).map_err(|e| {
                io::Error::new(e.kind(), format!("writing {}: {e}", path.display()))
            })?;
            files.push(path);
        }
        // SAFETY: sync(2) has no preconditions.
        unsafe { libc::sync() };
        Ok(Box::new(Dropper {
            files,
            buf: data,
            caches: slab_caches()?,
            thp_pages: self.thp_pages as usize,
            page: page_size(),
            huge_before: anon_huge_kib()?,
        }))
    }
}

/// Every slab cache's directory in /sys/kernel/slab, in name order: the
/// directories, not the links an alias is.
pub(crate) fn slab_caches() -> io::Result<Vec<PathBuf>> {
    let mut caches = Vec::new();
    let entries = std::fs::read_dir(SLAB)
        .map_err(|e| io::Error::new(e.kind(), format!("reading {SLAB}: {e}")))?;
    for entry in entries {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            caches.push(entry.path());
        }
    }
    caches.sort();
    if caches.is_empty() {
        return Err(io::Error::other(format!(
            "{SLAB} lists no cache: the kernel needs SLUB's sysfs (SYSFS and SLUB)"
        )));
    }
    Ok(caches)
}

struct Dropper {
    files: Vec<PathBuf>,
    buf: Vec<u8>,
    caches: Vec<PathBuf>,
    thp_pages: usize,
    page: usize,
    /// The task's AnonHugePages before any region: what it inherited.
    huge_before: u64,
}

impl Dropper {
    fn read_files(&mut self) -> io::Result<()> {
        for path in &self.files {
            let mut file = File::open(path).map_err(|e| {
                io::Error::new(e.kind(), format!("opening {}: {e}", path.display()))
            })?;
            file.read_exact(&mut self.buf).map_err(|e| {
                io::Error::new(e.kind(), format!("reading {}: {e}", path.display()))
            })?;
        }
        Ok(())
    }

    /// The region of half-unmapped huge pages.
    fn split_queue(&self) -> io::Result<Map> {
        let len = THP_SIZE * self.thp_pages;
        let mut map = Map::anon_aligned(len, THP_SIZE)?;
        map.advise(libc::MADV_HUGEPAGE)?;
        map.touch(self.page);
        let kib = anon_huge_kib()?.saturating_sub(self.huge_before);
        if kib * 1024 < len as u64 {
            return Err(io::Error::other(format!(
                "huge pages back {kib} KiB of the {len}-byte region: the campaign's thp: must be madvise or always"
            )));
        }
        for i in 0..self.thp_pages {
            map.advise_range(
                i * THP_SIZE + THP_SIZE / 2,
                THP_SIZE / 2,
                libc::MADV_DONTNEED,
            )?;
        }
        // khugepaged would collapse the halves back (max_ptes_none lets
        // it): the region is left to the shrinker alone.
        map.advise(libc::MADV_NOHUGEPAGE)?;
        Ok(map)
    }

    /// Pages of the first file in the page cache.
    fn cached_pages(&self) -> io::Result<usize> {
        let file = File::open(&self.files[0])?;
        let len = self.buf.len();
        let map = Map::new(len, libc::PROT_READ, libc::MAP_SHARED, file.as_raw_fd(), 0)?;
        resident_pages(&map)
    }
}

impl Task for Dropper {
    fn op(&mut self) -> io::Result<()> {
        self.read_files()?;
        let splits = vmstat(SPLITS)?;
        let region = self.split_queue()?;
        write_file("/proc/sys/vm/drop_caches", "3")?;
        for cache in &self.caches {
            write_file(cache.join("shrink"), "1")?;
        }
        let cached = self.cached_pages()?;
        if cached > 0 {
            return Err(io::Error::other(format!(
                "{} pages of {} are still cached after drop_caches",
                cached,
                self.files[0].display()
            )));
        }
        let split = vmstat(SPLITS)? - splits;
        if split < self.thp_pages as u64 {
            return Err(io::Error::other(format!(
                "{SPLITS} rose by {split} across drop_caches, where the deferred split shrinker splits the region's {} half-unmapped huge pages (AnonHugePages {} KiB, {} KiB before the region)",
                self.thp_pages,
                anon_huge_kib()?,
                self.huge_before
            )));
        }
        region.unmap()
    }
}
