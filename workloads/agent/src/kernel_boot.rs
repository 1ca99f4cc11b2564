//! The `kernel-boot` workload's run
//! (`patchbench_agent::kinds::kernel_boot`): the boot is over before the
//! agent runs, so its one sample reports what PID 1 saw at its start.
//!
//! [`started`] is PID 1's first act: it ends the plugin's `boot` window
//! (every boot's agent does; a plugin not counting the boot ignores it)
//! and reads `CLOCK_BOOTTIME`.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use patchbench_agent::kinds::kernel_boot::KernelBoot;
use patchbench_agent::marker::Phase;

use crate::error::{Result, bail};
use crate::mark;
use crate::pageout::emit;
use crate::run::{Boot, Run};

/// `CLOCK_BOOTTIME` at PID 1's start, in nanoseconds.
static STARTED_NS: OnceLock<u64> = OnceLock::new();

/// PID 1's first act: the boot window ends here, and its clock is read.
pub fn started() {
    mark::end(Phase::Boot);
    if let Ok(ns) = crate::sys::boottime_ns() {
        let _ = STARTED_NS.set(ns);
    }
}

impl Run for KernelBoot {
    fn run(&self, boot: Boot<'_>) -> Result<()> {
        if boot.warmups != 0 || boot.samples != 1 {
            bail!(
                "kernel-boot measures the boot once per boot: protocol.warmups must be 0 and \
                 protocol.samples 1 (this job asks for {} and {})",
                boot.warmups,
                boot.samples
            );
        }
        let Some(&ns) = STARTED_NS.get() else {
            bail!("CLOCK_BOOTTIME could not be read at PID 1's start");
        };
        let metrics = BTreeMap::from([("boot_ns".to_string(), ns)]);
        emit(boot.port, 0, 0, 1, metrics)
    }
}
