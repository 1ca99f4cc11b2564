//! Patch series: read `git format-patch` mails and apply them with git2, one
//! commit per patch, keeping each patch's author, date and message.
//!
//! Applying works on trees and the object database only: the working
//! directory and HEAD are never touched, so a failed series leaves the
//! repository exactly as it was.

use std::path::{Path, PathBuf};

use git2::{Diff, Oid, Repository, Signature, Time};
use sha2::{Digest, Sha256};

/// One patch of a series, parsed from its mail.
#[derive(Debug, Clone)]
pub struct Patch {
    pub file: PathBuf,
    pub author_name: String,
    pub author_email: String,
    /// Seconds since the epoch, and the author's UTC offset in minutes.
    pub date: (i64, i32),
    /// The subject without `[PATCH ...]` prefixes.
    pub subject: String,
    /// The commit message body: the mail body up to the `---` line.
    pub body: String,
    /// The raw mail, which git2 parses for the diff.
    pub raw: Vec<u8>,
}

/// An ordered series of patches with a content hash.
#[derive(Debug, Clone)]
pub struct Series {
    pub path: PathBuf,
    pub patches: Vec<Patch>,
    /// sha256 over every patch's bytes, in order.
    pub sha256: String,
}

#[derive(Debug, thiserror::Error)]
pub enum SeriesError {
    #[error("cannot read series {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("series {} holds no patch files (*.patch, *.diff or *.eml)", path.display())]
    Empty { path: PathBuf },
    #[error("patch {}: {reason}", file.display())]
    Malformed { file: PathBuf, reason: String },
    #[error("patch {number}/{total} \"{subject}\" ({}) does not apply: {reason}", file.display())]
    DoesNotApply {
        number: usize,
        total: usize,
        subject: String,
        file: PathBuf,
        reason: String,
    },
    #[error("git operation failed while applying patch {number} \"{subject}\": {what}")]
    Git {
        number: usize,
        subject: String,
        what: &'static str,
        #[source]
        source: git2::Error,
    },
}

/// Strip `[PATCH v2 1/3]`-style prefixes (and `Re:`) from a subject.
pub fn clean_subject(subject: &str) -> String {
    let mut s = subject.split_whitespace().collect::<Vec<_>>().join(" ");
    loop {
        let trimmed = s.trim_start();
        if trimmed.starts_with('[')
            && let Some(end) = trimmed.find(']')
        {
            s = trimmed[end + 1..].to_string();
            continue;
        }
        return trimmed.to_string();
    }
}

/// The part of a format-patch body that is the commit message.
pub fn message_body(body: &str) -> String {
    let mut out = Vec::new();
    for line in body.lines() {
        if line == "---" || line.starts_with("diff --git ") {
            break;
        }
        out.push(line);
    }
    out.join("\n").trim().to_string()
}

/// The UTC offset of an RFC 2822 date, in minutes (`+1300` → 780).
pub fn utc_offset_minutes(date: &str) -> i32 {
    let Some(zone) = date.split_whitespace().last() else {
        return 0;
    };
    let (sign, digits) = match zone.as_bytes().first() {
        Some(b'+') => (1, &zone[1..]),
        Some(b'-') => (-1, &zone[1..]),
        _ => return 0,
    };
    match (digits.len(), digits.parse::<i32>()) {
        (4, Ok(hhmm)) => sign * (hhmm / 100 * 60 + hhmm % 100),
        _ => 0,
    }
}

/// Parse one `git format-patch` mail.
pub fn parse_patch(file: &Path, raw: Vec<u8>) -> Result<Patch, SeriesError> {
    let malformed = |reason: String| SeriesError::Malformed {
        file: file.to_owned(),
        reason,
    };
    let mail = mailparse::parse_mail(&raw).map_err(|e| malformed(e.to_string()))?;
    use mailparse::MailHeaderMap;
    let from = mail
        .headers
        .get_first_value("From")
        .ok_or_else(|| malformed("no From: header".into()))?;
    let (author_name, author_email) = match mailparse::addrparse(&from)
        .map_err(|e| malformed(format!("bad From: header `{from}`: {e}")))?
        .extract_single_info()
    {
        Some(info) => (info.display_name.unwrap_or_default(), info.addr),
        None => return Err(malformed(format!("From: header `{from}` has no address"))),
    };
    let date_text = mail
        .headers
        .get_first_value("Date")
        .ok_or_else(|| malformed("no Date: header".into()))?;
    let secs = mailparse::dateparse(&date_text)
        .map_err(|e| malformed(format!("bad Date: header `{date_text}`: {e}")))?;
    let subject = clean_subject(
        &mail
            .headers
            .get_first_value("Subject")
            .ok_or_else(|| malformed("no Subject: header".into()))?,
    );
    let body = mail.get_body().map_err(|e| malformed(e.to_string()))?;
    if !body.contains("\ndiff --git ") && !body.starts_with("diff --git ") {
        return Err(malformed("no `diff --git` section found".into()));
    }
    Ok(Patch {
        file: file.to_owned(),
        author_name,
        author_email,
        date: (secs, utc_offset_minutes(&date_text)),
        subject,
        body: message_body(&body),
        raw,
    })
}

/// Read a series: a directory of patch files in name order, or one file.
pub fn load(path: &Path) -> Result<Series, SeriesError> {
    let read_err = |source| SeriesError::Read {
        path: path.to_owned(),
        source,
    };
    let files: Vec<PathBuf> = if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(read_err)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.is_file()
                    && matches!(
                        p.extension().and_then(|e| e.to_str()),
                        Some("patch" | "diff" | "eml")
                    )
            })
            .collect();
        files.sort();
        files
    } else {
        vec![path.to_owned()]
    };
    if files.is_empty() {
        return Err(SeriesError::Empty {
            path: path.to_owned(),
        });
    }
    let mut hasher = Sha256::new();
    let mut patches = Vec::new();
    for file in files {
        let raw = std::fs::read(&file).map_err(|source| SeriesError::Read {
            path: file.clone(),
            source,
        })?;
        hasher.update(&raw);
        patches.push(parse_patch(&file, raw)?);
    }
    Ok(Series {
        path: path.to_owned(),
        patches,
        sha256: hex::encode(hasher.finalize()),
    })
}

/// Apply every patch on top of `base`, one commit each, and return the last
/// commit. Nothing but new objects is written: no ref, no index, no files.
pub fn apply(repo: &Repository, base: Oid, series: &Series) -> Result<Oid, SeriesError> {
    let total = series.patches.len();
    let mut head = base;
    for (i, patch) in series.patches.iter().enumerate() {
        let number = i + 1;
        let git = |what: &'static str| {
            let subject = patch.subject.clone();
            move |source| SeriesError::Git {
                number,
                subject,
                what,
                source,
            }
        };
        let diff = Diff::from_buffer(&patch.raw).map_err(|e| SeriesError::Malformed {
            file: patch.file.clone(),
            reason: e.message().to_string(),
        })?;
        let parent = repo.find_commit(head).map_err(git("find the parent"))?;
        let parent_tree = parent.tree().map_err(git("read the parent tree"))?;
        let mut index = repo.apply_to_tree(&parent_tree, &diff, None).map_err(|e| {
            SeriesError::DoesNotApply {
                number,
                total,
                subject: patch.subject.clone(),
                file: patch.file.clone(),
                reason: e.message().to_string(),
            }
        })?;
        let tree_id = index.write_tree_to(repo).map_err(git("write the tree"))?;
        let tree = repo.find_tree(tree_id).map_err(git("find the tree"))?;
        let author = Signature::new(
            &patch.author_name,
            &patch.author_email,
            &Time::new(patch.date.0, patch.date.1),
        )
        .map_err(git("make the author"))?;
        let committer = Signature::new(
            "patchbench",
            "patchbench@localhost",
            &Time::new(patch.date.0, patch.date.1),
        )
        .map_err(git("make the committer"))?;
        let message = if patch.body.is_empty() {
            format!("{}\n", patch.subject)
        } else {
            format!("{}\n\n{}\n", patch.subject, patch.body)
        };
        head = repo
            .commit(None, &author, &committer, &message, &tree, &[&parent])
            .map_err(git("commit"))?;
    }
    Ok(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_lose_their_patch_prefixes() {
        assert_eq!(
            clean_subject("[PATCH v2 1/3] mm: memcg: do a thing"),
            "mm: memcg: do a thing"
        );
        assert_eq!(
            clean_subject("[RFC]  [PATCH]\n mm: folded\n subject"),
            "mm: folded subject"
        );
        assert_eq!(clean_subject("plain"), "plain");
    }

    #[test]
    fn offsets_come_from_the_date_zone() {
        assert_eq!(utc_offset_minutes("Thu, 24 Oct 2024 09:36:00 +1300"), 780);
        assert_eq!(utc_offset_minutes("Wed, 11 Nov 2026 16:09:08 -0530"), -330);
        assert_eq!(utc_offset_minutes("Wed, 11 Nov 2026 16:09:08 GMT"), 0);
    }

    const MAIL: &str = "From 1234 Mon Sep 17 00:00:00 2001\nFrom: =?UTF-8?q?J=C3=B6rg_Tester?= <jt@example.org>\nDate: Thu, 24 Oct 2024 09:36:00 +1300\nSubject: [PATCH 1/1] mm: change\n the greeting\n\nWhy it changes.\n---\n a.txt | 2 +-\n\ndiff --git a/a.txt b/a.txt\nindex 1111111..2222222 100644\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n-- \n2.47.3\n";

    fn repo_with_file(dir: &Path, content: &str) -> (Repository, Oid) {
        let repo = Repository::init(dir).unwrap();
        let blob = repo.blob(content.as_bytes()).unwrap();
        let mut builder = repo.treebuilder(None).unwrap();
        builder.insert("a.txt", blob, 0o100644).unwrap();
        let tree = repo.find_tree(builder.write().unwrap()).unwrap();
        let sig = Signature::new("t", "t@t", &Time::new(0, 0)).unwrap();
        let oid = repo.commit(None, &sig, &sig, "base", &tree, &[]).unwrap();
        drop(tree);
        drop(builder);
        (repo, oid)
    }

    #[test]
    fn a_patch_becomes_one_commit_with_its_author_and_message() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, base) = repo_with_file(dir.path(), "one\ntwo\nthree\n");
        let patch = parse_patch(Path::new("0001.patch"), MAIL.as_bytes().to_vec()).unwrap();
        assert_eq!(patch.author_name, "Jörg Tester");
        assert_eq!(patch.subject, "mm: change the greeting");
        assert_eq!(patch.date.1, 780);
        let series = Series {
            path: "s".into(),
            patches: vec![patch],
            sha256: String::new(),
        };
        let head = apply(&repo, base, &series).unwrap();
        let commit = repo.find_commit(head).unwrap();
        assert_eq!(commit.parent_id(0).unwrap(), base);
        assert_eq!(commit.author().name().unwrap(), "Jörg Tester");
        assert_eq!(
            commit.message().unwrap(),
            "mm: change the greeting\n\nWhy it changes.\n"
        );
        let blob = commit.tree().unwrap().get_name("a.txt").unwrap().id();
        assert_eq!(
            repo.find_blob(blob).unwrap().content(),
            b"one\nTWO\nthree\n"
        );
    }

    #[test]
    fn a_patch_that_does_not_apply_names_itself_and_writes_no_ref() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, base) = repo_with_file(dir.path(), "uno\ndos\ntres\n");
        let patch = parse_patch(Path::new("0001.patch"), MAIL.as_bytes().to_vec()).unwrap();
        let series = Series {
            path: "s".into(),
            patches: vec![patch],
            sha256: String::new(),
        };
        let err = apply(&repo, base, &series).unwrap_err().to_string();
        assert!(
            err.starts_with("patch 1/1 \"mm: change the greeting\" (0001.patch) does not apply"),
            "{err}"
        );
        assert!(repo.references().unwrap().next().is_none());
    }

    #[test]
    fn a_mail_without_a_diff_is_malformed() {
        let text = MAIL.split("diff --git").next().unwrap().to_string();
        let err = parse_patch(Path::new("c.patch"), text.into_bytes()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "patch c.patch: no `diff --git` section found"
        );
    }
}
