//! The watched tree's side: a branch's head, the line of commits between
//! two heads, and that line written as a series that applies on the older
//! head, one patch per commit, so that a night's B is exactly the new
//! head's tree and a hunt bisects commits as it bisects a series' patches.

use std::path::{Path, PathBuf};

use anyhow::Context;
use git2::{Commit, Oid, Repository};

use crate::results::history::CommitInfo;

/// The commits between two heads.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// The old head is on the new head's first-parent line: these commits
    /// follow it, oldest first (a merge is one commit: its change against
    /// its first parent, as `git log --first-parent` shows it).
    Commits(Vec<Oid>),
    /// The branch was rewritten: the old head is not on the new head's
    /// first-parent line (a rebase, a force-push). The night compares the
    /// two heads' trees as one change.
    Rewritten,
}

/// The tree's repository, refusing anything but a local git repository.
pub fn open(tree: &Path) -> anyhow::Result<Repository> {
    Repository::open(tree).with_context(|| {
        format!(
            "--tree {} is not a git repository: watch follows a branch of a local clone (clone or fetch it first; the nightly workflow checks it out)",
            tree.display()
        )
    })
}

/// The commit `branch` names (a branch, tag, or any revision).
pub fn head(repo: &Repository, branch: &str) -> anyhow::Result<Oid> {
    Ok(repo
        .revparse_single(branch)
        .and_then(|o| o.peel_to_commit())
        .with_context(|| {
            format!(
                "--branch {branch} names no commit in {}",
                repo.path().display()
            )
        })?
        .id())
}

/// The first-parent line from `old` (exclusive) to `new` (inclusive).
pub fn line(repo: &Repository, old: Oid, new: Oid) -> anyhow::Result<Line> {
    let mut commits = Vec::new();
    let mut at = repo.find_commit(new)?;
    loop {
        if at.id() == old {
            commits.reverse();
            return Ok(Line::Commits(commits));
        }
        commits.push(at.id());
        match at.parent(0) {
            Ok(parent) => at = parent,
            Err(_) => return Ok(Line::Rewritten),
        }
    }
}

/// A commit as the history and the reports name it.
pub fn info(repo: &Repository, id: Oid) -> anyhow::Result<CommitInfo> {
    let c = repo.find_commit(id)?;
    Ok(CommitInfo {
        commit: id.to_string(),
        subject: String::from_utf8_lossy(c.summary_bytes().unwrap_or(b"")).into_owned(),
        author: format!(
            "{} <{}>",
            String::from_utf8_lossy(c.author().name_bytes()),
            String::from_utf8_lossy(c.author().email_bytes())
        ),
    })
}

/// Write the commits `from`..`to` as a series in `dir` (emptied first), one
/// format-patch mail per commit that changes anything; returns, per patch
/// written, the index of its commit in `commits`. A rewritten line is
/// one patch: the new head's tree against the old head's.
pub fn write_series(
    repo: &Repository,
    old: Oid,
    new: Oid,
    line: &Line,
    dir: &Path,
) -> anyhow::Result<Vec<usize>> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("cannot empty {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let pairs: Vec<(Oid, Oid)> = match line {
        Line::Commits(commits) => commits
            .iter()
            .map(|&c| Ok((first_parent(repo, c)?, c)))
            .collect::<anyhow::Result<_>>()?,
        Line::Rewritten => vec![(old, new)],
    };
    let mut changes = Vec::new();
    for (i, (parent, commit)) in pairs.iter().enumerate() {
        let diff = diff(repo, *parent, *commit)?;
        if diff.deltas().len() > 0 {
            changes.push((i, *commit, diff));
        }
    }
    let count = changes.len();
    let mut written = Vec::new();
    for (k, (i, commit, diff)) in changes.iter().enumerate() {
        let c = repo.find_commit(*commit)?;
        let (summary, body) = match line {
            Line::Commits(_) => (
                String::from_utf8_lossy(c.summary_bytes().unwrap_or(b"")).into_owned(),
                String::from_utf8_lossy(c.body_bytes().unwrap_or(b"")).into_owned(),
            ),
            Line::Rewritten => (
                format!("the branch as rewritten, {} against {}", short(new), short(old)),
                "The watched branch was rewritten: this is its new head's tree against the head measured before.\n".to_string(),
            ),
        };
        let email = git2::Email::from_diff(
            diff,
            k + 1,
            count,
            commit,
            summary.as_str(),
            body.as_str(),
            &c.author(),
            &mut git2::EmailCreateOptions::new(),
        )
        .with_context(|| format!("cannot write commit {} as a patch", short(*commit)))?;
        let path = dir.join(format!("{:04}-{}.patch", k + 1, short(*commit)));
        std::fs::write(&path, email.as_slice())
            .with_context(|| format!("cannot write {}", path.display()))?;
        written.push(*i);
    }
    Ok(written)
}

fn first_parent(repo: &Repository, id: Oid) -> anyhow::Result<Oid> {
    let c: Commit = repo.find_commit(id)?;
    c.parent_id(0)
        .with_context(|| format!("commit {} has no parent to compare it with", short(id)))
}

fn diff(repo: &Repository, old: Oid, new: Oid) -> anyhow::Result<git2::Diff<'_>> {
    let old = repo.find_commit(old)?.tree()?;
    let new = repo.find_commit(new)?.tree()?;
    let mut opts = git2::DiffOptions::new();
    opts.show_binary(true);
    Ok(repo.diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))?)
}

/// The first 12 hex digits of a commit id.
pub fn short(id: Oid) -> String {
    id.to_string()[..12].to_string()
}

/// A night's directory name: its index and its head.
pub fn night_dir(index: usize, head: Oid) -> PathBuf {
    PathBuf::from("nights").join(format!("{index:03}-{}", short(head)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(repo: &Repository, parents: &[Oid], file: &str, text: &str, subject: &str) -> Oid {
        let sig = git2::Signature::new("T", "t@example.invalid", &git2::Time::new(1, 0)).unwrap();
        let base = parents
            .first()
            .map(|p| repo.find_commit(*p).unwrap().tree().unwrap());
        let mut b = git2::build::TreeUpdateBuilder::new();
        b.upsert(
            file,
            repo.blob(text.as_bytes()).unwrap(),
            git2::FileMode::Blob,
        );
        let empty = repo.treebuilder(None).unwrap().write().unwrap();
        let empty = repo.find_tree(empty).unwrap();
        let tree = b
            .create_updated(repo, base.as_ref().unwrap_or(&empty))
            .unwrap();
        let tree = repo.find_tree(tree).unwrap();
        let parents: Vec<Commit> = parents
            .iter()
            .map(|p| repo.find_commit(*p).unwrap())
            .collect();
        let refs: Vec<&Commit> = parents.iter().collect();
        repo.commit(None, &sig, &sig, subject, &tree, &refs)
            .unwrap()
    }

    #[test]
    fn a_line_follows_first_parents_and_a_merge_is_one_patch() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let base = commit(&repo, &[], "a.c", "a\n", "base");
        let one = commit(&repo, &[base], "a.c", "a\nb\n", "one");
        let side = commit(&repo, &[base], "b.c", "side\n", "side");
        let merge = commit(&repo, &[one, side], "b.c", "side\n", "merge side");
        let two = commit(&repo, &[merge], "a.c", "a\nb\nc\n", "two");
        let Line::Commits(got) = line(&repo, base, two).unwrap() else {
            panic!("rewritten")
        };
        assert_eq!(got, [one, merge, two]);
        assert_eq!(line(&repo, side, two).unwrap(), Line::Rewritten);
        let out = dir.path().join("series");
        let written = write_series(&repo, base, two, &Line::Commits(got), &out).unwrap();
        assert_eq!(written, [0, 1, 2]);
        let merge_patch =
            std::fs::read_to_string(out.join(format!("0002-{}.patch", short(merge)))).unwrap();
        assert!(merge_patch.contains("Subject: [PATCH 2/"), "{merge_patch}");
        assert!(merge_patch.contains("+side"), "{merge_patch}");
        assert!(!merge_patch.contains("a.c"), "{merge_patch}");
    }

    #[test]
    fn a_commit_that_changes_nothing_writes_no_patch() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let base = commit(&repo, &[], "a.c", "a\n", "base");
        let empty = commit(&repo, &[base], "a.c", "a\n", "nothing");
        let one = commit(&repo, &[empty], "a.c", "b\n", "one");
        let line = line(&repo, base, one).unwrap();
        let written = write_series(&repo, base, one, &line, &dir.path().join("s")).unwrap();
        assert_eq!(written, [1]);
    }
}
