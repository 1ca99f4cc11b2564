//! Signals through the real binary. Ctrl-C: an interrupted tarball import
//! stops within 2 s with exit code 3, and leaves a cache that the next run
//! imports into and then reuses. SIGKILL: nothing patchbench started (tar,
//! its decompressor) outlives it.
//!
//! The tarball is made here: 20,000 small files, so that both halves of an
//! import (tar extracting, then libgit2 adding and committing every file)
//! last long enough on this machine to be interrupted in the middle.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;

/// Directories and files per directory of the generated tree.
const DIRS: usize = 100;
const FILES_PER_DIR: usize = 200;

fn make_tarball(work: &Path) -> PathBuf {
    let top = work.join("linux-interrupt-1.0");
    for d in 0..DIRS {
        let dir = top.join(format!("d{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..FILES_PER_DIR {
            // Distinct content, so every file is its own git object.
            std::fs::write(dir.join(format!("f{f:03}.c")), format!("int d{d}_f{f};\n")).unwrap();
        }
    }
    std::fs::write(top.join("Makefile"), "one\ntwo\nthree\n").unwrap();
    let tarball = work.join("linux-interrupt-1.0.tar.gz");
    let status = Command::new("tar")
        .arg("-czf")
        .arg(&tarball)
        .arg("-C")
        .arg(work)
        .arg("linux-interrupt-1.0")
        .status()
        .expect("tar (Debian package tar) runs");
    assert!(status.success());
    std::fs::remove_dir_all(&top).unwrap();
    tarball
}

const PATCH: &str = "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: patchbench tests <tests@patchbench.invalid>
Date: Mon, 30 Nov 2026 00:00:00 +0000
Subject: [PATCH] Makefile: two becomes TWO

---
 Makefile | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/Makefile b/Makefile
--- a/Makefile
+++ b/Makefile
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
-- 
2.39.5
";

fn apply_command(tarball: &Path, series: &Path, cache: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_patchbench"));
    cmd.arg("apply")
        .arg("--tree")
        .arg(tarball)
        .arg("--series")
        .arg(series)
        .arg("--cache-dir")
        .arg(cache);
    cmd
}

/// The staging directory of the import under way, once it exists.
fn staging_src(cache: &Path) -> Option<PathBuf> {
    std::fs::read_dir(cache.join("trees"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".import-"))
        })
        .map(|p| p.join("src"))
}

/// Start an import, wait until `ready` says the wanted phase is under way,
/// SIGINT it, and return how long it took to exit and what it said.
fn interrupt_when(
    tarball: &Path,
    series: &Path,
    cache: &Path,
    phase: &str,
    ready: impl Fn(&Path) -> bool,
) -> (Duration, Output) {
    let mut child: Child = apply_command(tarball, series, cache)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let give_up = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(src) = staging_src(cache)
            && ready(&src)
        {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "the import finished ({status}) before the {phase} phase was seen:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(Instant::now() < give_up, "the {phase} phase never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let sent = Instant::now();
    let stderr = child.stderr.take().unwrap();
    let waited = loop {
        if child.try_wait().unwrap().is_some() {
            break sent.elapsed();
        }
        if sent.elapsed() > Duration::from_secs(30) {
            child.kill().unwrap();
            panic!("patchbench did not exit within 30 s of SIGINT ({phase} phase)");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut text = String::new();
    for line in BufReader::new(stderr).lines() {
        text.push_str(&line.unwrap());
        text.push('\n');
    }
    let out = Output {
        status: child.wait().unwrap(),
        stdout: Vec::new(),
        stderr: text.into_bytes(),
    };
    (waited, out)
}

fn has_files(src: &Path) -> bool {
    std::fs::read_dir(src).is_ok_and(|mut d| d.next().is_some())
}

#[test]
fn ctrl_c_during_a_tarball_import_exits_3_within_2_s_and_the_cache_stays_usable() {
    let work = tempfile::tempdir().unwrap();
    let tarball = make_tarball(work.path());
    let series = work.path().join("0001-two.patch");
    std::fs::write(&series, PATCH).unwrap();
    let cache = work.path().join("cache");

    // While tar extracts: files are appearing, no repository yet.
    let (waited, out) = interrupt_when(&tarball, &series, &cache, "extract", |src| {
        has_files(src) && !src.join(".git").exists()
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("error: interrupted"), "{stderr}");
    assert!(waited < Duration::from_secs(2), "exit took {waited:?}");

    // While libgit2 adds and commits the extracted files (its repository
    // exists, its index has not been written yet).
    let (waited, out) = interrupt_when(&tarball, &series, &cache, "commit", |src| {
        src.join(".git/HEAD").exists() && !src.join(".git/index").exists()
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("error: interrupted"), "{stderr}");
    assert!(waited < Duration::from_secs(2), "exit took {waited:?}");
    // Only the staging directory (and the tree's lock file) is left; no
    // tree that looks imported.
    assert!(
        std::fs::read_dir(cache.join("trees"))
            .unwrap()
            .flatten()
            .all(|e| e.file_name().to_string_lossy().starts_with('.')),
        "an interrupted import must not leave a tree in place"
    );

    // The next run imports whole and applies the patch on it...
    let out = apply_command(&tarball, &series, &cache).output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("Makefile: two becomes TWO"), "{stdout}");
    let names: Vec<String> = std::fs::read_dir(cache.join("trees"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n.starts_with(".import-")),
        "no staging left: {names:?}"
    );
    let trees: Vec<&String> = names.iter().filter(|n| !n.starts_with('.')).collect();
    assert_eq!(trees.len(), 1, "one tree: {names:?}");
    assert!(trees[0].starts_with("linux-interrupt-1.0-"), "{trees:?}");
    let repo = git2::Repository::open(cache.join("trees").join(trees[0])).unwrap();
    let head = repo.find_reference("refs/heads/patchbench-base").unwrap();
    let files = head.peel_to_tree().unwrap();
    let mut count = 0;
    files
        .walk(git2::TreeWalkMode::PreOrder, |_, e| {
            if e.kind() == Some(git2::ObjectType::Blob) {
                count += 1;
            }
            git2::TreeWalkResult::Ok
        })
        .unwrap();
    assert_eq!(count, DIRS * FILES_PER_DIR + 1);

    // ...and the one after reuses it, with the same base.
    let again = apply_command(&tarball, &series, &cache).output().unwrap();
    assert_eq!(again.status.code(), Some(0));
    let b_line = |o: &Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .find(|l| l.starts_with("B = "))
            .map(str::to_string)
    };
    assert_eq!(b_line(&again), b_line(&out));
}

#[test]
fn sigkill_during_an_import_leaves_no_tar_running() {
    let work = tempfile::tempdir().unwrap();
    let tarball = make_tarball(work.path());
    let series = work.path().join("0001-two.patch");
    std::fs::write(&series, PATCH).unwrap();
    let cache = work.path().join("cache");
    let mut child = apply_command(&tarball, &series, &cache)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let give_up = Instant::now() + Duration::from_secs(120);
    let watched = loop {
        let below = common::descendants(pid);
        if below.iter().any(|p| p.comm == "tar") {
            break below;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the import ended before tar was seen"
        );
        assert!(Instant::now() < give_up, "tar never started");
        std::thread::sleep(Duration::from_millis(5));
    };
    common::sigkill_and_expect_no_orphans(&mut child, &watched);
}
