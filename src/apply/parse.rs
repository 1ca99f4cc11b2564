//! From libgit2's parse of a patch to this module's model: for each file,
//! its change, paths, preimage id, modes and hunks, and for each hunk the
//! patch line of its header. git2 is the parser; nothing is re-parsed here.
//!
//! libgit2 reports `\ No newline at end of file` as a marker line after the
//! line it applies to; that line loses its `\n` here, so it only matches a
//! last line without one.

use std::path::{Path, PathBuf};

use git2::{Delta, Diff, DiffLineType, FileMode, Oid, Patch};

use super::search::{Hunk, HunkLine, LineKind};
use super::types::ApplyFailure;

/// What a patch does to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    Added,
    Deleted,
    Modified,
    Renamed,
    Copied,
}

/// One file's part of a patch.
#[derive(Debug, Clone)]
pub(crate) struct FilePatch {
    pub change: Change,
    pub old_path: PathBuf,
    pub new_path: PathBuf,
    /// From the `index <pre>..<post>` line, zero-padded if abbreviated.
    pub old_id: Oid,
    pub new_id: Oid,
    pub old_mode: FileMode,
    pub new_mode: FileMode,
    pub binary: bool,
    /// A binary file's part of the patch, re-rendered by libgit2 so that it
    /// can apply that file alone; `None` in a reversed patch.
    pub binary_patch: Option<Vec<u8>>,
    pub hunks: Vec<Hunk>,
    /// Each hunk's header as written (`@@ -1,3 +1,3 @@ func`).
    pub headers: Vec<String>,
    /// Each hunk header's 1-based line in the patch text (in the patch as
    /// given, once `apply_git` has mapped it).
    pub header_lines: Vec<Option<usize>>,
}

impl FilePatch {
    /// The path to name in results and errors: the old one for a deletion.
    pub fn path(&self) -> &Path {
        match self.change {
            Change::Deleted => &self.old_path,
            _ => &self.new_path,
        }
    }

    pub fn path_text(&self) -> String {
        self.path().to_string_lossy().into_owned()
    }

    /// The patch undoing this one. Undoing a copy removes the copy.
    pub fn reversed(&self) -> FilePatch {
        let change = match self.change {
            Change::Added => Change::Deleted,
            Change::Deleted => Change::Added,
            Change::Copied | Change::Renamed => Change::Renamed,
            Change::Modified => Change::Modified,
        };
        FilePatch {
            change,
            old_path: self.new_path.clone(),
            new_path: self.old_path.clone(),
            old_id: self.new_id,
            new_id: self.old_id,
            old_mode: self.new_mode,
            new_mode: self.old_mode,
            binary: self.binary,
            binary_patch: None,
            hunks: self.hunks.iter().map(Hunk::reversed).collect(),
            headers: self.headers.clone(),
            header_lines: self.header_lines.clone(),
        }
    }
}

/// Every file of a parsed patch, in patch order.
pub(crate) fn files(diff: &Diff<'_>, text: &[u8]) -> Result<Vec<FilePatch>, ApplyFailure> {
    let starts: Vec<usize> = std::iter::once(0)
        .chain(
            text.iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        )
        .collect();
    let line_of = |offset: i64| -> Option<usize> {
        let offset = usize::try_from(offset).ok()?;
        (offset < text.len()).then(|| starts.partition_point(|&s| s <= offset))
    };
    let unreadable = |e: git2::Error| ApplyFailure::Malformed {
        line: None,
        reason: e.message().to_string(),
    };
    let mut files = Vec::new();
    for (index, delta) in diff.deltas().enumerate() {
        let change = match delta.status() {
            Delta::Added => Change::Added,
            Delta::Deleted => Change::Deleted,
            Delta::Renamed => Change::Renamed,
            Delta::Copied => Change::Copied,
            _ => Change::Modified,
        };
        let (old, new) = (delta.old_file(), delta.new_file());
        let old_path = old.path().or(new.path()).map(Path::to_path_buf);
        let new_path = new.path().or(old.path()).map(Path::to_path_buf);
        let (Some(old_path), Some(new_path)) = (old_path, new_path) else {
            return Err(ApplyFailure::Malformed {
                line: None,
                reason: format!("file #{} of the patch has no path", index + 1),
            });
        };
        let mut file = FilePatch {
            change,
            old_path,
            new_path,
            old_id: old.id(),
            new_id: new.id(),
            old_mode: old.mode(),
            new_mode: new.mode(),
            binary: delta.flags().is_binary(),
            binary_patch: None,
            hunks: Vec::new(),
            headers: Vec::new(),
            header_lines: Vec::new(),
        };
        if let Some(mut patch) = Patch::from_diff(diff, index).map_err(unreadable)? {
            if file.binary {
                file.binary_patch = Some(patch.to_buf().map_err(unreadable)?.to_vec());
            }
            for h in 0..patch.num_hunks() {
                let (hunk, count) = patch.hunk(h).map_err(unreadable)?;
                let mut lines: Vec<HunkLine> = Vec::with_capacity(count);
                let mut header_line = None;
                for l in 0..count {
                    let line = patch.line_in_hunk(h, l).map_err(unreadable)?;
                    if l == 0 {
                        header_line = line_of(line.content_offset()).map(|n| n.saturating_sub(1));
                    }
                    let kind = match line.origin_value() {
                        DiffLineType::Context => LineKind::Context,
                        DiffLineType::Addition => LineKind::Add,
                        DiffLineType::Deletion => LineKind::Remove,
                        DiffLineType::ContextEOFNL
                        | DiffLineType::AddEOFNL
                        | DiffLineType::DeleteEOFNL => {
                            if let Some(last) = lines.last_mut()
                                && last.text.ends_with(b"\n")
                            {
                                last.text.pop();
                            }
                            continue;
                        }
                        _ => continue,
                    };
                    lines.push(HunkLine {
                        kind,
                        text: line.content().to_vec(),
                    });
                }
                file.hunks.push(Hunk {
                    old_start: hunk.old_start() as usize,
                    old_lines: hunk.old_lines() as usize,
                    new_start: hunk.new_start() as usize,
                    new_lines: hunk.new_lines() as usize,
                    lines,
                });
                let header = String::from_utf8_lossy(hunk.header());
                file.headers.push(header.trim_end().to_string());
                file.header_lines.push(header_line);
            }
        }
        files.push(file);
    }
    if files.is_empty() {
        return Err(ApplyFailure::Malformed {
            line: None,
            reason: "the patch changes no file".into(),
        });
    }
    Ok(files)
}

/// One file's changed lines in a diff, 1-based: the lines of the old file
/// that it removes and the lines of the new file that it adds (a changed
/// line is both). `old_path` is `None` for a created file, `new_path` for
/// a deleted one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedLines {
    pub old_path: Option<PathBuf>,
    pub new_path: Option<PathBuf>,
    pub binary: bool,
    pub removed: Vec<usize>,
    pub added: Vec<usize>,
}

impl FilePatch {
    /// Which lines this file's hunks remove and add, by the line numbers
    /// of their headers (context lines count on both sides).
    pub fn changed_lines(&self) -> ChangedLines {
        let mut removed = Vec::new();
        let mut added = Vec::new();
        for hunk in &self.hunks {
            let (mut old, mut new) = (hunk.old_start, hunk.new_start);
            for line in &hunk.lines {
                match line.kind {
                    LineKind::Context => {
                        old += 1;
                        new += 1;
                    }
                    LineKind::Remove => {
                        removed.push(old);
                        old += 1;
                    }
                    LineKind::Add => {
                        added.push(new);
                        new += 1;
                    }
                }
            }
        }
        ChangedLines {
            old_path: (self.change != Change::Added).then(|| self.old_path.clone()),
            new_path: (self.change != Change::Deleted).then(|| self.new_path.clone()),
            binary: self.binary,
            removed,
            added,
        }
    }
}
