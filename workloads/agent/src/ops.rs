//! The mm benchmark library's harness (`patchbench_agent::bench`): runs
//! any [`Bench`] through its warm-ups and samples.
//!
//! Once per boot the benchmark prepares (untimed), and its task cgroups
//! are made if it wants them. A sample forks `tasks` workers
//! ([`crate::spawn`]); each joins its cgroup, sets its state up
//! ([`Bench::task`]) and waits at gate 1. When every one is there the
//! guest settles ([`settle::before_window`]: the RCU callbacks of what
//! came before run, the per-CPU page lists are trimmed, and it idles to
//! a whole second); then the agent starts its CPU-time meter, reads the
//! clock, marks the `ops` phase and opens the gate. Each worker runs its
//! `ops` operations and waits at gate 2, where the RCU callbacks the
//! operations queued run ([`settle::end_window`]) and the agent marks
//! the phase's end, reads the clock and stops the meter. Each worker then
//! tears its state down (untimed) and reports its own user and system
//! time over its operations. The metrics are
//! `workloads/common/ops-metrics.yaml`'s.
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;

use patchbench_agent::Limit;
use patchbench_agent::bench::{Bench, GuestSize, MAX_OPS, MAX_TASKS};
use patchbench_agent::marker::Phase;

use crate::cgroup;
use crate::console;
use crate::cpustat;
use crate::error::{Context, Error, Result, bail};
use crate::mark;
use crate::pageout::emit;
use crate::report::Fields;
use crate::run::Boot;
use crate::settle;
use crate::spawn::{self, Slot};
use crate::sys;

const CGROUP: &str = "patchbench-bench";

/// Runs `bench`'s warm-ups and samples, each sample sent on the port.
pub fn run<B: Bench>(bench: &B, boot: Boot<'_>) -> Result<()> {
    let load = bench.load();
    if load.tasks == 0 || load.tasks > MAX_TASKS || load.ops == 0 || load.ops > MAX_OPS {
        bail!(
            "tasks must be 1 to {MAX_TASKS} and ops 1 to {MAX_OPS}, not {} and {}",
            load.tasks,
            load.ops
        );
    }
    let guest = GuestSize {
        online_cpus: online_cpus(),
        memory: guest_memory()?,
    };
    bench
        .check(guest)
        .map_err(|e| Error::msg(format!("{} = {}: {}", e.param, e.value, e.problem)))?;
    bench.prepare().context("preparing")?;
    let cgroups = match bench.task_cgroups() {
        Some(shape) => {
            let (_, dirs) = cgroup::tree(CGROUP, load.tasks)?;
            let limit = shape.memory_max.map_or(Limit::Max, Limit::Bytes);
            for dir in &dirs {
                cgroup::set_limit(dir, "memory.max", limit)?;
            }
            dirs.into_iter().map(|d| d.join("cgroup.procs")).collect()
        }
        None => Vec::new(),
    };
    console::say(format!(
        "ops: {} tasks x {} ops of {}",
        load.tasks,
        load.ops,
        bench.describe()
    ));
    let barrier = settle::has_rcu_barrier();
    let total = boot.warmups + boot.samples;
    for index in 0..total {
        let metrics =
            sample(bench, &cgroups, barrier).with_context(|| format!("sample {index}"))?;
        emit(boot.port, index, boot.warmups, total, metrics)?;
    }
    Ok(())
}

/// One sample: the tasks' operations in one window.
/// `barrier`: whether the kernel can run the window's RCU barriers.
fn sample<B: Bench>(bench: &B, cgroups: &[PathBuf], barrier: bool) -> Result<Fields> {
    let load = bench.load();
    let pin = load.tasks <= online_cpus();
    let slots: Vec<Slot> = (0..load.tasks as usize)
        .map(|i| Slot {
            cpu: pin.then_some(i as u32),
            cgroup_procs: cgroups.get(i).map(PathBuf::as_path),
        })
        .collect();
    let body = |index: usize, gate: &mut crate::gate::Gate| -> Result<Fields> {
        let mut task = bench
            .task(index)
            .with_context(|| format!("setting up task {index}"))?;
        gate.wait()?;
        let before = sys::thread_cpu_ns().context("getrusage(RUSAGE_THREAD)")?;
        for op in 0..load.ops {
            task.op()
                .with_context(|| format!("task {index}, operation {op}"))?;
        }
        let after = sys::thread_cpu_ns().context("getrusage(RUSAGE_THREAD)")?;
        gate.wait()?;
        drop(task);
        Ok(Fields::from([
            ("user_ns".to_string(), after.0 - before.0),
            ("sys_ns".to_string(), after.1 - before.1),
        ]))
    };
    let window: RefCell<Option<(cpustat::Meter, u64)>> = RefCell::new(None);
    let ended: RefCell<Option<(Fields, u64)>> = RefCell::new(None);
    let mut on_gate = |gate: usize| -> Result<()> {
        match gate {
            1 => {
                settle::before_window(barrier)?;
                let meter = cpustat::Meter::start(cpustat::Whose::ThisThread)?;
                let start = sys::monotonic_ns().context("reading CLOCK_MONOTONIC")?;
                mark::begin(Phase::Ops);
                *window.borrow_mut() = Some((meter, start));
            }
            2 => {
                settle::end_window(barrier)?;
                mark::end(Phase::Ops);
                let end = sys::monotonic_ns().context("reading CLOCK_MONOTONIC")?;
                let (meter, start) = window.borrow_mut().take().expect("gate 1 came first");
                *ended.borrow_mut() = Some((meter.stop()?, end - start));
            }
            _ => {}
        }
        Ok(())
    };
    let workers = spawn::run_workers(&slots, &body, &mut on_gate)?;
    let (guest, elapsed) = ended
        .into_inner()
        .ok_or_else(|| Error::msg("the tasks finished without reaching the window's end"))?;
    Ok(metrics(load.total_ops(), elapsed, guest, &workers))
}

/// A sample's metrics: the meter's whole-guest figures (the agent's own
/// thread, idle in the window, is replaced by the tasks' time), the
/// window's length and the operations' rate.
pub fn metrics(ops: u64, elapsed_ns: u64, guest: Fields, workers: &[Fields]) -> Fields {
    let elapsed_ns = elapsed_ns.max(1);
    let mut metrics: BTreeMap<String, u64> = guest;
    for own in ["user_ns", "sys_ns"] {
        let sum = workers.iter().filter_map(|w| w.get(own)).sum();
        metrics.insert(own.to_string(), sum);
    }
    metrics.insert("ops".to_string(), ops);
    metrics.insert("ops_ns".to_string(), elapsed_ns);
    metrics.insert("ns_per_op".to_string(), elapsed_ns / ops.max(1));
    metrics.insert(
        "ops_per_s".to_string(),
        (u128::from(ops) * 1_000_000_000 / u128::from(elapsed_ns)) as u64,
    );
    metrics
}

fn online_cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

fn guest_memory() -> Result<u64> {
    let text = crate::files::read("/proc/meminfo")?;
    text.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib << 10)
        .ok_or_else(|| Error::msg("/proc/meminfo has no MemTotal"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tasks_own_time_replaces_the_agents() {
        let guest = Fields::from([
            ("user_ns".to_string(), 7),
            ("sys_ns".to_string(), 9),
            ("guest_sys_ns".to_string(), 500),
        ]);
        let workers = [
            Fields::from([("user_ns".to_string(), 10), ("sys_ns".to_string(), 100)]),
            Fields::from([("user_ns".to_string(), 20), ("sys_ns".to_string(), 200)]),
        ];
        let m = metrics(2000, 4_000_000, guest, &workers);
        assert_eq!(m["user_ns"], 30);
        assert_eq!(m["sys_ns"], 300);
        assert_eq!(m["guest_sys_ns"], 500);
        assert_eq!(m["ops"], 2000);
        assert_eq!(m["ns_per_op"], 2000);
        assert_eq!(m["ops_per_s"], 500_000);
    }
}
