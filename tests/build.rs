//! Real kernel builds through `patchbench build`: a config that cannot be
//! satisfied, a series that breaks the compile, and the build cache's hits
//! and misses. They use the smoke campaign's configuration, so variant A
//! comes from the build cache once any smoke run has filled it; each test
//! then costs at most one incremental build of B. They never skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

mod common;

/// One build at a time: they share the cached tree and work directory.
static SERIAL: Mutex<()> = Mutex::new(());

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn patchbench(args: &[&str]) -> Output {
    assert!(
        Path::new("/usr/src/linux-source-6.12.tar.xz").exists(),
        "the kernel source is missing: run ci/setup-host.sh (Debian package linux-source-6.12)"
    );
    Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("patchbench runs")
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_option_whose_dependency_is_missing_fails_before_building() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = patchbench(&["build", "tests/fixtures/kconfig/swap-without-block.yaml"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("the kernel configuration lost options the fragments asked for"),
        "{stderr}"
    );
    assert!(
        stderr.contains("CONFIG_SWAP: ")
            && stderr.contains("swap-without-block.config asked for y, the final .config has n"),
        "{stderr}"
    );
    // The reason, read from the tree's Kconfig: SWAP depends on BLOCK.
    assert!(
        stderr.contains("depends on") && stderr.contains("BLOCK") && stderr.contains("mm/Kconfig"),
        "{stderr}"
    );
    assert!(!stderr.contains("make bzImage"), "{stderr}");
}

#[test]
fn a_broken_series_reports_the_first_compiler_error() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = patchbench(&["build", "--series", "tests/fixtures/broken-build"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let first = stderr
        .lines()
        .find(|l| l.contains("`make bzImage` failed at"))
        .unwrap_or_else(|| panic!("no first error in:\n{stderr}"));
    assert!(
        first.contains("mm/zswap.c:81:")
            && first.contains("error:")
            && first.contains("this_symbol_does_not_exist"),
        "{first}"
    );
    assert!(
        stderr.contains("full log: ") && stderr.contains("build.log"),
        "{stderr}"
    );
}

/// A one-patch series that adds a comment to `mm/zswap.c`. `nonce` makes
/// its commit new to the build cache.
fn comment_series(dir: &Path, nonce: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let patch = format!(
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: patchbench tests <tests@patchbench.invalid>
Date: Mon, 30 Nov 2026 00:00:00 +0000
Subject: [PATCH] mm/zswap: a comment ({nonce})

---
 mm/zswap.c | 1 +
 1 file changed, 1 insertion(+)

diff --git a/mm/zswap.c b/mm/zswap.c
--- a/mm/zswap.c
+++ b/mm/zswap.c
@@ -1,3 +1,4 @@
 // SPDX-License-Identifier: GPL-2.0-or-later
+/* patchbench build-cache test {nonce} */
 /*
  * zswap.c - zswap driver file
-- 
2.39.5
"
    );
    std::fs::write(dir.join("0001-comment.patch"), patch).unwrap();
}

fn kernels(out_dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(out_dir.join("kernels.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_new_series_misses_the_cache_rebuilds_only_its_objects_then_hits() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let nonce = format!("{}-{}", std::process::id(), jiff::Timestamp::now());
    let series = tmp.path().join("series");
    comment_series(&series, &nonce);
    let series_arg = series.to_str().unwrap();
    let first_out = tmp.path().join("first");

    let first = patchbench(&[
        "build",
        "--series",
        series_arg,
        "--out",
        first_out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&first);
    assert_eq!(first.status.code(), Some(0), "{stdout}\n{stderr}");
    let k = kernels(&first_out);
    let b = &k[1];
    assert_eq!(b["variant"], "B");
    assert_eq!(b["reused"], false, "a new series must miss: {b}");
    assert_eq!(b["incremental"], true, "{b}");
    // Its HZ travels with it, for `lpj=` where it boots away from its
    // build (`run --kernels`).
    let config = Path::new(b["build_dir"].as_str().unwrap()).join(".config");
    let config = std::fs::read_to_string(config).unwrap();
    let hz = config.lines().find_map(|l| l.strip_prefix("CONFIG_HZ="));
    assert_eq!(b["hz"].to_string(), hz.unwrap(), "{b}");
    let rebuilt = b["rebuilt"].as_array().unwrap();
    let with = |reason: &str| -> Vec<&str> {
        rebuilt
            .iter()
            .filter(|r| r["reason"] == reason)
            .map(|r| r["object"].as_str().unwrap())
            .collect()
    };
    assert_eq!(with("series"), ["mm/zswap.o"], "{stdout}");
    assert!(with("unexpected").is_empty(), "{stdout}");
    assert!(with("link").contains(&"vmlinux.o"), "{stdout}");
    assert!(stdout.contains("series     mm/zswap.o"), "{stdout}");

    let second_out = tmp.path().join("second");
    let second = patchbench(&[
        "build",
        "--series",
        series_arg,
        "--out",
        second_out.to_str().unwrap(),
    ]);
    let (stdout2, stderr2) = text(&second);
    assert_eq!(second.status.code(), Some(0), "{stderr2}");
    let k2 = kernels(&second_out);
    for kernel in k2.as_array().unwrap() {
        assert_eq!(kernel["reused"], true, "{kernel}");
        assert_eq!(kernel["build_seconds"], 0.0);
    }
    assert_eq!(k2[1]["bzimage_sha256"], b["bzimage_sha256"]);
    assert!(
        stderr2.contains("build B: reused from the build cache, no make run"),
        "{stdout2}\n{stderr2}"
    );
    // This series exists only for this test: drop its cache entry.
    std::fs::remove_dir_all(b["build_dir"].as_str().unwrap()).unwrap();
}

/// SIGKILL patchbench while make builds B: make, its sub-makes and the
/// compilers they started must all be gone 2 s later.
#[test]
fn sigkill_during_a_build_leaves_no_make_or_compiler_running() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // A first, whole (reused when the cache has it): killing its build
    // would cost the next test a full build.
    let a = patchbench(&["build"]);
    assert_eq!(a.status.code(), Some(0), "{}", text(&a).1);
    let tmp = tempfile::tempdir().unwrap();
    let nonce = format!("kill-{}-{}", std::process::id(), jiff::Timestamp::now());
    let series = tmp.path().join("series");
    comment_series(&series, &nonce);
    let mut child = Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .args(["build", "--series", series.to_str().unwrap()])
        .current_dir(repo_root())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let cmdline = |pid: i32| {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
    // `make ... bzImage` with processes of its own below it (sub-makes,
    // compilers): the case where killing make alone is not enough.
    let watched = loop {
        let below = common::descendants(child.id() as i32);
        let building = below.iter().any(|p| {
            p.comm == "make"
                && cmdline(p.pid).ends_with(" bzImage ")
                && below.iter().any(|c| c.ppid == p.pid)
        });
        if building {
            break below;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the build ended before make was seen building"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "make never started building bzImage"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    common::sigkill_and_expect_no_orphans(&mut child, &watched);
}

/// `patchbench build --series S --out OUT --cache-max MAX`, and its kernels.
fn build_series(series: &Path, out: &Path, max: &str) -> (Output, serde_json::Value) {
    let result = patchbench(&[
        "build",
        "--series",
        series.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--cache-max",
        max,
    ]);
    let (stdout, stderr) = text(&result);
    assert_eq!(result.status.code(), Some(0), "{stdout}\n{stderr}");
    let k = kernels(out);
    (result, k)
}

/// What the budget counts in the test cache now.
fn builds_total() -> u64 {
    patchbench::build::cache::entries(&common::cache_dir())
        .iter()
        .filter(|e| e.kind.counted())
        .map(|e| e.size.as_u64())
        .sum()
}

/// Issue 17: two runs started together share the cache (one builds B, the
/// other waits and reuses it); three campaigns' kernels stay within a
/// 2 GiB budget, `cache list` says what each entry is; eviction takes the
/// least recently used and a later run still reuses its own A.
#[test]
fn the_build_cache_is_shared_safely_and_kept_within_its_budget() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let a = patchbench(&["build"]);
    assert_eq!(a.status.code(), Some(0), "{}", text(&a).1);
    let tmp = tempfile::tempdir().unwrap();
    let nonce = format!("cache-{}-{}", std::process::id(), jiff::Timestamp::now());
    let series: Vec<PathBuf> = (1..=4)
        .map(|i| {
            let dir = tmp.path().join(format!("series{i}"));
            comment_series(&dir, &format!("{nonce}-{i}"));
            dir
        })
        .collect();
    let budget = 2u64 << 30;

    // Two runs of the first campaign at once.
    let start = |out: &str| {
        Command::new(env!("CARGO_BIN_EXE_patchbench"))
            .args(["build", "--series", series[0].to_str().unwrap(), "--out"])
            .arg(tmp.path().join(out))
            .args(["--cache-max", "2GiB"])
            .current_dir(repo_root())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (first, second) = (start("c1a"), start("c1b"));
    let runs = [
        first.wait_with_output().unwrap(),
        second.wait_with_output().unwrap(),
    ];
    for run in &runs {
        let (stdout, stderr) = text(run);
        assert_eq!(run.status.code(), Some(0), "{stdout}\n{stderr}");
    }
    let (k1, k2) = (
        kernels(&tmp.path().join("c1a")),
        kernels(&tmp.path().join("c1b")),
    );
    assert_eq!(k1[1]["bzimage_sha256"], k2[1]["bzimage_sha256"]);
    let reused = [&k1[1]["reused"], &k2[1]["reused"]];
    assert!(
        reused.contains(&&serde_json::Value::Bool(true))
            && reused.contains(&&serde_json::Value::Bool(false)),
        "one run builds B, the other reuses it: {reused:?}"
    );
    // The run that reused B said what it was waiting for.
    let waiter = if k1[1]["reused"] == true {
        &runs[0]
    } else {
        &runs[1]
    };
    let (_, waited) = text(waiter);
    assert!(
        waited.contains("build B: waiting for another run building this kernel"),
        "{waited}"
    );
    assert!(builds_total() <= budget);

    // Two more campaigns under the same budget.
    for (i, s) in series.iter().enumerate().skip(1).take(2) {
        build_series(s, &tmp.path().join(format!("c{}", i + 1)), "2GiB");
        let total = builds_total();
        assert!(
            total <= budget,
            "{total} bytes of builds after campaign {}",
            i + 1
        );
    }
    let list = patchbench(&["cache", "list", "--max", "2GiB"]);
    let (listing, stderr) = text(&list);
    assert_eq!(list.status.code(), Some(0), "{stderr}");
    assert!(listing.contains("budget 2.0 GiB"), "{listing}");
    assert!(listing.contains("work directory"), "{listing}");
    assert!(listing.contains("(base + series "), "{listing}");
    assert!(listing.contains("source tree (not counted)"), "{listing}");

    // Evict down to about four entries: the oldest kernels go, A (used by
    // every run) stays, and a fourth campaign reuses it.
    let entry_size = k1[1]["build_dir"]
        .as_str()
        .map(|d| patchbench::build::cache::disk_usage(Path::new(d)))
        .unwrap();
    let four = format!("{}B", 4 * entry_size + entry_size / 2);
    let gc = patchbench(&["cache", "gc", "--max", &four]);
    let (gc_out, _) = text(&gc);
    assert_eq!(gc.status.code(), Some(0), "{gc_out}");
    assert!(
        !Path::new(k1[1]["build_dir"].as_str().unwrap()).exists(),
        "the first campaign's B was the least recently used: {gc_out}"
    );
    let (_, k4) = build_series(&series[3], &tmp.path().join("c4"), &four);
    assert_eq!(k4[0]["reused"], true, "A must be reused: {}", k4[0]);
    assert_eq!(k4[1]["reused"], false);
    assert!(builds_total() <= 4 * entry_size + entry_size / 2);
    // These series exist only for this test: drop what is left of their
    // kernels (some were evicted already).
    for out in ["c1a", "c2", "c3", "c4"] {
        let k = kernels(&tmp.path().join(out));
        let _ = std::fs::remove_dir_all(k[1]["build_dir"].as_str().unwrap());
    }
}
