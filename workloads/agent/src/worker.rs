//! The forked worker's side: the child around a workload's body, and the
//! timed body of a ZswapPageout worker.
//!
//! The child pins itself to its CPU (if it has one) and joins its cgroup,
//! waits at gate 0 for the agent's start, runs the body and reports its
//! numbers (see [`crate::report`] and [`crate::spawn`]). It leaves through
//! `_exit`, so nothing of the parent (PID 1) runs in it.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::panic::AssertUnwindSafe;

use patchbench_agent::marker::Phase;

use crate::error::{Context, Error, Result, bail};
use crate::gate::{Body, EXIT_FAILED, EXIT_PANICKED, Gate, Slot};
use crate::mark;
use crate::pattern;
use crate::report::{Line, WorkerResult};
use crate::sys::{self, Mapping};

/// The forked child's whole life: never returns.
pub fn child_main(index: usize, slot: &Slot, body: Body, report: OwnedFd, control: OwnedFd) -> ! {
    let report = File::from(report);
    let mut error_pipe = match report.try_clone() {
        Ok(file) => file,
        Err(_) => sys::exit_now(EXIT_FAILED),
    };
    let mut gate = Gate::new(report, File::from(control));
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
        child_body(index, slot, body, &mut gate)
    }));
    let (code, error) = match outcome {
        Ok(Ok(())) => (0, None),
        Ok(Err(e)) => (EXIT_FAILED, Some(e.to_string())),
        Err(_) => (EXIT_PANICKED, Some("worker panicked".to_string())),
    };
    if let Some(message) = error {
        // Nothing more can be done if the agent stopped listening.
        let _ =
            std::io::Write::write_all(&mut error_pipe, Line::Error(message).encode().as_bytes());
    }
    sys::exit_now(code)
}

fn child_body(index: usize, slot: &Slot, body: Body, gate: &mut Gate) -> Result<()> {
    if let Some(cpu) = slot.cpu {
        sys::pin_to_cpu(cpu).with_context(|| format!("pinning to CPU {cpu}"))?;
    }
    if let Some(procs) = slot.cgroup_procs {
        crate::files::write(procs, &sys::getpid().to_string())?;
    }
    gate.wait()?;
    let fields = body(index, gate)?;
    gate.send(&Line::Done(fields))
}

fn cpu_now() -> Result<u64> {
    sys::process_cpu_ns().context("reading CLOCK_PROCESS_CPUTIME_ID")
}

fn mono_now() -> Result<u64> {
    sys::monotonic_ns().context("reading CLOCK_MONOTONIC")
}

/// The timed body: fill `mib` MiB of anonymous memory, page it all out,
/// read it all back and check it, unmap it. `gate` runs right before and
/// right after the PAGEOUT (the agent switches the function profiler there).
/// With `marked`, the body marks its `total`, `pageout` and `verify` phases
/// for the cost model (inside the clock reads that time them). The caller
/// must be single-threaded, since the CPU clock is the whole process's.
pub fn measure(
    mib: u64,
    random_percent: u8,
    marked: bool,
    gate: &mut dyn FnMut() -> Result<()>,
) -> Result<WorkerResult> {
    let if_marked = |edge: fn(Phase), phase| {
        if marked {
            edge(phase)
        }
    };
    let page_size = sys::page_size();
    let page_words = page_size / 8;
    let random = pattern::random_words(page_words, random_percent);
    let len = usize::try_from(mib)
        .ok()
        .and_then(|m| m.checked_mul(1 << 20))
        .filter(|&len| len > 0)
        .ok_or_else(|| Error::msg(format!("bad region size {mib} MiB")))?;
    let pages = len / page_size;

    let total_start = cpu_now()?;
    let start_mono_ns = mono_now()?;
    if_marked(mark::begin, Phase::Total);

    let mut map = Mapping::anonymous(len).with_context(|| format!("mmap of {mib} MiB"))?;
    map.advise(libc::MADV_NOHUGEPAGE)
        .context("madvise(MADV_NOHUGEPAGE)")?;
    for (index, page) in map.words_mut().chunks_exact_mut(page_words).enumerate() {
        pattern::fill_page_mixed(index as u64, page, random);
    }

    gate()?;
    let pageout_start = cpu_now()?;
    if_marked(mark::begin, Phase::Pageout);
    map.advise(libc::MADV_PAGEOUT)
        .context("madvise(MADV_PAGEOUT)")?;
    if_marked(mark::end, Phase::Pageout);
    let pageout_end = cpu_now()?;
    gate()?;

    let verify_start = cpu_now()?;
    if_marked(mark::begin, Phase::Verify);
    for (index, page) in map.words().chunks_exact(page_words).enumerate() {
        if let Err(m) = pattern::check_page_mixed(index as u64, page, random) {
            bail!(
                "verify: page {index} of {pages} is corrupt: word {} is {:#x}, expected {:#x}",
                m.word,
                m.found,
                m.expected
            );
        }
    }
    if_marked(mark::end, Phase::Verify);
    let verify_end = cpu_now()?;

    map.unmap().context("munmap")?;
    if_marked(mark::end, Phase::Total);
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
