//! The GuestFault workload: deliberately broken guests that exercise the
//! host's failure handling.

use patchbench_agent::Fault;

use crate::console;
use crate::error::{Error, Result};
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
    }
}
