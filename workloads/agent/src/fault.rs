//! The GuestFault workload: deliberately broken guests that exercise the
//! host's failure handling.

use patchbench_agent::Fault;

use crate::console;
use crate::error::{Context, Error, Result};
use crate::hostio;
use crate::hostroot;
use crate::sys;

/// The exact message of [`Fault::Fail`].
pub const FAIL_MESSAGE: &str = "guest-fault: deliberate workload failure";

/// Commits the fault. Only [`Fault::Fail`] returns, with its error.
pub fn run(fault: Fault) -> Result<()> {
    match fault {
        Fault::ExitInit => {
            console::say("guest-fault exit-init: PID 1 exits now, the kernel will panic");
            std::process::exit(1)
        }
        Fault::Hang => {
            console::say("guest-fault hang: sleeping forever");
            sys::pause_forever()
        }
        Fault::Fail => Err(Error::msg(FAIL_MESSAGE)),
        Fault::HostIo => {
            // A host file that nothing read before, so that the 9p client
            // has none of it cached.
            let watch = hostio::Watch::ninep()?;
            let start = watch.start()?;
            let path = hostroot::under(hostroot::LOWER, "/etc/os-release");
            std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            watch.check(start, "guest-fault host-io's window")
        }
    }
}

impl crate::run::Run for patchbench_agent::kinds::guest_fault::GuestFault {
    fn run(&self, _boot: crate::run::Boot<'_>) -> Result<()> {
        run(self.fault)
    }
}
