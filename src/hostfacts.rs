//! What the host was when it measured: the facts a KVM figure depends on
//! and a reader of the results needs to compare two runs. The
//! host's clocksource (what the guest's kvmclock is built on), QEMU's
//! version, the host kernel, transparent huge pages and KSM (the host's
//! own memory management under the guest's RAM), and the CPU frequency
//! governor.
//!
//! Each fact is read from one file (or QEMU's `--version`); a file that is
//! not there (no cpufreq in a VM, no KSM in the kernel) is recorded as
//! absent, never as an error. The parsers are pure; [`gather`] reads the
//! real host, [`gather_from`] any root and QEMU binary (tests).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::process::{self, Cmd};

/// How long `qemu-system-x86_64 --version` may take.
const QEMU_VERSION_DEADLINE: Duration = Duration::from_secs(10);

/// The host's clocksource, relative to the root.
pub const CLOCKSOURCE: &str = "sys/devices/system/clocksource/clocksource0/current_clocksource";
/// The host kernel's release.
pub const OSRELEASE: &str = "proc/sys/kernel/osrelease";
/// THP's mode for new mappings.
pub const THP_ENABLED: &str = "sys/kernel/mm/transparent_hugepage/enabled";
/// THP's defragmentation on a fault.
pub const THP_DEFRAG: &str = "sys/kernel/mm/transparent_hugepage/defrag";
/// KSM's state.
pub const KSM_RUN: &str = "sys/kernel/mm/ksm/run";
/// The CPUs' directory, whose `cpu<N>/cpufreq/scaling_governor` name
/// their governors.
pub const CPUS: &str = "sys/devices/system/cpu";

/// KSM's state (`/sys/kernel/mm/ksm/run`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ksm {
    /// `0`: not merging (pages merged before stay merged).
    Off,
    /// `1`: merging pages marked mergeable.
    Merging,
    /// `2`: unmerging every merged page, and not merging.
    Unmerging,
}

/// The host's facts; each `None` when its file is absent or unreadable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostFacts {
    /// The host kernel's release (`6.1.0-28-amd64`).
    pub kernel: Option<String>,
    /// The host's clocksource (`tsc`, `hpet`, `kvm-clock`).
    pub clocksource: Option<String>,
    /// QEMU's version (`7.2.22`).
    pub qemu_version: Option<String>,
    /// THP's `enabled` choice (`always`, `madvise`, `never`).
    pub thp_enabled: Option<String>,
    /// THP's `defrag` choice.
    pub thp_defrag: Option<String>,
    pub ksm: Option<Ksm>,
    /// The distinct governors of the CPUs that have cpufreq; `None` when
    /// none has (as in many VMs).
    pub governors: Option<BTreeSet<String>>,
}

/// QEMU's version from the first line of its `--version`
/// (`QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7)` → `7.2.22`).
pub fn qemu_version(output: &str) -> Option<String> {
    let first = output.lines().next()?;
    let rest = first.split("version").nth(1)?;
    let word = rest.split_whitespace().next()?;
    word.chars()
        .next()
        .is_some_and(|c| c.is_ascii_digit())
        .then(|| word.to_string())
}

/// The selected word of a sysfs choice file (`always [madvise] never`).
pub fn selected_choice(text: &str) -> Option<String> {
    patchbench_agent::sysfs::selected_choice(text).map(str::to_string)
}

/// KSM's state from `ksm/run`.
pub fn ksm_run(text: &str) -> Option<Ksm> {
    match text.trim() {
        "0" => Some(Ksm::Off),
        "1" => Some(Ksm::Merging),
        "2" => Some(Ksm::Unmerging),
        _ => None,
    }
}

/// The distinct governors from each CPU's `scaling_governor`; `None` when
/// no CPU has one.
pub fn governors<'a>(texts: impl IntoIterator<Item = &'a str>) -> Option<BTreeSet<String>> {
    let set: BTreeSet<String> = texts
        .into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    (!set.is_empty()).then_some(set)
}

/// A one-line file's trimmed text; `None` when absent or empty.
fn read_line(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.trim();
    (!line.is_empty()).then(|| line.to_string())
}

/// Every file fact under `root` (`/` on a real host).
fn read_files(root: &Path) -> HostFacts {
    let file = |rel: &str| read_line(&root.join(rel));
    let cpu_governors: Vec<String> = std::fs::read_dir(root.join(CPUS))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.strip_prefix("cpu")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| read_line(&e.path().join("cpufreq/scaling_governor")))
        .collect();
    HostFacts {
        kernel: file(OSRELEASE),
        clocksource: file(CLOCKSOURCE),
        qemu_version: None,
        thp_enabled: file(THP_ENABLED).and_then(|t| selected_choice(&t)),
        thp_defrag: file(THP_DEFRAG).and_then(|t| selected_choice(&t)),
        ksm: file(KSM_RUN).and_then(|t| ksm_run(&t)),
        governors: governors(cpu_governors.iter().map(String::as_str)),
    }
}

/// The facts of the host under `root`, QEMU's version from `qemu
/// --version`. QEMU that does not answer leaves its version absent: the
/// boots then fail with the reason.
pub async fn gather_from(root: &Path, qemu: &str) -> HostFacts {
    let root: PathBuf = root.to_path_buf();
    let mut facts = crate::blocking::unblock(move || read_files(&root)).await;
    facts.qemu_version = process::run(&Cmd::new(qemu, QEMU_VERSION_DEADLINE).arg("--version"))
        .await
        .ok()
        .and_then(|out| qemu_version(&out.stdout));
    facts
}

/// The facts of this host and of the QEMU on `PATH`.
pub async fn gather() -> HostFacts {
    gather_from(Path::new("/"), "qemu-system-x86_64").await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qemus_version_is_the_word_after_version() {
        let cases = [
            (
                "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)\nCopyright (c) 2003-2022\n",
                Some("7.2.22"),
            ),
            ("QEMU emulator version 9.2.0\n", Some("9.2.0")),
            ("QEMU emulator version v9\n", None),
            ("qemu-system-x86_64: unknown option\n", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(qemu_version(text).as_deref(), want, "{text:?}");
        }
    }

    #[test]
    fn choices_ksm_and_governors_parse() {
        assert_eq!(
            selected_choice("always [madvise] never\n").as_deref(),
            Some("madvise")
        );
        assert_eq!(
            selected_choice("always defer defer+madvise [madvise] never").as_deref(),
            Some("madvise")
        );
        assert_eq!(selected_choice("always madvise never"), None);
        assert_eq!(ksm_run("0\n"), Some(Ksm::Off));
        assert_eq!(ksm_run("1"), Some(Ksm::Merging));
        assert_eq!(ksm_run("2"), Some(Ksm::Unmerging));
        assert_eq!(ksm_run("3"), None);
        let set = governors(["performance\n", "powersave", "performance"]).unwrap();
        assert_eq!(
            set.into_iter().collect::<Vec<_>>(),
            ["performance", "powersave"]
        );
        assert_eq!(governors([]), None);
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn a_hosts_files_are_read_and_absent_ones_are_absent() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        write(r, OSRELEASE, "6.1.0-28-amd64\n");
        write(r, CLOCKSOURCE, "tsc\n");
        write(r, THP_ENABLED, "always [madvise] never\n");
        write(
            r,
            THP_DEFRAG,
            "always defer defer+madvise [madvise] never\n",
        );
        write(r, KSM_RUN, "0\n");
        write(
            r,
            "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            "performance\n",
        );
        write(
            r,
            "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
            "performance\n",
        );
        // Not a CPU: its file is not a governor.
        write(
            r,
            "sys/devices/system/cpu/cpufreq/policy0/scaling_governor",
            "schedutil\n",
        );
        let facts = read_files(r);
        assert_eq!(
            facts,
            HostFacts {
                kernel: Some("6.1.0-28-amd64".into()),
                clocksource: Some("tsc".into()),
                qemu_version: None,
                thp_enabled: Some("madvise".into()),
                thp_defrag: Some("madvise".into()),
                ksm: Some(Ksm::Off),
                governors: Some(BTreeSet::from(["performance".to_string()])),
            }
        );
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(read_files(empty.path()), HostFacts::default());
    }

    /// QEMU that is not there leaves its version absent; the files are
    /// still read.
    #[tokio::test]
    async fn a_missing_qemu_leaves_its_version_absent() {
        let root = tempfile::tempdir().unwrap();
        write(root.path(), CLOCKSOURCE, "hpet\n");
        let facts = gather_from(root.path(), "/nonexistent/qemu-system-x86_64").await;
        assert_eq!(facts.qemu_version, None);
        assert_eq!(facts.clocksource.as_deref(), Some("hpet"));
    }
}
