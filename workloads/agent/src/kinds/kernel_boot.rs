//! `kernel-boot`: the kernel's own boot, measured once per boot, for the
//! code that runs only then (every `__init` function: hugetlb's boot-time
//! pools, the memory map's initialisation, each subsystem's setup), which
//! no workload's window can reach once PID 1 runs.
//!
//! It has no parameters: the boot is the kernel's and the campaign's
//! command line (`kernel.cmdline`) says what it sets up. The agent's first
//! instruction as PID 1 ends the plugin's `boot` window, which the plugin
//! opened at the guest's first instruction ([`Kind::counts_boot`]), and
//! the one sample per boot reports `CLOCK_BOOTTIME` read there (`boot_ns`):
//! under KVM the kernel's boot time, from its clock's start. The campaign
//! takes one sample a boot and no warm-up. Spec: `workloads/kernel-boot.yaml`.

use serde::{Deserialize, Serialize};

use crate::kind::Kind;
use crate::memory::SwapBackend;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelBoot {}

impl Kind for KernelBoot {
    fn swap_backend(&self) -> SwapBackend {
        SwapBackend::None
    }

    fn counts_boot(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        "the kernel's boot, to PID 1".into()
    }
}
