//! Workload specs: the parameters and metrics of each guest workload, read
//! from `workloads/<name>.yaml`. The report takes metric names, units and
//! directions from here, so the documentation and the tables cannot drift.

use serde::Deserialize;

const ZSWAP_PAGEOUT: &str = include_str!("../workloads/zswap-pageout.yaml");

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
    pub better: Better,
    pub description: String,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Ns,
    Pages,
    Count,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Lower,
    Higher,
    /// A counter that explains a result rather than being one.
    None,
}

/// The spec of a workload of the agent protocol.
pub fn spec_for(workload: &patchbench_agent::Workload) -> Option<WorkloadSpec> {
    match workload {
        patchbench_agent::Workload::ZswapPageout { .. } => Some(
            yaml_serde::from_str(ZSWAP_PAGEOUT)
                .expect("workloads/zswap-pageout.yaml is valid (tested)"),
        ),
        patchbench_agent::Workload::GuestFault { .. } | patchbench_agent::Workload::Exec { .. } => {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_zswap_pageout_spec_parses_and_names_the_agents_metrics() {
        let spec: WorkloadSpec = yaml_serde::from_str(ZSWAP_PAGEOUT).unwrap();
        assert_eq!(spec.name, "zswap-pageout");
        let names: Vec<_> = spec.metrics.iter().map(|m| m.name.as_str()).collect();
        for metric in [
            "pageout_cpu_ns",
            "verify_cpu_ns",
            "total_cpu_ns",
            "elapsed_ns",
            "zswpout_pages",
        ] {
            assert!(names.contains(&metric), "{metric} missing from {names:?}");
        }
    }
}
