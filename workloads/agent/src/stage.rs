//! A kernel build's staged root in guest memory. The host wrote every file
//! a sample's build reads (toolchain and tree, under their host paths)
//! into a directory beside the prepared build directory
//! ([`patchbench_agent::kbuild_stage`]). Before the first sample, untimed,
//! [`load`] copies it over 9p into a tmpfs, and from then on each sample
//! runs in a [`Root`]: a fresh tmpfs overlay over that copy with the
//! guest's `/proc`, `/sys` and `/dev` bound in, chrooted into. No sample
//! reads the host.
//!
//! Memory: the copy's pages are the agent's (the root cgroup's) and are
//! not page cache: tmpfs pages are not dropped by `drop_caches` and are
//! reclaimed only by swapping. The build's cgroup holds what it writes
//! (objects, gcc's temporary files) and its processes' memory, no longer
//! the compiler, sources and headers it read.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::console;
use crate::error::{Context, Result};
use crate::hostroot;
use crate::setup::mount_on as mount;
use crate::sys;

/// Where the staged root is copied to.
pub const STAGED: &str = "/run/kbuild-stage";

/// What [`load`] copied.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Copied {
    pub files: u64,
    pub links: u64,
    pub bytes: u64,
}

/// Copies the staged root of the build directory `build` (a host path)
/// from the host root's 9p mount into a tmpfs at [`STAGED`].
pub fn load(build: &str) -> Result<Copied> {
    let host = hostroot::under(hostroot::LOWER, &patchbench_agent::kbuild_stage(build));
    if !host.is_dir() {
        crate::error::bail!(
            "the host staged no root for {build} (no {}): the host did not prepare it",
            host.display()
        );
    }
    let staged = Path::new(STAGED);
    mount(
        "tmpfs",
        staged,
        "tmpfs",
        libc::MS_NOSUID | libc::MS_NODEV,
        Some("mode=0755"),
    )?;
    let started = std::time::Instant::now();
    let mut copied = Copied::default();
    copy_tree(&host, staged, &mut copied)?;
    console::say(format!(
        "kernel-build: staged {} files, {} links, {} MiB into guest memory at {STAGED} in {:.1} s",
        copied.files,
        copied.links,
        copied.bytes >> 20,
        started.elapsed().as_secs_f64()
    ));
    Ok(copied)
}

/// Copies the tree at `from` into the existing directory `to`: files with
/// their mode and modification time (make compares times), directories
/// with their mode, symbolic links as links.
pub fn copy_tree(from: &Path, to: &Path, copied: &mut Copied) -> Result<()> {
    let entries = fs::read_dir(from).with_context(|| format!("reading {}", from.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("reading {}", from.display()))?;
        let (src, dest) = (entry.path(), to.join(entry.file_name()));
        let meta =
            fs::symlink_metadata(&src).with_context(|| format!("reading {}", src.display()))?;
        if meta.file_type().is_symlink() {
            let target =
                fs::read_link(&src).with_context(|| format!("reading {}", src.display()))?;
            std::os::unix::fs::symlink(&target, &dest)
                .with_context(|| format!("linking {}", dest.display()))?;
            copied.links += 1;
        } else if meta.is_dir() {
            fs::create_dir(&dest).with_context(|| format!("creating {}", dest.display()))?;
            copy_tree(&src, &dest, copied)?;
            fs::set_permissions(&dest, fs::Permissions::from_mode(meta.permissions().mode()))
                .with_context(|| format!("setting the mode of {}", dest.display()))?;
        } else if meta.is_file() {
            fs::copy(&src, &dest).with_context(|| format!("copying {}", src.display()))?;
            let modified = meta
                .modified()
                .with_context(|| format!("reading {}", src.display()))?;
            fs::File::options()
                .write(true)
                .open(&dest)
                .and_then(|f| f.set_modified(modified))
                .with_context(|| format!("setting the time of {}", dest.display()))?;
            copied.files += 1;
            copied.bytes += meta.len();
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_is_copied_with_its_links_modes_and_times() {
        use std::os::unix::fs::symlink;
        let from = tempfile::tempdir().unwrap();
        let f = from.path();
        fs::create_dir_all(f.join("usr/bin")).unwrap();
        fs::write(f.join("usr/bin/gcc-12"), b"gcc").unwrap();
        fs::set_permissions(f.join("usr/bin/gcc-12"), fs::Permissions::from_mode(0o755)).unwrap();
        symlink("gcc-12", f.join("usr/bin/gcc")).unwrap();
        symlink("usr/lib", f.join("lib")).unwrap();
        fs::create_dir(f.join("tmp")).unwrap();
        fs::set_permissions(f.join("tmp"), fs::Permissions::from_mode(0o1777)).unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        fs::File::options()
            .write(true)
            .open(f.join("usr/bin/gcc-12"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        let to = tempfile::tempdir().unwrap();
        let t = to.path();
        let mut copied = Copied::default();
        copy_tree(f, t, &mut copied).unwrap();
        assert_eq!(
            copied,
            Copied {
                files: 1,
                links: 2,
                bytes: 3
            }
        );
        let meta = fs::metadata(t.join("usr/bin/gcc")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o7777, 0o755);
        assert_eq!(meta.modified().unwrap(), old);
        assert_eq!(fs::read_link(t.join("lib")).unwrap(), Path::new("usr/lib"));
        assert_eq!(
            fs::metadata(t.join("tmp")).unwrap().permissions().mode() & 0o7777,
            0o1777
        );
    }
}
