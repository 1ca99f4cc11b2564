//! `process-mrelease`: a process killed and its memory reaped at once, as
//! Android's lmkd kills under memory pressure: pidfd_send_signal(2) with
//! SIGKILL, then process_mrelease(2) (5.15), which unmaps the dying
//! process's anonymous memory in the killer's context (the OOM reaper's
//! `__oom_reap_task_mm()`), so that the memory is free before the victim
//! has run its own exit.
//!
//! Each operation forks a child that maps `size` of anonymous memory,
//! writes every page, says so through a pipe and waits; the task opens a
//! pidfd for it, kills it through the pidfd and calls process_mrelease on
//! the pidfd, then reaps the child and checks it died of SIGKILL.
//!
//! So that the reaping is the same every time, the victim must not run
//! between the kill and process_mrelease (on the other vCPU it would race
//! its own exit to unmap the memory): the task and its child share one
//! CPU (the task pins itself to the CPU it is on before forking), and the
//! task holds SCHED_FIFO from just before the kill until process_mrelease
//! returns, so the woken child waits for it. Spec:
//! `workloads/process-mrelease.yaml`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use serde::{Deserialize, Serialize};

use crate::bench::sys::{Map, fork_child, last, page_size, pipe, wait_status};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProcessMrelease {
    pub tasks: u32,
    pub ops: u32,
    /// The anonymous memory each victim writes and process_mrelease reaps.
    pub size: Bytes,
}

impl Default for ProcessMrelease {
    fn default() -> Self {
        ProcessMrelease {
            tasks: 1,
            ops: 8,
            size: Bytes::mib(16),
        }
    }
}

impl Kind for ProcessMrelease {
    fn describe(&self) -> String {
        format!("size={}", self.size)
    }
}

impl Bench for ProcessMrelease {
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
        Ok(Box::new(Killer {
            len: self.size.bytes(),
        }))
    }
}

struct Killer {
    len: usize,
}

/// Pins the calling process to the CPU it is on.
fn pin_here() -> io::Result<()> {
    // SAFETY: no arguments.
    let cpu = unsafe { libc::sched_getcpu() };
    if cpu < 0 {
        return Err(last("sched_getcpu"));
    }
    // SAFETY: a zeroed set is a valid empty set; CPU_SET writes inside it.
    let ret = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if ret != 0 {
        return Err(last(&format!("sched_setaffinity to CPU {cpu}")));
    }
    Ok(())
}

/// Sets the calling process's policy: SCHED_FIFO at priority 1, or back
/// to SCHED_OTHER.
fn set_fifo(on: bool) -> io::Result<()> {
    let (policy, priority) = if on {
        (libc::SCHED_FIFO, 1)
    } else {
        (libc::SCHED_OTHER, 0)
    };
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: a live parameter block.
    if unsafe { libc::sched_setscheduler(0, policy, &param) } != 0 {
        return Err(last(if on {
            "sched_setscheduler(SCHED_FIFO)"
        } else {
            "sched_setscheduler(SCHED_OTHER)"
        }));
    }
    Ok(())
}

/// The victim's body: writes its memory, says so, and waits to be killed.
fn victim(len: usize, ready: OwnedFd) -> io::Result<()> {
    let mut map = Map::anon(len)?;
    map.touch(page_size());
    // SAFETY: one byte from a live array.
    if unsafe { libc::write(ready.as_raw_fd(), [1u8].as_ptr().cast(), 1) } != 1 {
        return Err(last("writing to the task's pipe"));
    }
    loop {
        // SAFETY: no arguments; returns only on a caught signal.
        unsafe { libc::pause() };
    }
}

impl Killer {
    /// Kills the child through a pidfd and reaps its memory.
    fn kill_and_release(&self, child: libc::pid_t) -> io::Result<()> {
        // SAFETY: no pointers.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, child, 0) };
        if pidfd < 0 {
            return Err(last(&format!("pidfd_open of the victim {child}")));
        }
        // SAFETY: a fresh descriptor nothing else owns.
        let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as libc::c_int) };
        set_fifo(true)?;
        // SAFETY: no pointers but a null siginfo, which the call allows.
        let killed = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                pidfd.as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        let killed = if killed == 0 {
            Ok(())
        } else {
            Err(last("pidfd_send_signal(SIGKILL)"))
        };
        // SAFETY: no pointers.
        let released = unsafe { libc::syscall(libc::SYS_process_mrelease, pidfd.as_raw_fd(), 0) };
        let released = if released == 0 {
            Ok(())
        } else {
            Err(last("process_mrelease"))
        };
        set_fifo(false)?;
        killed.and(released)
    }
}

impl Task for Killer {
    fn op(&mut self) -> io::Result<()> {
        pin_here()?;
        let (read_end, write_end) = pipe()?;
        let len = self.len;
        let child = fork_child(move || victim(len, write_end))?;
        let mut byte = [0u8; 1];
        // SAFETY: one byte into a live array.
        let got = unsafe { libc::read(read_end.as_raw_fd(), byte.as_mut_ptr().cast(), 1) };
        let result = if got == 1 {
            self.kill_and_release(child)
        } else {
            Err(io::Error::other(format!(
                "the victim {child} died before writing its {len} bytes"
            )))
        };
        if result.is_err() {
            // The victim must not outlive a failed operation.
            // SAFETY: no pointers.
            unsafe { libc::kill(child, libc::SIGKILL) };
        }
        let status = wait_status(child)?;
        result?;
        if !libc::WIFSIGNALED(status) || libc::WTERMSIG(status) != libc::SIGKILL {
            return Err(io::Error::other(format!(
                "the victim {child} ended with status {status:#x}, not killed by SIGKILL"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On the host: as root (the agent's case) a victim is killed and
    /// reaped; otherwise SCHED_FIFO is refused, and the error says so.
    #[test]
    fn a_victim_is_killed_and_its_memory_released() {
        let mut killer = ProcessMrelease {
            size: Bytes::mib(1),
            ..ProcessMrelease::default()
        }
        .task(0)
        .unwrap();
        let result = killer.op();
        // SAFETY: no arguments.
        if unsafe { libc::geteuid() } == 0 {
            result.unwrap();
        } else {
            let e = result.unwrap_err();
            assert!(e.to_string().contains("SCHED_FIFO"), "{e}");
        }
    }
}
