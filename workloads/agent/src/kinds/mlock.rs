//! `mlock`: vm-scalability's case-mlock (usemem --mlock: each task locks
//! its own anonymous region) as a repeated operation, with the semantics
//! the kernel's selftests/mm/mlock2-tests.c checks (a locked page is on
//! the unevictable LRU until munlock puts it back). Each task maps `size`
//! of private anonymous memory (MADV_NOHUGEPAGE: base pages) and writes
//! every page once, untimed; each operation then mlock(2)s the whole
//! populated region (every page marked mlocked and moved to the
//! unevictable LRU, nothing faulted) and munlock(2)s it (every page back
//! on its evictable LRU). Spec: `workloads/mlock.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{self, Map, page_size};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Mlock {
    pub tasks: u32,
    pub ops: u32,
    /// The populated region each operation locks and unlocks.
    pub size: Bytes,
}

impl Default for Mlock {
    fn default() -> Self {
        Mlock {
            tasks: 1,
            ops: 32,
            size: Bytes::mib(16),
        }
    }
}

impl Kind for Mlock {
    fn describe(&self) -> String {
        format!("size={}", self.size)
    }
}

impl Bench for Mlock {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_held("size", self.size, self.tasks, guest)
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        let mut map = Map::anon(self.size.bytes())?;
        map.advise(libc::MADV_NOHUGEPAGE)?;
        map.touch(page_size());
        let locker = Locker { map };
        // One round untimed: the region locks (RLIMIT_MEMLOCK, or root),
        // and mlock leaves every page of it counted as locked.
        locker.lock()?;
        let locked = locked_bytes()?;
        locker.unlock()?;
        if locked < locker.map.len as u64 {
            return Err(io::Error::other(format!(
                "VmLck is {locked} bytes after locking {} bytes",
                locker.map.len
            )));
        }
        Ok(Box::new(locker))
    }
}

struct Locker {
    map: Map,
}

impl Locker {
    fn lock(&self) -> io::Result<()> {
        // SAFETY: the whole mapping, which this task owns.
        let ret = unsafe { libc::mlock(self.map.ptr.cast(), self.map.len) };
        if ret != 0 {
            return Err(sys::last(&format!("mlock of {} bytes", self.map.len)));
        }
        Ok(())
    }

    fn unlock(&self) -> io::Result<()> {
        // SAFETY: the whole mapping, which this task owns.
        let ret = unsafe { libc::munlock(self.map.ptr.cast(), self.map.len) };
        if ret != 0 {
            return Err(sys::last(&format!("munlock of {} bytes", self.map.len)));
        }
        Ok(())
    }
}

impl Task for Locker {
    fn op(&mut self) -> io::Result<()> {
        self.lock()?;
        self.unlock()
    }
}

/// `VmLck` of `/proc/self/status`, in bytes.
fn locked_bytes() -> io::Result<u64> {
    let status = sys::read_file("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmLck:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib << 10)
        .ok_or_else(|| io::Error::other("/proc/self/status has no VmLck"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 64 KiB: within an ordinary user's RLIMIT_MEMLOCK.
    #[test]
    fn a_region_locks_and_unlocks() {
        let bench = Mlock {
            size: Bytes::kib(64),
            ..Mlock::default()
        };
        let mut task = bench.task(0).unwrap();
        for _ in 0..3 {
            task.op().unwrap();
        }
        assert_eq!(locked_bytes().unwrap(), 0);
    }
}
