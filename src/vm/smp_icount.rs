//! A second x86 CPU that never comes up under icount, told before any
//! build. Pure.
//!
//! Linux before 6.5 brings each further x86 CPU up with a handshake
//! (`cpu_initialized_mask`, then `cpu_callout_mask`) whose boot-CPU side,
//! `do_boot_cpu()` in `arch/x86/kernel/smpboot.c`, waits in a loop that
//! calls `schedule()` and never executes `pause` or `hlt`. QEMU before 8.1
//! runs single-threaded TCG under icount by giving the running vCPU every
//! instruction up to the next timer deadline, and moves on to the next vCPU
//! only when that one leaves the execution loop (`pause`, `hlt`, a stop).
//! So the boot CPU spends each whole budget waiting, CPU 1 is left with
//! none, and the boot never goes on. QEMU 8.1 shares the budget between the
//! vCPUs ("accel/tcg/tcg-accel-ops-rr: ensure fairness with icount",
//! <20230424112907.26832-1-quic_jiles@quicinc.com>, written for the same
//! livelock on riscv64). Linux 6.5 replaced the handshake
//! (`cpuhp_ap_sync`), whose waits use `cpu_relax()` and sleep.
//!
//! Seen on Debian's 6.1 tree with QEMU 7.2: after "CPUs: #1" no block of
//! CPU 1 ran in 0.8 s of `-d exec` (2.0 M blocks of CPU 0's), and a
//! monitor `stop` and `cont`, which sends every vCPU out of the loop,
//! brought it up at once. A campaign cannot do that and stay exact, so
//! it is refused.

/// The source file of the handshake.
pub const SMPBOOT: &str = "arch/x86/kernel/smpboot.c";
/// A word only the old handshake's source has.
const HANDSHAKE: &str = "cpu_callout_mask";
/// The first QEMU whose round-robin shares the icount budget.
const FAIR_QEMU: (u32, u32) = (8, 1);

/// The campaign would hang bringing up its second CPU.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "vm.cpus.online: {online} cannot boot here under icount: this tree's {SMPBOOT} waits for each further CPU in a loop that never yields (its `{HANDSHAKE}` handshake, replaced in Linux 6.5), and QEMU {qemu} gives the waiting vCPU all of icount's instructions, so the second CPU never runs (fixed in QEMU 8.1: \"accel/tcg/tcg-accel-ops-rr: ensure fairness with icount\"); set vm.cpus.online: 1 (or run --online 1), as ci/smoke-6.1.yaml does, or install QEMU 8.1 or later"
)]
pub struct SmpStall {
    pub online: u32,
    pub qemu: String,
}

/// Whether a boot with `online` CPUs, under icount or not, of a tree whose
/// [`SMPBOOT`] reads `smpboot` (`None`: the tree has none), on QEMU
/// `qemu_version`, would stall at the second CPU. An unknown QEMU version
/// or a tree without the file is let through: the boot then says.
pub fn check(
    icount: bool,
    online: u32,
    qemu_version: Option<&str>,
    smpboot: Option<&str>,
) -> Result<(), SmpStall> {
    let (Some(version), Some(source)) = (qemu_version, smpboot) else {
        return Ok(());
    };
    let stalls = icount
        && online > 1
        && major_minor(version).is_some_and(|v| v < FAIR_QEMU)
        && source.contains(HANDSHAKE);
    match stalls {
        true => Err(SmpStall {
            online,
            qemu: version.to_string(),
        }),
        false => Ok(()),
    }
}

/// `7.2.22` → (7, 2).
fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or_default();
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of 6.1's and 6.12's smpboot.c that decide.
    const OLD: &str = "\t\t\tif (cpumask_test_cpu(cpu, cpu_initialized_mask)) {\n\t\t\t\tcpumask_set_cpu(cpu, cpu_callout_mask);\n";
    const NEW: &str = "\tif (!cpuhp_ap_sync_alive())\n";

    #[test]
    fn the_old_handshake_on_qemu_before_8_1_with_two_cpus_under_icount_is_refused() {
        let err = check(true, 2, Some("7.2.22"), Some(OLD)).unwrap_err();
        assert_eq!(err.online, 2);
        let text = err.to_string();
        assert!(text.contains("vm.cpus.online: 2"), "{text}");
        assert!(text.contains("QEMU 7.2.22"), "{text}");
        assert!(text.contains("set vm.cpus.online: 1"), "{text}");
        assert!(text.contains(SMPBOOT), "{text}");
    }

    #[test]
    fn any_one_condition_missing_lets_the_boot_run() {
        // One CPU, no icount, a fair QEMU, the new handshake.
        assert_eq!(check(true, 1, Some("7.2.22"), Some(OLD)), Ok(()));
        assert_eq!(check(false, 2, Some("7.2.22"), Some(OLD)), Ok(()));
        for fair in ["8.1.0", "8.2", "9.2.1", "10.0.0"] {
            assert_eq!(check(true, 2, Some(fair), Some(OLD)), Ok(()), "{fair}");
        }
        assert_eq!(check(true, 2, Some("7.2.22"), Some(NEW)), Ok(()));
        // Unknown: let the boot say.
        assert_eq!(check(true, 2, None, Some(OLD)), Ok(()));
        assert_eq!(check(true, 2, Some("7.2.22"), None), Ok(()));
        assert_eq!(check(true, 2, Some("git"), Some(OLD)), Ok(()));
    }

    #[test]
    fn versions_compare_by_major_then_minor() {
        assert_eq!(major_minor("8.0.5"), Some((8, 0)));
        assert!(major_minor("8.0.5").unwrap() < FAIR_QEMU);
        assert!(major_minor("7.2.22").unwrap() < FAIR_QEMU);
        assert_eq!(major_minor("8.1"), Some((8, 1)));
        assert_eq!(major_minor("9"), Some((9, 0)));
        assert_eq!(major_minor("x.1"), None);
    }
}
