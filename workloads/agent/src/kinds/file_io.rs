//! `file-io`: the page cache's other doors, as fio's jobs open them on a
//! file: direct I/O (`direct=1`, O_DIRECT reads and writes that go around
//! the page cache but must write back and invalidate what it holds of
//! their range), splice (`ioengine=splice`: file pages moved into a pipe
//! rather than copied), and fsync and sync_file_range after buffered
//! writes (`fsync=`, `sync_file_range=`). mm/filemap.c's code for these
//! is what `page-cache` (buffered read and write) and `writeback` (msync)
//! do not run.
//!
//! Once per boot, untimed: ext2 on the RAM disk, as `page-cache` makes it.
//! Each task has one file, `size` long. Each operation:
//! 1. writes the file in 4 KiB buffered writes and fsyncs it (every dirty
//!    page written back, then waited on);
//! 2. reads it in 64 KiB O_DIRECT reads (the range written back and
//!    waited on first, the cached pages left) and checks the bytes;
//! 3. writes it in 64 KiB O_DIRECT writes (the cached pages of the range
//!    invalidated before and after each) with a new byte;
//! 4. splices it into a pipe in 64 KiB steps and reads each step out of
//!    the pipe (the pages read into the cache, then spliced), checking
//!    the bytes;
//! 5. rewrites its first half buffered and writes it back with
//!    sync_file_range(WAIT_BEFORE | WRITE | WAIT_AFTER);
//! 6. truncates it to 0 and back to `size`.
//!
//! Spec: `workloads/file-io.yaml`.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};

use serde::{Deserialize, Serialize};

use crate::bench::sys::{self, Map, ext2_on_ram_disk};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;
use crate::kinds::page_cache::{CHUNK, MOUNT, RAM_DISK};

/// Each O_DIRECT and splice step: 64 KiB, fio's common block size for
/// sequential jobs.
const STEP: usize = 64 << 10;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FileIo {
    pub tasks: u32,
    pub ops: u32,
    /// Each task's file.
    pub size: Bytes,
}

impl Default for FileIo {
    fn default() -> Self {
        FileIo {
            tasks: 1,
            ops: 8,
            size: Bytes::mib(1),
        }
    }
}

impl Kind for FileIo {
    fn describe(&self) -> String {
        format!("size={} on ext2", self.size)
    }
}

impl Bench for FileIo {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_held("size", self.size, self.tasks, guest)?;
        if self.size.bytes() == 0 || self.size.bytes() % (2 * STEP) != 0 {
            return Err(ParamError::new(
                "size",
                self.size,
                "must be a whole, even number of 64 KiB steps",
            ));
        }
        Ok(())
    }

    fn prepare(&self) -> io::Result<()> {
        // Every task's file, and as much again for ext2's metadata.
        ext2_on_ram_disk(RAM_DISK, MOUNT, 2 * self.size.get() * u64::from(self.tasks))
    }

    fn task(&self, index: usize) -> io::Result<Box<dyn Task>> {
        let path = format!("{MOUNT}/file-io{index}");
        let open = |direct: bool| {
            let mut options = OpenOptions::new();
            options.read(true).write(true).create(true);
            if direct {
                options.custom_flags(libc::O_DIRECT);
            }
            options
                .open(&path)
                .map_err(|e| io::Error::new(e.kind(), format!("opening {path}: {e}")))
        };
        let buffered = open(false)?;
        let direct = open(true)?;
        std::fs::remove_file(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("unlinking {path}: {e}")))?;
        buffered.set_len(self.size.get())?;
        let (pipe_out, pipe_in) = sys::pipe()?;
        Ok(Box::new(Doors {
            buffered,
            direct,
            pipe_out: File::from(pipe_out),
            pipe_in: File::from(pipe_in),
            size: self.size.bytes(),
            // O_DIRECT wants an aligned buffer: a page-aligned mapping.
            aligned: Map::anon(STEP)?,
            buf: vec![0; STEP],
            fill: 0,
        }))
    }
}

struct Doors {
    buffered: File,
    direct: File,
    pipe_out: File,
    pipe_in: File,
    size: usize,
    aligned: Map,
    buf: Vec<u8>,
    /// The byte the file holds after the last write.
    fill: u8,
}

impl Doors {
    fn aligned(&mut self) -> &mut [u8] {
        // SAFETY: the whole of a live, writable mapping this owns.
        unsafe { std::slice::from_raw_parts_mut(self.aligned.ptr, self.aligned.len) }
    }

    fn check(&self, data: &[u8], what: &str, off: usize) -> io::Result<()> {
        match data.iter().position(|&b| b != self.fill) {
            None => Ok(()),
            Some(i) => Err(io::Error::other(format!(
                "{what} at {}: byte {:#x}, where the file holds {:#x}",
                off + i,
                data[i],
                self.fill
            ))),
        }
    }

    fn buffered_write(&mut self, len: usize) -> io::Result<()> {
        self.fill = self.fill.wrapping_add(1);
        let chunk = vec![self.fill; CHUNK];
        for off in (0..len).step_by(CHUNK) {
            self.buffered.write_all_at(&chunk, off as u64)?;
        }
        Ok(())
    }

    fn direct_read(&mut self) -> io::Result<()> {
        for off in (0..self.size).step_by(STEP) {
            // SAFETY: the whole of a live, writable mapping this owns.
            let into = unsafe { std::slice::from_raw_parts_mut(self.aligned.ptr, STEP) };
            let n = self.direct.read_at(into, off as u64)?;
            if n != STEP {
                return Err(io::Error::other(format!(
                    "short O_DIRECT read at {off}: {n}"
                )));
            }
            // SAFETY: the whole of a live mapping this owns, read only.
            let data = unsafe { std::slice::from_raw_parts(self.aligned.ptr, STEP) };
            self.check(data, "O_DIRECT read", off)?;
        }
        Ok(())
    }

    fn direct_write(&mut self) -> io::Result<()> {
        self.fill = self.fill.wrapping_add(1);
        let fill = self.fill;
        self.aligned().fill(fill);
        for off in (0..self.size).step_by(STEP) {
            // SAFETY: the whole of a live mapping this owns, read only.
            let data = unsafe { std::slice::from_raw_parts(self.aligned.ptr, STEP) };
            let n = self.direct.write_at(data, off as u64)?;
            if n != STEP {
                return Err(io::Error::other(format!(
                    "short O_DIRECT write at {off}: {n}"
                )));
            }
        }
        Ok(())
    }

    fn splice(&mut self) -> io::Result<()> {
        let mut off: libc::loff_t = 0;
        while (off as usize) < self.size {
            let at = off as usize;
            // SAFETY: descriptors this owns; the kernel advances `off`.
            let n = unsafe {
                libc::splice(
                    self.buffered.as_raw_fd(),
                    &mut off,
                    self.pipe_in.as_raw_fd(),
                    std::ptr::null_mut(),
                    STEP,
                    0,
                )
            };
            if n != STEP as isize {
                return Err(sys::last(&format!(
                    "splice of {STEP} bytes at {at} gave {n}"
                )));
            }
            self.pipe_out.read_exact(&mut self.buf)?;
            self.check(&self.buf, "spliced data", at)?;
        }
        Ok(())
    }

    fn sync_range(&self, len: usize) -> io::Result<()> {
        let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER;
        // SAFETY: a descriptor this owns.
        if unsafe { libc::sync_file_range(self.buffered.as_raw_fd(), 0, len as i64, flags) } != 0 {
            return Err(sys::last("sync_file_range"));
        }
        Ok(())
    }
}

impl Task for Doors {
    fn op(&mut self) -> io::Result<()> {
        self.buffered_write(self.size)?;
        self.buffered.sync_all()?;
        self.direct_read()?;
        self.direct_write()?;
        self.splice()?;
        // The first half new, and the splice's check of the rest still
        // holds: the half is rewritten with the next byte after it.
        self.buffered_write(self.size / 2)?;
        self.sync_range(self.size / 2)?;
        self.buffered.set_len(0)?;
        self.buffered.set_len(self.size as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_size_is_whole_pairs_of_steps() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        assert!(FileIo::default().check(guest).is_ok());
        for size in [Bytes::kib(64), Bytes::kib(100), Bytes(0)] {
            let f = FileIo {
                size,
                ..FileIo::default()
            };
            assert_eq!(f.check(guest).unwrap_err().param, "size", "{size}");
        }
    }
}
