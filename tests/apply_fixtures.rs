//! `patchbench apply` through the real binary on the series fixtures
//! (tests/fixtures/series), against a small local git repository: a patch
//! sent twice, an author libgit2 would refuse, a series with nothing new in
//! it, and a context line that differs from the tree.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/series")
        .join(name)
}

/// A repository whose `a.txt` holds `content`, committed on HEAD.
fn repo(dir: &Path, content: &str) -> PathBuf {
    let path = dir.join("linux");
    let repo = git2::Repository::init(&path).unwrap();
    std::fs::write(path.join("a.txt"), content).unwrap();
    let mut index = repo.index().unwrap();
    index.add_path(Path::new("a.txt")).unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = git2::Signature::now("t", "t@t").unwrap();
    repo.commit(Some("HEAD"), &sig, &sig, "base", &tree, &[])
        .unwrap();
    path
}

fn apply(tree: &Path, series: &Path, cache: &Path) -> (Output, String, String) {
    apply_with(tree, series, cache, &[])
}

fn apply_with(
    tree: &Path,
    series: &Path,
    cache: &Path,
    flags: &[&str],
) -> (Output, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .arg("apply")
        .arg("--tree")
        .arg(tree)
        .arg("--series")
        .arg(series)
        .arg("--cache-dir")
        .arg(cache)
        .args(flags)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

#[test]
fn a_patch_sent_twice_applies_once_and_the_copy_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let tree = repo(dir.path(), "one\ntwo\nthree\n");
    let (out, stdout, stderr) = apply(&tree, &fixture("same-patch-twice"), &dir.path().join("c"));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("series: 2 patch(es), 1 already applied and skipped"),
        "{stdout}"
    );
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("a.txt: two becomes TWO"))
        .collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[0].ends_with("[exact]"), "{stdout}");
    assert!(
        lines[1].contains("[already applied: applying it (3-way merge on the preimage blobs) changes nothing; skipped, nothing committed]"),
        "{stdout}"
    );
    // B is one commit above the base: no empty commit.
    let b = stdout.lines().find_map(|l| l.strip_prefix("B = ")).unwrap();
    let cached = std::fs::read_dir(dir.path().join("c/trees"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        // The cache keeps a lock file beside each tree (`.linux-….lock`);
        // read_dir's order is the filesystem's, so pick the tree by name.
        .find(|p| p.is_dir() && !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .unwrap();
    let repo = git2::Repository::open(cached).unwrap();
    let b = repo.find_commit(git2::Oid::from_str(b).unwrap()).unwrap();
    let base = repo.head().unwrap().peel_to_commit().unwrap();
    assert_eq!(b.parent_id(0).unwrap(), base.id());
}

#[test]
fn an_author_with_angle_brackets_is_no_reason_to_refuse_a_patch() {
    let dir = tempfile::tempdir().unwrap();
    let tree = repo(dir.path(), "one\ntwo\nthree\n");
    let (out, stdout, stderr) = apply(
        &tree,
        &fixture("angle-brackets-author"),
        &dir.path().join("c"),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("[exact]"), "{stdout}");
}

#[test]
fn a_series_already_in_the_base_exits_4() {
    let dir = tempfile::tempdir().unwrap();
    let tree = repo(dir.path(), "one\nTWO\nthree\n");
    let (out, stdout, stderr) = apply(&tree, &fixture("same-patch-twice"), &dir.path().join("c"));
    assert_eq!(
        out.status.code(),
        Some(patchbench::exit::PATCH),
        "{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains("is already in the base (2 patch(es), none changes the tree)"),
        "{stderr}"
    );
}

/// The hidden-input conflict: `git am` refuses a hunk whose context differs
/// from the tree, and so does patchbench, naming the hunk, the differing
/// line and the flag that would accept it; with `--fuzz 1` the patch
/// applies, and the output warns of the fuzz.
#[test]
fn a_context_line_that_differs_is_refused_unless_fuzz_is_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let tree = repo(dir.path(), "ONE\ntwo\nthree\n");
    let series = fixture("context-differs");
    let cache = dir.path().join("c");
    let (out, stdout, stderr) = apply(&tree, &series, &cache);
    assert_eq!(out.status.code(), Some(4), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "hunk #1 of a.txt does not apply at line 1 (patch(1) would apply it with fuzz 1"
        ) && stderr.contains("--fuzz 1"),
        "{stderr}"
    );
    assert!(stderr.contains("     1  ! ONE\n"), "{stderr}");

    let (out, stdout, stderr) = apply_with(&tree, &series, &cache, &["--fuzz", "1"]);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        format!("{stdout}{stderr}").contains("applied with fuzz"),
        "{stdout}\n{stderr}"
    );
}
