//! Tests of series loading and applying.

use super::*;

pub(crate) const MAIL: &str = "From 1234 Mon Sep 17 00:00:00 2001\nFrom: =?UTF-8?q?J=C3=B6rg_Tester?= <jt@example.org>\nDate: Thu, 24 Oct 2024 09:36:00 +1300\nMessage-ID: <p1@example.org>\nSubject: [PATCH 1/1] mm: change\n the greeting\n\nWhy it changes.\n---\n a.txt | 2 +-\n\ndiff --git a/a.txt b/a.txt\nindex 1111111..2222222 100644\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n-- \n2.47.3\n";

fn repo_with_file(dir: &Path, content: &str) -> (Repository, Oid) {
    let repo = Repository::init(dir).unwrap();
    let blob = repo.blob(content.as_bytes()).unwrap();
    let mut builder = repo.treebuilder(None).unwrap();
    builder.insert("a.txt", blob, 0o100644).unwrap();
    let tree = repo.find_tree(builder.write().unwrap()).unwrap();
    let sig = Signature::new("t", "t@t", &Time::new(0, 0)).unwrap();
    let oid = repo
        .commit(Some("HEAD"), &sig, &sig, "base", &tree, &[])
        .unwrap();
    repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
        .unwrap();
    drop(tree);
    drop(builder);
    (repo, oid)
}

/// A mail as a series reads it from its file `name`.
fn raw(name: &str, text: &[u8]) -> RawMail {
    RawMail {
        origin: name.into(),
        file_name: name.into(),
        bytes: text.to_vec(),
    }
}

fn one_patch_series(text: &str) -> Series {
    from_mails(
        SeriesSource::Path("s".into()),
        vec![raw("0001.patch", text.as_bytes())],
    )
    .unwrap()
}

#[test]
fn a_patch_becomes_one_commit_with_its_author_message_and_link() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, base) = repo_with_file(dir.path(), "one\ntwo\nthree\n");
    let applied = apply(&repo, base, &one_patch_series(MAIL), 0).unwrap();
    assert_eq!(applied[0].describe(), "exact");
    let commit = repo.find_commit(applied[0].commit).unwrap();
    assert_eq!(commit.parent_id(0).unwrap(), base);
    assert_eq!(commit.author().name().unwrap(), "Jörg Tester");
    assert_eq!(commit.author().when().offset_minutes(), 780);
    assert_eq!(
        commit.message().unwrap(),
        "mm: change the greeting\n\nWhy it changes.\n\nLink: https://lore.kernel.org/r/p1@example.org\n"
    );
    let blob = commit.tree().unwrap().get_name("a.txt").unwrap().id();
    assert_eq!(
        repo.find_blob(blob).unwrap().content(),
        b"one\nTWO\nthree\n"
    );
}

fn fixture(name: &str) -> Series {
    load_path(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/series")
            .join(name),
    )
    .unwrap()
}

/// Issue 17: the second copy went through the 3-way merge, changed
/// nothing, and was committed as an empty commit.
#[test]
fn the_same_patch_twice_is_committed_once_and_the_copy_is_reported_already_applied() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, base) = repo_with_file(dir.path(), "one\ntwo\nthree\n");
    let series = fixture("same-patch-twice");
    assert_eq!(series.patches.len(), 2);
    let applied = apply(&repo, base, &series, 0).unwrap();
    assert_eq!(applied[0].describe(), "exact");
    assert_eq!(
        applied[1].landing,
        Landing::AlreadyApplied(AlreadyApplied::NoChange(apply::Method::ThreeWay))
    );
    assert_eq!(
        applied[1].describe(),
        "already applied: applying it (3-way merge on the preimage blobs) changes nothing; skipped, nothing committed"
    );
    // One commit: B is the first copy's, and its parent is the base.
    assert_eq!(applied[1].commit, applied[0].commit);
    let b = repo.find_commit(applied[1].commit).unwrap();
    assert_eq!(b.parent_id(0).unwrap(), base);
    assert_ne!(b.tree_id(), repo.find_commit(base).unwrap().tree_id());
}

#[test]
fn a_series_whose_every_patch_is_in_the_base_fails_as_b_would_be_a() {
    let dir = tempfile::tempdir().unwrap();
    // The change is there already, and the preimage blob is not: only
    // the reverse applies.
    let (repo, base) = repo_with_file(dir.path(), "one\nTWO\nthree\n");
    let err = apply(&repo, base, &fixture("same-patch-twice"), 0).unwrap_err();
    assert!(
        matches!(err, SeriesError::NothingNew { total: 2, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("use `--series none`"), "{err}");
    let err = apply(&repo, base, &one_patch_series(MAIL), 0).unwrap_err();
    assert!(
        matches!(err, SeriesError::NothingNew { total: 1, .. }),
        "{err}"
    );
}

/// Issue 17: libgit2 refused the signature ("Neither name nor email
/// should contain angle brackets") and the whole series failed.
#[test]
fn an_author_with_angle_brackets_applies_and_keeps_the_name_in_the_series() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, base) = repo_with_file(dir.path(), "one\ntwo\nthree\n");
    let series = fixture("angle-brackets-author");
    assert_eq!(
        series.patches[0].mail.author_name,
        "Ann <the> Tester @torvalds"
    );
    let applied = apply(&repo, base, &series, 0).unwrap();
    let commit = repo.find_commit(applied[0].commit).unwrap();
    assert_eq!(commit.author().name().unwrap(), "Ann the Tester @torvalds");
    assert_eq!(commit.author().email().unwrap(), "ann@example.org");
}

#[test]
fn signature_text_drops_what_libgit2_refuses() {
    for (given, want) in [
        ("Jörg Tester", "Jörg Tester"),
        ("Ann <the> Tester", "Ann the Tester"),
        ("two\nlines\r\nhere", "two lines here"),
        ("nul\0byte", "nulbyte"),
        ("<>", "Fallback"),
        (" .,; ", "Fallback"),
        ("", "Fallback"),
    ] {
        let got = signature_text(given, "Fallback");
        assert_eq!(got, want, "{given:?}");
        Signature::now(&got, "a@b.c").unwrap_or_else(|e| panic!("{given:?}: {e}"));
    }
}

#[test]
fn a_patch_that_does_not_apply_names_itself_and_writes_no_ref() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, base) = repo_with_file(dir.path(), "uno\ndos\ntres\n");
    let err = apply(&repo, base, &one_patch_series(MAIL), 0).unwrap_err();
    let text = format!("{:#}", anyhow::Error::new(err));
    assert!(
        text.starts_with("patch 1/1 \"mm: change the greeting\" (0001.patch) does not apply: hunk #1 of a.txt does not apply at line 1\nthe hunk:\n"),
        "{text}"
    );
    // The evidence ends the message: no cause trails it.
    assert!(!text.contains("\n:"), "{text}");
    // Nothing changed: HEAD, the refs, the index and the work tree.
    assert_eq!(repo.head().unwrap().target(), Some(base));
    assert_eq!(repo.references().unwrap().count(), 1);
    assert!(repo.statuses(None).unwrap().is_empty());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "uno\ndos\ntres\n"
    );
}

fn numbered(n: u32, total: u32, subject: &str) -> String {
    MAIL.replace(
        "[PATCH 1/1] mm: change\n the greeting",
        &format!("[PATCH v2 {n}/{total}] {subject}"),
    )
    .replace("p1@example.org", &format!("p{n}@example.org"))
}

const COVER: &str = "From git@z Thu Jan  1 00:00:00 1970\nFrom: A <a@b.c>\nDate: Thu, 24 Oct 2024 09:36:00 +0000\nSubject: [PATCH v2 0/2] the series\n\nCover text.\n\nbase-commit: 0123456789abcdef0123456789abcdef01234567\n";

#[test]
fn an_mbox_skips_its_cover_letter_and_replies_and_sorts_by_number() {
    let reply = numbered(1, 2, "x").replace("Subject: [PATCH", "Subject: Re: [PATCH");
    let mbox = format!(
        "{COVER}\n{}\n{}\n{}",
        numbered(2, 2, "second"),
        reply,
        numbered(1, 2, "first")
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("series.mbox");
    std::fs::write(&path, mbox).unwrap();
    let series = load_path(&path).unwrap();
    let subjects: Vec<_> = series.patches.iter().map(|p| p.subject()).collect();
    assert_eq!(subjects, ["first", "second"]);
    assert_eq!(series.cover_letters, 1);
    assert_eq!(
        series.base_commit.as_deref(),
        Some("0123456789abcdef0123456789abcdef01234567")
    );
}

#[test]
fn a_cover_letter_alone_is_named_as_such() {
    let err = from_mails(
        SeriesSource::Path("c.mbox".into()),
        vec![raw("c", COVER.as_bytes())],
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "series c.mbox holds only a cover letter, no patches"
    );
    let err = from_mails(SeriesSource::Path("e".into()), vec![]).unwrap_err();
    assert_eq!(err.to_string(), "series e holds no patch mails");
}

#[test]
fn a_series_file_sets_the_order_and_names_missing_entries() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.patch"), numbered(1, 2, "a")).unwrap();
    std::fs::write(dir.path().join("b.patch"), numbered(2, 2, "b")).unwrap();
    std::fs::write(
        dir.path().join("series"),
        "# quilt order\nb.patch -p1\n\na.patch\n",
    )
    .unwrap();
    let files = directory_files(dir.path()).unwrap();
    assert_eq!(
        files,
        [dir.path().join("b.patch"), dir.path().join("a.patch")]
    );
    std::fs::write(dir.path().join("series"), "gone.patch\n").unwrap();
    let err = directory_files(dir.path()).unwrap_err().to_string();
    assert!(
        err.ends_with("names gone.patch, which does not exist"),
        "{err}"
    );
}

#[test]
fn a_file_without_a_diff_or_headers_is_reported_in_plain_words() {
    let headerless = from_mails(
        SeriesSource::Path("s".into()),
        vec![raw("x.patch", b"just text\n")],
    );
    let err = headerless.unwrap_err().to_string();
    assert!(
        err.starts_with("patch x.patch: neither a mail nor a diff: "),
        "{err}"
    );
    // What mailparse says of a header line that opens with a space.
    assert!(!err.contains("overhanging"), "{err}");
}

#[test]
fn a_mail_without_a_diff_is_an_empty_patch_named_by_its_place_in_the_mbox() {
    let empty = "From: A <a@b.c>\nDate: Thu, 24 Oct 2024 09:36:00 +0000\nSubject: [PATCH 2/2] x\n\nno diff here\n";
    let err = from_mails(
        SeriesSource::Path("s.mbox".into()),
        vec![
            RawMail {
                origin: "s.mbox (mail 1)".into(),
                ..raw("s.mbox", numbered(1, 2, "first").as_bytes())
            },
            RawMail {
                origin: "s.mbox (mail 2)".into(),
                ..raw("s.mbox", empty.as_bytes())
            },
        ],
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("patch s.mbox (mail 2): the patch is empty: no diff found in the mail"),
        "{err}"
    );
}

/// The forms people paste, each changing a.txt's `two` to `TWO`.
const BARE_GIT: &str = "diff --git a/a.txt b/a.txt\nindex 1111111..2222222 100644\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n";
const BARE_DIFF_U: &str = "--- a/a.txt\t2026-12-05 10:00:00.000000000 +0000\n+++ b/a.txt\t2026-12-05 10:01:00.000000000 +0000\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n";
const MM_TREE: &str = " a.txt |    2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\n--- a/a.txt~two-becomes-two\n+++ a/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n_\n";

#[test]
fn headerless_files_are_patches_with_patchbenchs_identity_and_a_note() {
    for text in [BARE_GIT, BARE_DIFF_U, MM_TREE] {
        let dir = tempfile::tempdir().unwrap();
        let (repo, base) = repo_with_file(dir.path(), "one\ntwo\nthree\n");
        let series = from_mails(
            SeriesSource::Path("s".into()),
            vec![raw("0001-two-becomes-TWO.patch", text.as_bytes())],
        )
        .unwrap();
        let patch = &series.patches[0];
        assert_eq!(patch.subject(), "two becomes TWO");
        assert_eq!(
            patch.note().unwrap(),
            "0001-two-becomes-TWO.patch has no mail header: subject \"two becomes TWO\" from its \
             file name, author patchbench's identity (patchbench <patchbench@localhost>), date its \
             parent commit's"
        );
        let applied = apply(&repo, base, &series, 0).unwrap();
        let commit = repo.find_commit(applied[0].commit).unwrap();
        assert_eq!(commit.author().email().unwrap(), "patchbench@localhost");
        assert_eq!(commit.message().unwrap(), "two becomes TWO\n");
        let parent = repo.find_commit(base).unwrap();
        assert_eq!(commit.time(), parent.time(), "{text}");
        let blob = commit.tree().unwrap().get_name("a.txt").unwrap().id();
        assert_eq!(
            repo.find_blob(blob).unwrap().content(),
            b"one\nTWO\nthree\n"
        );
    }
}

#[test]
fn a_mail_without_a_date_commits_with_its_parents_date_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, base) = repo_with_file(dir.path(), "one\ntwo\nthree\n");
    let undated = MAIL.replacen("Date: Thu, 24 Oct 2024 09:36:00 +1300\n", "", 1);
    let series = one_patch_series(&undated);
    assert!(
        series.patches[0].note().unwrap().starts_with(
            "0001.patch has no Date: header: its commit takes its parent commit's date"
        ),
    );
    let first = apply(&repo, base, &series, 0).unwrap()[0].commit;
    let commit = repo.find_commit(first).unwrap();
    assert_eq!(commit.author().name().unwrap(), "Jörg Tester");
    assert_eq!(commit.time(), repo.find_commit(base).unwrap().time());
    // The same commit on every run: the build cache finds its kernel.
    assert_eq!(apply(&repo, base, &series, 0).unwrap()[0].commit, first);
    // A dated mail needs no note.
    assert_eq!(one_patch_series(MAIL).patches[0].note(), None);
}

#[test]
fn lore_sources_parse_from_the_campaign_text() {
    assert_eq!(
        SeriesSource::parse("lore:<a@b>", Path::new("/x")),
        SeriesSource::Lore {
            message_id: "<a@b>".into()
        }
    );
    assert_eq!(
        SeriesSource::parse("p/s", Path::new("/x")),
        SeriesSource::Path("/x/p/s".into())
    );
}

#[tokio::test]
async fn a_lore_thread_is_fetched_from_the_archive_and_a_404_is_explained() {
    use std::io::Write;
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let server = MockServer::start().await;
    // Discussion that is not a reply (`AW:`, no diff) is no patch either.
    let aside = "From git@z Thu Jan  1 00:00:00 1970\nFrom: B <b@b.c>\nSubject: AW: the series\n\nA thought.\n";
    let mbox = format!(
        "{COVER}\n{}\n{aside}\n{}",
        numbered(1, 2, "first"),
        numbered(2, 2, "second")
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(mbox.as_bytes()).unwrap();
    Mock::given(method("GET"))
        .and(path("/all/cover@example.org/t.mbox.gz"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(gz.finish().unwrap()))
        .mount(&server)
        .await;
    let base = format!("{}/all", server.uri());
    let source = SeriesSource::Lore {
        message_id: "<cover@example.org>".into(),
    };
    let series = load(&source, &base).await.unwrap();
    assert_eq!(series.patches.len(), 2);
    assert_eq!(
        series.patches[1].origin,
        "lore:<cover@example.org> (mail 4)"
    );
    let missing = SeriesSource::Lore {
        message_id: "gone@example.org".into(),
    };
    let err = load(&missing, &base).await.unwrap_err();
    let chain = format!("{:#}", anyhow::Error::new(err));
    assert!(
        chain.starts_with("cannot fetch series lore:gone@example.org: "),
        "{chain}"
    );
    assert!(
        chain.ends_with(
            "/all/gone@example.org/t.mbox.gz answered 404: no such message in the archive?"
        ),
        "{chain}"
    );
}
