//! `mm-selftest`'s campaign section: which selftest, checked here (a name
//! the kind knows how to read); the host builds it from the tree under
//! test before any kernel (`crate::staged`). Recorded as the results
//! document writes it.

use patchbench_agent::kinds::mm_selftest::{MmSelftest, SelftestProgram};
use serde::Deserialize;

use crate::workload::param::*;
use crate::workload::planned::{Params, Planned, SelftestPlan, StagedPlan};

named! {
    ,
    program: SelftestProgram = SelftestProgram::deserialize;
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(deserialize_with = "program", default = "mremap_test")]
    pub program: SelftestProgram,
}

impl HostKind for Config {
    fn plan(self, _guest: &Guest) -> Result<Planned, WorkloadError> {
        Ok(Planned::Staged(StagedPlan::MmSelftest(SelftestPlan {
            program: self.program,
        })))
    }
}

impl Params for MmSelftest {
    fn params(&self) -> Vec<(&'static str, String)> {
        let MmSelftest {
            program,
            archive,
            commit,
        } = self;
        vec![
            ("program", program.name().to_string()),
            ("args", program.args().join(" ")),
            ("commit", commit.clone()),
            ("archive", archive.clone()),
        ]
    }
}

fn mremap_test() -> SelftestProgram {
    SelftestProgram::MremapTest
}
