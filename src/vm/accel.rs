//! Accelerator detection: KVM only where a guest has run under it on a
//! hardware KVM module, TCG otherwise.
//!
//! `/dev/kvm` opening proves little: VT-x held by another hypervisor, a
//! seccomp filter, broken nested virtualization, or this project's own
//! machine (module `kvm_pvm`, where a normal guest hangs) all open it. So
//! the probe runs a guest: [`trial`] starts QEMU for a moment with the
//! boots' own KVM arguments, before the first build, and KVM counts as
//! usable only if that guest ran and `kvm_intel` or `kvm_amd` is loaded.
//! Every failure comes back as a [`KvmUnfit`] that names its cause and,
//! for `/dev/kvm` itself, the fix.

pub mod trial;

pub use crate::model::Accel;

pub use trial::{ENV_SYS_MODULE, KvmUnfit, UDEV_RULE, loaded_modules};

/// What the host does with a KVM guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvmProbe {
    /// `Ok` when the trial's guest ran under KVM.
    pub outcome: Result<(), KvmUnfit>,
}

/// Try KVM on this host: QEMU on `PATH` runs the trial guest
/// ([`trial::run`]), under [`trial::DEADLINE`].
pub async fn probe() -> KvmProbe {
    KvmProbe {
        outcome: trial::run("qemu-system-x86_64", trial::DEADLINE).await,
    }
}

/// The probe a campaign needs: none when it asked for plain TCG (the
/// decision cannot depend on it), else [`probe`].
pub async fn probe_unless_tcg(tcg_requested: bool) -> KvmProbe {
    if tcg_requested {
        KvmProbe {
            outcome: Err(KvmUnfit::NotTried),
        }
    } else {
        probe().await
    }
}

impl KvmProbe {
    /// `Ok` when KVM is usable, else why it is not.
    pub fn usable(&self) -> Result<(), KvmUnfit> {
        self.outcome.clone()
    }
}

/// KVM asked for (`vm.accel: kvm`, `--accel kvm`) on a host where it
/// cannot run a guest.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "KVM was requested (vm.accel: kvm or --accel kvm), but it cannot run a guest on this host (accel tcg or auto runs under TCG)"
)]
pub struct KvmUnusable {
    #[source]
    pub cause: KvmUnfit,
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::model::lane::{Decision, LaneError, LaneRequest, decide as decide_lane};
    use crate::model::{AccelChoice, CostModel, Lane};

    /// The lane decision on the host's clock (no icount, no plugin), whose
    /// accelerator is the probe's.
    fn decide(choice: AccelChoice, p: &KvmProbe) -> Result<Decision, KvmUnusable> {
        let request = LaneRequest {
            accel: choice,
            icount: false,
            cost_model: CostModel::None,
        };
        decide_lane(request, p.usable()).map_err(|e| match e {
            LaneError::KvmUnusable(cause) => KvmUnusable { cause },
            LaneError::Refused(r) => panic!("{r}"),
        })
    }

    fn ran() -> KvmProbe {
        KvmProbe { outcome: Ok(()) }
    }

    fn unfit(cause: KvmUnfit) -> KvmProbe {
        KvmProbe {
            outcome: Err(cause),
        }
    }

    fn denied() -> KvmUnfit {
        KvmUnfit::DevKvm {
            why: "Permission denied".into(),
        }
    }

    fn no_vm() -> KvmUnfit {
        KvmUnfit::CreateVm {
            why: "ioctl(KVM_CREATE_VM) failed: 16 Device or resource busy".into(),
        }
    }

    #[test]
    fn decisions_follow_the_probe() {
        use AccelChoice::*;
        let table = [
            (Auto, ran(), Some(Accel::Kvm)),
            (Auto, unfit(denied()), Some(Accel::Tcg)),
            (Auto, unfit(no_vm()), Some(Accel::Tcg)),
            (Kvm, ran(), Some(Accel::Kvm)),
            (Kvm, unfit(denied()), None),
            (Kvm, unfit(no_vm()), None),
            (Tcg, ran(), Some(Accel::Tcg)),
            (Tcg, unfit(KvmUnfit::NotTried), Some(Accel::Tcg)),
        ];
        for (choice, p, want) in table {
            let got = decide(choice, &p).ok().map(|d| d.lane.accel());
            assert_eq!(got, want, "{choice:?} with {p:?}");
        }
    }

    #[test]
    fn kvm_requested_and_unfit_carries_the_cause() {
        let err = decide(AccelChoice::Kvm, &unfit(no_vm())).unwrap_err();
        assert_eq!(err.cause, no_vm());
        let chain = format!("{:#}", anyhow::Error::from(err));
        assert!(
            chain.contains("cannot run a guest on this host")
                && chain.contains("ioctl(KVM_CREATE_VM) failed: 16 Device or resource busy"),
            "{chain}"
        );
    }

    #[test]
    fn auto_falls_back_to_tcg_and_says_why() {
        let auto = decide(AccelChoice::Auto, &unfit(denied())).unwrap();
        assert_eq!(auto.lane, Lane::Tcg);
        assert!(
            auto.reason.starts_with("fell back to TCG")
                && auto
                    .reason
                    .contains("cannot open /dev/kvm (Permission denied)")
                && auto.reason.contains("usermod -aG kvm"),
            "{}",
            auto.reason
        );
    }

    #[test]
    fn a_missing_dev_kvm_is_told_apart_from_a_closed_one() {
        let missing = KvmUnfit::DevKvm {
            why: "No such file or directory".into(),
        }
        .to_string();
        assert!(missing.contains("this host has no KVM"), "{missing}");
        assert!(!missing.contains("usermod"), "{missing}");
        let closed = denied().to_string();
        assert!(
            closed.contains("usermod -aG kvm") && closed.contains(UDEV_RULE),
            "{closed}"
        );
    }

    #[test]
    fn probing_a_fake_sysfs_finds_modules() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("kvm_amd")).unwrap();
        std::fs::create_dir(dir.path().join("kvm_pvm")).unwrap();
        assert_eq!(loaded_modules(dir.path()), ["kvm_amd", "kvm_pvm"]);
    }

    #[tokio::test]
    async fn plain_tcg_never_starts_qemu() {
        // Were QEMU started, this host would answer with a cause of its
        // own (the trial aborts here), not NotTried.
        assert_eq!(
            probe_unless_tcg(true).await.outcome,
            Err(KvmUnfit::NotTried)
        );
    }
}
