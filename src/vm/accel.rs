//! Accelerator detection: KVM only where it really works, TCG otherwise.
//!
//! `/dev/kvm` existing proves little: on some hosts (this project's CI among
//! them) the loaded module is `kvm_pvm`, `/dev/kvm` opens, and a normal guest
//! hangs after "Booting from ROM". KVM counts as usable only when `/dev/kvm`
//! opens read-write *and* a hardware module (`kvm_intel` or `kvm_amd`) is
//! loaded. The boot watchdog in `vm::boot` catches the rest.

use std::fmt;
use std::path::Path;

use crate::config::AccelChoice;

/// The accelerator a boot uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    Kvm,
    Tcg,
}

impl fmt::Display for Accel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        })
    }
}

/// What the host looks like, as far as KVM goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvmProbe {
    /// `Ok` if `/dev/kvm` opened read-write, else why not.
    pub dev_kvm: Result<(), String>,
    /// Loaded modules among `kvm_intel`, `kvm_amd`, `kvm_pvm`.
    pub modules: Vec<String>,
}

const HARDWARE_MODULES: [&str; 2] = ["kvm_intel", "kvm_amd"];

/// Look at this host.
pub fn probe() -> KvmProbe {
    probe_at(Path::new("/dev/kvm"), Path::new("/sys/module"))
}

pub fn probe_at(dev_kvm: &Path, sys_module: &Path) -> KvmProbe {
    let dev = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dev_kvm)
        .map(|_| ())
        .map_err(|e| format!("{} cannot be opened read-write: {e}", dev_kvm.display()));
    let modules = ["kvm_intel", "kvm_amd", "kvm_pvm"]
        .into_iter()
        .filter(|m| sys_module.join(m).exists())
        .map(String::from)
        .collect();
    KvmProbe {
        dev_kvm: dev,
        modules,
    }
}

impl KvmProbe {
    /// `Ok` when KVM is usable, else the reason it is not.
    pub fn usable(&self) -> Result<(), String> {
        self.dev_kvm.clone()?;
        if self
            .modules
            .iter()
            .any(|m| HARDWARE_MODULES.contains(&m.as_str()))
        {
            return Ok(());
        }
        let found = if self.modules.is_empty() {
            "none".to_string()
        } else {
            self.modules.join(", ")
        };
        Err(format!(
            "/dev/kvm opens, but no hardware KVM module (kvm_intel or kvm_amd) is loaded (found: {found}); a normal guest would hang"
        ))
    }
}

/// The chosen accelerator and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub accel: Accel,
    pub reason: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "--accel kvm was requested but KVM is not usable here: {reason}; use --accel tcg or --accel auto"
)]
pub struct KvmUnusable {
    pub reason: String,
}

/// Choose the accelerator for a campaign.
pub fn decide(choice: AccelChoice, probe: &KvmProbe) -> Result<Decision, KvmUnusable> {
    match (choice, probe.usable()) {
        (AccelChoice::Tcg, _) => Ok(Decision {
            accel: Accel::Tcg,
            reason: "TCG was requested".into(),
        }),
        (AccelChoice::Kvm | AccelChoice::Auto, Ok(())) => Ok(Decision {
            accel: Accel::Kvm,
            reason: "KVM is usable".into(),
        }),
        (AccelChoice::Kvm, Err(reason)) => Err(KvmUnusable { reason }),
        (AccelChoice::Auto, Err(reason)) => Ok(Decision {
            accel: Accel::Tcg,
            reason: format!("fell back to TCG (software emulation): {reason}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(dev: bool, modules: &[&str]) -> KvmProbe {
        KvmProbe {
            dev_kvm: if dev {
                Ok(())
            } else {
                Err("/dev/kvm: No such file".into())
            },
            modules: modules.iter().map(|m| m.to_string()).collect(),
        }
    }

    #[test]
    fn decisions_follow_the_probe() {
        use AccelChoice::*;
        let table = [
            (Auto, probe(true, &["kvm_intel"]), Some(Accel::Kvm)),
            (Auto, probe(true, &["kvm_amd"]), Some(Accel::Kvm)),
            (Auto, probe(true, &["kvm_pvm"]), Some(Accel::Tcg)),
            (Auto, probe(false, &["kvm_intel"]), Some(Accel::Tcg)),
            (Kvm, probe(true, &["kvm_intel"]), Some(Accel::Kvm)),
            (Kvm, probe(true, &["kvm_pvm"]), None),
            (Kvm, probe(false, &[]), None),
            (Tcg, probe(true, &["kvm_intel"]), Some(Accel::Tcg)),
        ];
        for (choice, p, want) in table {
            let got = decide(choice, &p).ok().map(|d| d.accel);
            assert_eq!(got, want, "{choice:?} with {p:?}");
        }
    }

    #[test]
    fn the_pvm_host_is_explained() {
        let err = decide(AccelChoice::Kvm, &probe(true, &["kvm_pvm"])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--accel kvm was requested but KVM is not usable here: /dev/kvm opens, but no hardware KVM module (kvm_intel or kvm_amd) is loaded (found: kvm_pvm); a normal guest would hang; use --accel tcg or --accel auto"
        );
        let auto = decide(AccelChoice::Auto, &probe(true, &["kvm_pvm"])).unwrap();
        assert!(
            auto.reason.starts_with("fell back to TCG"),
            "{}",
            auto.reason
        );
    }

    #[test]
    fn probing_a_fake_sysfs_finds_modules() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("kvm_amd")).unwrap();
        let p = probe_at(&dir.path().join("no-kvm"), dir.path());
        assert_eq!(p.modules, ["kvm_amd"]);
        assert!(p.dev_kvm.is_err());
    }
}
