//! Applying one file's part of a patch to the base tree, for when libgit2's
//! exact apply refused the patch as a whole: the hunks exactly, else a
//! 3-way merge on the preimage blob, else with offset and fuzz. New contents
//! stay in memory until every file has applied; then one tree is written.
//! The already-applied probe runs the reversed patch through the same code,
//! with offsets but without fuzz or 3-way, and writes nothing.

use std::path::{Path, PathBuf};

use git2::build::TreeUpdateBuilder;
use git2::{ErrorCode, FileMode, ObjectType, Oid, Repository, Tree};

use super::nearest::{nearest_region, render, whitespace_match};
use super::parse::{Change, FilePatch};
use super::search::{Limits, LineKind, Misfit, Placement, apply_hunks, split_lines};
use super::threeway;
use super::types::{ApplyFailure, FileResult, HunkResult, Method, NearestRegion};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Apply the patch: exact, 3-way, then offsets, with up to `fuzz`
    /// context lines ignored at each end of a hunk (0: `git am`'s rule).
    Forward { fuzz: u32 },
    /// Probe whether the reversed patch applies: exact, then offsets.
    Reverse,
}

/// A change to make to the base tree.
pub(crate) enum Edit {
    Write {
        path: PathBuf,
        content: Vec<u8>,
        mode: FileMode,
    },
    /// A blob already in the object database (a binary file's new content).
    Existing {
        path: PathBuf,
        blob: Oid,
        mode: FileMode,
    },
    Remove {
        path: PathBuf,
    },
}

/// One file applied: what to report, and what to change in the tree.
pub(crate) struct Outcome {
    pub result: FileResult,
    pub edits: Vec<Edit>,
}

/// Why one file did not apply; [`explain`] turns it into the failure.
pub(crate) enum Refusal {
    /// A hunk found no place in `content`, the file as it is in the base.
    Misfit {
        misfit: Misfit,
        content: Vec<u8>,
    },
    Missing,
    Exists,
    Binary,
    Failed(ApplyFailure),
}

fn git(what: &'static str) -> impl FnOnce(git2::Error) -> Refusal {
    move |source| Refusal::Failed(ApplyFailure::Git { what, source })
}

/// Apply `file` to `base` in memory.
pub(crate) fn apply_file(
    repo: &Repository,
    base: &Tree<'_>,
    file: &FilePatch,
    direction: Direction,
) -> Result<Outcome, Refusal> {
    let outcome = |method, hunks, edits| Outcome {
        result: FileResult {
            path: file.path_text(),
            method,
            hunks,
        },
        edits,
    };
    check_paths(base, file)?;
    if file.binary {
        let edits = match direction {
            Direction::Forward { .. } => apply_binary(repo, base, file)?,
            Direction::Reverse => holds_postimage(base, file)?,
        };
        return Ok(outcome(Method::Exact, Vec::new(), edits));
    }
    match file.change {
        Change::Added => {
            let (content, placed) =
                apply_hunks(&[], &file.hunks, Limits::EXACT).map_err(|misfit| Refusal::Misfit {
                    misfit,
                    content: Vec::new(),
                })?;
            let mode = result_mode(file, None);
            let write = Edit::Write {
                path: file.new_path.clone(),
                content,
                mode,
            };
            Ok(outcome(Method::Exact, hunk_results(&placed), vec![write]))
        }
        Change::Deleted => {
            let (content, _) = read(repo, base, &file.old_path)?.ok_or(Refusal::Missing)?;
            let misfit = |misfit| Refusal::Misfit {
                misfit,
                content: content.clone(),
            };
            match apply_hunks(&split_lines(&content), &file.hunks, Limits::EXACT) {
                Ok((rest, placed)) if rest.is_empty() => {
                    let remove = Edit::Remove {
                        path: file.old_path.clone(),
                    };
                    Ok(outcome(Method::Exact, hunk_results(&placed), vec![remove]))
                }
                // The hunks matched, but the file holds more than they remove.
                Ok(_) => Err(misfit(Misfit {
                    hunk: 0,
                    expected: 0,
                })),
                Err(m) => Err(misfit(m)),
            }
        }
        Change::Modified | Change::Renamed | Change::Copied => {
            let (content, mode) = read(repo, base, &file.old_path)?.ok_or(Refusal::Missing)?;
            let (new_content, method, hunks) = patch_content(repo, file, content, direction)?;
            let mut edits = Vec::new();
            if file.change == Change::Renamed {
                edits.push(Edit::Remove {
                    path: file.old_path.clone(),
                });
            }
            edits.push(Edit::Write {
                path: file.new_path.clone(),
                content: new_content,
                mode: result_mode(file, Some(mode)),
            });
            Ok(outcome(method, hunks, edits))
        }
    }
}

/// A binary file's change, applied alone by libgit2 (only it reads binary
/// deltas; they apply exactly or not at all).
fn apply_binary(
    repo: &Repository,
    base: &Tree<'_>,
    file: &FilePatch,
) -> Result<Vec<Edit>, Refusal> {
    let text = file.binary_patch.as_deref().ok_or(Refusal::Binary)?;
    let diff = git2::Diff::from_buffer(text).map_err(|_| Refusal::Binary)?;
    let index = repo
        .apply_to_tree(base, &diff, None)
        .map_err(|_| Refusal::Binary)?;
    let mut edits = Vec::new();
    if file.change == Change::Deleted || file.change == Change::Renamed {
        edits.push(Edit::Remove {
            path: file.old_path.clone(),
        });
    }
    if file.change != Change::Deleted {
        let entry = index.get_path(&file.new_path, 0).ok_or(Refusal::Binary)?;
        edits.push(Edit::Existing {
            path: file.new_path.clone(),
            blob: entry.id,
            mode: mode_from_raw(entry.mode as i32),
        });
    }
    Ok(edits)
}

/// For a reversed binary change (the already-applied probe): whether the
/// base holds the file as the patch leaves it, by the ids of its `index`
/// line. No edits: the probe writes nothing.
fn holds_postimage(base: &Tree<'_>, reversed: &FilePatch) -> Result<Vec<Edit>, Refusal> {
    let present = base.get_path(&reversed.old_path).ok().map(|e| e.id());
    let matches = match (reversed.change, present) {
        (Change::Added, None) => true,
        (Change::Added, Some(_)) | (_, None) => false,
        (_, Some(id)) => {
            let want = reversed.old_id.to_string();
            let want = want.trim_end_matches('0');
            !want.is_empty() && id.to_string().starts_with(want)
        }
    };
    if matches {
        Ok(Vec::new())
    } else {
        Err(Refusal::Binary)
    }
}

/// What libgit2's exact apply does not check, and git apply does: the path
/// a patch creates (or renames or copies to) must be free, and a deleted
/// file must hold exactly the lines the patch removes.
pub(crate) fn precheck(
    repo: &Repository,
    base: &Tree<'_>,
    file: &FilePatch,
) -> Result<(), Refusal> {
    check_paths(base, file)?;
    if file.change == Change::Deleted && !file.binary {
        apply_file(repo, base, file, Direction::Forward { fuzz: 0 })?;
    }
    Ok(())
}

/// The file a patch changes must exist, and the path it creates (or
/// renames or copies to) must not.
fn check_paths(base: &Tree<'_>, file: &FilePatch) -> Result<(), Refusal> {
    let exists = |path| {
        base.get_path(path)
            .is_ok_and(|e| e.kind() == Some(ObjectType::Blob))
    };
    let creates = match file.change {
        Change::Added => true,
        Change::Renamed | Change::Copied => file.new_path != file.old_path,
        Change::Modified | Change::Deleted => false,
    };
    if creates && exists(&file.new_path) {
        return Err(Refusal::Exists);
    }
    if file.change != Change::Added && !exists(&file.old_path) {
        return Err(Refusal::Missing);
    }
    Ok(())
}

/// The new content of a changed file, and the method that produced it.
fn patch_content(
    repo: &Repository,
    file: &FilePatch,
    content: Vec<u8>,
    direction: Direction,
) -> Result<(Vec<u8>, Method, Vec<HunkResult>), Refusal> {
    let lines = split_lines(&content);
    if let Ok((out, placed)) = apply_hunks(&lines, &file.hunks, Limits::EXACT) {
        return Ok((out, Method::Exact, hunk_results(&placed)));
    }
    if matches!(direction, Direction::Forward { .. })
        && let Some(preimage) =
            threeway::find_preimage(repo, file.old_id).map_err(git("look up a preimage blob"))?
        && let Some(merged) = threeway::merge(&preimage, &content, &file.hunks)
            .map_err(git("merge a file three ways"))?
    {
        // Hunks were applied to the preimage, not placed in this file.
        return Ok((merged, Method::ThreeWay, Vec::new()));
    }
    let limits = match direction {
        Direction::Forward { fuzz } => Limits {
            max_offset: None,
            max_fuzz: fuzz,
        },
        Direction::Reverse => Limits::OFFSET,
    };
    match apply_hunks(&lines, &file.hunks, limits) {
        Ok((out, placed)) => Ok((out, Method::Fuzzy, hunk_results(&placed))),
        Err(misfit) => Err(Refusal::Misfit { misfit, content }),
    }
}

pub(crate) fn hunk_results(placed: &[Placement]) -> Vec<HunkResult> {
    placed
        .iter()
        .enumerate()
        .map(|(i, p)| HunkResult {
            index: i + 1,
            offset: p.offset,
            fuzz: p.fuzz,
        })
        .collect()
}

/// The content and raw mode of a file in `tree`; `None` when there is no
/// file (or only a directory) at `path`.
fn read(
    repo: &Repository,
    tree: &Tree<'_>,
    path: &Path,
) -> Result<Option<(Vec<u8>, i32)>, Refusal> {
    let entry = match tree.get_path(path) {
        Ok(entry) => entry,
        Err(e) if e.code() == ErrorCode::NotFound => return Ok(None),
        Err(e) => return Err(git("read the base tree")(e)),
    };
    if entry.kind() != Some(ObjectType::Blob) {
        return Ok(None);
    }
    let blob = repo
        .find_blob(entry.id())
        .map_err(git("read a base blob"))?;
    Ok(Some((blob.content().to_vec(), entry.filemode())))
}

/// The mode of the result: the patch's new mode when it changes the mode
/// or creates the file, else the base file's mode.
fn result_mode(file: &FilePatch, base_mode: Option<i32>) -> FileMode {
    let is_file = |m| {
        matches!(
            m,
            FileMode::Blob | FileMode::BlobExecutable | FileMode::Link
        )
    };
    let declared = is_file(file.new_mode).then_some(file.new_mode);
    match (base_mode, declared) {
        (Some(raw), Some(_)) if file.old_mode == file.new_mode => mode_from_raw(raw),
        (_, Some(mode)) => mode,
        (Some(raw), None) => mode_from_raw(raw),
        (None, None) => FileMode::Blob,
    }
}

fn mode_from_raw(raw: i32) -> FileMode {
    match raw {
        0o100755 => FileMode::BlobExecutable,
        0o120000 => FileMode::Link,
        _ => FileMode::Blob,
    }
}

/// Write the blobs and one new tree: `base` with `edits` made.
pub(crate) fn write_tree(
    repo: &Repository,
    base: &Tree<'_>,
    edits: Vec<Edit>,
) -> Result<Oid, ApplyFailure> {
    let failed = |what| move |source| ApplyFailure::Git { what, source };
    let mut update = TreeUpdateBuilder::new();
    for edit in edits {
        match edit {
            Edit::Write {
                path,
                content,
                mode,
            } => {
                let blob = repo.blob(&content).map_err(failed("write a blob"))?;
                update.upsert(path, blob, mode);
            }
            Edit::Existing { path, blob, mode } => {
                update.upsert(path, blob, mode);
            }
            Edit::Remove { path } => {
                update.remove(path);
            }
        }
    }
    update
        .create_updated(repo, base)
        .map_err(failed("write the patched tree"))
}

/// The failure to report for `file`'s refusal, where up to `fuzz` was
/// allowed: for a conflict, whether more fuzz would have placed it.
pub(crate) fn explain(file: &FilePatch, refusal: Refusal, fuzz: u32) -> ApplyFailure {
    let path = file.path_text();
    let (misfit, content) = match refusal {
        Refusal::Misfit { misfit, content } => (misfit, content),
        Refusal::Missing => return ApplyFailure::MissingFile { path },
        Refusal::Exists => return ApplyFailure::FileExists { path },
        Refusal::Binary => return ApplyFailure::Binary { path },
        Refusal::Failed(failure) => return failure,
    };
    let number = misfit.hunk + 1;
    let lines = split_lines(&content);
    let Some(hunk) = file.hunks.get(misfit.hunk) else {
        // A deletion without hunks of a file that is not empty.
        return ApplyFailure::Conflict {
            file: path,
            hunk: number,
            expected_line: 1,
            hunk_text: String::new(),
            nearest: None,
            fuzz_would_apply: None,
        };
    };
    let old = hunk.old_side();
    if let Some(at) = whitespace_match(&lines, &old, misfit.expected) {
        return ApplyFailure::Malformed {
            line: file.header_lines.get(misfit.hunk).copied().flatten(),
            reason: format!(
                "hunk #{number} matches line {} of {path} only if whitespace is ignored: \
                 the patch is whitespace-damaged (tabs turned into spaces or trailing \
                 blanks stripped by a mail client?)",
                at + 1
            ),
        };
    }
    // The region's lines the hunk does not hold are the ones that differ:
    // marked `!`, the way a reader looks for them.
    let held: std::collections::HashSet<&[u8]> = old.iter().copied().collect();
    let nearest = nearest_region(&lines, &old, misfit.expected).map(|r| {
        let region = &lines[r.start..r.start + r.len];
        NearestRegion {
            start_line: r.start + 1,
            text: render(region, |i| {
                if held.contains(region[i]) { "  " } else { "! " }.to_string()
            }),
            matching_lines: r.matching,
            hunk_lines: old.len(),
        }
    });
    // What patch(1) would have done: fuzz is only ever used when asked.
    let fuzz_would_apply = (fuzz < Limits::FUZZY.max_fuzz)
        .then(|| apply_hunks(&lines, &file.hunks, Limits::FUZZY).ok())
        .flatten()
        .map(|(_, placed)| placed.iter().map(|p| p.fuzz).max().unwrap_or(0))
        .filter(|&needed| needed > fuzz);
    let body: Vec<&[u8]> = hunk.lines.iter().map(|l| l.text.as_slice()).collect();
    let sigil = |i: usize| match hunk.lines[i].kind {
        LineKind::Context => " ",
        LineKind::Remove => "-",
        LineKind::Add => "+",
    };
    let header = file.headers.get(misfit.hunk).cloned().unwrap_or_default();
    ApplyFailure::Conflict {
        file: path,
        hunk: number,
        expected_line: hunk.first_old_index() + 1,
        hunk_text: format!("{header}\n{}", render(&body, |i| sigil(i).to_string())),
        nearest,
        fuzz_would_apply,
    }
}
