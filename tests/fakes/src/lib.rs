//! Fake `make` and `qemu-system-x86_64` for patchbench's hermetic tests
//! (`tests/hermetic`): the campaign engine runs through the real binary
//! against these, put first (and alone) on its `PATH`, in seconds, with no
//! kernel tree, no QEMU, no KVM and no root.
//!
//! One multi-call program: whoever links this crate calls [`dispatch`]
//! first thing in `main`, and when the program was started under one of
//! the names of [`PROGRAMS`] (a symlink made by [`install`]) it acts as
//! that program and exits. The hermetic test binary is that program: the
//! fakes are always built with the tests that use them.
//!
//! - `make` ([`make`]) configures (`tinyconfig`, `defconfig`,
//!   `olddefconfig`, with the tree's `Kconfig` files as a real kconfig
//!   reads them, only simpler) and builds `bzImage` out of tree (`O=`):
//!   one object per `.c` file, recompiled when its source is newer, as
//!   make decides, with kbuild's `  CC  x.o` lines and `.x.o.cmd` files;
//!   then `vmlinux`, `System.map` and `arch/x86/boot/bzImage`, a text
//!   [`FakeKernel`] holding the tree's digest, the `.config` (as
//!   `CONFIG_IKCONFIG` embeds it) and the effects its sources ask for.
//! - `qemu-system-x86_64` ([`qemu`]) checks the arguments patchbench gives
//!   it, reads the job from the initramfs, writes a console, and speaks
//!   the agent's protocol on the virtio-serial socket: hello, facts, every
//!   warm-up and sample, done. Each figure is a function of the kernel
//!   (its digest and effects), the boot's label, the condition and the
//!   sample's index: deterministic, with a small noise. Started with
//!   `-bios`, it is the KVM trial patchbench runs before its first build
//!   ([`kvm`]); with `--version` alone it names a fake QEMU 7.2.0, which
//!   the campaign records among the host's facts.
//! - `gcc --version` names a fake compiler (the build's cache key); `flex`,
//!   `bison`, `bc`, `perl` and `ld` only exist for the build's preflight,
//!   and fail if run.
//!
//! Anything a fake does not understand (an argument, a target, a workload)
//! fails loudly: a message on stderr and exit code 2, never a silent
//! success.
//!
//! # Steering the fakes
//!
//! - A source line holding `patchbench-fake-effect: METRIC PCT` changes
//!   METRIC by PCT percent (signed, decimal) in every kernel built from it:
//!   a patch that adds the line makes B move.
//! - A source line holding `patchbench-fake-error` makes its compilation
//!   fail, with a compiler's `file:line:col: error:` line.
//! - [`ENV_NOISE`]: the noise of each time, in percent (default 0.2).
//! - [`ENV_BOOT_NOISE`]: under `-accel kvm`, one offset per boot of up
//!   to this percent on every time (default 0).
//! - [`ENV_KILL`]: `LABEL:N`: the fake QEMU of boot LABEL kills itself
//!   with SIGKILL after N measured samples of the main condition.
//! - [`ENV_KVM`]: what the fake QEMU's KVM trial finds ([`kvm`]): a
//!   guest that runs, a closed /dev/kvm, a VM that cannot be created, or
//!   (unset) no /dev/kvm.
//! - [`ENV_LOG`]: a file each fake appends one line to per run
//!   (`make <target>`, `qemu <label> <release> <digest>`, `kvm-trial <host>`), for tests that
//!   count builds and boots.

use std::io::Write;
use std::path::{Path, PathBuf};

pub mod kvm;
pub mod make;
pub mod qemu;

/// The programs this crate fakes, by the name it is started under.
pub const PROGRAMS: &[&str] = &[
    "make",
    "qemu-system-x86_64",
    "gcc",
    "flex",
    "bison",
    "bc",
    "perl",
    "ld",
];

/// The noise of each time, in percent of its value (default 0.2).
pub const ENV_NOISE: &str = "PATCHBENCH_FAKE_NOISE";
/// The boot-to-boot noise of each time under KVM (`-accel kvm`), in
/// percent of its value (default 0): one offset per boot, drawn from the
/// kernel and the boot's label, as a real host's placement and state move
/// a whole boot.
pub const ENV_BOOT_NOISE: &str = "PATCHBENCH_FAKE_BOOT_NOISE";
/// `LABEL:N`: boot LABEL's QEMU kills itself after N measured samples.
pub const ENV_KILL: &str = "PATCHBENCH_FAKE_KILL";
/// The host's KVM as the fake QEMU's KVM trial meets it ([`kvm`]):
/// `runs`, `denied` (/dev/kvm closed), `no-vm` (KVM_CREATE_VM fails);
/// unset, no /dev/kvm.
pub const ENV_KVM: &str = "PATCHBENCH_FAKE_KVM";
/// A file every fake appends a line to, per run.
pub const ENV_LOG: &str = "PATCHBENCH_FAKE_LOG";

/// The marker of a source line that sets an effect.
pub const EFFECT_MARKER: &str = "patchbench-fake-effect:";
/// The marker of a source line that fails its compilation.
pub const ERROR_MARKER: &str = "patchbench-fake-error";

/// What `gcc --version` says.
pub const FAKE_COMPILER: &str = "gcc (patchbench fake) 12.2.0";

/// What the fake QEMU's `--version` prints (the campaign records the
/// host's QEMU version, `hostfacts`).
pub const FAKE_QEMU_VERSION: &str = "QEMU emulator version 7.2.0 (patchbench fake)";

/// A fake's failure: what it did not understand or could not do.
#[derive(Debug)]
pub struct Refused(pub String);

impl<E: std::fmt::Display> From<E> for Refused {
    fn from(e: E) -> Refused {
        Refused(e.to_string())
    }
}

/// `Err(Refused)` with a formatted message.
#[macro_export]
macro_rules! refuse {
    ($($arg:tt)*) => { return Err($crate::Refused(format!($($arg)*))) };
}

/// If this process was started as one of [`PROGRAMS`], act as it and
/// return its exit code; `None` otherwise.
pub fn dispatch() -> Option<i32> {
    let mut args = std::env::args_os();
    let argv0 = PathBuf::from(args.next()?);
    let name = argv0.file_name()?.to_string_lossy().into_owned();
    if !PROGRAMS.contains(&name.as_str()) {
        return None;
    }
    let args: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
    let outcome = match name.as_str() {
        "make" => make::main(&args),
        "qemu-system-x86_64" if kvm::is_trial(&args) => kvm::main(&args),
        "qemu-system-x86_64" if args == ["--version"] => {
            println!("{FAKE_QEMU_VERSION}");
            Ok(())
        }
        "qemu-system-x86_64" => qemu::main(&args),
        "gcc" if args == ["--version"] => {
            println!("{FAKE_COMPILER}");
            Ok(())
        }
        other => Err(Refused(format!(
            "the fake kernel build never runs {other} (asked: {other} {})",
            args.join(" ")
        ))),
    };
    Some(match outcome {
        Ok(()) => 0,
        Err(Refused(message)) => {
            eprintln!("fake {name}: {message}");
            2
        }
    })
}

/// Make `dir` hold every fake of [`PROGRAMS`], each a symlink to `exe` (a
/// program whose `main` calls [`dispatch`]).
pub fn install(dir: &Path, exe: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for name in PROGRAMS {
        std::os::unix::fs::symlink(exe, dir.join(name))?;
    }
    Ok(())
}

/// Append `line` to the [`ENV_LOG`] file, if one is set.
pub(crate) fn log(line: &str) -> Result<(), Refused> {
    let Some(path) = std::env::var_os(ENV_LOG) else {
        return Ok(());
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| {
            Refused(format!(
                "cannot append to {}: {e}",
                Path::new(&path).display()
            ))
        })?;
    // One write(2) of the whole line: fakes of boots side by side append
    // to the same file, and `writeln!` may write the line and its newline
    // apart, letting another fake's line in between.
    file.write_all(format!("{line}\n").as_bytes())?;
    Ok(())
}

/// The fake kernel image (`bzImage`, `vmlinux`): text, first line
/// [`FakeKernel::MAGIC`].
#[derive(Debug, Clone, PartialEq)]
pub struct FakeKernel {
    /// `uname -r`: the top Makefile's version.
    pub release: String,
    /// sha256 of every object and the `.config`: another tree, another kernel.
    pub digest: String,
    /// Percent changes by metric, from the sources' effect markers.
    pub effects: Vec<(String, f64)>,
    /// The `.config` it was built with.
    pub config: String,
}

impl FakeKernel {
    pub const MAGIC: &'static str = "patchbench-fake-kernel 1";

    pub fn render(&self) -> String {
        let mut text = format!(
            "{}\nrelease {}\ndigest {}\n",
            Self::MAGIC,
            self.release,
            self.digest
        );
        for (metric, pct) in &self.effects {
            text.push_str(&format!("effect {metric} {pct}\n"));
        }
        text.push_str("config\n");
        text.push_str(&self.config);
        text
    }

    pub fn parse(text: &str) -> Result<FakeKernel, Refused> {
        let Some(rest) = text
            .strip_prefix(Self::MAGIC)
            .and_then(|r| r.strip_prefix('\n'))
        else {
            refuse!(
                "not a kernel the fake make built (no `{}` line)",
                Self::MAGIC
            );
        };
        let (head, config) = rest
            .split_once("config\n")
            .ok_or_else(|| Refused("a fake kernel without its config".into()))?;
        let mut kernel = FakeKernel {
            release: String::new(),
            digest: String::new(),
            effects: Vec::new(),
            config: config.to_string(),
        };
        for line in head.lines() {
            match line.split_whitespace().collect::<Vec<_>>()[..] {
                ["release", r] => kernel.release = r.to_string(),
                ["digest", d] => kernel.digest = d.to_string(),
                ["effect", metric, pct] => kernel.effects.push((
                    metric.to_string(),
                    pct.parse()
                        .map_err(|_| Refused(format!("bad effect line {line:?}")))?,
                )),
                _ => refuse!("a fake kernel's line is not understood: {line:?}"),
            }
        }
        if kernel.release.is_empty() || kernel.digest.is_empty() {
            refuse!("a fake kernel without its release or digest");
        }
        Ok(kernel)
    }

    /// The total percent change of `metric`.
    pub fn effect(&self, metric: &str) -> f64 {
        self.effects
            .iter()
            .filter(|(m, _)| m == metric)
            .map(|(_, p)| p)
            .sum()
    }
}

/// The effect a source line asks for, if it holds the marker: its metric
/// and percent.
pub fn effect_in(line: &str) -> Option<Result<(String, f64), Refused>> {
    let rest = &line[line.find(EFFECT_MARKER)? + EFFECT_MARKER.len()..];
    let words: Vec<&str> = rest.split_whitespace().take(2).collect();
    Some(match words[..] {
        [metric, pct] => pct
            .trim_end_matches('%')
            .parse::<f64>()
            .map(|p| (metric.to_string(), p))
            .map_err(|_| Refused(format!("bad percent in {line:?}"))),
        _ => Err(Refused(format!(
            "an effect marker wants METRIC PCT: {line:?}"
        ))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_reads_back() {
        let k = FakeKernel {
            release: "6.12.0-fake".into(),
            digest: "ab".repeat(32),
            effects: vec![
                ("pageout_cpu_ns".into(), 12.5),
                ("pageout_cpu_ns".into(), -2.5),
            ],
            config: "CONFIG_A=y\n# CONFIG_B is not set\n".into(),
        };
        let back = FakeKernel::parse(&k.render()).unwrap();
        assert_eq!(back, k);
        assert_eq!(back.effect("pageout_cpu_ns"), 10.0);
        assert_eq!(back.effect("verify_cpu_ns"), 0.0);
        assert!(FakeKernel::parse("MZ\x00binary").is_err());
    }

    #[test]
    fn effect_markers_are_read_from_source_lines() {
        let (m, p) = effect_in("\t/* patchbench-fake-effect: sys_ns +7.5 */")
            .unwrap()
            .unwrap();
        assert_eq!((m.as_str(), p), ("sys_ns", 7.5));
        assert!(effect_in("int x;").is_none());
        assert!(
            effect_in("/* patchbench-fake-effect: sys_ns */")
                .unwrap()
                .is_err()
        );
    }
}
