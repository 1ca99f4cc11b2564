//! The Exec workload: run one command for `patchbench boot`, with its
//! output on the console, and fail the boot if it fails.

use crate::console;
use crate::error::{Error, Result};
use crate::hostroot;

/// Where the command looks for programs: busybox's applets live in /bin.
const PATH: &str = "/bin:/sbin:/usr/bin:/usr/sbin";

/// Runs `argv` (no shell) and waits for it: in the host root when it is
/// mounted (`patchbench boot --host-root`), else in the initramfs.
pub fn run(argv: &[String], host_root: bool) -> Result<()> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| Error::msg("exec: no command given"))?;
    console::say(format!(
        "exec: {argv:?}{}",
        if host_root { " in the host root" } else { "" }
    ));
    let mut cmd = if host_root {
        hostroot::command(program, "/", None)?
    } else {
        initramfs_command(program)
    };
    let status = cmd
        .args(args)
        .status()
        .map_err(|e| Error::msg(format!("exec: cannot run {program}: {e}")))?;
    console::say(format!("exec: {program} exited with {status}"));
    if status.success() {
        Ok(())
    } else {
        Err(Error::msg(format!("exec: {program} exited with {status}")))
    }
}

/// The initramfs has busybox but no applet links: a bare name that is not a
/// file on PATH runs as a busybox applet.
fn initramfs_command(program: &str) -> std::process::Command {
    let on_path = program.contains('/')
        || PATH
            .split(':')
            .any(|d| std::path::Path::new(d).join(program).is_file());
    let mut cmd = if on_path {
        std::process::Command::new(program)
    } else {
        let mut c = std::process::Command::new("/bin/busybox");
        c.arg(program);
        c
    };
    cmd.env("PATH", PATH);
    cmd
}

impl crate::run::Run for patchbench_agent::Exec {
    fn run(&self, boot: crate::run::Boot<'_>) -> Result<()> {
        run(&self.argv, boot.host_root)
    }
}
