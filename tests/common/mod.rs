//! Helpers shared by the real end-to-end test binaries.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The cache the binary under test uses: `$PATCHBENCH_CACHE`, else the
/// CLI's own default (XDG cache, then `~/.cache/patchbench`).
pub fn cache_dir() -> PathBuf {
    std::env::var_os("PATCHBENCH_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(patchbench::cli::default_cache_dir)
}

/// Fail, naming the package, when the host lacks what a real run needs.
pub fn require_host_tools() {
    for (path, package) in [
        ("/usr/src/linux-source-6.12.tar.xz", "linux-source-6.12"),
        ("/usr/bin/qemu-system-x86_64", "qemu-system-x86"),
        ("/bin/busybox", "busybox-static"),
    ] {
        assert!(
            Path::new(path).exists(),
            "{path} is missing: run ci/setup-host.sh (Debian package {package})"
        );
    }
}

/// `patchbench run CAMPAIGN --out OUT` with the test cache, through the
/// real binary; fails the test unless it exits 0, and returns the results.
#[allow(dead_code)] // not every test binary runs campaigns this way
pub fn run_campaign(campaign: &Path, out: &Path) -> patchbench::results::Results {
    let output = Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .arg("run")
        .arg(campaign)
        .arg("--out")
        .arg(out)
        .arg("--cache-dir")
        .arg(cache_dir())
        .env("PATCHBENCH_AGENT", patchbench::find_agent().unwrap())
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "patchbench run failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    patchbench::results::Results::load(&out.join("results.json")).unwrap()
}
