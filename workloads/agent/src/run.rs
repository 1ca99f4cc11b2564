//! What running a workload kind takes: its boot's counts and means
//! ([`Boot`]), and the [`Run`] trait each kind's module implements for its
//! wire parameters. `main` dispatches to it from the one list of kinds
//! (`patchbench_agent::with_kinds!`).

use crate::error::Result;
use crate::port::Port;
use crate::profiler::Profiler;

/// What a kind's run gets of its boot.
pub struct Boot<'a> {
    pub warmups: u32,
    pub samples: u32,
    pub host_root: bool,
    /// The function profiler, when the kind profiles
    /// ([`patchbench_agent::Kind::profile_candidates`]).
    pub profiler: Option<&'a Profiler>,
    pub port: &'a mut Port,
}

/// Running a kind: each kind's module implements it for the kind's wire
/// parameters (`patchbench_agent::kinds`).
pub trait Run {
    /// Its warm-ups and samples, each sample sent on the port.
    fn run(&self, boot: Boot<'_>) -> Result<()>;
}
