//! `memcg-charge`: the memcg charge and uncharge paths, as the kernel's
//! selftests/cgroup/test_memcontrol.c test_memcg_current exercises them
//! (anonymous memory and page cache allocated inside a memory cgroup,
//! memory.current following). Each task runs in its own memory cgroup
//! (the harness's, no limit). Each operation maps `size` of private
//! anonymous memory (MADV_NOHUGEPAGE), writes every page (a charge per
//! fault) and unmaps it (batched uncharges), then writes `size` into a
//! memfd, a tmpfs file on the kernel's internal mount (a charge per shmem
//! page added to the page cache), and truncates it (uncharges). Spec:
//! `workloads/memcg-charge.yaml`.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{self, Map, own_cgroup, page_size};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, TaskCgroups, check_held};
use crate::kind::Kind;

/// Each write(2) to the memfd: 64 KiB, 16 pages a call.
pub const WRITE_CHUNK: usize = 64 << 10;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemcgCharge {
    pub tasks: u32,
    pub ops: u32,
    /// The anonymous memory, and the memfd's size, each operation charges
    /// and uncharges.
    pub size: Bytes,
}

impl Default for MemcgCharge {
    fn default() -> Self {
        MemcgCharge {
            tasks: 1,
            ops: 8,
            size: Bytes::mib(16),
        }
    }
}

impl Kind for MemcgCharge {
    fn describe(&self) -> String {
        format!("size={}", self.size)
    }
}

impl Bench for MemcgCharge {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        // The anonymous region and the file are held at once.
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

    fn task_cgroups(&self) -> Option<TaskCgroups> {
        Some(TaskCgroups { memory_max: None })
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        let cgroup = own_cgroup()?;
        if !cgroup.join("memory.current").exists() {
            return Err(io::Error::other(format!(
                "the task is in {}, which has no memory controller: the root charges nothing",
                cgroup.display()
            )));
        }
        Ok(Box::new(Charger::new(self.size.bytes())?))
    }
}

struct Charger {
    len: usize,
    file: File,
    buf: Vec<u8>,
}

impl Charger {
    fn new(len: usize) -> io::Result<Charger> {
        let file = sys::memfd(c"memcg-charge")?;
        Ok(Charger {
            len,
            file,
            buf: vec![1; WRITE_CHUNK],
        })
    }
}

impl Task for Charger {
    fn op(&mut self) -> io::Result<()> {
        let mut map = Map::anon(self.len)?;
        map.advise(libc::MADV_NOHUGEPAGE)?;
        map.touch(page_size());
        map.unmap()?;
        for off in (0..self.len).step_by(WRITE_CHUNK) {
            let n = self.file.write_at(&self.buf, off as u64)?;
            if n != WRITE_CHUNK {
                return Err(io::Error::other(format!("short write at {off}: {n}")));
            }
        }
        self.file.set_len(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_charge_cycle_leaves_nothing_behind() {
        let mut charger = Charger::new(1 << 20).unwrap();
        for _ in 0..3 {
            charger.op().unwrap();
            assert_eq!(charger.file.metadata().unwrap().len(), 0);
        }
    }
}
