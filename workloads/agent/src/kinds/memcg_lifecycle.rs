//! `memcg-lifecycle`: a memory cgroup's whole life, as systemd gives one
//! to each service it starts (a cgroup made, MemoryMax=, MemoryHigh=,
//! MemoryLow=, MemorySwapMax=, MemoryZSwapMax= and ManagedOOMMemoryPressure's
//! memory.oom.group written, the process moved in; at stop, moved out and
//! the cgroup removed), with a proactive reclaim in between as Meta's
//! senpai and TMO write memory.reclaim. The code is mm/memcontrol.c's
//! that the charging workloads, whose cgroups live as long as the boot, do
//! not run: a memcg's allocation, online, offline and free, its limit
//! writes, and reclaim into zswap charged to it.
//!
//! Each task, before its window, makes `/sys/fs/cgroup/pb-memcg-life<i>`
//! with the memory controller for its children; it holds no process. Each
//! operation: make a child cgroup there and write its memory.max (4 ×
//! `size`), memory.high (3 ×), memory.low (`size`), memory.swap.max,
//! memory.zswap.max (both max) and memory.oom.group (1); move the task in;
//! write `size` of private anonymous memory (a distinct word a page, so
//! that zswap compresses rather than skips it) and `size` into a memfd;
//! check that memory.current holds both; write `size` to memory.reclaim,
//! which takes that much back (into zswap, or the swap disk behind it);
//! read memory.stat and memory.peak and reset the peak; unmap the memory
//! and truncate the memfd; move the task back to where it was; remove the
//! cgroup, which takes it offline (its freeing follows, after an RCU grace
//! period, in a kworker). Spec: `workloads/memcg-lifecycle.yaml`.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::memcg_charge::WRITE_CHUNK;
use crate::bench::sys::{self, Map, own_cgroup, page_size, read_file, stamp, write_file};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;
use crate::memory::SwapBackend;

/// The cgroup v2 root.
const ROOT: &str = "/sys/fs/cgroup";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemcgLifecycle {
    pub tasks: u32,
    pub ops: u32,
    /// The anonymous memory, and the memfd's size, charged in each
    /// cgroup's life; memory.reclaim takes back as much.
    pub size: Bytes,
}

impl Default for MemcgLifecycle {
    fn default() -> Self {
        MemcgLifecycle {
            tasks: 1,
            ops: 8,
            size: Bytes::mib(4),
        }
    }
}

impl Kind for MemcgLifecycle {
    /// Its proactive reclaim writes into zswap, which needs a swap device
    /// behind it.
    fn swap_backend(&self) -> SwapBackend {
        SwapBackend::Disk
    }

    fn describe(&self) -> String {
        format!("size={}", self.size)
    }
}

impl Bench for MemcgLifecycle {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        // The anonymous region and the memfd are held at once.
        check_held("size", Bytes(self.size.get() * 2), self.tasks, guest)?;
        if self.size.bytes() % WRITE_CHUNK != 0 {
            return Err(ParamError::new(
                "size",
                self.size,
                "must be a whole number of 64 KiB",
            ));
        }
        Ok(())
    }

    fn task(&self, index: usize) -> io::Result<Box<dyn Task>> {
        write_file(format!("{ROOT}/cgroup.subtree_control"), "+memory")?;
        let parent = PathBuf::from(format!("{ROOT}/pb-memcg-life{index}"));
        let child = parent.join("svc");
        if child.exists() {
            std::fs::remove_dir(&child).map_err(|e| {
                io::Error::new(e.kind(), format!("removing {}: {e}", child.display()))
            })?;
        }
        if !parent.exists() {
            std::fs::create_dir(&parent).map_err(|e| {
                io::Error::new(e.kind(), format!("creating {}: {e}", parent.display()))
            })?;
        }
        write_file(parent.join("cgroup.subtree_control"), "+memory")?;
        Ok(Box::new(Life {
            len: self.size.bytes(),
            home: own_cgroup()?,
            child,
            file: sys::memfd(c"memcg-lifecycle")?,
            buf: vec![1; WRITE_CHUNK],
            pid: std::process::id().to_string(),
        }))
    }
}

struct Life {
    len: usize,
    /// The cgroup the task was in, which it returns to.
    home: PathBuf,
    /// The cgroup each operation makes and removes.
    child: PathBuf,
    file: File,
    buf: Vec<u8>,
    pid: String,
}

impl Life {
    fn configure(&self) -> io::Result<()> {
        let len = self.len;
        for (file, value) in [
            ("memory.max", (4 * len).to_string()),
            ("memory.high", (3 * len).to_string()),
            ("memory.low", len.to_string()),
            ("memory.swap.max", "max".to_string()),
            ("memory.zswap.max", "max".to_string()),
            ("memory.oom.group", "1".to_string()),
        ] {
            write_file(self.child.join(file), &value)?;
        }
        Ok(())
    }

    fn charge(&mut self) -> io::Result<Map> {
        let page = page_size();
        let mut map = Map::anon(self.len)?;
        map.advise(libc::MADV_NOHUGEPAGE)?;
        stamp(&mut map, page, 0x6d656d63);
        for off in (0..self.len).step_by(WRITE_CHUNK) {
            let n = self.file.write_at(&self.buf, off as u64)?;
            if n != WRITE_CHUNK {
                return Err(io::Error::other(format!("short write at {off}: {n}")));
            }
        }
        let current: usize = read_file(self.child.join("memory.current"))?
            .parse()
            .map_err(|e| io::Error::other(format!("memory.current: {e}")))?;
        if current < 2 * self.len {
            return Err(io::Error::other(format!(
                "{} holds {current} bytes after {} were written in it",
                self.child.join("memory.current").display(),
                2 * self.len
            )));
        }
        Ok(map)
    }
}

impl Task for Life {
    fn op(&mut self) -> io::Result<()> {
        std::fs::create_dir(&self.child).map_err(|e| {
            io::Error::new(e.kind(), format!("creating {}: {e}", self.child.display()))
        })?;
        self.configure()?;
        write_file(self.child.join("cgroup.procs"), &self.pid)?;
        let map = self.charge()?;
        write_file(self.child.join("memory.reclaim"), &self.len.to_string())?;
        read_file(self.child.join("memory.stat"))?;
        read_file(self.child.join("memory.peak"))?;
        // memory.peak is writable (a reset) from Linux 6.12 on.
        let peak = self.child.join("memory.peak");
        if std::fs::metadata(&peak).is_ok_and(|m| m.permissions().mode() & 0o200 != 0) {
            write_file(&peak, "reset")?;
        }
        map.unmap()?;
        self.file.set_len(0)?;
        write_file(self.home.join("cgroup.procs"), &self.pid)?;
        std::fs::remove_dir(&self.child).map_err(|e| {
            io::Error::new(e.kind(), format!("removing {}: {e}", self.child.display()))
        })
    }
}
