//! `mmap-lock-trace`: mmap_lock's tracepoints (mm/mmap_lock.c:
//! mmap_lock_start_locking, mmap_lock_acquire_returned,
//! mmap_lock_released) switched on around work that takes the lock, as
//! one switches them on to find mmap_lock contention (they were added for
//! that, in 5.10, and `perf trace`, bpftrace and Perfetto read them).
//! While on, every acquisition and release records an event, the task's
//! memcg path with it, in ftrace's ring buffer.
//!
//! One task: the events are the kernel's. Each operation:
//! 1. writes 1 to /sys/kernel/tracing/events/mmap_lock/enable (each
//!    event registered);
//! 2. maps, writes and unmaps one anonymous page `maps` times (mmap and
//!    munmap take the lock for writing);
//! 3. writes 0 to the enable file (each event unregistered), reads the
//!    `trace` file and checks it holds an mmap_lock_acquire_returned event
//!    for every map and unmap at least, and empties the buffer.
//!
//! Once per boot, untimed: the agent checks the events exist (tracefs,
//! CONFIG_TRACING with MMU) and empties the buffer. Spec:
//! `workloads/mmap-lock-trace.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{Map, page_size, read_file, write_file};
use crate::bench::{Bench, GuestSize, Load, ParamError, Task, check_one_task};
use crate::kind::Kind;

const TRACING: &str = "/sys/kernel/tracing";
const ENABLE: &str = "/sys/kernel/tracing/events/mmap_lock/enable";
const TRACE: &str = "/sys/kernel/tracing/trace";
/// The event each write-locked map and unmap records once at least.
const ACQUIRED: &str = "mmap_lock_acquire_returned";
/// At most this many maps an operation: the ring buffer holds their
/// events (about three each, with a memcg path) in its default size.
const MOST_MAPS: u32 = 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MmapLockTrace {
    pub tasks: u32,
    pub ops: u32,
    /// Maps and unmaps of one page per operation, while the events are on.
    pub maps: u32,
}

impl Default for MmapLockTrace {
    fn default() -> Self {
        MmapLockTrace {
            tasks: 1,
            ops: 8,
            maps: 64,
        }
    }
}

impl Kind for MmapLockTrace {
    fn describe(&self) -> String {
        format!("maps={}", self.maps)
    }
}

impl Bench for MmapLockTrace {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, _guest: GuestSize) -> Result<(), ParamError> {
        check_one_task(
            self.tasks,
            "the events and their ring buffer are the kernel's, and one task's switch would cut another's trace",
        )?;
        if self.maps == 0 || self.maps > MOST_MAPS {
            return Err(ParamError::new(
                "maps",
                self.maps,
                format!(
                    "must be 1 to {MOST_MAPS}: the ring buffer's default size holds that many maps' events"
                ),
            ));
        }
        Ok(())
    }

    fn prepare(&self) -> io::Result<()> {
        if !std::path::Path::new(ENABLE).exists() {
            return Err(io::Error::other(format!(
                "{ENABLE} is missing: the kernel has no mmap_lock events (CONFIG_TRACING), or tracefs is not mounted on {TRACING}"
            )));
        }
        write_file(ENABLE, "0")?;
        clear()
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        Ok(Box::new(Tracer {
            maps: self.maps,
            page: page_size(),
        }))
    }
}

/// Empties the ring buffer (an open of `trace` for writing truncates it).
fn clear() -> io::Result<()> {
    std::fs::File::create(TRACE)
        .map(drop)
        .map_err(|e| io::Error::new(e.kind(), format!("emptying {TRACE}: {e}")))
}

struct Tracer {
    maps: u32,
    page: usize,
}

impl Task for Tracer {
    fn op(&mut self) -> io::Result<()> {
        write_file(ENABLE, "1")?;
        for _ in 0..self.maps {
            let mut map = Map::anon(self.page)?;
            map.touch(self.page);
            map.unmap()?;
        }
        write_file(ENABLE, "0")?;
        let trace = read_file(TRACE)?;
        let acquired = trace.matches(ACQUIRED).count();
        if acquired < 2 * self.maps as usize {
            return Err(io::Error::other(format!(
                "{TRACE} holds {acquired} {ACQUIRED} events after {} maps and unmaps, fewer than one each",
                self.maps
            )));
        }
        clear()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_task_and_maps_the_buffer_holds() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        assert!(MmapLockTrace::default().check(guest).is_ok());
        let two = MmapLockTrace {
            tasks: 2,
            ..MmapLockTrace::default()
        };
        assert_eq!(two.check(guest).unwrap_err().param, "tasks");
        for maps in [0, MOST_MAPS + 1] {
            let bad = MmapLockTrace {
                maps,
                ..MmapLockTrace::default()
            };
            assert_eq!(bad.check(guest).unwrap_err().param, "maps");
        }
    }
}
