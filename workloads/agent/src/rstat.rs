//! The RstatFlush workload (seed 002): many cgroups keep dirtying memcg
//! counters while one reader reads their parent's `memory.stat` in a loop,
//! and the function profiler counts and times `mem_cgroup_css_rstat_flush`.
//!
//! Setup, once and untimed: the parent `/sys/fs/cgroup/patchbench-rstat`
//! with `cgroups` children, a tmpfs, and one dirtier process per child,
//! started before the first sample and killed after the last. A dirtier
//! loops forever: fault in `dirty_kib` KiB of anonymous memory and unmap it
//! (anon, pgfault), write a tmpfs file of that size and truncate it (shmem,
//! file), create and unlink a file (slab: dentry, inode), then sleep
//! `dirty_pause`. It never forks.
//!
//! A sample: start the profiler, `pread()` the open `memory.stat` at offset 0
//! `reads` times (one process, no fork per read; reading it flushes the
//! subtree's stats once enough updates are pending), stop the profiler. The
//! loop is the cost model's `read_loop` phase.
//!
//! In lockstep (`Params::lockstep`), a dirtier does one round only when the
//! agent asks, before a sample's read loop, and the agent waits until every
//! dirtier has finished its round: the read loop then runs alone, and each
//! sample's first flush finds the same pending updates.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use patchbench_agent::marker::Phase;

use crate::cgroup;
use crate::console;
use crate::cpustat;
use crate::error::{Context, Error, Result, bail};
use crate::files;
use crate::mark;
use crate::pageout::emit;
use crate::port::Port;
use crate::profiler::{Profiler, Stat};
use crate::setup;
use crate::sys::{self, Exit, Forked, Mapping};

const CGROUP: &str = "patchbench-rstat";
const TMPFS: &str = "/tmp/patchbench-rstat";

/// The workload's parameters, as the job gives them.
pub struct Params {
    pub cgroups: u32,
    pub dirty_kib: u64,
    pub dirty_pause: Duration,
    pub reads: u32,
    /// One round per dirtier before each sample, none during it.
    pub lockstep: bool,
}

/// Sets up the cgroups and dirtiers, runs and reports every sample, then
/// stops the dirtiers.
pub fn run(
    params: &Params,
    warmups: u32,
    samples: u32,
    profiler: &Profiler,
    port: &mut Port,
) -> Result<()> {
    if params.cgroups == 0 || params.reads == 0 {
        bail!("cgroups and reads must be at least 1");
    }
    let (parent, children) = cgroup::tree(CGROUP, params.cgroups)?;
    setup::mount_on(
        "tmpfs",
        Path::new(TMPFS),
        "tmpfs",
        libc::MS_NOSUID | libc::MS_NODEV,
        None,
    )?;
    let mut dirtiers = Dirtiers::start(&children, params).context("starting the dirtiers")?;
    console::say(format!(
        "rstat-flush: {} dirtiers in {}/cg*, reading {}/memory.stat",
        params.cgroups,
        parent.display(),
        parent.display()
    ));
    let stat_path = parent.join("memory.stat");
    let stat_file =
        File::open(&stat_path).with_context(|| format!("opening {}", stat_path.display()))?;
    let total = warmups + samples;
    let outcome = (0..total).try_for_each(|index| {
        let during = || format!("sample {index}");
        dirtiers.check().with_context(during)?;
        dirtiers.round().with_context(during)?;
        let metrics =
            sample(&stat_file, &stat_path, params.reads, profiler).with_context(during)?;
        emit(port, index, warmups, total, metrics)
    });
    let stopped = dirtiers.stop();
    outcome?;
    stopped
}

/// One sample: the timed read loop between the profiler's start and stop.
fn sample(
    file: &File,
    path: &Path,
    reads: u32,
    profiler: &Profiler,
) -> Result<BTreeMap<String, u64>> {
    let mut buf = vec![0u8; 1 << 16];
    profiler.start().context("starting the function profiler")?;
    // The reader is the agent itself.
    let meter = cpustat::Meter::start(cpustat::Whose::ThisThread)?;
    let start = sys::monotonic_ns().context("reading CLOCK_MONOTONIC")?;
    mark::begin(Phase::ReadLoop);
    for _ in 0..reads {
        let n = file
            .read_at(&mut buf, 0)
            .with_context(|| format!("pread of {}", path.display()))?;
        if n == 0 {
            bail!("pread of {} returned nothing", path.display());
        }
    }
    mark::end(Phase::ReadLoop);
    let end = sys::monotonic_ns().context("reading CLOCK_MONOTONIC")?;
    let cpu = meter.stop()?;
    profiler.stop().context("stopping the function profiler")?;
    let flush = profiler.read().context("reading the function profiler")?;
    let mut metrics = metrics(flush, reads, end - start);
    metrics.extend(cpu);
    Ok(metrics)
}

/// One sample's metrics (names and units as in `workloads/rstat-flush.yaml`).
/// A sample in which the function never ran has no `flush_mean_ns`: a mean
/// over no calls is absent, not 0 (a 0 would pull the mean per call down
/// and inflate its variance).
pub fn metrics(flush: Stat, reads: u32, elapsed_ns: u64) -> BTreeMap<String, u64> {
    let elapsed_ns = elapsed_ns.max(1);
    let reads = u64::from(reads);
    let mut metrics = BTreeMap::from([
        ("flush_calls".to_string(), flush.hits),
        ("flush_total_ns".to_string(), flush.time_ns),
        ("read_loop_ns".to_string(), elapsed_ns),
        ("read_mean_ns".to_string(), elapsed_ns / reads),
        (
            "reads_per_s".to_string(),
            (u128::from(reads) * 1_000_000_000 / u128::from(elapsed_ns)) as u64,
        ),
    ]);
    if let Some(mean) = flush.mean_ns() {
        metrics.insert("flush_mean_ns".to_string(), mean);
    }
    metrics
}

/// The running dirtier processes.
struct Dirtiers {
    pids: Vec<libc::pid_t>,
    /// In lockstep: one pipe per dirtier to ask for a round, and the pipe
    /// every dirtier reports a finished round on.
    lockstep: Option<Lockstep>,
}

struct Lockstep {
    go: Vec<File>,
    done: File,
}

impl Dirtiers {
    /// Forks one dirtier per cgroup and waits until every one is in its
    /// cgroup (each writes one byte to a shared pipe, then closes its end).
    fn start(children: &[PathBuf], params: &Params) -> Result<Dirtiers> {
        let (ready_read, ready_write) = sys::pipe().context("creating the ready pipe")?;
        let (done_read, done_write) = if params.lockstep {
            let (r, w) = sys::pipe().context("creating the done pipe")?;
            (Some(File::from(r)), Some(File::from(w)))
        } else {
            (None, None)
        };
        let mut go = Vec::new();
        let mut dirtiers = Dirtiers {
            pids: Vec::new(),
            lockstep: None,
        };
        for (index, dir) in children.iter().enumerate() {
            let go_pipe = if params.lockstep {
                let (r, w) = sys::pipe().context("creating a go pipe")?;
                Some((File::from(r), File::from(w)))
            } else {
                None
            };
            match sys::fork().context("fork") {
                Ok(Forked::Child) => {
                    drop(ready_read);
                    // Only this dirtier's own go pipe, read end, stays.
                    go.clear();
                    drop(done_read);
                    let pace = match (go_pipe, done_write) {
                        (Some((go_read, _)), Some(done)) => Pace::Lockstep { go: go_read, done },
                        _ => Pace::Pause(params.dirty_pause),
                    };
                    dirtier_main(index, dir, params, File::from(ready_write), pace)
                }
                Ok(Forked::Parent { pid }) => {
                    dirtiers.pids.push(pid);
                    if let Some((_, go_write)) = go_pipe {
                        go.push(go_write);
                    }
                }
                Err(e) => {
                    dirtiers.kill_all();
                    return Err(e);
                }
            }
        }
        drop(ready_write);
        drop(done_write);
        let mut bytes = vec![0u8; children.len()];
        if let Err(e) = File::from(ready_read).read_exact(&mut bytes) {
            dirtiers.kill_all();
            return Err(e).context("a dirtier failed before joining its cgroup (see the console)");
        }
        dirtiers.lockstep = done_read.map(|done| Lockstep { go, done });
        Ok(dirtiers)
    }

    /// In lockstep: asks every dirtier for one round and waits until all
    /// have finished it. Otherwise nothing: the dirtiers run on their own.
    fn round(&mut self) -> Result<()> {
        let Some(lockstep) = &mut self.lockstep else {
            return Ok(());
        };
        for go in &mut lockstep.go {
            go.write_all(b"g").context("asking a dirtier for a round")?;
        }
        let mut bytes = vec![0u8; lockstep.go.len()];
        lockstep
            .done
            .read_exact(&mut bytes)
            .context("waiting for the dirtiers' rounds (a dirtier died? see the console)")
    }

    /// Fails if any dirtier has ended.
    fn check(&self) -> Result<()> {
        for (index, &pid) in self.pids.iter().enumerate() {
            if let Some(exit) = sys::try_wait(pid).context("checking a dirtier")? {
                bail!("dirtier {index} ended early: {exit:?} (see the console)");
            }
        }
        Ok(())
    }

    fn kill_all(&mut self) -> Vec<Result<Exit>> {
        let pids = std::mem::take(&mut self.pids);
        for &pid in &pids {
            let _ = sys::kill(pid);
        }
        pids.iter()
            .map(|&pid| sys::wait_for(pid).context("waiting for a dirtier"))
            .collect()
    }

    /// Kills every dirtier; each must have been running until then.
    fn stop(mut self) -> Result<()> {
        for (index, exit) in self.kill_all().into_iter().enumerate() {
            match exit? {
                Exit::Signal(libc::SIGKILL) => {}
                other => bail!("dirtier {index} ended early: {other:?} (see the console)"),
            }
        }
        Ok(())
    }
}

/// When a dirtier does its next round.
enum Pace {
    /// At once, after sleeping this long (0: not at all).
    Pause(Duration),
    /// When a byte arrives on `go`; it writes one to `done` after the round.
    Lockstep { go: File, done: File },
}

impl Pace {
    /// Waits for the next round; false when the agent closed the go pipe.
    fn wait(&mut self) -> Result<bool> {
        match self {
            Pace::Pause(pause) => {
                if !pause.is_zero() {
                    std::thread::sleep(*pause);
                }
                Ok(true)
            }
            Pace::Lockstep { go, .. } => {
                let mut byte = [0u8];
                Ok(go.read(&mut byte).context("reading the go pipe")? == 1)
            }
        }
    }

    /// Reports a finished round.
    fn finished(&mut self) -> Result<()> {
        match self {
            Pace::Pause(_) => Ok(()),
            Pace::Lockstep { done, .. } => done.write_all(b"d").context("writing the done pipe"),
        }
    }
}

/// A dirtier's whole life: never returns. Its errors go to the console.
fn dirtier_main(index: usize, dir: &Path, params: &Params, mut ready: File, pace: Pace) -> ! {
    let outcome = (|| -> Result<()> {
        files::write(dir.join("cgroup.procs"), &sys::getpid().to_string())?;
        ready.write_all(b"r").context("writing the ready pipe")?;
        drop(ready);
        dirty_forever(index, params, pace)
    })();
    if let Err(e) = outcome {
        console::say(format!("dirtier {index}: {e}"));
    }
    sys::exit_now(1)
}

/// Dirties anon, file and slab counters until killed, a round at the
/// pace given.
fn dirty_forever(index: usize, params: &Params, mut pace: Pace) -> Result<()> {
    let page = sys::page_size();
    let len = usize::try_from(params.dirty_kib * 1024)
        .map_err(|_| Error::msg("dirty_kib is too large"))?
        .max(page);
    let data = vec![0x5au8; len];
    let file_path = Path::new(TMPFS).join(format!("d{index}"));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&file_path)
        .with_context(|| format!("creating {}", file_path.display()))?;
    let slab_path = Path::new(TMPFS).join(format!("s{index}"));
    if matches!(pace, Pace::Lockstep { .. }) && !pace.wait()? {
        return Ok(());
    }
    loop {
        let mut map = Mapping::anonymous(len).context("mmap")?;
        for word in map.words_mut().iter_mut().step_by(page / 8) {
            *word = 1;
        }
        map.unmap().context("munmap")?;
        file.write_all_at(&data, 0)
            .with_context(|| format!("writing {}", file_path.display()))?;
        file.set_len(0)
            .with_context(|| format!("truncating {}", file_path.display()))?;
        File::create(&slab_path).with_context(|| format!("creating {}", slab_path.display()))?;
        std::fs::remove_file(&slab_path)
            .with_context(|| format!("removing {}", slab_path.display()))?;
        pace.finished()?;
        if !pace.wait()? {
            return Ok(());
        }
    }
}

impl crate::run::Run for patchbench_agent::kinds::rstat_flush::RstatFlush {
    fn run(&self, boot: crate::run::Boot<'_>) -> Result<()> {
        let params = Params {
            cgroups: self.cgroups,
            dirty_kib: self.dirty_kib,
            dirty_pause: self.dirty_pause,
            reads: self.reads,
            lockstep: self.lockstep,
        };
        let profiler = boot.profiler.expect("rstat-flush always profiles");
        run(&params, boot.warmups, boot.samples, profiler, boot.port).context("rstat-flush")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_give_rate_latency_and_flush_cost() {
        let flush = Stat {
            hits: 40,
            time_ns: 52_000,
        };
        let m = metrics(flush, 1000, 2_000_000_000);
        let got: Vec<(&str, u64)> = m.iter().map(|(k, &v)| (k.as_str(), v)).collect();
        assert_eq!(
            got,
            [
                ("flush_calls", 40),
                ("flush_mean_ns", 1_300),
                ("flush_total_ns", 52_000),
                ("read_loop_ns", 2_000_000_000),
                ("read_mean_ns", 2_000_000),
                ("reads_per_s", 500),
            ]
        );
        let none = metrics(Stat::default(), 1, 0);
        assert_eq!(none["flush_calls"], 0);
        assert_eq!(none["flush_total_ns"], 0);
        assert!(
            !none.contains_key("flush_mean_ns"),
            "a sample without calls has no mean per call: {none:?}"
        );
    }
}
