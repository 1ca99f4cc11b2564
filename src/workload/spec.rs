//! The specs of the guest workloads, read from `workloads/<name>.yaml`:
//! parameters, metric names, units, directions, negligible levels and
//! lanes. The reports take them from here, so the documentation and the
//! tables cannot drift.

use serde::Deserialize;

use crate::model::{Direction, Unit};

pub(super) const ZSWAP_PAGEOUT: &str = include_str!("../../workloads/zswap-pageout.yaml");
pub(super) const RSTAT_FLUSH: &str = include_str!("../../workloads/rstat-flush.yaml");
pub(super) const RECLAIM_REFAULT: &str = include_str!("../../workloads/reclaim-refault.yaml");
pub(super) const KERNEL_BUILD: &str = include_str!("../../workloads/kernel-build.yaml");

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    pub name: String,
    pub description: String,
    pub params: Vec<ParamSpec>,
    pub metrics: Vec<MetricSpec>,
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
    pub description: String,
}

/// The lane that alone produces a metric. A metric of another lane is
/// absent from a run's samples, and so from its reports: it is not missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricLane {
    /// `vm.cost_model: cache`.
    Cost,
}

/// The spec of a workload kind (`zswap-pageout`...); `None` for a kind
/// that measures nothing.
pub fn spec_for_kind(kind: &str) -> Option<WorkloadSpec> {
    let text = match kind {
        "zswap-pageout" => ZSWAP_PAGEOUT,
        "rstat-flush" => RSTAT_FLUSH,
        "reclaim-refault" => RECLAIM_REFAULT,
        "kernel-build" => KERNEL_BUILD,
        _ => return None,
    };
    Some(yaml_serde::from_str(text).expect("workloads/*.yaml are valid (tested)"))
}
