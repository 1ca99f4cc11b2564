//! The fake QEMU's KVM trial (src/vm/accel/trial.rs): QEMU started with
//! `-bios` and the `isa-debug-exit` device to see whether a guest runs
//! under KVM. The arguments are checked, the firmware decoded, and the
//! host's KVM is what [`crate::ENV_KVM`] says it is, in QEMU's own words
//! (accel/kvm/kvm-all.c's `kvm_init`).

use std::path::PathBuf;

use crate::{Refused, refuse};

/// Whether `args` are a KVM trial's rather than a boot's.
pub fn is_trial(args: &[String]) -> bool {
    args.iter().any(|a| a == "-bios")
}

/// Check the trial's arguments and end as QEMU would on the host
/// [`crate::ENV_KVM`] describes: `runs` (the guest's `out` exits QEMU with
/// `(value << 1) | 1`), `denied` (/dev/kvm closed), `no-vm` (/dev/kvm
/// opens, KVM_CREATE_VM fails); unset, a host with no /dev/kvm.
pub fn main(args: &[String]) -> Result<(), Refused> {
    let (mut rom, mut port, mut accel, mut cpu) = (None, None, false, false);
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| Refused(format!("{flag} without its value")))
        };
        match flag.as_str() {
            "-nodefaults" | "-no-user-config" | "-no-reboot" => {}
            "-display" | "-machine" | "-m" | "-smp" => {
                let v = value()?;
                let want = match flag.as_str() {
                    "-display" => "none",
                    "-machine" => "q35",
                    "-m" => "16M",
                    _ => "1",
                };
                if v != want {
                    refuse!("KVM trial: {flag} {v} is not faked (only {want})");
                }
            }
            "-accel" => accel = value()? == "kvm",
            "-cpu" => cpu = value()? == "host",
            "-bios" => rom = Some(PathBuf::from(value()?)),
            "-device" => {
                let v = value()?;
                port = v
                    .strip_prefix("isa-debug-exit,iobase=0x")
                    .and_then(|rest| rest.strip_suffix(",iosize=0x04"))
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok());
                if port.is_none() {
                    refuse!("KVM trial: -device {v} is not faked");
                }
            }
            other => refuse!("KVM trial: does not understand the argument {other:?}"),
        }
    }
    if !(accel && cpu) {
        refuse!("a KVM trial runs the boots' `-accel kvm -cpu host`");
    }
    let (Some(rom), Some(port)) = (rom, port) else {
        refuse!("a KVM trial needs -bios and an isa-debug-exit device");
    };
    let bytes =
        std::fs::read(&rom).map_err(|e| Refused(format!("-bios {}: {e}", rom.display())))?;
    // `mov al, imm8; out imm8, al` at the reset vector, to the device's port.
    let value = match bytes.get(0xfff0..0xfff4) {
        Some(&[0xb0, value, 0xe6, out]) if bytes.len() == 65536 && out == port => value,
        _ => refuse!(
            "-bios {}: no `mov al; out {port:#x}, al` at the reset vector of a 64 KiB ROM",
            rom.display()
        ),
    };
    let host = std::env::var(crate::ENV_KVM).unwrap_or_default();
    crate::log(&format!(
        "kvm-trial {}",
        if host.is_empty() { "absent" } else { &host }
    ))?;
    let (stderr, code) = match host.as_str() {
        "runs" => exit((i32::from(value) << 1) | 1, &[]),
        "denied" => (
            errno_lines("Could not access KVM kernel module: ", "Permission denied"),
            1,
        ),
        "no-vm" => (
            vec![
                "ioctl(KVM_CREATE_VM) failed: 16 Device or resource busy".to_string(),
                "qemu-system-x86_64: -accel kvm: failed to initialize kvm: Device or resource busy"
                    .to_string(),
            ],
            1,
        ),
        "" => (
            errno_lines(
                "Could not access KVM kernel module: ",
                "No such file or directory",
            ),
            1,
        ),
        other => refuse!("{}={other}: runs, denied or no-vm", crate::ENV_KVM),
    };
    exit(code, &stderr)
}

fn errno_lines(lead: &str, error: &str) -> Vec<String> {
    vec![
        format!("{lead}{error}"),
        format!("qemu-system-x86_64: -accel kvm: failed to initialize kvm: {error}"),
    ]
}

fn exit(code: i32, stderr: &[String]) -> ! {
    for line in stderr {
        eprintln!("{line}");
    }
    std::process::exit(code)
}
