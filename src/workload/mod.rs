//! Workloads on the host: the campaign's `workload:` section
//! ([`WorkloadConfig`]), validated against the guest's shape into a
//! [`Planned`] workload, made ready to run by preparation into a
//! [`Prepared`] one (which is what the guest agent gets), and the specs of
//! each guest workload, read from `workloads/<name>.yaml`. The report takes
//! metric names, units and directions from the specs, so the documentation
//! and the tables cannot drift.

pub use crate::model::{Direction, Unit};

mod bench;
pub mod kinds;
pub mod needs;
mod param;
mod planned;
mod spec;
pub mod steal;
pub use kinds::WorkloadConfig;
pub use param::{CgroupCount, WorkloadError};
pub use planned::{
    BuildConfig, KernelBuildPlan, Planned, Prepared, SelftestPlan, StagedArchive, StagedPlan,
    StressNgPlan,
};
pub use spec::{
    Counted, MetricLane, MetricSpec, ParamSpec, Scope, TasksSpec, WorkloadSpec, spec_for_kind,
};

#[cfg(test)]
mod tests;
