//! `cpu-hotplug`: every hotpluggable CPU taken offline and brought back,
//! as the kernel's selftest tools/testing/selftests/cpu-hotplug/
//! cpu-on-off-test.sh does (`echo 0 > /sys/devices/system/cpu/cpuN/online`,
//! then 1), and as suspend and resume, and a VM's vCPU hot-unplug, do.
//! mm keeps per-CPU state that each step hands over: the page allocator's
//! per-CPU lists drained and their high marks recomputed, the vmstat
//! differentials folded and the thresholds recomputed, SLUB's per-CPU
//! slabs flushed, the memcg stock drained, the LRU batches drained,
//! zswap's per-CPU compressors freed and made again, the swap slot cache
//! and the writeback ratelimits. This benchmark runs those callbacks,
//! amid the rest of CPU hotplug (the scheduler, timers, RCU, interrupts).
//!
//! One task, on CPU 0 (which x86 does not take offline). Each operation
//! takes every other online CPU offline, one at a time, and brings it
//! back, and checks that /sys/devices/system/cpu/online reads as it did
//! before the operation. Spec: `workloads/cpu-hotplug.yaml`.

use std::io;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{read_file, write_file};
use crate::bench::{Bench, GuestSize, Load, ParamError, Task, check_one_task};
use crate::kind::Kind;
use crate::memory::SwapBackend;
use crate::sysfs::cpu_list;

const ONLINE: &str = "/sys/devices/system/cpu/online";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CpuHotplug {
    pub tasks: u32,
    pub ops: u32,
}

impl Default for CpuHotplug {
    fn default() -> Self {
        CpuHotplug { tasks: 1, ops: 4 }
    }
}

impl Kind for CpuHotplug {
    /// Its hotplug callbacks include the swap slot cache's and zswap's, which
    /// a swap device brings into play.
    fn swap_backend(&self) -> SwapBackend {
        SwapBackend::Disk
    }

    fn describe(&self) -> String {
        "every CPU but 0 offline and back".into()
    }
}

impl Bench for CpuHotplug {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_one_task(self.tasks, "the CPUs are the whole guest's")?;
        if guest.online_cpus < 2 {
            return Err(ParamError::new(
                "tasks",
                self.tasks,
                "needs a guest of two online CPUs or more: CPU 0 stays online",
            ));
        }
        Ok(())
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        let online = read_file(ONLINE)?;
        let cpus: Vec<PathBuf> = cpu_list(&online)
            .map_err(|e| io::Error::other(format!("{ONLINE} reads {online:?}: {e}")))?
            .into_iter()
            .filter(|&cpu| cpu != 0)
            .map(|cpu| PathBuf::from(format!("/sys/devices/system/cpu/cpu{cpu}/online")))
            .collect();
        if cpus.is_empty() {
            return Err(io::Error::other(format!(
                "{ONLINE} reads {online:?}: no CPU but 0 to take offline"
            )));
        }
        Ok(Box::new(Plugger { online, cpus }))
    }
}

struct Plugger {
    /// /sys/devices/system/cpu/online before the window.
    online: String,
    /// Each CPU's `online` file but CPU 0's.
    cpus: Vec<PathBuf>,
}

impl Task for Plugger {
    fn op(&mut self) -> io::Result<()> {
        for cpu in &self.cpus {
            write_file(cpu, "0")?;
            write_file(cpu, "1")?;
        }
        let now = read_file(ONLINE)?;
        if now != self.online {
            return Err(io::Error::other(format!(
                "{ONLINE} reads {now:?} after every CPU came back, where it read {:?}",
                self.online
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_task_on_two_cpus_or_more() {
        let two = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        assert!(CpuHotplug::default().check(two).is_ok());
        let one = GuestSize {
            online_cpus: 1,
            ..two
        };
        assert!(CpuHotplug::default().check(one).is_err());
    }
}
