//! A kernel build's staged root in guest memory. The host wrote every file
//! a sample's build reads (toolchain and tree, under their host paths)
//! into an archive beside the prepared build directory
//! ([`patchbench_agent::kbuild_stage_archive`]) and appended it to the
//! boot's initramfs, so the kernel unpacked it at [`STAGED`] before the
//! agent started. Each sample runs in a [`Root`]: a fresh tmpfs overlay
//! over that root with the guest's `/proc`, `/sys` and `/dev` bound in,
//! chrooted into. Nothing of the build crosses from the host while the
//! guest runs, so nothing the host's speed decides comes before a window.
//!
//! Memory: the root's pages are the initramfs's (the root cgroup's) and
//! are not page cache: they are not dropped by `drop_caches`, and are
//! reclaimed only by swapping. The build's cgroup holds what it writes
//! (objects, gcc's temporary files) and its processes' memory, not the
//! compiler, sources and headers it reads.

use std::path::{Path, PathBuf};

use crate::error::{Context, Result};
use crate::hostroot;
use crate::sys;

/// Where the kernel unpacked the staged root.
pub const STAGED: &str = patchbench_agent::KBUILD_STAGE_GUEST;

/// Checks that the boot's initramfs brought the staged root of the build
/// directory `build` (a host path).
pub fn check_present(build: &str) -> Result<()> {
    let prepared = hostroot::under(STAGED, build);
    if !prepared.is_dir() {
        crate::error::bail!(
            "the initramfs holds no staged root for {build} (no {}): the host appends {} to \
             every boot of a kernel build",
            prepared.display(),
            patchbench_agent::kbuild_stage_archive(build)
        );
    }
    Ok(())
}

/// One sample's root: a fresh tmpfs at `rw` as the upper layer of an
/// overlay over [`STAGED`] at `path`, with the guest's `/proc`, `/sys`
/// and `/dev` bound in. Dropping it unmounts all of it.
pub struct Root {
    pub path: PathBuf,
    rw: PathBuf,
}

impl Root {
    pub fn mount(rw: &Path, path: &Path) -> Result<Root> {
        hostroot::overlay(Path::new(STAGED), rw, path)?;
        let root = Root {
            path: path.to_owned(),
            rw: rw.to_owned(),
        };
        hostroot::bind_guest_dirs(path)?;
        Ok(root)
    }

    /// Unmounts the root (its bound directories with it), then its tmpfs.
    pub fn unmount(self) -> Result<()> {
        let (path, rw) = (self.path.clone(), self.rw.clone());
        std::mem::forget(self);
        sys::umount_detach(&path).with_context(|| format!("unmounting {}", path.display()))?;
        sys::umount_detach(&rw).with_context(|| format!("unmounting {}", rw.display()))
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        let _ = sys::umount_detach(&self.path);
        let _ = sys::umount_detach(&self.rw);
    }
}
