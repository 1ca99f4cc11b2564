//! Which figures are the lane's own: a metric is a measurement in some
//! lanes and context in others, by what it is (its spec's unit, scope and
//! counting) and how the boots ran (the lane, the guest's online vCPUs,
//! the workload's busy tasks, the kernels' CPU-time accounting). A
//! context row is shown with no verdict (docs/statistics.md, "Each
//! lane's own figures").

use crate::model::Lane;
use crate::model::Unit;
use crate::results::Results;
use crate::workload::{Counted, MetricSpec, Scope, WorkloadSpec};

/// What a run's boots say about the guest, for [`context`].
#[derive(Debug, Clone, PartialEq)]
pub struct Guest {
    pub lane: Lane,
    /// The fewest online vCPUs any boot reported (`None`: no boot said).
    pub online: Option<usize>,
    /// The workload's tasks that run at once inside a window.
    pub tasks: usize,
    /// Boots whose kernel split user and system time by timer ticks.
    pub tick_split: Vec<String>,
    /// What the workload does on the host inside a window, if anything.
    pub host_io: Option<String>,
}

impl Guest {
    pub fn of(results: &Results, spec: Option<&WorkloadSpec>) -> Guest {
        let online = results
            .boots
            .iter()
            .filter_map(|b| b.facts.as_ref())
            .filter_map(|f| cpu_count(&f.online_cpus))
            .min();
        let tasks = spec
            .and_then(|s| s.tasks.as_ref())
            .and_then(|t| t.count(&results.workload.params))
            .unwrap_or(1);
        let tick_split = results
            .boots
            .iter()
            .filter(|b| {
                b.facts
                    .as_ref()
                    .and_then(|f| f.cputime.as_ref())
                    .is_some_and(|c| !c.is_precise())
            })
            .map(|b| b.label.clone())
            .collect();
        Guest {
            lane: results.host.lane,
            online,
            tasks,
            tick_split,
            host_io: spec.and_then(|s| s.host_io.as_ref()).and_then(|io| {
                io.in_run(
                    results
                        .boots
                        .iter()
                        .flat_map(|b| &b.samples)
                        .map(|s| &s.metrics),
                )
            }),
        }
    }

    /// vCPUs busy at once in a window: the workload's tasks, at most the
    /// online vCPUs.
    fn busy(&self) -> usize {
        self.online.map_or(self.tasks, |o| self.tasks.min(o))
    }
}

/// How many CPUs a kernel cpulist (`0-1`, `0,2-3`) names; `None` when it
/// is not one.
pub fn cpu_count(list: &str) -> Option<usize> {
    let mut n = 0;
    for part in list.trim().split(',') {
        match part.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi): (usize, usize) = (lo.parse().ok()?, hi.parse().ok()?);
                n += hi.checked_sub(lo)? + 1;
            }
            None => {
                part.parse::<usize>().ok()?;
                n += 1;
            }
        }
    }
    Some(n)
}

/// Why `metric` is not a measurement of this lane, or `None` when it is.
/// Counts (pages, events, bytes) are exact in every lane; modeled cycles
/// are the cost lane's own, each vCPU's counted instructions the counting
/// lane's; a time or a rate is context
///
/// - in every lane when counted in /proc/stat's 10 ms ticks;
/// - when it is a user/system split and a boot split by ticks;
/// - in the cost and the counting lanes, where it is an icount time (blind
///   to the caches the cost lane models; with one clock for all the vCPUs
///   the counting lane counts apart);
/// - under icount, when the workload does host I/O inside the window;
///   when it is the whole guest's (or kernel threads') and more than one
///   vCPU is online; when it is the workload's CPU time and more than one
///   vCPU is busy: one instruction clock serves every vCPU, so a vCPU's
///   time includes the others' work (docs/cputime.md).
pub fn context(spec: &MetricSpec, guest: &Guest) -> Option<String> {
    if !matches!(spec.unit, Unit::Ns | Unit::PerSecond) {
        return None;
    }
    if spec.counted == Counted::Ticks {
        return Some(
            "counted in /proc/stat's 10 ms ticks (USER_HZ), coarser than what it measures in every lane"
                .into(),
        );
    }
    if spec.counted == Counted::Split && !guest.tick_split.is_empty() {
        return Some(format!(
            "a user/system split, and boot(s) {} split CPU time by timer ticks (kconfigs/cputime.config)",
            guest.tick_split.join(", ")
        ));
    }
    if let Some(why) = guest.lane.times_are_context() {
        return Some(why.into());
    }
    if !guest.lane.icount() {
        return None;
    }
    if let Some(io) = &guest.host_io {
        return Some(format!(
            "host I/O inside the window under icount ({io}), so the host's speed moves it"
        ));
    }
    let online = guest.online.unwrap_or(1);
    match spec.scope {
        Scope::Guest if online > 1 => Some(format!(
            "every vCPU's time, with {online} vCPUs online under icount: one instruction clock serves them all, so each vCPU's time includes the others' work (docs/cputime.md)"
        )),
        Scope::Workload if guest.busy() > 1 => Some(format!(
            "the CPU time of {} tasks on {} busy vCPUs under icount: one instruction clock serves them all, so a task's time includes the other vCPUs' work (docs/cputime.md)",
            guest.tasks,
            guest.busy()
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metric(name: &str) -> MetricSpec {
        crate::workload::spec_for_kind("zswap-pageout")
            .unwrap()
            .metrics
            .into_iter()
            .find(|m| m.name == name)
            .unwrap()
    }

    fn guest(lane: Lane, online: usize, tasks: usize) -> Guest {
        Guest {
            lane,
            online: Some(online),
            tasks,
            tick_split: Vec::new(),
            host_io: None,
        }
    }

    #[test]
    fn cpu_lists_are_counted() {
        assert_eq!(cpu_count("0-1"), Some(2));
        assert_eq!(cpu_count("0"), Some(1));
        assert_eq!(cpu_count("0,2-3"), Some(3));
        assert_eq!(cpu_count("x"), None);
    }

    #[test]
    fn each_lane_owns_its_figures() {
        let one = guest(Lane::Icount, 2, 1);
        // One worker on two vCPUs: its own times are the lane's, the whole
        // guest's and the tick-counted ones are not.
        assert_eq!(context(&metric("pageout_cpu_ns"), &one), None);
        assert_eq!(context(&metric("sys_ns"), &one), None);
        assert_eq!(context(&metric("elapsed_ns"), &one), None);
        assert!(
            context(&metric("guest_sys_ns"), &one)
                .unwrap()
                .contains("2 vCPUs online")
        );
        assert!(
            context(&metric("guest_irq_ns"), &one)
                .unwrap()
                .contains("10 ms ticks")
        );
        assert!(context(&metric("kworker_ns"), &one).is_some());
        assert_eq!(context(&metric("pageout_flushes"), &one), None);
        // Eight workers: their CPU time is shared, their elapsed time the
        // instructions of every vCPU, still the lane's.
        let eight = guest(Lane::Icount, 2, 8);
        assert!(
            context(&metric("sys_ns"), &eight)
                .unwrap()
                .contains("8 tasks on 2 busy vCPUs")
        );
        assert_eq!(context(&metric("elapsed_ns"), &eight), None);
        // One vCPU online: the whole guest is one clock's.
        assert_eq!(
            context(&metric("guest_sys_ns"), &guest(Lane::Icount, 1, 1)),
            None
        );
        // The counting lane's times too; each vCPU's instructions are its
        // own.
        let count = guest(Lane::Counting, 2, 8);
        assert!(
            context(&metric("sys_ns"), &count)
                .unwrap()
                .contains("counting lane")
        );
        assert_eq!(context(&metric("pageout_kernel_insns"), &count), None);
        // The cost lane's times are icount times; its cycles are its own.
        let cost = guest(Lane::Cost, 2, 1);
        assert!(
            context(&metric("pageout_cpu_ns"), &cost)
                .unwrap()
                .contains("cost lane")
        );
        assert_eq!(context(&metric("pageout_modeled_cycles"), &cost), None);
        // Plain TCG and KVM measure host time: noisy, but theirs.
        for lane in [Lane::Tcg, Lane::Kvm] {
            assert_eq!(context(&metric("guest_sys_ns"), &guest(lane, 2, 8)), None);
            assert!(context(&metric("guest_irq_ns"), &guest(lane, 2, 8)).is_some());
        }
        // A kernel that split by ticks: user and system times are samples.
        let mut ticks = one.clone();
        ticks.tick_split = vec!["A".into()];
        assert!(
            context(&metric("user_ns"), &ticks)
                .unwrap()
                .contains("timer ticks")
        );
        assert_eq!(context(&metric("pageout_cpu_ns"), &ticks), None);
        // Host I/O inside the window under icount.
        let mut io = one.clone();
        io.host_io = Some("9p".into());
        assert!(
            context(&metric("elapsed_ns"), &io)
                .unwrap()
                .contains("host I/O")
        );
    }
}
