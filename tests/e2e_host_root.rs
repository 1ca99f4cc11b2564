//! End-to-end tests of host-root mode and the kernel-build workload, through
//! the real binary and real QEMU boots. They never skip: on a host without
//! QEMU or the kernel source they fail, naming what is missing
//! (`ci/setup-host.sh` installs it).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use patchbench::results::Results;

mod common;
use common::{require_host_tools, run_campaign};

/// One campaign at a time: they share the cached tree and build directories.
static SERIAL: Mutex<()> = Mutex::new(());

fn patchbench() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_patchbench"));
    cmd.env("PATCHBENCH_AGENT", patchbench::find_agent().unwrap());
    cmd
}

/// A kernel of the build cache: the one `ci/workloads/kernel-build.yaml`
/// boots as A (built or reused by the kernel-build test's campaign).
fn kernel_a(results: &Results) -> PathBuf {
    common::cache_dir().join(&results.variants[0].kernel.bzimage)
}

fn campaign(dir: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut text = std::fs::read_to_string(root.join("ci/workloads/kernel-build.yaml"))
        .unwrap()
        .replace("../../", &format!("{}/", root.display()));
    let edits = [
        // This test checks what the workload does, not its timings: MTTCG
        // runs the guest's two compilers at once, where the single-threaded
        // default (docs/tcg-noise.md) takes turns and about twice the host
        // time.
        ("  accel: auto\n", "  accel: auto\n  tcg_threads: multi\n"),
        // Two samples a boot, so the second shows it starts where the first
        // did; A and B once each, so the test boots no more than the file.
        (
            "  order: ABA\n  warmups: 0\n  samples: 1\n",
            "  order: ABAB\n  boots_per_variant: 1\n  warmups: 0\n  samples: 2\n",
        ),
    ];
    for (from, to) in edits {
        assert!(
            text.contains(from),
            "ci/workloads/kernel-build.yaml changed shape ({from:?} is gone); update this test"
        );
        text = text.replace(from, to);
    }
    let path = dir.join("campaign.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The guest compiles two objects with the host's gcc, from the staged copy
/// its initramfs brought, in a cgroup below the compilers' peak: every sample gives
/// real times and swaps into zswap (the second of a boot as the first),
/// its window reads nothing over 9p (the agent refuses a sample that did),
/// and the host's prepared tree is left as it was (the objects are not in
/// it).
#[test]
fn the_kernel_build_workload_compiles_in_the_guest_under_memory_pressure() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    require_host_tools();
    let dir = tempfile::tempdir().unwrap();
    let results = run_campaign(&campaign(dir.path()), &dir.path().join("out"));
    assert_eq!(results.workload.kind, "kernel-build");
    let param = |name: &str| results.workload.params[name].clone();
    let (build, targets) = (param("build"), param("targets"));
    // Recorded relative to the build cache: no path of one machine.
    assert!(build.starts_with("kbuild/"), "{build}");
    let build = common::cache_dir().join(build);
    let targets: Vec<&str> = targets.split(' ').collect();
    let limit = param("memory_max")
        .parse::<bytesize::ByteSize>()
        .unwrap_or_else(|e| panic!("the campaign sets memory_max: {e}"))
        .as_u64();
    assert_eq!(results.boots.len(), 2);
    for boot in &results.boots {
        assert!(boot.complete, "boot {}", boot.label);
        assert_eq!(boot.samples.len(), 2, "boot {}", boot.label);
        for sample in &boot.samples {
            let get = |name: &str| sample.metrics[name];
            assert!(get("real_ns") > 1_000_000_000, "{}: {sample:?}", boot.label);
            assert!(get("user_ns") > 1_000_000_000, "{}: {sample:?}", boot.label);
            // Pressure, not a stray page: 4 MiB of the build went to zswap.
            assert!(
                get("zswpout") >= 1024,
                "{}: the build did not swap: {sample:?}",
                boot.label
            );
            assert!(get("pgfault") > 0, "{}: {sample:?}", boot.label);
            // memory.peak never exceeds memory.max by more than the charge batch.
            assert!(
                get("peak_bytes") <= limit + (1 << 20),
                "{}: {sample:?}",
                boot.label
            );
        }
    }
    for target in targets {
        let path = build.join(target);
        assert!(!path.exists(), "{} was written on the host", path.display());
    }
    assert!(build.join("patchbench-kbuild.json").is_file());
    // The staged root beside it: the toolchain and the tree's files, each
    // at its host path.
    let stage = PathBuf::from(format!("{}.stage", build.display()));
    assert!(stage.join(".patchbench-staged").is_file());
    assert!(stage.join("usr/bin/make").is_file());
    assert!(
        stage
            .join(build.strip_prefix("/").unwrap())
            .join("patchbench-targets.mk")
            .is_file()
    );
    // And its archive rode in every boot's initramfs, after the boot's
    // own: the guest had the build's files without 9p.
    let archive = std::fs::read(format!("{}.stage.cpio", build.display())).unwrap();
    assert!(archive.len() > 1 << 20, "{} bytes", archive.len());
    for entry in std::fs::read_dir(dir.path().join("out/boots")).unwrap() {
        let initrd = std::fs::read(entry.unwrap().path().join("initramfs.cpio")).unwrap();
        assert!(initrd.len() > archive.len() && initrd.ends_with(&archive));
    }

    // Host-root mode for a command: the host's own programs run, and what
    // the guest writes stays in the guest.
    let probe = dir.path().join("written-by-the-guest");
    let output = patchbench()
        .arg("boot")
        .arg("--host-root")
        .arg(kernel_a(&results))
        .arg("--")
        .arg("sh")
        .arg("-c")
        .arg(format!(
            "gcc --version && echo guest > {0} && cat {0}",
            probe.display()
        ))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("in the host root"), "{stdout}");
    assert!(stdout.contains("gcc ("), "{stdout}");
    assert!(stdout.contains("\nguest"), "{stdout}");
    assert!(!probe.exists(), "the guest wrote to the host's file system");
}

/// A timed window that reads the host over 9p is refused: the guest-fault
/// workload reads a host file inside a window watched as a kernel build's
/// is, on the kernel-build campaign's kernels, and the run fails as the
/// guest's (exit 5), saying so.
#[test]
fn a_window_that_did_host_io_is_refused() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    require_host_tools();
    let dir = tempfile::tempdir().unwrap();
    let campaign = campaign(dir.path());
    let text = std::fs::read_to_string(&campaign).unwrap();
    let start = text.find("workload:\n").unwrap();
    let end = text.find("protocol:\n").unwrap();
    let text = format!(
        "{}workload:\n  kind: guest-fault\n  fault: host-io\n{}",
        &text[..start],
        &text[end..]
    );
    std::fs::write(&campaign, text).unwrap();
    let output = patchbench()
        .arg("run")
        .arg(&campaign)
        .arg("--out")
        .arg(dir.path().join("out"))
        .arg("--cache-dir")
        .arg(common::cache_dir())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(5), "{stderr}");
    assert!(
        stderr.contains("guest-fault host-io's window did host I/O: ")
            && stderr.contains("interrupt(s) of the 9p device virtio")
            && stderr.contains("the sample is refused"),
        "{stderr}"
    );
}
