//! The ZswapPageout workload (seed 000): a private memory cgroup with a zswap
//! limit, then per sample N pinned workers that each page out and re-read
//! compressible anonymous memory, with zswap's counters read around them.
//! With `count_flushes`, every sample runs the workers twice: a timed pass
//! with the function profiler off (its hook on every counted call would
//! inflate the very CPU time the patch changes: 55 us a call under TCG,
//! +80% of A's PAGEOUT CPU here), then a counting pass in which the workers
//! wait at a gate right before and right after their PAGEOUT while the agent
//! starts and stops the profiler, so `pageout_flushes` counts the stats
//! flushes of the PAGEOUTs only (all workers' together), not of the fill or
//! the re-reads. Every other metric comes from the timed pass, and only the
//! timed pass marks its phases (`total`, `pageout`, `verify`) for the cost
//! model. With `compact`, memory is compacted before every timed pass. With
//! `settle`, the workers of the pass before are let go before every fork,
//! and pending RCU callbacks run and the VM statistics are refreshed before
//! every timed pass ([`before_pass`]).

use std::collections::BTreeMap;
use std::path::Path;

use patchbench_agent::{Limit, Message, Sample};

use crate::cgroup;
use crate::console;
use crate::cpustat;
use crate::error::{Context, Error, Result, bail};
use crate::files;
use crate::parse;
use crate::port::Port;
use crate::profiler::{Profiler, Stat};
use crate::report::{Fields, WorkerResult};
use crate::settle;
use crate::setup;
use crate::spawn::{self, Gate, Slot};
use crate::sys;
use crate::worker;

const CGROUP_ROOT: &str = "/sys/fs/cgroup";
const CGROUP: &str = "/sys/fs/cgroup/patchbench";

/// The workload's parameters, as the job gives them.
pub struct Params {
    pub workers: u32,
    pub mib_per_worker: u64,
    pub random_percent: u8,
    pub zswap_max: Limit,
    pub memory_max: Limit,
    pub swap_max: Limit,
    /// Compact memory before each sample's timed pass ([`compact_memory`]).
    pub compact: bool,
    /// Settle the kernel's per-process and per-CPU state before each pass
    /// ([`before_pass`]).
    pub settle: bool,
}

/// The sysctl that compacts every zone's free memory when written.
const COMPACT_MEMORY: &str = "/proc/sys/vm/compact_memory";

/// Ask the kernel to compact all memory, and wait for it: the write
/// returns when compaction has run. Outside every clock and cost-model
/// window, so it changes where the next allocations land, not what they
/// are charged.
fn compact_memory() -> Result<()> {
    files::write(COMPACT_MEMORY, "1").with_context(|| {
        format!("compacting memory ({COMPACT_MEMORY}; the kernel needs CONFIG_COMPACTION)")
    })
}

/// One thing done before a pass forks its workers, outside every clock
/// and window ([`before_pass`] gives their order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Each CPU the workers ran on switches once to the agent's mm
    /// ([`sys::run_on_each`]), so the last pass's workers' mms, which
    /// those CPUs kept as their lazy-TLB mm, are freed now, and this
    /// pass's new mm and per-CPU RSS counters take the slots they leave.
    /// Otherwise each fork allocates while the last mm still lives, and
    /// samples alternate between placements.
    LetGo,
    /// Every RCU callback the samples before queued runs ([`settle::RCU_BARRIER`]:
    /// the swap cache's xarray nodes, the dead workers' task structs),
    /// instead of in whichever window its grace period ends.
    RcuBarrier,
    /// Memory is compacted ([`compact_memory`]).
    Compact,
    /// The VM statistics are refreshed ([`settle::STAT_REFRESH`]), so the per-CPU
    /// page lists are trimmed here, once a sample, instead of wherever the
    /// periodic work falls (with a long `vm.stat_interval`, never inside a
    /// window).
    Refresh,
}

/// What runs before a pass, in order. `settle` lets the last pass's
/// workers go before every pass, and before a timed pass also runs the
/// pending RCU callbacks and refreshes the VM statistics; `compact`
/// compacts before a timed pass. With both, everything the samples before
/// left to free is freed first, so compaction moves memory in the shape
/// every sample leaves, and the refresh comes last, so the per-CPU page
/// lists are trimmed after compaction has used them.
fn before_pass(params: &Params, timed: bool) -> Vec<Step> {
    let mut steps = Vec::new();
    if params.settle {
        steps.push(Step::LetGo);
        if timed {
            steps.push(Step::RcuBarrier);
        }
    }
    if params.compact && timed {
        steps.push(Step::Compact);
    }
    if params.settle && timed {
        steps.push(Step::Refresh);
    }
    steps
}

/// Runs [`before_pass`]'s steps.
fn prepare(params: &Params, cpus: &[u32], timed: bool) -> Result<()> {
    for step in before_pass(params, timed) {
        match step {
            Step::LetGo => {
                sys::run_on_each(cpus).context("running the agent on each worker CPU")?
            }
            Step::RcuBarrier => settle::rcu_barrier()?,
            Step::Compact => compact_memory()?,
            Step::Refresh => settle::refresh_vm_stats()?,
        }
    }
    Ok(())
}

/// Sets up the cgroup once, then runs and reports every sample. With a
/// profiler (set up by the caller), each sample counts its PAGEOUT flushes.
pub fn run(
    params: &Params,
    warmups: u32,
    samples: u32,
    profiler: Option<&Profiler>,
    port: &mut Port,
) -> Result<()> {
    let online = setup::online_cpus()?;
    let cpus = worker_cpus(&online, params.workers)?;
    setup_cgroup(params).context("setting up the cgroup")?;
    let cgroup = Path::new(CGROUP);
    let procs = cgroup.join("cgroup.procs");
    let stat = cgroup.join("memory.stat");
    let slots: Vec<Slot> = cpus
        .iter()
        .map(|&cpu| Slot {
            cpu: Some(cpu),
            cgroup_procs: Some(&procs),
        })
        .collect();
    let mib = params.mib_per_worker;
    let random_percent = params.random_percent;
    // Only the timed pass marks its phases for the cost model.
    let timed = |_: usize, gate: &mut Gate| -> Result<Fields> {
        worker::measure(mib, random_percent, true, &mut || gate.wait()).map(WorkerResult::to_fields)
    };
    let counting = |_: usize, gate: &mut Gate| -> Result<Fields> {
        worker::measure(mib, random_percent, false, &mut || gate.wait())
            .map(WorkerResult::to_fields)
    };
    let total = warmups + samples;
    for index in 0..total {
        let during = || format!("sample {index}");
        prepare(params, cpus, true).with_context(during)?;
        // The timed pass runs without the profiler's hook on the flush path,
        // so the CPU times are the kernel's own; a second pass of the same
        // sample, with the profiler on, counts the flushes.
        let timed_pass = pass(&slots, &timed, &stat, Pass::Timed).with_context(during)?;
        let flushes = match profiler {
            Some(p) => {
                prepare(params, cpus, false).with_context(during)?;
                pass(&slots, &counting, &stat, Pass::Counting(p))
                    .with_context(during)?
                    .flushes
            }
            None => None,
        };
        let mut metrics = sample_metrics(
            &timed_pass.results,
            &timed_pass.before,
            &timed_pass.after,
            flushes,
        )
        .with_context(during)?;
        metrics.extend(timed_pass.cpu.unwrap_or_default());
        emit(port, index, warmups, total, metrics)?;
    }
    Ok(())
}

type Counters = BTreeMap<String, u64>;

/// Which of a sample's two passes runs.
#[derive(Clone, Copy)]
enum Pass<'a> {
    /// The measured one, with its CPU time by mode ([`cpustat`]).
    Timed,
    /// The flush-counting one, with the profiler on during PAGEOUT.
    Counting(&'a Profiler),
}

/// What one pass of every worker gave.
struct PassResult {
    results: Vec<WorkerResult>,
    /// The cgroup's memory.stat before and after.
    before: Counters,
    after: Counters,
    /// The timed pass's CPU time by mode.
    cpu: Option<Fields>,
    /// The counting pass's flushes during PAGEOUT.
    flushes: Option<Stat>,
}

/// One run of every worker.
fn pass(slots: &[Slot], body: spawn::Body, stat: &Path, kind: Pass) -> Result<PassResult> {
    let profiler = match kind {
        Pass::Counting(p) => Some(p),
        Pass::Timed => None,
    };
    let before = read_stat(stat)?;
    let meter = match kind {
        Pass::Timed => Some(cpustat::Meter::start(cpustat::Whose::Children)?),
        Pass::Counting(_) => None,
    };
    let results = spawn::run_workers(slots, body, &mut |gate| match (gate, profiler) {
        (1, Some(p)) => p.start().context("starting the function profiler"),
        (2, Some(p)) => p.stop().context("stopping the function profiler"),
        _ => Ok(()),
    })
    .and_then(|fields| {
        fields
            .iter()
            .map(|f| WorkerResult::from_fields(f).map_err(Error::msg))
            .collect::<Result<Vec<_>>>()
    })?;
    let cpu = meter.map(cpustat::Meter::stop).transpose()?;
    let after = read_stat(stat)?;
    let flushes = profiler
        .map(|p| p.read().context("reading the function profiler"))
        .transpose()?;
    Ok(PassResult {
        results,
        before,
        after,
        cpu,
        flushes,
    })
}

/// Worker `i` runs on the `i`-th online CPU.
pub fn worker_cpus(online: &[u32], workers: u32) -> Result<&[u32]> {
    let n = workers as usize;
    if n == 0 {
        bail!("at least one worker is needed");
    }
    if n > online.len() {
        bail!(
            "{workers} workers asked for, one per CPU, but only {} CPUs are online",
            online.len()
        );
    }
    Ok(&online[..n])
}

/// Enables the memory controller, creates the cgroup and sets its limits,
/// reading each limit back.
fn setup_cgroup(params: &Params) -> Result<()> {
    files::write(format!("{CGROUP_ROOT}/cgroup.subtree_control"), "+memory")?;
    cgroup::create(Path::new(CGROUP))?;
    let mut shown = Vec::new();
    for (file, limit) in [
        ("memory.max", params.memory_max),
        ("memory.swap.max", params.swap_max),
        ("memory.zswap.max", params.zswap_max),
    ] {
        let got = cgroup::set_limit(Path::new(CGROUP), file, limit)?;
        shown.push(format!("{file}={got}"));
    }
    console::say(format!("cgroup {CGROUP} {}", shown.join(" ")));
    Ok(())
}

pub fn read_stat(path: &Path) -> Result<BTreeMap<String, u64>> {
    parse::flat_keyed(&files::read(path)?)
        .map_err(Error::msg)
        .with_context(|| format!("parsing {}", path.display()))
}

/// The workers' numbers, combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    pub pageout_cpu_ns: u64,
    pub verify_cpu_ns: u64,
    pub total_cpu_ns: u64,
    /// From the earliest worker start to the latest worker end.
    pub elapsed_ns: u64,
}

/// Sums the CPU times and spans the wall-clock window of all workers.
pub fn totals(results: &[WorkerResult]) -> Totals {
    let start = results.iter().map(|r| r.start_mono_ns).min().unwrap_or(0);
    let end = results.iter().map(|r| r.end_mono_ns).max().unwrap_or(0);
    Totals {
        pageout_cpu_ns: results.iter().map(|r| r.pageout_cpu_ns).sum(),
        verify_cpu_ns: results.iter().map(|r| r.verify_cpu_ns).sum(),
        total_cpu_ns: results.iter().map(|r| r.total_cpu_ns).sum(),
        elapsed_ns: end.saturating_sub(start),
    }
}

/// One sample's metrics (names and units as in `workloads/zswap-pageout.yaml`).
pub fn sample_metrics(
    results: &[WorkerResult],
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
    flushes: Option<Stat>,
) -> Result<BTreeMap<String, u64>> {
    let t = totals(results);
    let zswpout = counter_delta("zswpout", before, after)?;
    let zswpin = counter_delta("zswpin", before, after)?;
    if zswpout == 0 {
        bail!("zswap stored nothing: is zswap enabled and the swap device on?");
    }
    let mut metrics = BTreeMap::from([
        ("pageout_cpu_ns".to_string(), t.pageout_cpu_ns),
        ("verify_cpu_ns".to_string(), t.verify_cpu_ns),
        ("total_cpu_ns".to_string(), t.total_cpu_ns),
        ("elapsed_ns".to_string(), t.elapsed_ns),
        ("zswpout_pages".to_string(), zswpout),
        ("zswpin_pages".to_string(), zswpin),
    ]);
    if let Some(flushes) = flushes {
        metrics.insert("pageout_flushes".to_string(), flushes.hits);
    }
    Ok(metrics)
}

/// The delta of `name` in a cgroup's memory.stat over a sample.
pub fn counter_delta(
    name: &str,
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> Result<u64> {
    source_delta("memory.stat", name, before, after)
}

/// The delta of counter `name` of `source` (a file's name, for messages)
/// over a sample: an error if it is missing or went backwards.
pub fn source_delta(
    source: &str,
    name: &str,
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> Result<u64> {
    let get = |map: &BTreeMap<String, u64>, when: &str| {
        map.get(name)
            .copied()
            .ok_or_else(|| Error::msg(format!("{source} has no {name} {when} the sample")))
    };
    let (b, a) = (get(before, "before")?, get(after, "after")?);
    a.checked_sub(b)
        .ok_or_else(|| Error::msg(format!("{source} {name} went backwards: {b} -> {a}")))
}

/// `key=value` pairs on one line.
/// Say sample `index` (of `total`, the first `warmups` of them warm-ups) on
/// the console and send it to the host.
pub fn emit(
    port: &mut Port,
    index: u32,
    warmups: u32,
    total: u32,
    metrics: BTreeMap<String, u64>,
) -> Result<()> {
    let warmup = index < warmups;
    console::say(format!(
        "sample {}/{total}{} {}",
        index + 1,
        if warmup { " (warm-up)" } else { "" },
        render(&metrics)
    ));
    port.send(&Message::Sample(Sample {
        index,
        warmup,
        metrics,
        condition: None,
    }))
}

pub fn render(metrics: &BTreeMap<String, u64>) -> String {
    metrics
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

impl crate::run::Run for patchbench_agent::kinds::zswap_pageout::ZswapPageout {
    fn run(&self, boot: crate::run::Boot<'_>) -> Result<()> {
        let params = Params {
            workers: self.workers,
            mib_per_worker: self.mib_per_worker,
            random_percent: self.random_percent,
            zswap_max: self.zswap_max,
            memory_max: self.memory_max,
            swap_max: self.swap_max,
            compact: self.compact,
            settle: self.settle,
        };
        run(
            &params,
            boot.warmups,
            boot.samples,
            boot.profiler,
            boot.port,
        )
        .context("zswap-pageout")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(pageout: u64, start: u64, end: u64) -> WorkerResult {
        WorkerResult {
            pageout_cpu_ns: pageout,
            verify_cpu_ns: 2 * pageout,
            total_cpu_ns: 5 * pageout,
            start_mono_ns: start,
            end_mono_ns: end,
        }
    }

    fn stat(zswpout: u64, zswpin: u64) -> BTreeMap<String, u64> {
        BTreeMap::from([
            ("anon".to_string(), 0),
            ("zswpout".to_string(), zswpout),
            ("zswpin".to_string(), zswpin),
        ])
    }

    fn params(compact: bool, settle: bool) -> Params {
        Params {
            workers: 1,
            mib_per_worker: 32,
            random_percent: 0,
            zswap_max: Limit::Max,
            memory_max: Limit::Max,
            swap_max: Limit::Max,
            compact,
            settle,
        }
    }

    #[test]
    fn before_a_pass_everything_is_freed_before_compaction_and_refreshed_after() {
        use Step::*;
        assert_eq!(before_pass(&params(false, false), true), []);
        assert_eq!(before_pass(&params(true, false), true), [Compact]);
        assert_eq!(before_pass(&params(true, false), false), []);
        assert_eq!(
            before_pass(&params(false, true), true),
            [LetGo, RcuBarrier, Refresh]
        );
        assert_eq!(
            before_pass(&params(true, true), true),
            [LetGo, RcuBarrier, Compact, Refresh]
        );
        // The counting pass only needs its fork to find the last mm gone.
        assert_eq!(before_pass(&params(true, true), false), [LetGo]);
    }

    #[test]
    fn metrics_sum_cpu_and_span_elapsed() {
        let results = [worker(10, 1_000, 5_000), worker(20, 1_200, 6_000)];
        let flushes = Stat {
            hits: 16_385,
            time_ns: 9,
        };
        let m = sample_metrics(
            &results,
            &stat(100, 5),
            &stat(16_484, 16_389),
            Some(flushes),
        )
        .unwrap();
        let want = [
            ("elapsed_ns", 5_000),
            ("pageout_cpu_ns", 30),
            ("pageout_flushes", 16_385),
            ("total_cpu_ns", 150),
            ("verify_cpu_ns", 60),
            ("zswpin_pages", 16_384),
            ("zswpout_pages", 16_384),
        ];
        let got: Vec<(&str, u64)> = m.iter().map(|(k, &v)| (k.as_str(), v)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn nothing_stored_is_an_error() {
        let err = sample_metrics(&[worker(1, 0, 1)], &stat(7, 0), &stat(7, 0), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "zswap stored nothing: is zswap enabled and the swap device on?"
        );
    }

    #[test]
    fn missing_or_backward_counters_are_errors() {
        let mut no_zswpin = stat(9, 0);
        no_zswpin.remove("zswpin");
        let err = sample_metrics(&[], &stat(1, 0), &no_zswpin, None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "memory.stat has no zswpin after the sample"
        );
        let err = sample_metrics(&[], &stat(9, 0), &stat(1, 0), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "memory.stat zswpout went backwards: 9 -> 1"
        );
    }

    #[test]
    fn workers_take_online_cpus_in_order() {
        assert_eq!(worker_cpus(&[0, 1, 4], 2).unwrap(), &[0, 1]);
        let err = worker_cpus(&[0, 1], 3).unwrap_err().to_string();
        assert!(
            err.contains("3 workers") && err.contains("only 2 CPUs"),
            "{err}"
        );
        assert!(worker_cpus(&[0], 0).is_err());
    }

    #[test]
    fn render_is_one_line_of_pairs() {
        let m = BTreeMap::from([("a".to_string(), 1), ("b".to_string(), 2)]);
        assert_eq!(render(&m), "a=1 b=2");
    }
}
