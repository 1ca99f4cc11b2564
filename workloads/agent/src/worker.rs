//! One ZswapPageout worker: the timed body, and the forked child around it.
//!
//! The child pins itself to its CPU and joins the cgroup, says `ready`, waits
//! for the agent's start byte, then runs [`measure`] and reports (see
//! [`crate::report`]). It leaves through `_exit`, so nothing of the parent
//! (PID 1) runs in it.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::panic::AssertUnwindSafe;
use std::path::Path;

use crate::error::{Context, Error, Result, bail};
use crate::pattern;
use crate::report::{Line, WorkerResult};
use crate::sys::{self, Mapping};

/// Exit status of a worker that failed and said why in an `error` line.
pub const EXIT_FAILED: i32 = 1;
/// Exit status of a worker whose start was called off by the agent.
pub const EXIT_ABORTED: i32 = 3;
/// Exit status of a worker that panicked.
pub const EXIT_PANICKED: i32 = 101;

/// What one worker is asked to do.
pub struct WorkerPlan<'a> {
    /// The CPU the worker pins itself to.
    pub cpu: u32,
    /// The `cgroup.procs` file the worker moves itself into, before its clocks
    /// start (`None` only in the developer mode, off PID 1).
    pub cgroup_procs: Option<&'a Path>,
    /// Anonymous memory to page out, in MiB.
    pub mib: u64,
}

/// The forked child's whole life: never returns.
pub fn child_main(plan: &WorkerPlan, report: OwnedFd, start: OwnedFd) -> ! {
    let mut report = File::from(report);
    let outcome =
        std::panic::catch_unwind(AssertUnwindSafe(|| child_body(plan, &mut report, start)));
    let (code, error) = match outcome {
        Ok(Ok(true)) => (0, None),
        Ok(Ok(false)) => (EXIT_ABORTED, None),
        Ok(Err(e)) => (EXIT_FAILED, Some(e.to_string())),
        Err(_) => (EXIT_PANICKED, Some("worker panicked".to_string())),
    };
    if let Some(message) = error {
        // Nothing more can be done if the agent stopped listening.
        let _ = report.write_all(Line::Error(message).encode().as_bytes());
    }
    sys::exit_now(code)
}

/// Returns `Ok(false)` when the agent called the start off.
fn child_body(plan: &WorkerPlan, report: &mut File, start: OwnedFd) -> Result<bool> {
    sys::pin_to_cpu(plan.cpu).with_context(|| format!("pinning to CPU {}", plan.cpu))?;
    if let Some(procs) = plan.cgroup_procs {
        crate::files::write(procs, &sys::getpid().to_string())?;
    }
    send(report, &Line::Ready)?;
    if !wait_for_start(start).context("waiting for the start signal")? {
        return Ok(false);
    }
    let result = measure(plan.mib)?;
    send(report, &Line::Done(result))?;
    Ok(true)
}

fn send(report: &mut File, line: &Line) -> Result<()> {
    report
        .write_all(line.encode().as_bytes())
        .context("writing to the agent's report pipe")
}

/// Blocks until the agent writes a start byte (`true`) or closes the pipe
/// without one (`false`).
fn wait_for_start(start: OwnedFd) -> io::Result<bool> {
    let mut start = File::from(start);
    let mut byte = [0u8; 1];
    loop {
        match start.read(&mut byte) {
            Ok(n) => return Ok(n == 1),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

fn cpu_now() -> Result<u64> {
    sys::process_cpu_ns().context("reading CLOCK_PROCESS_CPUTIME_ID")
}

fn mono_now() -> Result<u64> {
    sys::monotonic_ns().context("reading CLOCK_MONOTONIC")
}

/// The timed body: fill `mib` MiB of anonymous memory, page it all out,
/// read it all back and check it, unmap it. The caller must be
/// single-threaded, since the CPU clock is the whole process's.
pub fn measure(mib: u64) -> Result<WorkerResult> {
    let page_size = sys::page_size();
    let page_words = page_size / 8;
    let len = usize::try_from(mib)
        .ok()
        .and_then(|m| m.checked_mul(1 << 20))
        .filter(|&len| len > 0)
        .ok_or_else(|| Error::msg(format!("bad region size {mib} MiB")))?;
    let pages = len / page_size;

    let total_start = cpu_now()?;
    let start_mono_ns = mono_now()?;

    let mut map = Mapping::anonymous(len).with_context(|| format!("mmap of {mib} MiB"))?;
    map.advise(libc::MADV_NOHUGEPAGE)
        .context("madvise(MADV_NOHUGEPAGE)")?;
    for (index, page) in map.words_mut().chunks_exact_mut(page_words).enumerate() {
        pattern::fill_page(index as u64, page);
    }

    let pageout_start = cpu_now()?;
    map.advise(libc::MADV_PAGEOUT)
        .context("madvise(MADV_PAGEOUT)")?;
    let pageout_end = cpu_now()?;

    let verify_start = cpu_now()?;
    for (index, page) in map.words().chunks_exact(page_words).enumerate() {
        if let Err(m) = pattern::check_page(index as u64, page) {
            bail!(
                "verify: page {index} of {pages} is corrupt: word {} is {:#x}, expected {:#x}",
                m.word,
                m.found,
                m.expected
            );
        }
    }
    let verify_end = cpu_now()?;

    map.unmap().context("munmap")?;
    let total_end = cpu_now()?;
    let end_mono_ns = mono_now()?;

    Ok(WorkerResult {
        pageout_cpu_ns: pageout_end - pageout_start,
        verify_cpu_ns: verify_end - verify_start,
        total_cpu_ns: total_end - total_start,
        start_mono_ns,
        end_mono_ns,
    })
}
