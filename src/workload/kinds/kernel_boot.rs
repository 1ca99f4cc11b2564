//! `kernel-boot`'s campaign section: no parameters (the boot is the
//! kernel's and the campaign's command line). The campaign must take one
//! sample a boot and no warm-up, which `config` checks before anything is
//! built (`Plan`'s protocol against [`patchbench_agent::Kind::counts_boot`]).

use patchbench_agent::kinds::kernel_boot::KernelBoot;
use serde::Deserialize;

use crate::workload::param::*;
use crate::workload::planned::{Params, Planned, Prepared};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {}

impl HostKind for Config {
    fn plan(self, _guest: &Guest) -> Result<Planned, WorkloadError> {
        Ok(Planned::Ready(Prepared::new(KernelBoot {})))
    }
}

impl Params for KernelBoot {
    fn params(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}
