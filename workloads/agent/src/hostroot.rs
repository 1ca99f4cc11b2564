//! Host-root mode: the host's `/`, exported read-only by QEMU over 9p
//! (tag [`HOST_ROOT_TAG`]), becomes a writable root for host programs:
//!
//! - `/run/hostroot/lower`: the 9p mount, read-only (the host side is
//!   read-only too: QEMU's `readonly=on`);
//! - `/hostroot`: an overlay of a tmpfs over it, so the host's programs can
//!   write where they expect to (their writes stay in the guest's memory and
//!   vanish at power-off), with the guest's `/proc`, `/sys` and `/dev` bound
//!   in. The host's `/tmp` stays visible (a cache or tree may live there).
//!
//! Programs run there with [`command`]: `chroot("/hostroot")`, the host's
//! `PATH`, and optionally in a cgroup from their first instruction.

use std::ffi::OsStr;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

use patchbench_agent::HOST_ROOT_TAG;

use crate::console;
use crate::error::{Context, Result};
use crate::setup::mount_on as mount;
use crate::sys;

/// The merged root host programs run in.
pub const ROOT: &str = "/hostroot";
/// The 9p mount itself.
pub const LOWER: &str = "/run/hostroot/lower";
const RW: &str = "/run/hostroot/rw";

/// The `PATH` of programs in the host root.
pub const PATH: &str = patchbench_agent::HOST_PATH;

/// 9p options: virtio transport, the Linux dialect; the largest message
/// virtio allows (fewer round trips per read); page-cache the files, which
/// is safe because the export is read-only.
pub const NINEP_OPTIONS: &str = "trans=virtio,version=9p2000.L,msize=512000,cache=loose";

fn mkdir(path: &Path) -> Result<()> {
    std::fs::create_dir_all(path).with_context(|| format!("creating {}", path.display()))
}

/// The overlay options for `lower` under a tmpfs directory `rw`
/// (which gets `upper` and `work` subdirectories).
pub fn overlay_options(lower: &Path, rw: &Path) -> String {
    format!(
        "lowerdir={},upperdir={},workdir={}",
        lower.display(),
        rw.join("upper").display(),
        rw.join("work").display()
    )
}

/// Mounts an overlay of a fresh tmpfs at `rw` over `lower` on `target`.
pub fn overlay(lower: &Path, rw: &Path, target: &Path) -> Result<()> {
    mount(
        "tmpfs",
        rw,
        "tmpfs",
        libc::MS_NOSUID | libc::MS_NODEV,
        Some("mode=0755"),
    )?;
    mkdir(&rw.join("upper"))?;
    mkdir(&rw.join("work"))?;
    mount(
        "overlay",
        target,
        "overlay",
        0,
        Some(&overlay_options(lower, rw)),
    )
}

/// Mounts the host root (see the module documentation).
pub fn mount_all() -> Result<()> {
    mount(
        HOST_ROOT_TAG,
        Path::new(LOWER),
        "9p",
        libc::MS_RDONLY,
        Some(NINEP_OPTIONS),
    )
    .context(
        "the host root (is QEMU exporting it with virtio-9p, and is the kernel built with \
         kconfigs/host-root.config?)",
    )?;
    overlay(Path::new(LOWER), Path::new(RW), Path::new(ROOT))?;
    bind_guest_dirs(Path::new(ROOT))?;
    console::say(format!(
        "host root: 9p {HOST_ROOT_TAG} read-only at {LOWER}, overlay on {ROOT}"
    ));
    Ok(())
}

/// Binds the guest's own `/proc`, `/sys` and `/dev` into `root`, for
/// programs that run chrooted there.
pub fn bind_guest_dirs(root: &Path) -> Result<()> {
    for dir in ["proc", "sys", "dev"] {
        mount(
            &format!("/{dir}"),
            &root.join(dir),
            "none",
            libc::MS_BIND | libc::MS_REC,
            None,
        )?;
    }
    Ok(())
}

/// `host_path` (absolute, as the host sees it) under `base`.
pub fn under(base: &str, host_path: &str) -> PathBuf {
    Path::new(base).join(host_path.trim_start_matches('/'))
}

/// A command that runs `program` (found on [`PATH`]) in the host root, in
/// `cwd` (a host path), joining the cgroup whose `cgroup.procs` is given
/// before it executes. The environment is only `PATH`, `HOME` and `LC_ALL`.
pub fn command(
    program: impl AsRef<OsStr>,
    cwd: &str,
    cgroup_procs: Option<&Path>,
) -> Result<Command> {
    command_in(Path::new(ROOT), program, cwd, cgroup_procs)
}

/// [`command`], chrooted into `root` instead of the host root (a kernel
/// build's staged root, [`crate::stage`]).
pub fn command_in(
    root: &Path,
    program: impl AsRef<OsStr>,
    cwd: &str,
    cgroup_procs: Option<&Path>,
) -> Result<Command> {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .env("PATH", PATH)
        .env("HOME", "/root")
        .env("LC_ALL", "C");
    let procs = cgroup_procs
        .map(|p| {
            File::options()
                .write(true)
                .open(p)
                .with_context(|| format!("opening {}", p.display()))
        })
        .transpose()?;
    sys::confine(&mut cmd, procs.map(Into::into), root, Path::new(cwd))
        .with_context(|| format!("preparing chroot into {}", root.display()))?;
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlay_options_name_the_three_layers() {
        assert_eq!(
            overlay_options(Path::new("/run/hostroot/lower"), Path::new("/run/x")),
            "lowerdir=/run/hostroot/lower,upperdir=/run/x/upper,workdir=/run/x/work"
        );
    }

    #[test]
    fn host_paths_nest_under_a_mount() {
        assert_eq!(
            under(ROOT, "/root/.cache/kbuild"),
            Path::new("/hostroot/root/.cache/kbuild")
        );
        assert_eq!(under(LOWER, "/"), Path::new("/run/hostroot/lower/"));
    }
}
