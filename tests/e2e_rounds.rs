//! End-to-end tests of the sequential protocol and of shards, through the
//! real binary on the smoke campaign's kernels (built, or reused from the
//! cache), under icount, where a boot's figures do not depend on the host.
//! They never skip: on a host without QEMU or the kernel source they fail,
//! naming what is missing (`ci/setup-host.sh` installs it).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use patchbench::results::{Results, SequentialStop};

mod common;
use common::{cache_dir, require_host_tools, run_campaign, smoke_variant};

/// One campaign at a time: they share the cached tree and build directories.
static SERIAL: Mutex<()> = Mutex::new(());

fn patchbench(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .args(args)
        .arg("--cache-dir")
        .arg(cache_dir())
        .env("PATCHBENCH_AGENT", patchbench::find_agent().unwrap())
        .output()
        .unwrap()
}

/// The smoke campaign, sequential (a budget of two rounds), each round
/// ABAB with two boots a variant of one warm-up and three samples: four
/// boots a round, so that four shards get one boot each.
fn four_boots(dir: &Path, name: &str) -> PathBuf {
    smoke_variant(
        dir,
        name,
        &[
            ("name: smoke", &format!("name: {name}")),
            (
                "  order: ABA\n  warmups: 1\n  samples: 3",
                "  order: ABAB\n  boots_per_variant: 2\n  warmups: 1\n  samples: 3\n  sequential: {rounds: 2}",
            ),
        ],
    )
}

/// `patchbench merge SHARDS --out OUT`.
fn merge(shards: &[PathBuf], out: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .arg("merge")
        .args(shards)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

/// A sequential campaign stops at the look that decides every primary
/// metric (icount repeats to a fraction of a percent: its first), with the
/// round's boots at once. Its round split into four shards run as four
/// processes (as four runners would, two at a time here) and merged gives
/// the unsplit run's verdicts, look and, metric by metric, means within the
/// lane's repeat CV; a shard of another protocol is refused, and so is a
/// campaign on the host's clock.
#[test]
fn a_sequential_round_in_four_shards_merges_into_the_unsplit_run() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    require_host_tools();
    let dir = tempfile::tempdir().unwrap();
    let campaign = four_boots(dir.path(), "shards");
    let whole_dir = dir.path().join("whole");
    let whole = run_campaign(&campaign, &whole_dir);
    let s = whole.protocol.sequential.as_ref().expect("sequential");
    assert_eq!((s.rounds, s.round_boots), (2, 4));
    assert_eq!(s.stop(), SequentialStop::Decided, "{:?}", s.looks);
    assert_eq!(s.looks.len(), 1, "{:?}", s.looks);
    assert_eq!(whole.boots.len(), 4);
    assert_eq!(
        whole.host.parallel_boots,
        Some(4),
        "a round's boots at once"
    );
    let report = std::fs::read_to_string(whole_dir.join("report.md")).unwrap();
    assert!(report.contains("Sequential look 1 of 2"), "{report}");
    assert!(
        report.contains("1 round(s) of 2 (every primary metric decided)"),
        "{report}"
    );
    let shard_dirs: Vec<PathBuf> = (1..=4).map(|i| dir.path().join(format!("s{i}"))).collect();
    for pair in shard_dirs.chunks(2) {
        let children: Vec<_> = pair
            .iter()
            .map(|out| {
                let i = out.file_name().unwrap().to_string_lossy()[1..].to_string();
                Command::new(env!("CARGO_BIN_EXE_patchbench"))
                    .arg("run")
                    .arg(&campaign)
                    .args(["--shard", &format!("{i}/4"), "--out"])
                    .arg(out)
                    .arg("--cache-dir")
                    .arg(cache_dir())
                    .env("PATCHBENCH_AGENT", patchbench::find_agent().unwrap())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let run = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&run.stderr);
            assert_eq!(run.status.code(), Some(0), "{stderr}");
        }
    }
    for (i, out) in shard_dirs.iter().enumerate() {
        let shard = Results::load(&out.join("results.json")).unwrap();
        assert_eq!(shard.boots.len(), 1, "shard {}", i + 1);
        assert_eq!(shard.boots[0].index, i);
        assert!(shard.judgement.is_none(), "a shard judges nothing");
    }
    let merged_dir = dir.path().join("merged");
    let merged_run = merge(&shard_dirs, &merged_dir);
    let stdout = String::from_utf8_lossy(&merged_run.stdout);
    assert!(
        matches!(merged_run.status.code(), Some(0 | 1)),
        "{stdout}\n{}",
        String::from_utf8_lossy(&merged_run.stderr)
    );
    assert!(
        stdout.contains("sequential: decided after round 1 of 2"),
        "{stdout}"
    );
    let merged = Results::load(&merged_dir.join("results.json")).unwrap();
    let looks = |r: &Results| r.protocol.sequential.as_ref().unwrap().looks.len();
    assert_eq!(looks(&merged), 1);
    let labels = |r: &Results| r.boots.iter().map(|b| b.label.clone()).collect::<Vec<_>>();
    assert_eq!(labels(&merged), labels(&whole));
    let rows = |r: &Results| r.judgement.as_ref().expect("judged").rows.clone();
    let merged_rows = rows(&merged);
    for c in &rows(&whole) {
        let m = merged_rows
            .iter()
            .find(|m| m.metric == c.metric && m.condition == c.condition)
            .unwrap_or_else(|| panic!("merged has no {}", c.metric));
        // The daemons' and interrupts' times are tick-sized or a periodic
        // work item's, not the lane's repeatable figures.
        if c.metric.starts_with("guest_") || c.metric.starts_with('k') {
            continue;
        }
        assert_eq!(
            m.verdict, c.verdict,
            "{}: {} / {}",
            c.metric, m.reason, c.reason
        );
        let cv = c
            .max_boot_cv_pct
            .unwrap_or(0.0)
            .max(m.max_boot_cv_pct.unwrap_or(0.0));
        for (whole_side, merged_side) in [(&c.a, &m.a), (&c.b, &m.b)] {
            let apart =
                (merged_side.mean - whole_side.mean).abs() / whole_side.mean.abs().max(1.0) * 100.0;
            // A task's user and system times are exact to one tick (1 ms at
            // HZ 1000) per mode: the pending time lost at its exit
            // (kernel/sched/cputime.c, docs/cputime.md), so two repeats
            // may differ by that much whatever the CV of three samples.
            let resolution = if matches!(c.metric.as_str(), "user_ns" | "sys_ns") {
                1e6 / whole_side.mean.abs().max(1.0) * 100.0
            } else {
                0.0
            };
            assert!(
                apart <= cv.max(resolution).max(0.01),
                "{}: means {} and {} are {apart:.3}% apart, the repeat CV {cv:.3}%",
                c.metric,
                whole_side.mean,
                merged_side.mean
            );
        }
    }
    // A shard of another protocol: refused, naming it, exit 2.
    let odd = dir.path().join("odd");
    std::fs::create_dir_all(&odd).unwrap();
    let mut other = Results::load(&shard_dirs[3].join("results.json")).unwrap();
    other.protocol.samples = 9;
    other.save(&odd.join("results.json")).unwrap();
    let mut given = shard_dirs[..3].to_vec();
    given.push(odd);
    let refused = merge(&given, &dir.path().join("refused"));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("its protocol differs"), "{stderr}");
    // A campaign on the host's clock is never sharded.
    let tcg = smoke_variant(dir.path(), "tcg", &[common::PLAIN_TCG]);
    let run = patchbench(&[
        "run".as_ref(),
        tcg.as_os_str(),
        "--shard".as_ref(),
        "1/2".as_ref(),
        "--out".as_ref(),
        dir.path().join("tcg-out").as_os_str(),
    ]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the host's clock"), "{stderr}");
}
