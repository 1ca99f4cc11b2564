//! The specs of the guest workloads, read from `workloads/<name>.yaml`:
//! parameters, metric names, units, directions, negligible levels and
//! lanes. The reports take them from here, so the documentation and the
//! tables cannot drift.

use serde::Deserialize;

use crate::model::{Direction, Unit};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    pub name: String,
    pub description: String,
    /// How many of the workload's tasks run at once inside a measured
    /// window; absent: one. Under icount every vCPU shares one instruction
    /// clock, so with more than one busy vCPU a task's time includes the
    /// others' work, and the judgement shows it as context.
    #[serde(default)]
    pub tasks: Option<TasksSpec>,
    /// What the workload does on the host inside a measured window (its
    /// completions land at instruction counts the host's speed decides):
    /// under icount its times are then not the lane's own. Absent: none.
    #[serde(default)]
    pub host_io: Option<HostIoSpec>,
    /// The metric that is a sample's wall-clock time (`real_ns`): the
    /// share of it the host stole flags a sample
    /// (`campaign::steal`, docs/statistics.md "Steal time under KVM").
    pub wall: String,
    /// `ops`: a benchmark of the mm library, run by the agent's harness;
    /// its metrics are `workloads/common/ops-metrics.yaml`'s after its
    /// own. Absent: a kind with a run of its own.
    #[serde(default)]
    pub harness: Option<Harness>,
    /// The kernel features it needs: a campaign whose configuration lacks
    /// one is refused before anything is built, and a boot whose kernel
    /// does not read one back is refused by name.
    #[serde(default)]
    pub needs: Vec<patchbench_agent::feature::Feature>,
    /// Interfaces of the tree's source it uses that no option builds (an
    /// ioctl, a prctl, a sysfs file of a later version): the tree under
    /// test is read for each before anything is built.
    #[serde(default)]
    pub requires: Vec<super::needs::SourceNeed>,
    pub params: Vec<ParamSpec>,
    #[serde(default)]
    pub metrics: Vec<MetricSpec>,
}

/// [`WorkloadSpec::harness`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Harness {
    Ops,
}

/// The metrics every benchmark of the mm library reports.
const OPS_METRICS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/workloads/common/ops-metrics.yaml"
));

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SharedMetrics {
    metrics: Vec<MetricSpec>,
}

impl WorkloadSpec {
    /// A spec from its text, with its harness's metrics after its own.
    pub fn parse(text: &str) -> Result<WorkloadSpec, yaml_serde::Error> {
        let mut spec: WorkloadSpec = yaml_serde::from_str(text)?;
        if spec.harness == Some(Harness::Ops) {
            let shared: SharedMetrics = yaml_serde::from_str(OPS_METRICS)?;
            spec.metrics.extend(shared.metrics);
        }
        Ok(spec)
    }
}

/// [`WorkloadSpec::host_io`]: what it is, and the metric that counts it
/// in each sample, if one does.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostIoSpec {
    pub what: String,
    /// A count metric of the workload: a run did host I/O inside its
    /// windows only where a sample's count is above zero. Absent: every
    /// run does.
    #[serde(default)]
    pub counted_by: Option<String>,
}

impl HostIoSpec {
    /// The host I/O inside a window of a run whose samples are `samples`
    /// (their metric maps), said with its extent; `None` when its count
    /// says there was none. A run whose samples lack the count (made
    /// before the agent counted it) is taken to have done it.
    pub fn in_run<'a>(
        &self,
        samples: impl IntoIterator<Item = &'a std::collections::BTreeMap<String, u64>>,
    ) -> Option<String> {
        let Some(metric) = &self.counted_by else {
            return Some(self.what.clone());
        };
        let (mut seen, mut with, mut total) = (0usize, 0usize, 0u64);
        for sample in samples {
            if let Some(&n) = sample.get(metric) {
                seen += 1;
                with += usize::from(n > 0);
                total += n;
            }
        }
        if seen == 0 {
            return Some(format!(
                "{}; the run has no {metric} to count it",
                self.what
            ));
        }
        (with > 0).then(|| {
            format!(
                "{}: {metric} {total} in {with} of {seen} samples",
                self.what
            )
        })
    }
}

/// [`WorkloadSpec::tasks`]: the parameter that counts the tasks, plus
/// those the workload adds (a reader beside its dirtiers), or one alone
/// when every parameter of `alone_when` has its value (dirtiers in
/// lockstep, none running inside the window).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TasksSpec {
    pub param: String,
    #[serde(default)]
    pub plus: usize,
    #[serde(default)]
    pub alone_when: std::collections::BTreeMap<String, String>,
}

impl TasksSpec {
    /// The tasks running at once, from a run's recorded (resolved)
    /// parameters; `None` when the count parameter is not a number.
    pub fn count(&self, params: &std::collections::BTreeMap<String, String>) -> Option<usize> {
        if !self.alone_when.is_empty()
            && self
                .alone_when
                .iter()
                .all(|(k, v)| params.get(k).is_some_and(|p| p == v))
        {
            return Some(1);
        }
        let n: usize = params.get(&self.param)?.trim().parse().ok()?;
        Some(n + self.plus)
    }
}

/// Whose time a time metric is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// CPU time of the workload's own tasks.
    #[default]
    Workload,
    /// The workload's elapsed time (a window's length; under icount, the
    /// instructions every vCPU ran in it).
    Elapsed,
    /// Every CPU's time, or kernel threads': whoever ran.
    Guest,
}

/// How a time metric is counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Counted {
    /// To the clock's resolution.
    #[default]
    Exact,
    /// A user/system split: exact only where the kernel charges CPU time
    /// at every kernel entry and exit (facts.cputime precise), else a
    /// sample of timer ticks.
    Split,
    /// In /proc/stat's 10 ms ticks (USER_HZ), whatever the kernel's
    /// accounting.
    Ticks,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamSpec {
    pub name: String,
    pub unit: String,
    pub default: yaml_serde::Value,
    pub description: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricSpec {
    pub name: String,
    pub unit: Unit,
    pub better: Direction,
    /// Values within ±this (in the metric's unit) are negligible: when every
    /// A and B sample is, the verdict is "no clear difference" (rule 3 of
    /// docs/statistics.md). Absent: no such level.
    #[serde(default)]
    pub negligible: Option<f64>,
    /// `cost`: made by the cost lane (docs/cost-model.md) from the phase
    /// windows the agent marks, not by the agent. Absent: every lane.
    #[serde(default)]
    pub lane: Option<MetricLane>,
    /// One of the seed's own figures: a sequential campaign stops when
    /// every primary metric is decided (docs/statistics.md, "Sequential
    /// campaigns"). Absent: false.
    #[serde(default)]
    pub primary: bool,
    /// A time's scope (default `workload`); meaningless for counts.
    #[serde(default)]
    pub scope: Scope,
    /// How a time is counted (default `exact`).
    #[serde(default)]
    pub counted: Counted,
    pub description: String,
}

/// The lane that alone produces a metric. A metric of another lane is
/// absent from a run's samples, and so from its reports: it is not missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricLane {
    /// `vm.cost_model: cache`.
    Cost,
    /// `vm.cost_model: count`.
    Count,
    /// Either: the plugin makes it with or without its cache model.
    Plugin,
}

/// The spec of a workload kind (`zswap-pageout`...), from
/// `workloads/<kind>.yaml`; `None` for a kind that measures nothing, or
/// none listed.
pub fn spec_for_kind(kind: &str) -> Option<WorkloadSpec> {
    let (_, text) = super::kinds::SPECS.iter().find(|(name, _)| *name == kind)?;
    Some(WorkloadSpec::parse((*text)?).expect("workloads/*.yaml are valid (tested)"))
}
