//! `fork-exec`: fork, execve a program that exits at once, wait: lmbench's
//! lat_proc `exec` (fork, execve of its `hello`, wait for it), which
//! will-it-scale has no testcase for. The program is the guest's `/init`
//! (this agent, dynamically linked) run as `/init true`: off PID 1 the
//! agent is its developer mode, whose `true` exits 0 at once. So each
//! operation is a fork of the task, an exec (the old mm torn down, the ELF
//! and its interpreter mapped, the libraries mapped and relocated, their
//! pages faulted in from the page cache), an exit, and the wait. The
//! child turns address-space randomization off for the program
//! (personality ADDR_NO_RANDOMIZE, as `setarch -R` does), so that every
//! exec lays out the same address space and does the same work: with it
//! on, where the stack, the program and its libraries land moves which
//! page tables are made and what fault-around maps, exec by exec. Spec:
//! `workloads/fork-exec.yaml`.

use std::ffi::CString;
use std::io;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{fork_child, last, wait_ok};
use crate::bench::{Bench, GuestSize, Load, ParamError, Task};
use crate::kind::Kind;

/// The program each operation executes, and its arguments: the agent, in
/// its developer mode's `true`.
pub const PROGRAM: [&str; 2] = ["/init", "true"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ForkExec {
    pub tasks: u32,
    pub ops: u32,
}

impl Default for ForkExec {
    fn default() -> Self {
        ForkExec { tasks: 1, ops: 256 }
    }
}

impl Kind for ForkExec {
    fn describe(&self) -> String {
        format!("program={}", PROGRAM.join(" "))
    }
}

impl Bench for ForkExec {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, _guest: GuestSize) -> Result<(), ParamError> {
        Ok(())
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        Ok(Box::new(Execer::new(&PROGRAM)?))
    }
}

/// A program's path and arguments, made ready before the window: the
/// child only calls execve.
struct Execer {
    argv: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    envp: [*const libc::c_char; 1],
}

impl Execer {
    fn new(program: &[&str]) -> io::Result<Execer> {
        let argv = program
            .iter()
            .map(|a| CString::new(*a).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e)))
            .collect::<io::Result<Vec<_>>>()?;
        let argv_ptrs = argv
            .iter()
            .map(|a| a.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect();
        Ok(Execer {
            argv,
            argv_ptrs,
            envp: [std::ptr::null()],
        })
    }
}

impl Task for Execer {
    fn op(&mut self) -> io::Result<()> {
        let child = fork_child(|| {
            // SAFETY: personality(0xffffffff) reads the persona; setting it
            // changes only this child's next exec. execve gets
            // NUL-terminated strings and null-terminated arrays that
            // outlive the call, and returns only on a failure.
            unsafe {
                let persona = libc::personality(0xffff_ffff);
                if persona == -1
                    || libc::personality((persona | libc::ADDR_NO_RANDOMIZE) as libc::c_ulong) == -1
                {
                    return Err(last("personality(ADDR_NO_RANDOMIZE)"));
                }
                libc::execve(
                    self.argv[0].as_ptr(),
                    self.argv_ptrs.as_ptr(),
                    self.envp.as_ptr(),
                )
            };
            Err(last("execve"))
        })?;
        wait_ok(child)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_is_executed_and_waited_for() {
        let mut task = Execer::new(&["/bin/true"]).unwrap();
        for _ in 0..3 {
            task.op().unwrap();
        }
        let mut failing = Execer::new(&["/bin/false"]).unwrap();
        assert!(failing.op().is_err());
        let mut missing = Execer::new(&["/nonexistent/program"]).unwrap();
        assert!(missing.op().is_err());
    }

    #[test]
    fn the_program_runs_without_address_space_randomization() {
        let check = "grep -qx 00040000 /proc/self/personality";
        let mut task = Execer::new(&["/bin/sh", "-c", check]).unwrap();
        task.op().unwrap();
    }
}
