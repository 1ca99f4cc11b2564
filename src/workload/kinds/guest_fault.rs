//! `guest-fault`'s campaign section: the fault, as it is (a kind for
//! testing the host's failure handling; it measures nothing).

use patchbench_agent::Fault;
use patchbench_agent::kinds::guest_fault::GuestFault;
use serde::Deserialize;

use crate::workload::param::*;
use crate::workload::planned::{Params, Planned, Prepared};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub fault: Fault,
}

impl HostKind for Config {
    fn plan(self, _guest: &Guest) -> Result<Planned, WorkloadError> {
        Ok(Planned::Ready(Prepared::new(GuestFault {
            fault: self.fault,
        })))
    }
}

impl Params for GuestFault {
    fn params(&self) -> Vec<(&'static str, String)> {
        vec![("fault", format!("{:?}", self.fault))]
    }
}
