//! `guest-fault`: a deliberately broken guest, used to test the host's
//! failure handling. It measures nothing, so it has no spec.

use serde::{Deserialize, Serialize};

use crate::kind::Kind;

/// A deliberately broken guest, used to test the host's failure handling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuestFault {
    pub fault: Fault,
}

impl Kind for GuestFault {
    fn needs_host_root(&self) -> bool {
        self.fault == Fault::HostIo
    }

    fn describe(&self) -> String {
        match self.fault {
            Fault::ExitInit => "exit-init",
            Fault::Hang => "hang",
            Fault::Fail => "fail",
            Fault::HostIo => "host-io",
        }
        .to_string()
    }
}

/// What [`Workload::GuestFault`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    /// PID 1 exits, so the kernel panics ("Attempted to kill init").
    ExitInit,
    /// The agent stops answering forever; the host's run deadline must fire.
    Hang,
    /// The workload reports an error message.
    Fail,
    /// A timed window that reads the host over 9p (host-root mode), which
    /// the agent must refuse as a kernel build's would be.
    HostIo,
}
