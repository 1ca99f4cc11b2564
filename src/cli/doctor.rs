//! `patchbench doctor`: is this host ready? One line per requirement, what
//! is wrong, and the command that fixes it. The cost lane's needs (a QEMU
//! that loads the plugin's API version, the plugin built) are optional.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::build::toolchain;
use crate::vm::accel;

/// One requirement and how the host meets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub what: &'static str,
    /// `Ok(detail)` or `Err(what is wrong and how to fix it)`.
    pub result: Result<String, String>,
    /// A failure that does not stop a run (it only makes it slower).
    pub optional: bool,
}

fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

fn program(what: &'static str, program: &str, package: &str, optional: bool) -> Check {
    Check {
        what,
        result: on_path(program)
            .map(|p| p.display().to_string())
            .ok_or_else(|| format!("`{program}` is not on PATH: apt-get install {package}")),
        optional,
    }
}

/// Whether QEMU can export a host directory over virtio-9p (host-root mode).
async fn ninep_check() -> Check {
    // QEMU lists its devices and exits in well under a second; 30 s allows
    // for a cold start on a loaded host.
    let cmd = crate::process::Cmd::new("qemu-system-x86_64", Duration::from_secs(30))
        .args(["-device", "help"]);
    Check {
        what: "host-root mode",
        // Only the kernel-build workload and `boot --host-root` need it.
        result: match crate::process::run(&cmd).await {
            Ok(out) if out.stdout.contains("\"virtio-9p-pci\"") => {
                Ok("QEMU has virtio-9p (kernel-build, boot --host-root)".into())
            }
            Ok(_) => Err(
                "this QEMU has no virtio-9p-pci device, so kernel-build and boot --host-root cannot run: install Debian's qemu-system-x86".into(),
            ),
            Err(e) => Err(format!("cannot list QEMU's devices: {e}")),
        },
        optional: true,
    }
}

/// Whether QEMU can load the cost-model plugin: plugin support, and an API
/// version range that includes the plugin's.
fn plugin_api_check() -> Check {
    use crate::cost::api;
    let needed = patchbench_costmodel::PLUGIN_API_VERSION;
    Check {
        what: "QEMU plugin API",
        // Only the cost lane (`boot --cost-model`) needs it.
        result: match api::qemu_on_path() {
            None => {
                Err("`qemu-system-x86_64` is not on PATH: apt-get install qemu-system-x86".into())
            }
            Some(qemu) => api::qemu_api(&qemu)
                .and_then(|found| api::check(&qemu, found, needed))
                .map(|range| {
                    format!(
                        "TCG plugins, API {range}: the cost-model plugin (version {needed}) loads"
                    )
                })
                .map_err(|e| e.to_string()),
        },
        optional: true,
    }
}

/// Whether the cost-model plugin is built where patchbench looks for it.
fn plugin_built_check() -> Check {
    Check {
        what: "cost-model plugin",
        result: crate::cost::find_plugin()
            .map(|p| p.display().to_string())
            .map_err(|e| e.to_string()),
        optional: true,
    }
}

/// Whether KVM runs a guest here (the probe `run --accel auto` acts on:
/// QEMU started for a moment with the boots' KVM arguments). Its message
/// carries the fix for `/dev/kvm`: the kvm group, or the udev rule.
fn kvm_check(probe: &accel::KvmProbe) -> Check {
    Check {
        what: "KVM",
        // Not required: without it every boot runs under TCG, and says so.
        result: probe
            .usable()
            .map(|()| "usable: a guest ran under KVM; boots use it".to_string())
            .map_err(|why| {
                format!("not usable, boots will use TCG (slower, emulated times): {why}")
            }),
        optional: true,
    }
}

/// Every check, in the order the pipeline needs them.
pub async fn checks(cache_dir: &Path) -> Vec<Check> {
    let mut checks = vec![program(
        "QEMU",
        "qemu-system-x86_64",
        "qemu-system-x86",
        false,
    )];
    checks.push(ninep_check().await);
    checks.push(plugin_api_check());
    checks.push(plugin_built_check());
    checks.push(kvm_check(&accel::probe().await));
    let missing = toolchain::missing();
    checks.push(Check {
        what: "kernel toolchain",
        result: if missing.is_empty() {
            Ok("make, gcc, binutils, flex, bison, bc, perl, libelf headers".into())
        } else {
            Err(toolchain::describe_missing(&missing))
        },
        optional: false,
    });
    checks.push(program("ccache", "ccache", "ccache", true));
    let busybox = Path::new("/bin/busybox");
    checks.push(Check {
        what: "static busybox",
        result: match lddtree::DependencyAnalyzer::default().analyze(busybox) {
            Ok(tree) if tree.interpreter.is_none() && tree.needed.is_empty() => {
                Ok(busybox.display().to_string())
            }
            Ok(_) => Err(format!(
                "{} is dynamically linked: apt-get install busybox-static",
                busybox.display()
            )),
            Err(_) => Err(format!(
                "{} is missing: apt-get install busybox-static",
                busybox.display()
            )),
        },
        optional: false,
    });
    let source = Path::new("/usr/src/linux-source-6.12.tar.xz");
    checks.push(Check {
        what: "kernel source",
        // Only the default campaigns need it; --tree can name any tree.
        result: if source.is_file() {
            Ok(source.display().to_string())
        } else {
            Err(format!(
                "{} is missing (the default campaigns use it): apt-get install linux-source-6.12",
                source.display()
            ))
        },
        optional: true,
    });
    let dir = toolchain::existing_ancestor(cache_dir);
    checks.push(Check {
        what: "disk space",
        result: match toolchain::free_space(&dir) {
            Ok(free) if free >= toolchain::MIN_FREE => {
                Ok(format!("{free} free under {}", dir.display()))
            }
            Ok(free) => Err(format!(
                "only {free} free under {}; a build needs {}",
                dir.display(),
                toolchain::MIN_FREE
            )),
            Err(e) => Err(format!("cannot read free space of {}: {e}", dir.display())),
        },
        optional: false,
    });
    checks
}

/// The report, and whether the host can run a campaign.
pub fn render(checks: &[Check]) -> (String, bool) {
    let mut out = String::new();
    let mut ready = true;
    for c in checks {
        let (mark, detail) = match &c.result {
            Ok(d) => ("ok  ", d.as_str()),
            Err(e) if c.optional => ("warn", e.as_str()),
            Err(e) => {
                ready = false;
                ("FAIL", e.as_str())
            }
        };
        out.push_str(&format!("{mark} {:<17} {detail}\n", c.what));
    }
    out.push_str(if ready {
        "ready: this host can build, boot and measure\n"
    } else {
        "not ready: fix the FAIL lines (ci/setup-host.sh installs everything)\n"
    });
    (out, ready)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_required_failures_make_the_host_unready() {
        let check = |what, result: Result<&str, &str>, optional| Check {
            what,
            result: result.map(String::from).map_err(String::from),
            optional,
        };
        let (text, ready) = render(&[
            check("QEMU", Ok("/usr/bin/qemu-system-x86_64"), false),
            check("KVM", Err("not usable: kvm_pvm"), true),
        ]);
        assert!(ready, "{text}");
        assert!(text.contains("warn KVM"), "{text}");
        let (text, ready) = render(&[check("QEMU", Err("apt-get install qemu-system-x86"), false)]);
        assert!(!ready);
        assert!(text.contains("FAIL QEMU") && text.contains("apt-get install qemu-system-x86"));
    }

    #[tokio::test]
    async fn this_host_is_checked_for_real() {
        let checks = checks(Path::new("/tmp")).await;
        let names: Vec<_> = checks.iter().map(|c| c.what).collect();
        assert_eq!(
            names,
            [
                "QEMU",
                "host-root mode",
                "QEMU plugin API",
                "cost-model plugin",
                "KVM",
                "kernel toolchain",
                "ccache",
                "static busybox",
                "kernel source",
                "disk space"
            ]
        );
        // The probe's verdict is the one `run --accel auto` acts on.
        let kvm = &checks[4];
        // QEMU is installed here (ci/setup-host.sh), with virtio-9p, and
        // Debian 12's QEMU 7.2 loads plugins of API version 1.
        assert!(checks[1].result.is_ok(), "{:?}", checks[1]);
        assert!(checks[2].result.is_ok(), "{:?}", checks[2]);
        assert_eq!(kvm.result.is_ok(), accel::probe().await.usable().is_ok());
    }

    #[test]
    fn a_closed_dev_kvm_is_shown_with_its_fix() {
        let check = kvm_check(&accel::KvmProbe {
            outcome: Err(accel::KvmUnfit::DevKvm {
                why: "Permission denied".into(),
            }),
        });
        let (text, ready) = render(&[check]);
        assert!(ready, "KVM is optional: {text}");
        assert!(
            text.contains("warn KVM")
                && text.contains("sudo usermod -aG kvm")
                && text.contains(accel::UDEV_RULE)
                && text.contains("udevadm trigger --name-match=kvm"),
            "{text}"
        );
    }
}
