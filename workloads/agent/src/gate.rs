//! What a forked worker and the agent share: where the worker runs
//! ([`Slot`]), its side of the gates ([`Gate`]), the body it runs
//! ([`Body`]) and the exit statuses it leaves with. [`crate::spawn`] (the
//! agent's side) and [`crate::worker`] (the child's) both build on it.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;

use crate::error::{Context, Result};
use crate::report::{Fields, Line};
use crate::sys;

/// Exit status of a worker that failed and said why in an `error` line.
pub const EXIT_FAILED: i32 = 1;
/// Exit status of a worker whose run was called off by the agent.
pub const EXIT_ABORTED: i32 = 3;
/// Exit status of a worker that panicked.
pub const EXIT_PANICKED: i32 = 101;

/// Where one worker runs.
#[derive(Debug, Clone, Copy)]
pub struct Slot<'a> {
    /// The CPU the worker pins itself to, if any.
    pub cpu: Option<u32>,
    /// The `cgroup.procs` file the worker moves itself into before gate 0
    /// (`None`: it stays in the agent's cgroup).
    pub cgroup_procs: Option<&'a Path>,
}

/// A worker's side of its gates.
pub struct Gate {
    report: File,
    control: File,
}

impl Gate {
    pub fn new(report: File, control: File) -> Gate {
        Gate { report, control }
    }

    /// Says `ready` and blocks until the agent opens the gate. When the agent
    /// calls the run off instead, the worker exits at once.
    pub fn wait(&mut self) -> Result<()> {
        self.send(&Line::Ready)?;
        let mut byte = [0u8; 1];
        loop {
            match self.control.read(&mut byte) {
                Ok(1) => return Ok(()),
                Ok(_) => sys::exit_now(EXIT_ABORTED),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e).context("waiting at a gate"),
            }
        }
    }

    pub fn send(&mut self, line: &Line) -> Result<()> {
        self.report
            .write_all(line.encode().as_bytes())
            .context("writing to the agent's report pipe")
    }
}

/// A worker's body, run in the forked child after gate 0; it calls
/// [`Gate::wait`] at each further gate and returns its numbers. Every worker
/// of a run must pass the same number of gates.
pub type Body<'a> = &'a dyn Fn(usize, &mut Gate) -> Result<Fields>;
