//! `mlock`: vm-scalability's case-mlock (usemem --mlock: each task locks
//! its own anonymous region) as a repeated operation, with the semantics
//! the kernel's selftests/mm/mlock2-tests.c checks (a locked page is on
//! the unevictable LRU until munlock puts it back). Each task maps `size`
//! of private anonymous memory (MADV_NOHUGEPAGE: base pages) and writes
//! every page once, untimed; each operation then mlock(2)s the whole
//! populated region (every page marked mlocked and moved to the
//! unevictable LRU, nothing faulted) and munlock(2)s it (every page back
//! on its evictable LRU).
//!
//! With `call: mlockall`, each operation instead locks as a
//! latency-sensitive daemon does at start-up (mlockall(2) with
//! MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT, as the kernel's
//! mlock2-tests.c checks it), maps, writes and unmaps [`NEW_PAGES`]
//! fresh pages (each new page locked as it is faulted in, the MCL_FUTURE
//! path), munlockall(2)s, and then locks the region with mlock2(2)'s
//! MLOCK_ONFAULT and munlocks it. Spec: `workloads/mlock.yaml`.

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
    /// The calls that lock and unlock.
    pub call: Call,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Call {
    /// mlock(2) and munlock(2) of the region.
    Mlock,
    /// mlockall(2) with a fresh mapping faulted in, munlockall(2), then
    /// mlock2(2) with MLOCK_ONFAULT and munlock(2) of the region.
    Mlockall,
}

/// Pages the `mlockall` call faults in, locked, while MCL_FUTURE holds.
pub const NEW_PAGES: usize = 16;

impl Default for Mlock {
    fn default() -> Self {
        Mlock {
            tasks: 1,
            ops: 32,
            size: Bytes::mib(16),
            call: Call::Mlock,
        }
    }
}

impl Kind for Mlock {
    fn describe(&self) -> String {
        match self.call {
            Call::Mlock => format!("size={}", self.size),
            Call::Mlockall => format!("size={} call=mlockall", self.size),
        }
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
        let locker = Locker {
            map,
            call: self.call,
        };
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
    call: Call,
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

impl Locker {
    /// mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT), fresh pages
    /// faulted in locked, munlockall(); then mlock2(MLOCK_ONFAULT).
    fn lock_all(&self) -> io::Result<()> {
        let flags = libc::MCL_CURRENT | libc::MCL_FUTURE | libc::MCL_ONFAULT;
        // SAFETY: no pointers.
        if unsafe { libc::mlockall(flags) } != 0 {
            return Err(sys::last(
                "mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT)",
            ));
        }
        let page = page_size();
        let mut fresh = Map::anon(NEW_PAGES * page)?;
        fresh.touch(page);
        let locked = locked_bytes();
        fresh.unmap()?;
        // SAFETY: no pointers.
        if unsafe { libc::munlockall() } != 0 {
            return Err(sys::last("munlockall"));
        }
        let locked = locked?;
        if locked < (NEW_PAGES * page) as u64 {
            return Err(io::Error::other(format!(
                "VmLck is {locked} bytes under MCL_FUTURE after faulting in {NEW_PAGES} pages"
            )));
        }
        // SAFETY: the whole mapping, which this task owns.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_mlock2,
                self.map.ptr,
                self.map.len,
                libc::MLOCK_ONFAULT,
            )
        };
        if ret != 0 {
            return Err(sys::last(&format!(
                "mlock2(MLOCK_ONFAULT) of {} bytes",
                self.map.len
            )));
        }
        self.unlock()
    }
}

impl Task for Locker {
    fn op(&mut self) -> io::Result<()> {
        match self.call {
            Call::Mlock => {
                self.lock()?;
                self.unlock()
            }
            Call::Mlockall => self.lock_all(),
        }
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

    /// mlockall locks every mapping of the process, which an ordinary
    /// user's RLIMIT_MEMLOCK does not allow: as root (CAP_IPC_LOCK, as
    /// the agent runs) it must succeed; otherwise it must fail naming the
    /// call. mlockall is the whole process's, so it runs in a child: in
    /// the test binary it would lock the other tests' memory too (and
    /// a_region_locks_and_unlocks checks VmLck is 0).
    #[test]
    fn mlockall_locks_new_pages_and_leaves_none_locked() {
        let child = sys::fork_child(|| {
            let bench = Mlock {
                size: Bytes::kib(64),
                call: Call::Mlockall,
                ..Mlock::default()
            };
            let result = bench.task(0)?.op();
            // SAFETY: no arguments.
            if unsafe { libc::geteuid() } == 0 {
                result?;
                match locked_bytes()? {
                    0 => Ok(()),
                    n => Err(io::Error::other(format!("{n} bytes still locked"))),
                }
            } else {
                match result {
                    Err(e) if e.to_string().contains("mlockall") => Ok(()),
                    other => Err(io::Error::other(format!("{other:?}"))),
                }
            }
        })
        .unwrap();
        sys::wait_ok(child).unwrap();
    }
}
