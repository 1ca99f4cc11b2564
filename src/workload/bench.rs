//! The campaign section of every benchmark of the mm library
//! (`patchbench_agent::bench`): read straight into the benchmark's own
//! wire parameters, whose defaults are its spec's, checked here before any
//! kernel is built, and recorded for the results document as the campaign
//! wrote them. A benchmark has no host module of its own.

use std::collections::BTreeMap;

use patchbench_agent::Workload;
use patchbench_agent::bench::{Bench, GuestSize, MAX_OPS, MAX_TASKS, ParamError};
use serde::{Deserialize, Serialize};

use super::param::{Guest, HostKind, WorkloadError};
use super::planned::{Planned, Prepared};

/// A benchmark's campaign section: its wire parameters as they are.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct BenchConfig<B>(pub B);

impl<B> HostKind for BenchConfig<B>
where
    B: Bench + Serialize + Into<Workload>,
{
    fn plan(self, guest: &Guest) -> Result<Planned, WorkloadError> {
        let bench = self.0;
        check_load(&bench)?;
        let size = GuestSize {
            online_cpus: guest.online,
            memory: guest.memory.as_u64(),
        };
        bench.check(size).map_err(workload_error)?;
        let params = recorded(&bench);
        Ok(Planned::Ready(Prepared::with_params(bench.into(), params)))
    }
}

fn check_load(bench: &impl Bench) -> Result<(), WorkloadError> {
    let load = bench.load();
    if load.tasks == 0 || load.tasks > MAX_TASKS {
        return Err(WorkloadError {
            param: "tasks",
            value: load.tasks.to_string(),
            problem: format!("must be between 1 and {MAX_TASKS}"),
        });
    }
    if load.ops == 0 || load.ops > MAX_OPS {
        return Err(WorkloadError {
            param: "ops",
            value: load.ops.to_string(),
            problem: format!("must be between 1 and {MAX_OPS}"),
        });
    }
    Ok(())
}

fn workload_error(e: ParamError) -> WorkloadError {
    WorkloadError {
        param: e.param,
        value: e.value,
        problem: e.problem,
    }
}

/// Every parameter as the campaign writes it: its wire value, strings
/// without quotes.
fn recorded(bench: &impl Serialize) -> BTreeMap<String, String> {
    let value = serde_json::to_value(bench).expect("a benchmark's parameters serialize");
    let serde_json::Value::Object(fields) = value else {
        panic!("a benchmark's parameters are a struct");
    };
    fields
        .into_iter()
        .map(|(k, v)| {
            let text = match v {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            (k, text)
        })
        .collect()
}
