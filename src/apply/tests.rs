//! End-to-end tests of [`apply_patch`] on tiny repositories in tempdirs,
//! with small `git format-patch` mails.

use git2::{Oid, Repository};

use super::*;

/// A repository whose base tree holds `files` (paths may have folders).
fn repo_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Repository, Oid) {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    let empty = repo.treebuilder(None).unwrap().write().unwrap();
    let mut update = git2::build::TreeUpdateBuilder::new();
    for (path, content) in files {
        let blob = repo.blob(content.as_bytes()).unwrap();
        update.upsert(*path, blob, git2::FileMode::Blob);
    }
    let tree = update
        .create_updated(&repo, &repo.find_tree(empty).unwrap())
        .unwrap();
    (dir, repo, tree)
}

fn apply(repo: &Repository, tree: Oid, patch: &str) -> Result<Applied, ApplyFailure> {
    apply_fuzzy(repo, tree, patch, 0)
}

/// [`apply`] letting up to `fuzz` context lines differ, as `fuzz: N` asks.
fn apply_fuzzy(
    repo: &Repository,
    tree: Oid,
    patch: &str,
    fuzz: u32,
) -> Result<Applied, ApplyFailure> {
    let base = repo.find_tree(tree).unwrap();
    apply_patch(repo, &base, patch.as_bytes(), fuzz)
}

fn read(repo: &Repository, tree: Oid, path: &str) -> Option<String> {
    let tree = repo.find_tree(tree).unwrap();
    let entry = tree.get_path(std::path::Path::new(path)).ok()?;
    let blob = repo.find_blob(entry.id()).unwrap();
    Some(String::from_utf8(blob.content().to_vec()).unwrap())
}

/// A `git format-patch` mail around `diff`.
fn mail(diff: &str) -> String {
    format!(
        "From 1234 Mon Sep 17 00:00:00 2001\nFrom: T <t@example.org>\n\
         Date: Thu, 24 Oct 2024 09:36:00 +0000\nSubject: [PATCH] mm: test\n\n\
         Why.\n---\n{diff}-- \n2.47.3\n"
    )
}

/// The header of a change to `path` whose preimage is `pre` (abbreviated).
fn modify(path: &str, pre: &str) -> String {
    format!(
        "diff --git a/{path} b/{path}\nindex {pre}..2222222222 100644\n--- a/{path}\n+++ b/{path}\n"
    )
}

/// "line 1\n" ... "line n\n".
fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

/// 1-based line of the first occurrence of `needle` in `text`.
fn line_of(text: &str, needle: &str) -> usize {
    text[..text.find(needle).unwrap()].matches('\n').count() + 1
}

const CHANGE_7: &str = "@@ -4,7 +4,7 @@ int f(void)\n line 4\n line 5\n line 6\n-line 7\n+seven\n line 8\n line 9\n line 10\n";
const CHANGE_17: &str = "@@ -14,7 +14,7 @@\n line 14\n line 15\n line 16\n-line 17\n+seventeen\n line 18\n line 19\n line 20\n";

fn exact(index: usize) -> HunkResult {
    HunkResult {
        index,
        offset: 0,
        fuzz: 0,
    }
}

#[test]
fn a_patch_at_its_stated_lines_applies_exactly() {
    let (_d, repo, base) = repo_with(&[("mm/memcontrol.c", &numbered(20))]);
    let patch = mail(&format!(
        "{}{CHANGE_7}{CHANGE_17}",
        modify("mm/memcontrol.c", "1111111")
    ));
    let applied = apply(&repo, base, &patch).unwrap();
    assert_eq!(applied.method, Method::Exact);
    assert_eq!(
        applied.files,
        [FileResult {
            path: "mm/memcontrol.c".into(),
            method: Method::Exact,
            hunks: vec![exact(1), exact(2)],
        }]
    );
    let new = read(&repo, applied.tree, "mm/memcontrol.c").unwrap();
    assert!(
        new.contains("line 6\nseven\nline 8\n") && new.contains("line 16\nseventeen\nline 18\n")
    );
    assert!(repo.references().unwrap().next().is_none());
}

#[test]
fn context_moved_down_applies_fuzzily_at_an_offset_without_fuzz() {
    let base_text = format!("new 1\nnew 2\nnew 3\n{}", numbered(20));
    let (_d, repo, base) = repo_with(&[("a.c", &base_text)]);
    let patch = mail(&format!(
        "{}{CHANGE_7}{CHANGE_17}",
        modify("a.c", "1111111")
    ));
    let applied = apply(&repo, base, &patch).unwrap();
    assert_eq!(applied.method, Method::Fuzzy);
    let moved = |index| HunkResult {
        index,
        offset: 3,
        fuzz: 0,
    };
    assert_eq!(applied.files[0].hunks, [moved(1), moved(2)]);
    let new = read(&repo, applied.tree, "a.c").unwrap();
    assert!(new.starts_with("new 1\nnew 2\nnew 3\nline 1\n"));
    assert!(
        new.contains("line 6\nseven\nline 8\n") && new.contains("line 16\nseventeen\nline 18\n")
    );
}

/// The hidden-input conflict: a leading context line differs from the
/// tree. `git am` refuses it, and so does patchbench unless asked; the
/// refusal says patch(1) would fuzz it, and where the line differs.
#[test]
fn a_changed_context_line_is_refused_unless_fuzz_is_asked_for() {
    let base_text = numbered(20).replace("line 4\n", "line 4 (renamed)\n");
    let (_d, repo, base) = repo_with(&[("a.c", &base_text)]);
    let patch = mail(&format!("{}{CHANGE_7}", modify("a.c", "1111111")));

    let failure = apply(&repo, base, &patch).unwrap_err();
    let ApplyFailure::Conflict {
        hunk,
        expected_line,
        fuzz_would_apply,
        ..
    } = &failure
    else {
        panic!("{failure:?}");
    };
    assert_eq!((*hunk, *expected_line, *fuzz_would_apply), (1, 4, Some(1)));
    let message = failure.to_string();
    assert!(
        message.starts_with(
            "hunk #1 of a.c does not apply at line 4 (patch(1) would apply it with fuzz 1"
        ) && message.contains("`fuzz: 1` in the campaign or --fuzz 1"),
        "{message}"
    );
    let details = failure.details().unwrap();
    assert!(
        details.contains("     4  ! line 4 (renamed)\n"),
        "{details}"
    );
    assert!(details.contains("     5    line 5\n"), "{details}");

    // Asked for, fuzz 1 applies it, and the hunk records the fuzz used.
    let applied = apply_fuzzy(&repo, base, &patch, 1).unwrap();
    assert_eq!(applied.method, Method::Fuzzy);
    assert_eq!(
        applied.files[0].hunks,
        [HunkResult {
            index: 1,
            offset: 0,
            fuzz: 1,
        }]
    );
    let new = read(&repo, applied.tree, "a.c").unwrap();
    assert!(
        new.contains("line 4 (renamed)\nline 5\nline 6\nseven\n"),
        "{new}"
    );
}

#[test]
fn a_conflict_names_the_hunk_and_line_and_shows_the_nearest_region() {
    let base_text = numbered(20).replace("line 17\n", "LINE SEVENTEEN\n");
    let (dir, repo, base) = repo_with(&[("mm/memcontrol.c", &base_text)]);
    let patch = mail(&format!(
        "{}{CHANGE_7}{CHANGE_17}",
        modify("mm/memcontrol.c", "1111111")
    ));
    let failure = apply(&repo, base, &patch).unwrap_err();
    assert_eq!(
        failure.to_string(),
        "hunk #2 of mm/memcontrol.c does not apply at line 14"
    );
    let ApplyFailure::Conflict {
        hunk_text, nearest, ..
    } = &failure
    else {
        panic!("{failure:?}");
    };
    assert!(
        hunk_text.starts_with("@@ -14,7 +14,7 @@\n line 14\n"),
        "{hunk_text}"
    );
    assert!(
        hunk_text.contains("\n-line 17\n+seventeen\n"),
        "{hunk_text}"
    );
    assert_eq!(
        nearest.as_ref().unwrap(),
        &NearestRegion {
            start_line: 14,
            text: "  line 14\n  line 15\n  line 16\n! LINE SEVENTEEN\n  line 18\n  line 19\n  line 20\n"
                .into(),
            matching_lines: 6,
            hunk_lines: 7,
        }
    );
    let details = failure.details().unwrap();
    assert!(details.contains("6 of 7 lines matching"), "{details}");
    assert!(details.contains("    17  ! LINE SEVENTEEN\n"), "{details}");
    // Nothing but objects: no ref, no index, no files in the work tree.
    assert!(repo.references().unwrap().next().is_none());
    assert!(!dir.path().join(".git/index").exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn an_already_applied_patch_is_told_apart_from_a_conflict() {
    let (_d, repo, base) = repo_with(&[("a.c", &numbered(20))]);
    let patch = mail(&format!("{}{CHANGE_7}", modify("a.c", "1111111")));
    let once = apply(&repo, base, &patch).unwrap();
    let failure = apply(&repo, once.tree, &patch).unwrap_err();
    assert_eq!(
        failure.to_string(),
        "already applied: its reverse applies to a.c"
    );
    assert_eq!(failure.details(), None);
    // Also when the code has moved since.
    let shifted = format!("top\n{}", read(&repo, once.tree, "a.c").unwrap());
    let (_d2, repo2, moved) = repo_with(&[("a.c", &shifted)]);
    assert!(matches!(
        apply(&repo2, moved, &patch),
        Err(ApplyFailure::AlreadyApplied { files }) if files == ["a.c"]
    ));
}

#[test]
fn tabs_turned_into_spaces_are_reported_as_whitespace_damage_not_applied() {
    let base_text = "int f(void)\n{\n\tint x = 0;\n\n\treturn x;\n}\n";
    let (_d, repo, base) = repo_with(&[("f.c", base_text)]);
    let hunk = "@@ -2,5 +2,5 @@\n {\n-        int x = 0;\n+        int x = 1;\n \n         return x;\n }\n";
    let patch = mail(&format!("{}{hunk}", modify("f.c", "1111111")));
    let failure = apply(&repo, base, &patch).unwrap_err();
    let header = line_of(&patch, "@@ -2,5");
    assert_eq!(
        failure.to_string(),
        format!(
            "malformed patch at line {header}: hunk #1 matches line 2 of f.c only if whitespace is \
             ignored: the patch is whitespace-damaged (tabs turned into spaces or trailing blanks \
             stripped by a mail client?)"
        )
    );
}

#[test]
fn a_context_line_that_lost_its_space_is_malformed_at_that_line() {
    let (_d, repo, base) = repo_with(&[("a.c", &numbered(20))]);
    let damaged = CHANGE_7.replace(" line 5\n", "line 5\n");
    let patch = mail(&format!("{}{damaged}", modify("a.c", "1111111")));
    let failure = apply(&repo, base, &patch).unwrap_err();
    let ApplyFailure::Malformed { line, reason } = failure else {
        panic!("{failure:?}");
    };
    assert_eq!(line, Some(line_of(&patch, "\nline 5\n") + 1));
    assert!(reason.contains("lost its leading space"), "{reason}");
}

#[test]
fn a_blank_context_line_that_lost_its_space_still_applies_exactly() {
    let base_text = "a\nb\n\nc\nd\n";
    let (_d, repo, base) = repo_with(&[("a.c", base_text)]);
    let patch = mail(&format!(
        "{}@@ -1,5 +1,5 @@\n a\n b\n\n-c\n+C\n d\n",
        modify("a.c", "1111111")
    ));
    let applied = apply(&repo, base, &patch).unwrap();
    assert_eq!(applied.method, Method::Exact);
    assert_eq!(read(&repo, applied.tree, "a.c").unwrap(), "a\nb\n\nC\nd\n");
}

#[test]
fn a_truncated_hunk_is_malformed_at_its_header_with_both_counts() {
    let (_d, repo, base) = repo_with(&[("a.c", &numbered(20))]);
    let truncated = CHANGE_7.replace(" line 9\n line 10\n", "");
    let patch = mail(&format!("{}{truncated}", modify("a.c", "1111111")));
    let header = line_of(&patch, "@@ -4,7");
    let failure = apply(&repo, base, &patch).unwrap_err();
    assert_eq!(
        failure.to_string(),
        format!(
            "malformed patch at line {header}: hunk at patch line {header} claims 7 old and 7 new \
             lines but has 5 and 5"
        )
    );
}

#[test]
fn a_preimage_blob_in_the_repository_rescues_a_patch_offset_and_fuzz_cannot() {
    // The patch was made against `preimage`; the base has moved the code
    // down 3 lines and changed line 6, inside the hunk's context.
    let preimage = numbered(20);
    let base_text = format!(
        "new 1\nnew 2\nnew 3\n{}",
        preimage.replace("line 6\n", "line six\n")
    );
    let (_d, repo, base) = repo_with(&[("a.c", &base_text)]);
    let hunk = "@@ -1,11 +1,11 @@\n line 1\n line 2\n line 3\n-line 4\n+four\n line 5\n \
                line 6\n line 7\n-line 8\n+eight\n line 9\n line 10\n line 11\n";
    let without = mail(&format!("{}{hunk}", modify("a.c", "1111111")));
    assert!(matches!(
        apply(&repo, base, &without),
        Err(ApplyFailure::Conflict { hunk: 1, .. })
    ));

    let pre = repo.blob(preimage.as_bytes()).unwrap().to_string();
    let with = mail(&format!("{}{hunk}", modify("a.c", &pre[..12])));
    let applied = apply(&repo, base, &with).unwrap();
    assert_eq!(applied.method, Method::ThreeWay);
    assert_eq!(
        applied.files,
        [FileResult {
            path: "a.c".into(),
            method: Method::ThreeWay,
            hunks: vec![],
        }]
    );
    let new = read(&repo, applied.tree, "a.c").unwrap();
    assert!(
        new.starts_with(
            "new 1\nnew 2\nnew 3\nline 1\nline 2\nline 3\nfour\nline 5\nline six\nline 7\neight\n"
        ),
        "{new}"
    );
}

const NEW_FILE: &str = "diff --git a/mm/new.c b/mm/new.c\nnew file mode 100644\nindex 0000000..3333333\n--- /dev/null\n+++ b/mm/new.c\n@@ -0,0 +1,2 @@\n+int x;\n+int y;\n";
const DELETE_OLD: &str = "diff --git a/lib/old.c b/lib/old.c\ndeleted file mode 100644\nindex 4444444..0000000\n--- a/lib/old.c\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-gone 1\n-gone 2\n";

#[test]
fn new_and_deleted_files_apply_exactly() {
    let (_d, repo, base) = repo_with(&[("a.c", "a\n"), ("lib/old.c", "gone 1\ngone 2\n")]);
    let applied = apply(&repo, base, &mail(&format!("{NEW_FILE}{DELETE_OLD}"))).unwrap();
    assert_eq!(applied.method, Method::Exact);
    assert_eq!(
        read(&repo, applied.tree, "mm/new.c").as_deref(),
        Some("int x;\nint y;\n")
    );
    assert_eq!(read(&repo, applied.tree, "lib/old.c"), None);
    let paths: Vec<_> = applied.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["mm/new.c", "lib/old.c"]);
}

#[test]
fn new_deleted_and_fuzzy_files_apply_together_file_by_file() {
    let base_text = format!("moved\n{}", numbered(20));
    let (_d, repo, base) = repo_with(&[("a.c", &base_text), ("lib/old.c", "gone 1\ngone 2\n")]);
    let modified = format!("{}{CHANGE_7}", modify("a.c", "1111111"));
    let applied = apply(
        &repo,
        base,
        &mail(&format!("{NEW_FILE}{modified}{DELETE_OLD}")),
    )
    .unwrap();
    assert_eq!(applied.method, Method::Fuzzy);
    let methods: Vec<_> = applied
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.method))
        .collect();
    assert_eq!(
        methods,
        [
            ("mm/new.c", Method::Exact),
            ("a.c", Method::Fuzzy),
            ("lib/old.c", Method::Exact)
        ]
    );
    assert_eq!(
        read(&repo, applied.tree, "mm/new.c").as_deref(),
        Some("int x;\nint y;\n")
    );
    // The folder left empty goes with its last file.
    assert!(
        repo.find_tree(applied.tree)
            .unwrap()
            .get_name("lib")
            .is_none()
    );
    assert!(read(&repo, applied.tree, "a.c").unwrap().contains("seven"));
}

#[test]
fn a_deletion_of_a_changed_file_conflicts() {
    let (_d, repo, base) = repo_with(&[("lib/old.c", "gone 1\ngone 2\nextra\n")]);
    let failure = apply(&repo, base, &mail(DELETE_OLD)).unwrap_err();
    assert_eq!(
        failure.to_string(),
        "hunk #1 of lib/old.c does not apply at line 1"
    );
}

#[test]
fn a_patch_to_a_missing_file_or_creating_an_existing_one_says_so() {
    let (_d, repo, base) = repo_with(&[("a.c", "a\n"), ("mm/new.c", "other\n")]);
    let patch = mail(&format!("{}{CHANGE_7}", modify("gone.c", "1111111")));
    assert_eq!(
        apply(&repo, base, &patch).unwrap_err().to_string(),
        "gone.c does not exist in the base tree"
    );
    assert_eq!(
        apply(&repo, base, &mail(NEW_FILE)).unwrap_err().to_string(),
        "the patch creates mm/new.c, which already exists in the base tree"
    );
}

#[test]
fn a_rename_with_moved_context_applies_to_the_new_path() {
    let (_d, repo, base) = repo_with(&[("old.c", &format!("top\n{}", numbered(20)))]);
    let rename = format!(
        "diff --git a/old.c b/new.c\nsimilarity index 90%\nrename from old.c\nrename to new.c\n\
         index 1111111..2222222 100644\n--- a/old.c\n+++ b/new.c\n{CHANGE_7}"
    );
    let applied = apply(&repo, base, &mail(&rename)).unwrap();
    assert_eq!(applied.files[0].path, "new.c");
    assert_eq!(applied.files[0].hunks[0].offset, 1);
    assert_eq!(read(&repo, applied.tree, "old.c"), None);
    assert!(
        read(&repo, applied.tree, "new.c")
            .unwrap()
            .contains("seven")
    );
}

#[test]
fn a_missing_final_newline_is_kept_through_the_fuzzy_path() {
    let (_d, repo, base) = repo_with(&[("a.c", "moved\none\ntwo\nthree")]);
    let hunk = "@@ -1,3 +1,4 @@\n one\n two\n-three\n\\ No newline at end of file\n+three\n+four\n\\ No newline at end of file\n";
    let applied = apply(
        &repo,
        base,
        &mail(&format!("{}{hunk}", modify("a.c", "1111111"))),
    )
    .unwrap();
    assert_eq!(applied.method, Method::Fuzzy);
    assert_eq!(
        read(&repo, applied.tree, "a.c").unwrap(),
        "moved\none\ntwo\nthree\nfour"
    );
}

#[test]
fn text_that_is_not_a_patch_is_malformed() {
    let (_d, repo, base) = repo_with(&[("a.c", "a\n")]);
    let failure = apply(
        &repo,
        base,
        "From: x\nSubject: [PATCH 0/2] cover\n\nhello\n",
    )
    .unwrap_err();
    assert!(
        matches!(failure, ApplyFailure::Malformed { .. }),
        "{failure:?}"
    );
}

/// `git format-patch --binary`: a.c gains "b" after "a"; b.bin goes from
/// `\0\x01\x02bin` to `\0\x01\x03bin2`.
const BINARY_AND_TEXT: &str = include_str!("../../tests/fixtures/apply/binary-and-text.patch");

#[test]
fn a_binary_change_applies_beside_a_fuzzy_text_change_and_is_seen_when_applied() {
    let (_d, repo, base) = repo_with(&[("a.c", "x\na\n")]);
    let bin = repo.blob(b"\x00\x01\x02bin").unwrap();
    let mut update = git2::build::TreeUpdateBuilder::new();
    update.upsert("b.bin", bin, git2::FileMode::Blob);
    let base = update
        .create_updated(&repo, &repo.find_tree(base).unwrap())
        .unwrap();
    let applied = apply(&repo, base, BINARY_AND_TEXT).unwrap();
    assert_eq!(applied.method, Method::Fuzzy);
    assert_eq!(applied.files[1].path, "b.bin");
    assert_eq!(applied.files[1].method, Method::Exact);
    let tree = repo.find_tree(applied.tree).unwrap();
    let blob = repo
        .find_blob(tree.get_name("b.bin").unwrap().id())
        .unwrap();
    assert_eq!(blob.content(), b"\x00\x01\x03bin2");
    assert_eq!(read(&repo, applied.tree, "a.c").unwrap(), "x\na\nb\n");
    assert!(matches!(
        apply(&repo, applied.tree, BINARY_AND_TEXT),
        Err(ApplyFailure::AlreadyApplied { .. })
    ));
    // A binary file that differs from the patch's preimage does not apply.
    let other = repo.blob(b"other").unwrap();
    let mut update = git2::build::TreeUpdateBuilder::new();
    update.upsert("b.bin", other, git2::FileMode::Blob);
    let changed = update
        .create_updated(&repo, &repo.find_tree(base).unwrap())
        .unwrap();
    assert_eq!(
        apply(&repo, changed, BINARY_AND_TEXT)
            .unwrap_err()
            .to_string(),
        "the binary change to b.bin does not apply"
    );
}

/// A traditional section (no `diff --git`) changing `path` as `diff -u`
/// writes it, with timestamps.
fn traditional(path: &str) -> String {
    format!(
        "--- a/{path}\t2026-12-05 10:00:00.000000000 +0000\n+++ b/{path}\t2026-12-05 10:01:00.000000000 +0000\n"
    )
}

#[test]
fn a_traditional_diff_applies_exactly_and_at_an_offset() {
    let (_d, repo, base) = repo_with(&[("mm/a.c", &numbered(20))]);
    let patch = format!("{}{CHANGE_7}", traditional("mm/a.c"));
    let applied = apply(&repo, base, &patch).unwrap();
    assert_eq!(applied.method, Method::Exact);
    assert!(
        read(&repo, applied.tree, "mm/a.c")
            .unwrap()
            .contains("seven\n")
    );
    // Moved down by two lines: the same search as for a git diff.
    let moved = format!("x\ny\n{}", numbered(20));
    let (_d, repo, base) = repo_with(&[("mm/a.c", &moved)]);
    let applied = apply(&repo, base, &patch).unwrap();
    assert_eq!(applied.method, Method::Fuzzy);
    assert_eq!(applied.files[0].hunks[0].offset, 2);
}

/// The mm tree's patch: a mail, a diffstat, `~name` old names, a new file
/// in git's form (as akpm's scripts write one) and a deletion, then `_`.
#[test]
fn an_mm_tree_patch_mixing_both_forms_creates_changes_and_deletes() {
    let (_d, repo, base) = repo_with(&[("mm/a.c", &numbered(20)), ("mm/old.c", "gone\n")]);
    let diff = format!(
        " mm/a.c   |    2 +-\n mm/new.c |    1 +\n mm/old.c |    1 -\n 3 files changed\n\n\
         --- a/mm/a.c~mm-change-things\n+++ a/mm/a.c\n{CHANGE_7}\
         diff --git a/mm/new.c a/mm/new.c\nnew file mode 100644\n--- /dev/null\n+++ a/mm/new.c\n@@ -0,0 +1 @@\n+fresh\n\
         --- a/mm/old.c~mm-change-things\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n_\n"
    );
    let applied = apply(&repo, base, &mail(&diff)).unwrap();
    let paths: Vec<&str> = applied.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["mm/a.c", "mm/new.c", "mm/old.c"]);
    assert!(
        read(&repo, applied.tree, "mm/a.c")
            .unwrap()
            .contains("seven\n")
    );
    assert_eq!(read(&repo, applied.tree, "mm/new.c").unwrap(), "fresh\n");
    assert_eq!(read(&repo, applied.tree, "mm/old.c"), None);
}

/// A `diff --git` line is added per traditional file; the failures still
/// name the lines of the patch as it was given.
#[test]
fn failures_in_a_traditional_diff_name_its_own_lines() {
    let (_d, repo, base) = repo_with(&[("mm/a.c", &numbered(20)), ("mm/b.c", &numbered(20))]);
    let truncated = CHANGE_7.replace(" line 9\n line 10\n", "");
    let patch = format!(
        "{}{CHANGE_7}{}{truncated}",
        traditional("mm/a.c"),
        traditional("mm/b.c")
    );
    let header = line_of(&patch, "@@ -4,7") + CHANGE_7.lines().count() + 2;
    assert!(
        patch
            .lines()
            .nth(header - 1)
            .unwrap()
            .starts_with("@@ -4,7")
    );
    let failure = apply(&repo, base, &patch).unwrap_err();
    assert_eq!(
        failure.to_string(),
        format!(
            "malformed patch at line {header}: hunk at patch line {header} claims 7 old and 7 new \
             lines but has 5 and 5"
        )
    );
    // Whitespace damage is found after parsing, on the hunks' header lines.
    let base_text = "int f(void)\n{\n\tint x = 0;\n\n\treturn x;\n}\n";
    let (_d, repo, base) = repo_with(&[("mm/f.c", base_text), ("mm/a.c", &numbered(20))]);
    let hunk = "@@ -2,5 +2,5 @@\n {\n-        int x = 0;\n+        int x = 1;\n \n         return x;\n }\n";
    let patch = format!(
        "{}{CHANGE_7}{}{hunk}",
        traditional("mm/a.c"),
        traditional("mm/f.c")
    );
    let failure = apply(&repo, base, &patch).unwrap_err();
    let ApplyFailure::Malformed { line, .. } = failure else {
        panic!("{failure:?}");
    };
    assert_eq!(line, Some(line_of(&patch, "@@ -2,5")));
}

#[test]
fn a_traditional_name_with_no_directory_to_strip_is_refused_at_its_line() {
    let (_d, repo, base) = repo_with(&[("a.c", &numbered(20))]);
    let patch = format!("text\n--- a.c.orig\n+++ a.c\n{CHANGE_7}");
    let failure = apply(&repo, base, &patch).unwrap_err();
    assert_eq!(
        failure.to_string(),
        "malformed patch at line 2: `--- a.c.orig` names no file once its first directory is \
         stripped (a patch is read at -p1, as git apply and patch -p1 read it)"
    );
}

#[test]
fn a_hunk_without_a_file_header_is_refused_in_git_applys_words() {
    let (_d, repo, base) = repo_with(&[("a.c", &numbered(20))]);
    let failure = apply(&repo, base, &format!("text\n{CHANGE_7}")).unwrap_err();
    assert_eq!(
        failure.to_string(),
        "malformed patch at line 2: a hunk (`@@ -l,n +l,n @@`) with no file header \
         (`--- a/path`, `+++ b/path`) before it: a patch fragment without a header, as git \
         apply says"
    );
}

/// git apply: "corrupt patch at line 13"; patch(1) drops the cut line and
/// fuzzes.
#[test]
fn a_patch_cut_in_the_middle_of_its_last_line_is_refused_at_that_line() {
    let (_d, repo, base) = repo_with(&[("a.c", &numbered(20))]);
    let patch = format!("{}{}", modify("a.c", "1111111"), CHANGE_7.trim_end());
    let failure = apply(&repo, base, &patch).unwrap_err();
    assert_eq!(
        failure.to_string(),
        "malformed patch at line 13: corrupt patch: the line ends without a line break (cut \
         short when it was copied?)"
    );
}
