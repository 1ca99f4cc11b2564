//! The KVM trial: QEMU started for a moment with the boots' own KVM
//! arguments ([`args::accel_args`]), running a guest of three instructions
//! that reports through QEMU's `isa-debug-exit` device, and the host's KVM
//! modules read beside it.
//!
//! Only a guest that ran proves KVM opens and runs code: `/dev/kvm` opens
//! on hosts where another hypervisor holds VT-x, where a seccomp filter
//! refuses the ioctls, or where nested virtualization is broken. The
//! trial takes its CPU model from the boots' arguments and never from a
//! list of its own: on this project's machine (module `kvm_pvm`, QEMU 7.2,
//! its earlier host kernel, 2026-12-06) it aborted in about 0.2 s with
//! "failed to set MSR 0x10a" under `-cpu host`, the model every KVM boot
//! uses.
//!
//! A guest that ran is not enough either. The same machine on a later host
//! kernel (6.18.44, 2026-12-06, evening) runs the three instructions under
//! `-cpu host`, yet a real kernel prints nothing in 20 s: `kvm_pvm` runs
//! only PVM guests, kernels built to run under it. So KVM counts as usable
//! only where the guest ran *and* a hardware KVM module, `kvm_intel` or
//! `kvm_amd`, is loaded (a built-in one is listed in `/sys/module` too,
//! since both have parameters).
//!
//! Whether KVM is usable is decided from QEMU's exit status, its stderr and
//! the modules alone ([`judge`], pure), so the hermetic tier's fake QEMU
//! and a fake module directory ([`ENV_SYS_MODULE`]) stand in for every host.

use std::path::Path;
use std::time::Duration;

use crate::model::{Accel, TcgThreads};
use crate::process::{self, Cmd, ProcessError};
use crate::vm::args;

/// The udev rule that opens `/dev/kvm` to every user, as the reusable
/// workflow writes it on GitHub's hosted runners.
pub const UDEV_RULE: &str =
    r#"KERNEL=="kvm", GROUP="kvm", MODE="0666", OPTIONS+="static_node=kvm""#;

/// The directory [`run`] reads the loaded modules from instead of
/// `/sys/module`, when set: the hermetic tier describes a host with it.
pub const ENV_SYS_MODULE: &str = "PATCHBENCH_SYS_MODULE";

/// The modules that run an unmodified guest kernel under KVM.
pub const HARDWARE_MODULES: [&str; 2] = ["kvm_intel", "kvm_amd"];

/// Why KVM cannot run this campaign's guests here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KvmUnfit {
    /// QEMU could not open `/dev/kvm`.
    #[error("QEMU cannot open /dev/kvm ({why}); {}", dev_kvm_fix(.why))]
    DevKvm { why: String },
    /// `/dev/kvm` opened, and the VM could not be made.
    #[error(
        "/dev/kvm opens, but KVM cannot create a VM (QEMU: {why}); another hypervisor may hold VT-x/AMD-V, or the host kernel refuses it"
    )]
    CreateVm { why: String },
    /// QEMU ended before the guest ran.
    #[error(
        "QEMU under KVM ({args}) ended with {how} before a three-instruction guest ran{}{}",
        stderr_part(.stderr),
        modules_part(.modules)
    )]
    Run {
        args: String,
        how: String,
        stderr: String,
        /// The KVM modules loaded, as evidence (`kvm_pvm` runs only
        /// PVM guests).
        modules: Vec<String>,
    },
    /// The guest ran, but no module that runs an unmodified kernel is
    /// loaded.
    #[error(
        "QEMU ran a three-instruction guest under KVM, but neither kvm_intel nor kvm_amd is loaded{}: no hardware KVM runs an unmodified kernel here (kvm_pvm runs only PVM guests, and a normal kernel hangs under it)",
        modules_part(.modules)
    )]
    NoHardware { modules: Vec<String> },
    /// The guest did not run within the trial's deadline.
    #[error(
        "QEMU under KVM ({args}) did not run a three-instruction guest within {}: KVM hangs here{}",
        humantime::format_duration(*.after),
        stderr_part(.stderr)
    )]
    Hang {
        args: String,
        after: Duration,
        stderr: String,
    },
    /// QEMU itself could not be started.
    #[error("KVM was not tried: {why}")]
    Qemu { why: String },
    /// Not tried, since TCG was asked for.
    #[error("KVM was not tried: TCG was requested")]
    NotTried,
}

fn dev_kvm_fix(why: &str) -> String {
    let open = format!(
        "add your user to the kvm group (sudo usermod -aG kvm \"$USER\", then log in again), or open it to every user as the reusable workflow does on hosted runners, with the udev rule {UDEV_RULE} in /etc/udev/rules.d/99-kvm.rules and `sudo udevadm control --reload-rules && sudo udevadm trigger --name-match=kvm`"
    );
    if why.contains("No such file") {
        "this host has no KVM: enable VT-x/AMD-V in the firmware and load kvm_intel or kvm_amd; on a cloud VM choose a size with nested virtualization".into()
    } else {
        open
    }
}

fn stderr_part(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        String::new()
    } else {
        format!("; QEMU said: {}", stderr.trim())
    }
}

fn modules_part(modules: &[String]) -> String {
    if modules.is_empty() {
        "; no KVM module is loaded".into()
    } else {
        format!("; KVM modules loaded: {}", modules.join(", "))
    }
}

/// The KVM modules loaded, among `kvm_intel`, `kvm_amd` and `kvm_pvm`.
pub fn loaded_modules(sys_module: &Path) -> Vec<String> {
    ["kvm_intel", "kvm_amd", "kvm_pvm"]
        .into_iter()
        .filter(|m| sys_module.join(m).exists())
        .map(String::from)
        .collect()
}

/// The I/O port of QEMU's `isa-debug-exit` device.
const EXIT_PORT: u8 = 0xf4;
/// The byte the guest writes there.
const GUEST_BYTE: u8 = 0x2a;
/// QEMU's exit status when the guest wrote [`GUEST_BYTE`]:
/// `isa-debug-exit` exits with `(value << 1) | 1`.
pub const GUEST_RAN: i32 = ((GUEST_BYTE as i32) << 1) | 1;
/// A QEMU that starts at all reaches the guest's `out` in about 0.2 s;
/// this leaves room for a cold start on a loaded host, and a KVM that
/// hangs costs no more than this.
pub const DEADLINE: Duration = Duration::from_secs(15);

/// The firmware: 64 KiB (QEMU wants a multiple of it for `-bios`) of
/// `hlt`, with the guest at the reset vector, the last 16 bytes, where a
/// real-mode CPU starts: `mov al, 0x2a; out 0xf4, al; cli; hlt; jmp $-3`.
pub fn firmware() -> Vec<u8> {
    let mut rom = vec![0xf4; 64 * 1024];
    let guest = [0xb0, GUEST_BYTE, 0xe6, EXIT_PORT, 0xfa, 0xf4, 0xeb, 0xfd];
    rom[0xfff0..0xfff0 + guest.len()].copy_from_slice(&guest);
    rom
}

/// QEMU's arguments for the trial, the firmware at `rom`.
pub fn qemu_args(rom: &Path) -> Vec<String> {
    let mut argv: Vec<String> = ["-nodefaults", "-no-user-config", "-display", "none"]
        .map(String::from)
        .to_vec();
    // The boots' machine, accelerator and CPU model: a trial under any
    // other CPU model proves nothing of them (see the module's doc).
    argv.extend(["-machine".into(), "q35".into()]);
    argv.extend(args::accel_args(Accel::Kvm, false, TcgThreads::Multi));
    argv.extend(
        [
            "-m",
            "16M",
            "-smp",
            "1",
            "-no-reboot",
            "-bios",
            &rom.display().to_string(),
            // The guest's `out` ends QEMU with GUEST_RAN.
            "-device",
            &format!("isa-debug-exit,iobase={EXIT_PORT:#x},iosize=0x04"),
        ]
        .map(String::from),
    );
    argv
}

/// Start `qemu` with the trial guest, under `deadline`.
pub async fn run(qemu: &str, deadline: Duration) -> Result<(), KvmUnfit> {
    let dir = tempfile::tempdir().map_err(|e| KvmUnfit::Qemu {
        why: format!("cannot make a directory for the trial's firmware: {e}"),
    })?;
    let rom = dir.path().join("kvm-trial.rom");
    std::fs::write(&rom, firmware()).map_err(|e| KvmUnfit::Qemu {
        why: format!("cannot write {}: {e}", rom.display()),
    })?;
    let cmd = Cmd::new(qemu, deadline).args(qemu_args(&rom));
    let sys_module = std::env::var_os(ENV_SYS_MODULE).unwrap_or_else(|| "/sys/module".into());
    judge(
        process::run(&cmd).await,
        &loaded_modules(Path::new(&sys_module)),
    )
}

/// What QEMU's end and the KVM modules loaded (`modules`) say of KVM: a
/// guest that ran on a hardware module is usable; the modules are evidence
/// for a guest that did not run.
pub fn judge(
    end: Result<process::Output, ProcessError>,
    modules: &[String],
) -> Result<(), KvmUnfit> {
    let args = args::accel_args(Accel::Kvm, false, TcgThreads::Multi).join(" ");
    match end {
        Err(ProcessError::Failed { status, .. }) if status.code() == Some(GUEST_RAN) => {
            if modules
                .iter()
                .any(|m| HARDWARE_MODULES.contains(&m.as_str()))
            {
                Ok(())
            } else {
                Err(KvmUnfit::NoHardware {
                    modules: modules.to_vec(),
                })
            }
        }
        Err(ProcessError::Failed { status, tail, .. }) => {
            Err(from_stderr(&tail, &args, status.to_string(), modules))
        }
        Ok(out) => Err(from_stderr(
            &out.tail,
            &args,
            "exit status 0, before the guest's `out`".into(),
            modules,
        )),
        Err(ProcessError::Timeout { after, tail, .. }) => Err(KvmUnfit::Hang {
            args,
            after,
            stderr: tail.join("; "),
        }),
        Err(e @ (ProcessError::NotFound { .. } | ProcessError::Spawn { .. })) => {
            Err(KvmUnfit::Qemu { why: e.to_string() })
        }
        Err(e @ ProcessError::Io { .. }) => Err(KvmUnfit::Qemu {
            why: format!(
                "{e}: {}",
                std::error::Error::source(&e).map_or(String::new(), |s| s.to_string())
            ),
        }),
    }
}

/// A failed trial, by what QEMU printed (accel/kvm/kvm-all.c's
/// `kvm_init`: "Could not access KVM kernel module: %m" when the open of
/// /dev/kvm fails, "ioctl(KVM_CREATE_VM) failed: %d %s" when the VM
/// cannot be made).
fn from_stderr(tail: &[String], args: &str, how: String, modules: &[String]) -> KvmUnfit {
    if let Some(why) = tail
        .iter()
        .find_map(|l| l.split_once("Could not access KVM kernel module: "))
        .map(|(_, why)| why.trim().to_string())
    {
        return KvmUnfit::DevKvm { why };
    }
    if let Some(line) = tail.iter().find(|l| l.contains("KVM_CREATE_VM")) {
        return KvmUnfit::CreateVm {
            why: line.trim().to_string(),
        };
    }
    KvmUnfit::Run {
        args: args.to_string(),
        how,
        stderr: tail.join("; "),
        modules: modules.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    use super::*;

    fn failed(code: i32, stderr: &[&str]) -> Result<process::Output, ProcessError> {
        Err(ProcessError::Failed {
            command: "qemu-system-x86_64 ...".into(),
            status: ExitStatus::from_raw(code << 8),
            tail: stderr.iter().map(|l| l.to_string()).collect(),
            log: None,
        })
    }

    #[test]
    fn the_guest_sits_at_the_reset_vector_and_writes_to_the_exit_port() {
        let rom = firmware();
        assert_eq!(rom.len(), 65536);
        assert_eq!(&rom[0xfff0..0xfff4], &[0xb0, 0x2a, 0xe6, 0xf4]);
        assert_eq!(GUEST_RAN, 85);
    }

    #[test]
    fn the_trial_runs_the_boots_cpu_model() {
        let argv = qemu_args(Path::new("/x/kvm-trial.rom"));
        let boots = args::accel_args(Accel::Kvm, false, TcgThreads::Multi);
        assert!(
            argv.windows(boots.len()).any(|w| w == boots.as_slice()),
            "{argv:?} lacks {boots:?}"
        );
        assert!(argv.windows(2).any(|w| w == ["-bios", "/x/kvm-trial.rom"]));
        assert!(
            argv.windows(2)
                .any(|w| w == ["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"])
        );
    }

    #[test]
    fn the_guests_exit_status_on_a_hardware_module_is_success() {
        assert_eq!(judge(failed(85, &[]), &["kvm_intel".into()]), Ok(()));
        assert_eq!(
            judge(failed(85, &[]), &["kvm_amd".into(), "kvm_pvm".into()]),
            Ok(())
        );
    }

    #[test]
    fn a_guest_that_ran_under_kvm_pvm_alone_is_not_usable_kvm() {
        // This machine on host kernel 6.18.44 (2026-12-06): the trial's
        // guest ran, and a real kernel printed nothing in 20 s.
        let err = judge(failed(85, &[]), &["kvm_pvm".into()]).unwrap_err();
        assert_eq!(
            err,
            KvmUnfit::NoHardware {
                modules: vec!["kvm_pvm".into()]
            }
        );
        let text = err.to_string();
        assert!(
            text.contains("neither kvm_intel nor kvm_amd is loaded; KVM modules loaded: kvm_pvm"),
            "{text}"
        );
        let none = judge(failed(85, &[]), &[]).unwrap_err().to_string();
        assert!(none.contains("no KVM module is loaded"), "{none}");
    }

    #[test]
    fn permission_denied_on_dev_kvm_names_the_fix() {
        let err = judge(
            failed(
                1,
                &[
                    "Could not access KVM kernel module: Permission denied",
                    "qemu-system-x86_64: -accel kvm: failed to initialize kvm: Permission denied",
                ],
            ),
            &["kvm_intel".into()],
        )
        .unwrap_err();
        assert_eq!(
            err,
            KvmUnfit::DevKvm {
                why: "Permission denied".into()
            }
        );
        let text = err.to_string();
        assert!(text.contains("usermod -aG kvm"), "{text}");
        assert!(text.contains(super::UDEV_RULE), "{text}");
    }

    #[test]
    fn a_vm_that_cannot_be_created_is_named() {
        let err = judge(
            failed(
                1,
                &[
                    "ioctl(KVM_CREATE_VM) failed: 16 Device or resource busy",
                    "qemu-system-x86_64: -accel kvm: failed to initialize kvm: Device or resource busy",
                ],
            ),
            &["kvm_intel".into()],
        )
        .unwrap_err();
        assert!(matches!(err, KvmUnfit::CreateVm { .. }), "{err:?}");
        assert!(
            err.to_string()
                .contains("ioctl(KVM_CREATE_VM) failed: 16 Device or resource busy"),
            "{err}"
        );
    }

    #[test]
    fn an_abort_before_the_guest_ran_keeps_qemus_words_and_the_modules() {
        // This machine, 2026-12-06 (kvm_pvm, QEMU 7.2, -cpu host).
        let end = Err(ProcessError::Failed {
            command: "qemu-system-x86_64 ...".into(),
            status: ExitStatus::from_raw(6),
            tail: vec!["qemu-system-x86_64: error: failed to set MSR 0x10a to 0x69".into()],
            log: None,
        });
        let err = judge(end, &["kvm_pvm".into()]).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, KvmUnfit::Run { .. }), "{err:?}");
        assert!(text.contains("-cpu host"), "{text}");
        assert!(text.contains("failed to set MSR 0x10a"), "{text}");
        assert!(text.contains("kvm_pvm"), "{text}");
        assert!(text.contains("signal: 6"), "{text}");
    }

    #[test]
    fn a_hang_is_a_cause_of_its_own() {
        let end = Err(ProcessError::Timeout {
            command: "qemu-system-x86_64 ...".into(),
            after: DEADLINE,
            tail: vec![],
            log: None,
        });
        let err = judge(end, &[]).unwrap_err();
        assert!(err.to_string().contains("within 15s"), "{err}");
    }

    #[test]
    fn a_missing_qemu_is_not_a_kvm_verdict() {
        let end = Err(ProcessError::NotFound {
            program: "qemu-system-x86_64".into(),
        });
        assert!(matches!(judge(end, &[]), Err(KvmUnfit::Qemu { .. })));
    }
}
