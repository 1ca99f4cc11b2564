//! `memcg-reclaim`: file and anonymous reclaim under a memory cgroup's
//! limit, with the multi-gen LRU on or off. It follows vm-scalability's
//! case-lru-memcg (a memcg limit, then case-lru-file-readonce: each task
//! reads a sparse file once with `dd bs=4k`, so every page read is a new
//! clean page cache page and the limit makes reclaim drop old ones); the
//! anonymous region beside the file is this benchmark's own addition, so
//! that reclaim chooses between the two LRUs and swaps anonymous pages
//! out to zram. Each task runs in its own memory cgroup
//! (the harness's) with memory.max `limit`; it has a sparse file of
//! `file` bytes on ext2 on the RAM disk `/dev/ram0` (a hole read is a page
//! cache page with no I/O; tmpfs pages would be anonymous to reclaim) and
//! a private anonymous region of `anon` bytes (MADV_NOHUGEPAGE), written
//! once untimed with a distinct word per page. Each operation reads the
//! file from start to end in 4 KiB read(2)s, then writes every page's
//! word of the region again (a swap-in for each page reclaim swapped out,
//! and every page dirty, so reclaim stores it again), then checks them.
//! `lru_gen` is written to /sys/kernel/mm/lru_gen/enabled in prepare.
//! Swap is zram only (`/dev/zram0`, sized for every task's region).
//! Spec: `workloads/memcg-reclaim.yaml`.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};

use serde::{Deserialize, Serialize};

use crate::bench::sys::{self, Map, check_stamps, ext2_on_ram_disk, own_cgroup, page_size, stamp};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, TaskCgroups, check_held};
use crate::kind::Kind;
use crate::memory::SwapBackend;

/// Where the RAM disk's ext2 is mounted.
pub const MOUNT: &str = "/run/patchbench-memcg-reclaim";
/// The RAM disk ext2 is made on.
pub const RAM_DISK: &str = "/dev/ram0";
/// case-lru-file-readonce's `dd bs=4k`.
pub const CHUNK: usize = 4096;
const LRU_GEN: &str = "/sys/kernel/mm/lru_gen/enabled";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemcgReclaim {
    pub tasks: u32,
    pub ops: u32,
    /// The sparse file each operation reads once.
    pub file: Bytes,
    /// The anonymous region each operation writes again.
    pub anon: Bytes,
    /// memory.max of each task's cgroup.
    pub limit: Bytes,
    /// The multi-gen LRU on or off.
    pub lru_gen: Switch,
}

/// A kernel switch a benchmark sets for its boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Switch {
    On,
    Off,
}

impl Default for MemcgReclaim {
    fn default() -> Self {
        MemcgReclaim {
            tasks: 1,
            ops: 4,
            file: Bytes::mib(8),
            anon: Bytes::mib(4),
            limit: Bytes::mib(8),
            lru_gen: Switch::Off,
        }
    }
}

impl Kind for MemcgReclaim {
    fn swap_backend(&self) -> SwapBackend {
        SwapBackend::Zram
    }

    /// Every task's whole region, which reclaim may swap out.
    fn zram_bytes(&self) -> u64 {
        self.anon.get() * u64::from(self.tasks)
    }

    fn describe(&self) -> String {
        format!(
            "file={} anon={} limit={} lru_gen={:?}",
            self.file, self.anon, self.limit, self.lru_gen
        )
    }
}

impl Bench for MemcgReclaim {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_held("anon", self.anon, self.tasks, guest)?;
        check_held("file", self.file, self.tasks, guest)?;
        let touched = self.file.get() + self.anon.get();
        if self.limit < Bytes::mib(4) || self.limit.get() >= touched {
            return Err(ParamError::new(
                "limit",
                self.limit,
                format!(
                    "must be at least 4 MiB and below file + anon ({}), or nothing is reclaimed",
                    Bytes(touched)
                ),
            ));
        }
        // The region must fit under the limit with room to spare: at the
        // limit every swap-in needs another page swapped out, reclaim
        // finds no inactive anonymous page in time, and the memcg OOM
        // killer takes the task.
        if self.anon.get() * 2 > self.limit.get() {
            return Err(ParamError::new(
                "anon",
                self.anon,
                format!("must be at most half the limit ({})", self.limit),
            ));
        }
        if self.file.bytes() % CHUNK != 0 {
            return Err(ParamError::new(
                "file",
                self.file,
                "must be a whole number of 4 KiB",
            ));
        }
        Ok(())
    }

    fn prepare(&self) -> io::Result<()> {
        let word = match self.lru_gen {
            Switch::On => "y",
            Switch::Off => "n",
        };
        sys::write_file(LRU_GEN, word)?;
        let got = sys::read_file(LRU_GEN)?;
        let on = u32::from_str_radix(got.trim_start_matches("0x"), 16)
            .map_err(|e| io::Error::other(format!("{LRU_GEN} reads {got:?}: {e}")))?
            != 0;
        if on != (self.lru_gen == Switch::On) {
            return Err(io::Error::other(format!(
                "{LRU_GEN} reads {got} after writing {word}"
            )));
        }
        // A sparse file takes no blocks: a few MiB for ext2's own tables.
        ext2_on_ram_disk(RAM_DISK, MOUNT, 4 << 20)
    }

    fn task_cgroups(&self) -> Option<TaskCgroups> {
        Some(TaskCgroups {
            memory_max: Some(self.limit.get()),
        })
    }

    fn task(&self, index: usize) -> io::Result<Box<dyn Task>> {
        let cgroup = own_cgroup()?;
        let max = sys::read_file(cgroup.join("memory.max"))?;
        let want = self.limit.get() / page_size() as u64 * page_size() as u64;
        if max != want.to_string() {
            return Err(io::Error::other(format!(
                "the task's cgroup {} has memory.max {max}, not {want}",
                cgroup.display()
            )));
        }
        let path = format!("{MOUNT}/task{index}");
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("creating {path}: {e}")))?;
        std::fs::remove_file(&path)?;
        file.set_len(self.file.get())?;
        let mut map = Map::anon(self.anon.bytes())?;
        map.advise(libc::MADV_NOHUGEPAGE)?;
        let seed = index as u64;
        stamp(&mut map, page_size(), seed);
        Ok(Box::new(Reclaimed {
            file,
            len: self.file.bytes(),
            map,
            seed,
            buf: vec![0; CHUNK],
        }))
    }
}

struct Reclaimed {
    file: File,
    len: usize,
    map: Map,
    seed: u64,
    buf: Vec<u8>,
}

impl Task for Reclaimed {
    fn op(&mut self) -> io::Result<()> {
        for off in (0..self.len).step_by(CHUNK) {
            let n = self.file.read_at(&mut self.buf, off as u64)?;
            if n != CHUNK {
                return Err(io::Error::other(format!("short read at {off}: {n}")));
            }
        }
        stamp(&mut self.map, page_size(), self.seed);
        check_stamps(&self.map, page_size(), self.seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_must_make_reclaim_run() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        assert!(MemcgReclaim::default().check(guest).is_ok());
        let roomy = MemcgReclaim {
            limit: Bytes::mib(16),
            ..MemcgReclaim::default()
        };
        assert_eq!(roomy.check(guest).unwrap_err().param, "limit");
        let at_the_limit = MemcgReclaim {
            anon: Bytes::mib(8),
            ..MemcgReclaim::default()
        };
        assert_eq!(at_the_limit.check(guest).unwrap_err().param, "anon");
    }
}
