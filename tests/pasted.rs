//! What people paste, through the real binary, on the real tree (Debian's
//! linux-source-6.12, imported into the cache once): each form of
//! tests/fixtures/pasted (its README says how each was made) applies as
//! `git am` or `git apply` would apply it, with the author and subject it
//! carries or, for a file with no mail header, its file name's subject
//! and patchbench's identity, said in a note; the five stack as one quilt
//! series; and what `git am` refuses is refused in its words, naming the
//! file and the mail, with exit code 4. Nothing is built or booted.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const TARBALL: &str = "/usr/src/linux-source-6.12.tar.xz";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pasted")
        .join(name)
}

fn run(args: &[&str]) -> (Output, String, String) {
    assert!(
        Path::new(TARBALL).exists(),
        "{TARBALL} is missing: run ci/setup-host.sh (Debian package linux-source-6.12)"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_patchbench"))
        .args(args)
        .arg("--cache-dir")
        .arg(common::cache_dir())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("patchbench runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

/// `patchbench apply --tree TARBALL --series SERIES`.
fn apply(series: &Path) -> (Output, String, String) {
    run(&[
        "apply",
        "--tree",
        TARBALL,
        "--series",
        series.to_str().unwrap(),
    ])
}

/// The cached repository the tarball was imported into.
fn cached_repo() -> git2::Repository {
    static NAME: OnceLock<String> = OnceLock::new();
    let name = NAME.get_or_init(|| {
        let sha = patchbench::tree::sha256_file(Path::new(TARBALL)).unwrap();
        patchbench::tree::tarball_cache_name(Path::new(TARBALL), &sha)
    });
    git2::Repository::open(common::cache_dir().join("trees").join(name)).unwrap()
}

/// The commit `apply` printed as `B = <id>`.
fn b_commit<'r>(repo: &'r git2::Repository, stdout: &str) -> git2::Commit<'r> {
    let b = stdout
        .lines()
        .find_map(|l| l.strip_prefix("B = "))
        .unwrap_or_else(|| panic!("no B line:\n{stdout}"));
    repo.find_commit(git2::Oid::from_str(b).unwrap()).unwrap()
}

fn vmscan_at(repo: &git2::Repository, commit: &git2::Commit<'_>) -> String {
    let entry = commit
        .tree()
        .unwrap()
        .get_path(Path::new("mm/vmscan.c"))
        .unwrap();
    String::from_utf8(repo.find_blob(entry.id()).unwrap().content().to_vec()).unwrap()
}

/// Each fixture: its file, the subject and author its commit gets, the
/// note the run gives (a part of it), and the comment line it leaves in
/// mm/vmscan.c.
const FORMS: &[(&str, &str, &str, Option<&str>, &str)] = &[
    (
        "0001-mm-vmscan-punctuate-a-comment.patch",
        "mm: vmscan: punctuate a comment",
        "Paste Tester <paste@example.org>",
        Some(
            "0001-mm-vmscan-punctuate-a-comment.patch has no Date: header: its commit takes its parent commit's date",
        ),
        " * This misses isolated folios, which are not accounted for, to save counters.\n",
    ),
    (
        "mm-vmscan-root-reclaim-comment.patch",
        "mm-vmscan-root-reclaim-comment",
        "patchbench <patchbench@localhost>",
        Some(
            "mm-vmscan-root-reclaim-comment.patch has no mail header: subject \"mm-vmscan-root-reclaim-comment\" from its file name, author patchbench's identity",
        ),
        " * Returns true for reclaim on the root cgroup: this is true for direct\n",
    ),
    (
        "mm-vmscan-flush-reclaim-state-comment.patch",
        "mm: vmscan: \"the pages\" in the comment on flush_reclaim_state()",
        "Paste Tester <paste@example.org>",
        None,
        " * flush_reclaim_state(): add the pages reclaimed outside of LRU-based reclaim to\n",
    ),
    (
        "vmscan-write-error-comment.diff",
        "vmscan-write-error-comment",
        "patchbench <patchbench@localhost>",
        Some(
            "vmscan-write-error-comment.diff has no mail header: subject \"vmscan-write-error-comment\" from its file name",
        ),
        " * We detected a synchronous write error writing out a folio.  Probably\n",
    ),
    (
        "0005-mm-vmscan-say-reclaim-in-a-comment.patch",
        "mm vmscan say reclaim in a comment",
        "patchbench <patchbench@localhost>",
        Some(
            "0005-mm-vmscan-say-reclaim-in-a-comment.patch has no mail header: subject \"mm vmscan say reclaim in a comment\" from its file name",
        ),
        " * This function tests whether the reclaim currently in progress can assume\n",
    ),
];

#[test]
fn each_pasted_form_applies_to_the_real_tree_with_its_author_and_subject() {
    for (file, subject, author, note, line) in FORMS {
        let (out, stdout, stderr) = apply(&fixture(file));
        assert_eq!(out.status.code(), Some(0), "{file}\n{stdout}\n{stderr}");
        let row = stdout
            .lines()
            .find(|l| l.trim_start().starts_with("1/1 "))
            .unwrap_or_else(|| panic!("{file}: no patch row\n{stdout}"));
        assert!(
            row.ends_with(&format!("  {subject}  [exact]")),
            "{file}: {row}"
        );
        match note {
            Some(note) => assert!(stderr.contains(note), "{file}\n{stderr}"),
            None => assert!(!stderr.contains(" has no "), "{file}\n{stderr}"),
        }
        let repo = cached_repo();
        let b = b_commit(&repo, &stdout);
        let who = b.author();
        assert_eq!(
            format!("{} <{}>", who.name().unwrap(), who.email().unwrap()),
            *author,
            "{file}"
        );
        assert_eq!(b.summary().unwrap(), Some(*subject), "{file}");
        // No date in the patch: the base's, so the commit is the same on
        // every run.
        let parent = b.parent(0).unwrap();
        if note.is_some() {
            assert_eq!(who.when(), parent.time(), "{file}");
        }
        let (before, after) = (vmscan_at(&repo, &parent), vmscan_at(&repo, &b));
        assert!(after.contains(line) && !before.contains(line), "{file}");
        assert_eq!(before.lines().count(), after.lines().count(), "{file}");
    }
}

/// quilt's own description becomes the commit's body; the diffstat under
/// it does not.
#[test]
fn a_quilt_patchs_description_is_its_commit_message_body() {
    let (out, stdout, stderr) = apply(&fixture("mm-vmscan-root-reclaim-comment.patch"));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let repo = cached_repo();
    let b = b_commit(&repo, &stdout);
    let body = b.body().unwrap().unwrap_or_default().to_string();
    assert!(
        body.starts_with("mm: vmscan: a colon in the comment on root_reclaim()\n\nA fixture"),
        "{body}"
    );
    assert!(
        body.trim_end()
            .ends_with("Signed-off-by: Paste Tester <paste@example.org>"),
        "{body}"
    );
}

#[test]
fn the_five_forms_stack_as_one_quilt_series() {
    let (out, stdout, stderr) = apply(&fixture(""));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with("series: 5 patch(es) on base "),
        "{stdout}"
    );
    assert_eq!(stdout.matches("  [exact]").count(), 5, "{stdout}");
    assert_eq!(
        stderr.matches(" has no mail header: ").count(),
        3,
        "{stderr}"
    );
    let repo = cached_repo();
    let b = b_commit(&repo, &stdout);
    let after = vmscan_at(&repo, &b);
    for (file, .., line) in FORMS {
        assert!(after.contains(line), "{file}");
    }
}

/// The path `run --series` takes (load, apply, the notes) without the
/// builds: `plan --series` applies the series the same way.
#[test]
fn plan_reads_the_pasted_series_and_says_how_it_read_it() {
    let (out, stdout, stderr) = run(&["plan", "--series", "tests/fixtures/pasted"]);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("series: 5 patch(es) on base "), "{stdout}");
    assert_eq!(
        stderr.matches(" has no mail header: ").count(),
        3,
        "{stderr}"
    );
    assert_eq!(
        stderr.matches(" has no Date: header: ").count(),
        1,
        "{stderr}"
    );
}

#[test]
fn what_git_am_refuses_exits_4_in_its_words_naming_the_file_and_mail() {
    let dir = tempfile::tempdir().unwrap();
    let dated =
        std::fs::read_to_string(fixture("mm-vmscan-flush-reclaim-state-comment.patch")).unwrap();
    let empty = "From: Paste Tester <paste@example.org>\nSubject: [PATCH 2/2] mm: nothing\n\nNo diff here.\n";
    let mbox = dir.path().join("two.mbox");
    std::fs::write(
        &mbox,
        format!(
            "From x Mon Sep 17 00:00:00 2001\n{dated}\nFrom y Mon Sep 17 00:00:00 2001\n{empty}"
        ),
    )
    .unwrap();
    let notes = dir.path().join("notes.txt");
    std::fs::write(
        &notes,
        " mm/vmscan.c | 2 +-\n 1 file changed\n\nsee the list\n",
    )
    .unwrap();
    let stale = dir.path().join("stale.diff");
    std::fs::write(
        &stale,
        std::fs::read_to_string(fixture("vmscan-write-error-comment.diff"))
            .unwrap()
            .replace(" * -ENOSPC.", " * -EIO."),
    )
    .unwrap();
    for (series, want) in [
        (
            &mbox,
            format!(
                "patch {} (mail 2): the patch is empty: no diff found in the mail",
                mbox.display()
            ),
        ),
        (
            &notes,
            format!(
                "patch {}: neither a mail nor a diff: it has no mail header",
                notes.display()
            ),
        ),
        (
            &stale,
            format!(
                "patch 1/1 \"stale\" ({}) does not apply: hunk #1 of mm/vmscan.c does not apply at line 471",
                stale.display()
            ),
        ),
    ] {
        let (out, stdout, stderr) = apply(series);
        assert_eq!(
            out.status.code(),
            Some(patchbench::exit::PATCH),
            "{}\n{stdout}\n{stderr}",
            series.display()
        );
        assert!(stderr.contains(&want), "{want}\n{stderr}");
        // mailparse's own words for a header line that opens with a space.
        assert!(!stderr.contains("overhanging"), "{stderr}");
    }
}
