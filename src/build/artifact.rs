//! A built kernel's manifest: what the build cache stamps on a finished
//! build directory, below everything else of the build module (the cache's
//! listing reads it too).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::objects;

/// The file in a build directory that records a finished build.
pub const STAMP: &str = "patchbench-build.json";

/// make's output in a build directory: the configuration's, then the
/// build's. A cache entry keeps its build's.
pub const BUILD_LOG: &str = "build.log";

/// A built kernel and how it came to be: the artifact manifest, kept as
/// `patchbench-build.json` in its cache entry and in `results.json`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KernelArtifact {
    pub commit: String,
    pub build_dir: PathBuf,
    pub bzimage: PathBuf,
    pub bzimage_sha256: String,
    /// The uncompressed kernel, when its configuration has a PVH entry point
    /// (CONFIG_PVH): QEMU then starts it directly, which skips the bzImage
    /// decompressor (about 2.6 s of a 6 s boot under TCG here). Boots use
    /// [`KernelArtifact::boot_image`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vmlinux: Option<Image>,
    pub config_sha256: String,
    /// Its CONFIG_HZ, so that a kernel booted away from its build
    /// (`run --kernels`) gets the same `lpj=` under icount
    /// (`vm::args::lpj_param`). Absent in manifests from before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hz: Option<u32>,
    pub compiler: String,
    pub key: String,
    /// The hash of the series applied on the base (absent for the base).
    #[serde(default)]
    pub series_sha256: Option<String>,
    /// Seconds spent in `make` (0 for a reused build).
    pub build_seconds: f64,
    /// Started from another build's objects rather than from nothing.
    pub incremental: bool,
    /// The cache key of the build it started from.
    #[serde(default)]
    pub started_from: Option<String>,
    /// Reused as it was, with no `make` run.
    pub reused: bool,
    /// Object files written by this build.
    pub objects_rebuilt: usize,
    /// For an incremental build, every object written and why.
    #[serde(default)]
    pub rebuilt: Vec<objects::Rebuilt>,
}

/// A file of a build and its sha256.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Image {
    pub path: PathBuf,
    pub sha256: String,
}

impl KernelArtifact {
    /// What QEMU boots: `vmlinux` through its PVH entry point when the
    /// kernel has one, else the bzImage.
    pub fn boot_image(&self) -> &Path {
        self.vmlinux.as_ref().map_or(&self.bzimage, |v| &v.path)
    }

    /// Objects an incremental build rewrote with no visible reason.
    pub fn unexpected_rebuilds(&self) -> impl Iterator<Item = &str> {
        self.rebuilt
            .iter()
            .filter(|r| r.reason == objects::Reason::Unexpected)
            .map(|r| r.object.as_str())
    }
}
