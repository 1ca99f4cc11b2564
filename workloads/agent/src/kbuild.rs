//! The KernelBuild workload (seeds 001 and 004: a kernel build in a memcg
//! whose `memory.max` is below the build's peak, zswap on). It runs the
//! host's `make` and compiler on a kernel tree the host prepared, from a
//! copy in guest memory: the files the build reads (the host traced them)
//! come in the boot's initramfs ([`crate::stage`]), and every sample
//! builds there, chrooted, so no window reads the host. A window whose 9p
//! device (if the boot has one) took an interrupt is refused
//! ([`crate::hostio`]).
//!
//! Setup, untimed, per sample: the clean page cache and slab caches are
//! dropped ([`drop_caches`]), then a fresh child cgroup
//! `/sys/fs/cgroup/patchbench-kbuild/sample<N>` gets `memory.max` and
//! `memory.zswap.max`, and a fresh tmpfs overlay goes over the staged
//! root (the build's paths are the host's: kbuild records absolute
//! paths). Every sample therefore starts from the same state, whatever
//! its targets.
//!
//! Timed: `make O=<build> -j<jobs> <targets>` in the source tree (or the
//! recorded commands, [`BuildDriver::Recorded`]), from spawn to exit:
//! `real` on CLOCK_MONOTONIC, `user` and `sys` from
//! `getrusage(RUSAGE_CHILDREN)` (make waits for every compiler it starts,
//! so their time is included); that span is the cost model's `build` phase.
//! Afterwards every target must exist and be
//! non-empty, and the cgroup's `memory.stat` and `memory.peak` give the
//! memory counters. make's output goes to a log whose tail is shown if it
//! fails.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;

use patchbench_agent::marker::Phase;
use patchbench_agent::{BuildDriver, Limit, RECORDED_MAKEFILE, SwapBackend, kbuild_command};

use crate::cgroup;
use crate::console;
use crate::cpustat;
use crate::error::{Context, Result, bail};
use crate::files;
use crate::hostio;
use crate::hostroot;
use crate::mark;
use crate::pageout::{counter_delta, emit, read_stat};
use crate::port::Port;
use crate::refault::Times;
use crate::stage;
use crate::swapstat::{self, SwapCounters};
use crate::sys;

const CGROUP: &str = "patchbench-kbuild";
/// Each sample's tmpfs (its overlay's upper layer, and make's log) and
/// root.
const SCRATCH: &str = "/run/kbuild";
/// Lines of make's output shown when it fails.
const TAIL_LINES: usize = 30;

/// The workload's parameters, as the job gives them.
pub struct Params {
    pub driver: BuildDriver,
    pub src: String,
    pub build: String,
    pub targets: Vec<String>,
    pub jobs: u32,
    pub memory_max: Limit,
    pub zswap_max: Limit,
    pub swap: SwapBackend,
}

/// Checks the job's paths before anything is mounted.
pub fn check(params: &Params) -> Result<()> {
    for (what, path) in [("src", &params.src), ("build", &params.build)] {
        if !path.starts_with('/') {
            bail!("{what} must be an absolute host path, not {path:?}");
        }
    }
    if params.targets.is_empty() {
        bail!("no targets given");
    }
    for target in &params.targets {
        if target.is_empty()
            || target.starts_with('/')
            || target.split('/').any(|part| part == "..")
        {
            bail!("target {target:?} must be a path inside the build directory");
        }
    }
    if params.jobs == 0 {
        bail!("jobs must be at least 1");
    }
    Ok(())
}

/// Runs and reports every sample.
pub fn run(params: &Params, warmups: u32, samples: u32, port: &mut Port) -> Result<()> {
    check(params)?;
    stage::check_present(&params.build).context("finding the staged build in guest memory")?;
    let prepared = hostroot::under(stage::STAGED, &params.build);
    // The recorded commands read no .config; kbuild does, so the host
    // staged it.
    if params.driver == BuildDriver::Kbuild && !prepared.join(".config").is_file() {
        bail!(
            "the build directory {} has no .config: the host did not prepare it",
            params.build
        );
    }
    for target in &params.targets {
        if prepared.join(target).exists() {
            bail!(
                "the prepared build directory {} already holds the target {target}",
                params.build
            );
        }
    }
    let (parent, _) = cgroup::tree(CGROUP, 0)?;
    if params.driver == BuildDriver::Recorded && !prepared.join(RECORDED_MAKEFILE).is_file() {
        bail!(
            "the build directory {} has no {RECORDED_MAKEFILE}: the host did not record the targets' commands",
            params.build
        );
    }
    let watch = Watches {
        ninep: hostio::Watch::ninep()?,
        disks: hostio::Watch::disks()?,
    };
    console::say(format!(
        "kernel-build ({:?}): make O={} -j{} {} in {}, memory.max={} memory.zswap.max={}",
        params.driver,
        params.build,
        params.jobs,
        params.targets.join(" "),
        params.src,
        params.memory_max.cgroup_value(),
        params.zswap_max.cgroup_value()
    ));
    let total = warmups + samples;
    for index in 0..total {
        let metrics = sample(params, &watch, &parent.join(format!("sample{index}")))
            .with_context(|| format!("sample {index}"))?;
        emit(port, index, warmups, total, metrics)?;
    }
    Ok(())
}

/// The sysctl that frees clean page cache (1), reclaimable slab such as
/// dentries and inodes (2), or both (3) when written.
const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// Free the clean page cache and the reclaimable slab caches. A page is
/// charged to the cgroup that first reads it, and stays charged there
/// after that cgroup is removed. Without this, the files the first sample
/// read (the compiler, the sources, the headers) stay cached and charged
/// to its dead cgroup, every later sample's cgroup holds only its anonymous
/// memory and tmpfs, and only the first sample of a boot came near its
/// `memory.max` and swapped (seeds 001 and 004, 2026-12-02: `pswpin` 0 and
/// `pgmajfault` 15 in every second sample, thousands in every first).
fn drop_caches() -> Result<()> {
    sys::sync();
    files::write(DROP_CACHES, "3")
        .with_context(|| format!("dropping the page and slab caches ({DROP_CACHES})"))
}

/// One build from the prepared state, in its own cgroup and root.
fn sample(params: &Params, watch: &Watches, cg: &Path) -> Result<BTreeMap<String, u64>> {
    drop_caches()?;
    cgroup::create(cg)?;
    cgroup::set_limit(cg, "memory.max", params.memory_max)?;
    cgroup::set_limit(cg, "memory.zswap.max", params.zswap_max)?;
    let name = cg.file_name().expect("a cgroup has a name");
    let scratch = Path::new(SCRATCH).join(name);
    let root = stage::Root::mount(&scratch.join("rw"), &scratch.join("root"))?;
    let result = build(params, watch, cg, &root);
    let cleanup = root.unmount();
    let metrics = result?;
    cleanup?;
    // Nothing is left in it; its memory went with the tmpfs.
    std::fs::remove_dir(cg).with_context(|| format!("removing {}", cg.display()))?;
    Ok(metrics)
}

/// The 9p devices, whose interrupts refuse a window, and the disks,
/// whose interrupts are counted (`disk_irqs`).
struct Watches {
    ninep: hostio::Watch,
    disks: hostio::Watch,
}

fn build(
    params: &Params,
    watch: &Watches,
    cg: &Path,
    root: &stage::Root,
) -> Result<BTreeMap<String, u64>> {
    let merged = hostroot::under(&root.path.display().to_string(), &params.build);
    let log_path = merged.join("patchbench-make.log");
    let log =
        File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
    let log_err = log.try_clone().context("duplicating the log")?;
    let procs = cg.join("cgroup.procs");
    let (cwd, argv) = kbuild_command(
        params.driver,
        &params.src,
        &params.build,
        params.jobs,
        &params.targets,
    );
    let mut cmd = hostroot::command_in(&root.path, &argv[0], &cwd, Some(&procs))?;
    cmd.args(&argv[1..])
        .stdin(std::process::Stdio::null())
        .stdout(log)
        .stderr(log_err);
    let stat = cg.join("memory.stat");
    let before = read_stat(&stat)?;
    let swap_before = swap_counters(params)?;
    let meter = cpustat::Meter::start(cpustat::Whose::Children)?;
    let io = watch.ninep.start()?;
    let disk_before = watch.disks.count()?;
    let start = sys::monotonic_ns().context("reading CLOCK_MONOTONIC")?;
    mark::begin(Phase::Build);
    let status = cmd
        .status()
        .with_context(|| format!("running make in {} (staged root)", cwd));
    mark::end(Phase::Build);
    let status = status?;
    let end = sys::monotonic_ns().context("reading CLOCK_MONOTONIC")?;
    let cpu = meter.stop()?;
    let disk_irqs = watch.disks.count()? - disk_before;
    watch.ninep.check(io, "the build")?;
    if !status.success() {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        bail!(
            "make exited with {status}; the end of its output:\n{}",
            tail(&text, TAIL_LINES)
        );
    }
    for target in &params.targets {
        let path = merged.join(target);
        let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        if len == 0 {
            bail!(
                "make succeeded but {target} is missing or empty in {}",
                params.build
            );
        }
    }
    let after = read_stat(&stat)?;
    let swap_after = swap_counters(params)?;
    let peak = files::read_value(cg.join("memory.peak"))?;
    let peak: u64 = peak
        .parse()
        .with_context(|| format!("memory.peak reads {peak:?}"))?;
    let times = Times {
        real_ns: end - start,
        user_ns: cpu["user_ns"],
        sys_ns: cpu["sys_ns"],
    };
    let mut metrics = sample_metrics(times, peak, &before, &after)?;
    metrics.insert("disk_irqs".into(), disk_irqs);
    metrics.extend(cpu);
    if let (Some(b), Some(a)) = (&swap_before, &swap_after) {
        metrics.extend(swapstat::metrics(b, a)?);
    }
    Ok(metrics)
}

/// The swap counters, read only with zram (seed 004's large-folio swap-in;
/// pswpin needs CONFIG_VM_EVENT_COUNTERS, which other campaigns' tiny
/// kernels leave out).
fn swap_counters(params: &Params) -> Result<Option<SwapCounters>> {
    match params.swap {
        SwapBackend::Zram => SwapCounters::read().map(Some),
        SwapBackend::Disk | SwapBackend::Ram | SwapBackend::None => Ok(None),
    }
}

/// One sample's metrics (names and units as in `workloads/kernel-build.yaml`).
pub fn sample_metrics(
    times: Times,
    peak_bytes: u64,
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> Result<BTreeMap<String, u64>> {
    let mut metrics = BTreeMap::from([
        ("real_ns".to_string(), times.real_ns),
        ("user_ns".to_string(), times.user_ns),
        ("sys_ns".to_string(), times.sys_ns),
        ("peak_bytes".to_string(), peak_bytes),
    ]);
    for name in ["zswpin", "zswpout", "pgfault", "pgmajfault"] {
        metrics.insert(name.to_string(), counter_delta(name, before, after)?);
    }
    Ok(metrics)
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

impl crate::run::Run for patchbench_agent::kinds::kernel_build::KernelBuild {
    fn run(&self, boot: crate::run::Boot<'_>) -> Result<()> {
        let params = Params {
            swap: self.swap,
            driver: self.driver,
            src: self.src.clone(),
            build: self.build.clone(),
            targets: self.targets.clone(),
            jobs: self.jobs,
            memory_max: self.memory_max,
            zswap_max: self.zswap_max,
        };
        run(&params, boot.warmups, boot.samples, boot.port).context("kernel-build")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(targets: &[&str]) -> Params {
        Params {
            driver: BuildDriver::Recorded,
            src: "/k/src".into(),
            build: "/k/build".into(),
            targets: targets.iter().map(|t| t.to_string()).collect(),
            jobs: 2,
            memory_max: Limit::Bytes(64 << 20),
            zswap_max: Limit::Max,
            swap: SwapBackend::Disk,
        }
    }

    #[test]
    fn targets_stay_inside_the_build_directory() {
        assert!(check(&params(&["mm/zswap.o"])).is_ok());
        for bad in [
            &[][..],
            &["../x.o"],
            &["/etc/passwd"],
            &["mm/../../x"],
            &[""],
        ] {
            let err = check(&params(bad)).unwrap_err().to_string();
            assert!(
                err.contains("target") || err.contains("no targets"),
                "{err}"
            );
        }
        let mut p = params(&["mm/zswap.o"]);
        p.src = "relative".into();
        assert!(check(&p).unwrap_err().to_string().contains("src"));
    }

    #[test]
    fn metrics_are_times_peak_and_counter_deltas() {
        let stat = |v: u64| {
            BTreeMap::from(
                ["zswpin", "zswpout", "pgfault", "pgmajfault", "pgscan"]
                    .map(|k| (k.to_string(), v)),
            )
        };
        let times = Times {
            real_ns: 3,
            user_ns: 2,
            sys_ns: 1,
        };
        let m = sample_metrics(times, 4096, &stat(0), &stat(7)).unwrap();
        let got: Vec<(&str, u64)> = m.iter().map(|(k, &v)| (k.as_str(), v)).collect();
        assert_eq!(
            got,
            [
                ("peak_bytes", 4096),
                ("pgfault", 7),
                ("pgmajfault", 7),
                ("real_ns", 3),
                ("sys_ns", 1),
                ("user_ns", 2),
                ("zswpin", 7),
                ("zswpout", 7),
            ]
        );
    }

    #[test]
    fn the_tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
    }
}
