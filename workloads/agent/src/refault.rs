//! The ReclaimRefault workload (seed 003, Yosry Ahmed's
//! `stress_reclaim_refault.sh`): `cgroups` cgroups, each with `memory.max`
//! at a quarter of `file_mib`; per sample one worker in each writes a tmpfs
//! file of `file_mib` MiB (reclaim: the file is 4x the limit) and reads it
//! back (refaults), all at once. Swap is zram when the job asks for it (set
//! up at boot, see [`crate::setup::zram`]).
//!
//! Setup, untimed: the parent `/sys/fs/cgroup/patchbench-refault` and its
//! children with their limits, a tmpfs. Timed: from the start of every
//! worker (gate 0, after fork and cgroup migration) to the last one's end,
//! wall clock (`real`) and the workers' user and system CPU time
//! (`getrusage(RUSAGE_CHILDREN)`, like `time` on the script); that span is
//! the cost model's `run` phase. The files are
//! deleted after each sample, outside the timing. The parent's
//! `memory.stat` before and after gives pgscan, pgsteal and refaults.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use patchbench_agent::Limit;
use patchbench_agent::marker::Phase;

use crate::cgroup;
use crate::console;
use crate::error::{Context, Result, bail};
use crate::mark;
use crate::pageout::{counter_delta, emit, read_stat};
use crate::pattern;
use crate::port::Port;
use crate::report::Fields;
use crate::setup;
use crate::spawn::{self, Gate, Slot};
use crate::sys;

const CGROUP: &str = "patchbench-refault";
const TMPFS: &str = "/tmp/patchbench-refault";
const MIB: u64 = 1 << 20;
/// Writes and reads go in chunks this big: the worker's own buffers are
/// charged to its small cgroup too.
const CHUNK: usize = 64 << 10;

/// The workload's parameters, as the job gives them.
pub struct Params {
    pub cgroups: u32,
    pub file_mib: u64,
}

/// Sets up the cgroups once, then runs and reports every sample.
pub fn run(params: &Params, warmups: u32, samples: u32, port: &mut Port) -> Result<()> {
    if params.cgroups == 0 || params.file_mib == 0 {
        bail!("cgroups and file_mib must be at least 1");
    }
    let (parent, children) = cgroup::tree(CGROUP, params.cgroups)?;
    let limit = Limit::Bytes(params.file_mib * MIB / 4);
    let mut shown = String::new();
    for dir in &children {
        shown = cgroup::set_limit(dir, "memory.max", limit)?;
    }
    setup::mount_on(
        "tmpfs",
        Path::new(TMPFS),
        "tmpfs",
        libc::MS_NOSUID | libc::MS_NODEV,
        None,
    )?;
    console::say(format!(
        "reclaim-refault: {} cgroups {}/cg* memory.max={shown}, {} MiB file each on {TMPFS}",
        params.cgroups,
        parent.display(),
        params.file_mib
    ));
    let procs: Vec<PathBuf> = children.iter().map(|d| d.join("cgroup.procs")).collect();
    let slots: Vec<Slot> = procs
        .iter()
        .map(|p| Slot {
            cpu: None,
            cgroup_procs: Some(p),
        })
        .collect();
    let stat = parent.join("memory.stat");
    let file_mib = params.file_mib;
    let body = |index: usize, _: &mut Gate| -> Result<Fields> { write_and_read(index, file_mib) };
    let total = warmups + samples;
    for index in 0..total {
        let during = || format!("sample {index}");
        let before = read_stat(&stat).with_context(during)?;
        let (user0, sys0) = sys::children_cpu_ns().context("getrusage")?;
        let mut start = 0;
        spawn::run_workers(&slots, &body, &mut |_| {
            start = sys::monotonic_ns().context("reading CLOCK_MONOTONIC")?;
            mark::begin(Phase::Run);
            Ok(())
        })
        .with_context(during)?;
        mark::end(Phase::Run);
        let end = sys::monotonic_ns().context("reading CLOCK_MONOTONIC")?;
        let (user1, sys1) = sys::children_cpu_ns().context("getrusage")?;
        let after = read_stat(&stat).with_context(during)?;
        for i in 0..slots.len() {
            let path = file_path(i);
            std::fs::remove_file(&path)
                .with_context(|| format!("removing {}", path.display()))
                .with_context(during)?;
        }
        let times = Times {
            real_ns: end - start,
            user_ns: user1 - user0,
            sys_ns: sys1 - sys0,
        };
        let metrics = sample_metrics(times, &before, &after).with_context(during)?;
        emit(port, index, warmups, total, metrics)?;
    }
    Ok(())
}

fn file_path(index: usize) -> PathBuf {
    Path::new(TMPFS).join(format!("tmp{index}"))
}

/// A worker's timed body: write the file in 64 KiB chunks of compressible,
/// page-unique content (not zero pages, which 6.12's swap skips), then read
/// it all back.
fn write_and_read(index: usize, file_mib: u64) -> Result<Fields> {
    let path = file_path(index);
    let mut file =
        File::create_new(&path).with_context(|| format!("creating {}", path.display()))?;
    let page = sys::page_size();
    let pages_per_chunk = CHUNK / page;
    let chunks = file_mib * MIB / CHUNK as u64;
    let mut words = vec![0u64; CHUNK / 8];
    let mut bytes = Vec::with_capacity(CHUNK);
    for c in 0..chunks {
        for (i, page_words) in words.chunks_exact_mut(page / 8).enumerate() {
            pattern::fill_page(c * pages_per_chunk as u64 + i as u64, page_words);
        }
        bytes.clear();
        bytes.extend(words.iter().flat_map(|w| w.to_ne_bytes()));
        file.write_all(&bytes)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let mut read = 0u64;
    for c in 0..chunks {
        let n = file
            .read_at(&mut bytes, c * CHUNK as u64)
            .with_context(|| format!("reading {}", path.display()))?;
        read += n as u64;
    }
    if read != file_mib * MIB {
        bail!(
            "read {read} bytes back from {}, wrote {file_mib} MiB",
            path.display()
        );
    }
    Ok(Fields::new())
}

/// A timed run's wall-clock and children's CPU times, in ns (what `time`
/// reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Times {
    pub real_ns: u64,
    pub user_ns: u64,
    pub sys_ns: u64,
}

/// One sample's metrics (names and units as in `workloads/reclaim-refault.yaml`).
pub fn sample_metrics(
    times: Times,
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> Result<BTreeMap<String, u64>> {
    let refault = counter_delta("workingset_refault_anon", before, after)?
        + counter_delta("workingset_refault_file", before, after)?;
    let pgscan = counter_delta("pgscan", before, after)?;
    if pgscan == 0 {
        bail!("nothing was scanned: the limits did not force reclaim");
    }
    Ok(BTreeMap::from([
        ("real_ns".to_string(), times.real_ns),
        ("user_ns".to_string(), times.user_ns),
        ("sys_ns".to_string(), times.sys_ns),
        ("pgscan".to_string(), pgscan),
        (
            "pgsteal".to_string(),
            counter_delta("pgsteal", before, after)?,
        ),
        ("workingset_refault".to_string(), refault),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(scan: u64, steal: u64, anon: u64, file: u64) -> BTreeMap<String, u64> {
        BTreeMap::from([
            ("pgscan".to_string(), scan),
            ("pgsteal".to_string(), steal),
            ("workingset_refault_anon".to_string(), anon),
            ("workingset_refault_file".to_string(), file),
        ])
    }

    #[test]
    fn metrics_are_times_and_counter_deltas() {
        let times = Times {
            real_ns: 3,
            user_ns: 2,
            sys_ns: 1,
        };
        let m = sample_metrics(times, &stat(10, 5, 1, 1), &stat(110, 85, 41, 2)).unwrap();
        let got: Vec<(&str, u64)> = m.iter().map(|(k, &v)| (k.as_str(), v)).collect();
        assert_eq!(
            got,
            [
                ("pgscan", 100),
                ("pgsteal", 80),
                ("real_ns", 3),
                ("sys_ns", 1),
                ("user_ns", 2),
                ("workingset_refault", 41),
            ]
        );
    }

    #[test]
    fn a_run_without_reclaim_is_an_error() {
        let times = Times {
            real_ns: 3,
            user_ns: 2,
            sys_ns: 1,
        };
        let err = sample_metrics(times, &stat(10, 5, 1, 1), &stat(10, 5, 1, 1)).unwrap_err();
        assert!(err.to_string().contains("nothing was scanned"), "{err}");
    }
}
