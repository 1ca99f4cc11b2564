//! Helpers shared by the real end-to-end test binaries.

use std::path::{Path, PathBuf};

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
