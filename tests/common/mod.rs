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
#[allow(dead_code)] // not every test binary needs the whole host
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

/// The edit that takes the smoke campaign out of icount into plain TCG, for
/// tests of the pipeline's behaviour (failures, resume, prebuilt kernels,
/// CPU shape) rather than of measured values: a plain-TCG boot takes
/// seconds, an icount boot about half a minute. `accel: tcg` too: off
/// icount under `auto` the lane is KVM where a guest runs under it, whose
/// kernels merge kconfigs/kvm-guest.config and so are not the smoke's.
#[allow(dead_code)] // not every test binary edits the smoke campaign
pub const PLAIN_TCG: (&str, &str) = (
    "  icount: true\n  accel: auto\n",
    "  icount: false\n  accel: tcg\n",
);

/// The smoke campaign (absolute paths) with each `(from, to)` replaced,
/// written to `dir/name.yaml`.
#[allow(dead_code)] // not every test binary edits the smoke campaign
pub fn smoke_variant(dir: &Path, name: &str, edits: &[(&str, &str)]) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut text =
        patchbench::config::DEFAULT_CAMPAIGN.replace("../", &format!("{}/", root.display()));
    for (from, to) in edits {
        assert!(
            text.contains(from),
            "the smoke campaign changed shape ({from:?} is gone); update this test"
        );
        text = text.replace(from, to);
    }
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, text).unwrap();
    path
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

/// A process as /proc shows it.
#[allow(dead_code)] // not every test binary kills processes
#[derive(Debug, Clone)]
pub struct Proc {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    pub comm: String,
    /// `Z` for a zombie (dead, not yet reaped).
    pub state: char,
}

/// Every process, from /proc/<pid>/stat.
#[allow(dead_code)]
pub fn processes() -> Vec<Proc> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = stat[open + 1..close].to_string();
        let rest: Vec<&str> = stat[close + 2..].split_whitespace().collect();
        if rest.len() < 3 {
            continue;
        }
        all.push(Proc {
            pid,
            ppid: rest[1].parse().unwrap_or(0),
            pgid: rest[2].parse().unwrap_or(0),
            comm,
            state: rest[0].chars().next().unwrap_or('?'),
        });
    }
    all
}

/// The living descendants of `pid` (children, their children, ...).
#[allow(dead_code)]
pub fn descendants(pid: i32) -> Vec<Proc> {
    let all = processes();
    let mut found: Vec<Proc> = Vec::new();
    let mut parents = vec![pid];
    while let Some(parent) = parents.pop() {
        for p in all.iter().filter(|p| p.ppid == parent && p.state != 'Z') {
            parents.push(p.pid);
            found.push(p.clone());
        }
    }
    found
}

/// The processes, zombies aside, in any of these process groups.
#[allow(dead_code)]
pub fn living_in_groups(groups: &[i32]) -> Vec<Proc> {
    processes()
        .into_iter()
        .filter(|p| groups.contains(&p.pgid) && p.state != 'Z')
        .collect()
}

/// SIGKILL `victim` (a patchbench process), then give its children 2 s to
/// disappear; fail naming every process of `watched` (their pids and
/// groups, taken before the kill) still alive then.
#[allow(dead_code)]
pub fn sigkill_and_expect_no_orphans(victim: &mut std::process::Child, watched: &[Proc]) {
    let mut groups: Vec<i32> = watched.iter().map(|p| p.pgid).collect();
    groups.sort();
    groups.dedup();
    // The victim's own group is the test's: only its children's groups count.
    let own = processes()
        .into_iter()
        .find(|p| p.pid == victim.id() as i32)
        .map(|p| p.pgid);
    groups.retain(|g| Some(*g) != own);
    assert!(!groups.is_empty(), "no child group to watch: {watched:?}");
    victim.kill().unwrap();
    victim.wait().unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    let pids: Vec<i32> = watched.iter().map(|p| p.pid).collect();
    let left: Vec<Proc> = processes()
        .into_iter()
        .filter(|p| p.state != 'Z' && (groups.contains(&p.pgid) || pids.contains(&p.pid)))
        .collect();
    assert!(
        left.is_empty(),
        "2 s after SIGKILL of patchbench these are still running: {left:?}"
    );
}
