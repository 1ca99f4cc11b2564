//! One run of a staged program (`stress-ng`, `mm-selftest`) as a sample's
//! window: from spawn to exit, marked as one phase for the cost model and
//! the counting lane. The program comes from the boot's initramfs
//! (`patchbench_agent::staged`), so nothing in the window reads the host;
//! the swap disk's interrupts inside it are counted (`disk_irqs`), as a
//! kernel build's are. Its CPU time is the reaped process tree's
//! (`getrusage(RUSAGE_CHILDREN)`, what `time` reports) and the guest's
//! ([`cpustat::Meter`]).

use std::io;
use std::path::Path;

use patchbench_agent::marker::Phase;

use crate::cpustat;
use crate::error::{Context, Result, bail};
use crate::hostio;
use crate::kbuild::tail;
use crate::mark;
use crate::report::Fields;
use crate::settle;
use crate::sys::{self, Exit};

/// Lines of a program's output shown when it fails.
const TAIL_LINES: usize = 30;

/// Runs a program to its exit in one `phase` window: `run` starts it and
/// waits for it. The guest settles before the window and the program's
/// RCU callbacks run inside it, as in the mm library's windows
/// ([`settle`]). Its metrics are `real_ns` (CLOCK_MONOTONIC, spawn to
/// exit), `user_ns` and `sys_ns` (the program and everything it waited
/// for), the guest's CPU time by mode and daemon, and `disk_irqs`. `what`
/// names it in errors.
pub fn run(
    run: impl FnOnce() -> io::Result<Exit>,
    phase: Phase,
    disks: &hostio::Watch,
    what: &str,
) -> Result<(Exit, Fields)> {
    let barrier = settle::has_rcu_barrier();
    settle::before_window(barrier)?;
    let meter = cpustat::Meter::start(cpustat::Whose::Children)?;
    let disk_before = disks.count()?;
    let start = sys::monotonic_ns().context("reading CLOCK_MONOTONIC")?;
    mark::begin(phase);
    let exit = run();
    settle::end_window(barrier)?;
    mark::end(phase);
    let end = sys::monotonic_ns().context("reading CLOCK_MONOTONIC")?;
    let mut metrics = meter.stop()?;
    let exit = exit.with_context(|| format!("running {what}"))?;
    metrics.insert("real_ns".into(), end - start);
    metrics.insert("disk_irqs".into(), disks.count()? - disk_before);
    Ok((exit, metrics))
}

/// Fails unless the program exited 0, with the end of its output (the
/// log at `log`).
pub fn check_exit(exit: Exit, log: &Path, what: &str) -> Result<()> {
    let how = match exit {
        Exit::Code(0) => return Ok(()),
        Exit::Code(127) => "status 127 (it could not be started)".to_string(),
        Exit::Code(code) => format!("status {code}"),
        Exit::Signal(signal) => format!("{} ({signal})", sys::signal_name(signal)),
    };
    let text = std::fs::read_to_string(log).unwrap_or_default();
    bail!(
        "{what} exited with {how}; the end of its output:\n{}",
        tail(&text, TAIL_LINES)
    )
}
