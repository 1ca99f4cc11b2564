//! Applying one patch to a tree the way `git am --3way` and patch(1) do,
//! and saying where it failed when it does not apply.
//!
//! The attempts, in order:
//! 1. **Exact**: libgit2's `apply_to_tree`, every hunk at its stated line,
//!    once the checks libgit2 skips have passed (a created path is free, a
//!    deleted file holds exactly what the patch removes).
//! 2. File by file, for the files that do not apply exactly:
//!    **3-way**, when the repository has the preimage blob the patch's
//!    `index <pre>..<post>` line names: the hunks go onto that blob exactly,
//!    and libgit2 merges preimage → postimage into the current file; then
//!    **fuzzy**, GNU patch's search: the stated line, offsets alternating
//!    ±1, ±2, ..., then fuzz 1 and 2, each hunk starting from the offset the
//!    one before it needed.
//! 3. When a file still does not apply, the reversed patch is tried (offsets,
//!    no fuzz): if every file of it applies, the patch is already applied.
//!
//! Whitespace: a blank line inside a hunk is an empty context line (its
//! space was stripped in the mail), as libgit2 and patch(1) read it. A hunk
//! that matches only when whitespace is ignored (tabs turned into spaces)
//! is not applied: it is reported as a whitespace-damaged, malformed patch,
//! since applying it would write the damaged lines into the tree.
//!
//! Only git objects are written (blobs and trees): no ref, no index, no
//! working tree. A patch that does not apply can leave unreferenced blobs
//! (libgit2's apply writes them as it goes), which `git gc` prunes.
//!
//! `search` and `nearest` are pure line logic and `lint` reads patch
//! text; `parse`, `threeway` and `engine` do the git2 plumbing.

mod engine;
mod lint;
mod nearest;
mod parse;
mod search;
#[cfg(test)]
mod tests;
mod threeway;

use git2::{Diff, Oid, Repository, Tree};

use engine::Direction;

/// Which attempt applied a patch or file; ordered weakest first, so a
/// patch's method is the greatest of its files'.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Method {
    Exact,
    ThreeWay,
    Fuzzy,
}

/// A patch that applied: the new tree (written to the object database),
/// the strongest method any file needed, and each file's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub tree: Oid,
    pub method: Method,
    pub files: Vec<FileResult>,
}

/// One file of an applied patch. `hunks` is empty for a 3-way file: its
/// hunks went onto the preimage exactly and the merge placed them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileResult {
    /// The path after the patch (before it, for a deletion).
    pub path: String,
    pub method: Method,
    pub hunks: Vec<HunkResult>,
}

/// Where one hunk went, as patch(1) reports it: `index` is 1-based, and
/// `offset` counts lines from the line the hunk header states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HunkResult {
    pub index: usize,
    pub offset: i64,
    pub fuzz: u32,
}

/// The part of the target file that looks most like a failed hunk's old
/// side (context and removed lines): a window as long as the hunk's old
/// side, holding the most of its non-blank lines in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NearestRegion {
    /// 1-based line of the file where the window starts.
    pub start_line: usize,
    /// The window's lines (at most 40, each cut at 200 bytes).
    pub text: String,
    /// How many of the hunk's old lines the window holds, in order.
    pub matching_lines: usize,
    /// How many old lines the hunk has.
    pub hunk_lines: usize,
}

/// Why a patch did not apply. Messages are lowercase fragments that follow
/// the caller's name for the patch: `patch 2/3 "subject": {failure}`.
#[derive(Debug, thiserror::Error)]
pub enum ApplyFailure {
    /// `expected_line` is the 1-based line the hunk header states;
    /// `hunk_text` the hunk as the patch has it (bounded in size).
    #[error("hunk #{hunk} of {file} does not apply at line {expected_line}")]
    Conflict {
        file: String,
        hunk: usize,
        expected_line: usize,
        hunk_text: String,
        nearest: Option<NearestRegion>,
    },
    #[error("already applied: its reverse applies to {}", files.join(", "))]
    AlreadyApplied { files: Vec<String> },
    /// `line` is 1-based in the patch text as given (the whole mail).
    #[error("malformed patch{}: {reason}", at_line(line))]
    Malformed { line: Option<usize>, reason: String },
    #[error("{path} does not exist in the base tree")]
    MissingFile { path: String },
    #[error("the patch creates {path}, which already exists in the base tree")]
    FileExists { path: String },
    /// Binary changes apply exactly (through libgit2) or not at all.
    #[error("the binary change to {path} does not apply")]
    Binary { path: String },
    #[error("cannot {what}")]
    Git {
        what: &'static str,
        #[source]
        source: git2::Error,
    },
}

fn at_line(line: &Option<usize>) -> String {
    line.map(|n| format!(" at line {n}")).unwrap_or_default()
}

impl ApplyFailure {
    /// The evidence behind a conflict, for a report: the hunk, then the
    /// nearest region of the file with its line numbers. `None` for other
    /// failures, whose message says it all.
    pub fn details(&self) -> Option<String> {
        let ApplyFailure::Conflict {
            file,
            hunk_text,
            nearest,
            ..
        } = self
        else {
            return None;
        };
        let mut out = format!("the hunk:\n{hunk_text}");
        match nearest {
            Some(region) => {
                out.push_str(&format!(
                    "the nearest region of {file}, {} of {} lines matching:\n",
                    region.matching_lines, region.hunk_lines
                ));
                for (i, line) in region.text.lines().enumerate() {
                    out.push_str(&format!("{:>6}  {line}\n", region.start_line + i));
                }
            }
            None => out.push_str(&format!("no region of {file} resembles it\n")),
        }
        Some(out)
    }
}

/// Apply `patch_text` (a `git format-patch` mail, or a bare `diff --git`)
/// to `base`, writing the resulting blobs and tree. See the module docs for
/// the attempts made.
pub fn apply_patch(
    repo: &Repository,
    base: &Tree<'_>,
    patch_text: &[u8],
) -> Result<Applied, ApplyFailure> {
    let diff = Diff::from_buffer(patch_text).map_err(|e| lint::malformed(patch_text, &e))?;
    let files = parse::files(&diff, patch_text)?;

    let checked = files
        .iter()
        .all(|f| engine::precheck(repo, base, f).is_ok());
    if checked && let Ok(mut index) = repo.apply_to_tree(base, &diff, None) {
        let tree = index
            .write_tree_to(repo)
            .map_err(|source| ApplyFailure::Git {
                what: "write the patched tree",
                source,
            })?;
        let files = files
            .iter()
            .map(|f| FileResult {
                path: f.path_text(),
                method: Method::Exact,
                hunks: (1..=f.hunks.len())
                    .map(|index| HunkResult {
                        index,
                        offset: 0,
                        fuzz: 0,
                    })
                    .collect(),
            })
            .collect();
        return Ok(Applied {
            tree,
            method: Method::Exact,
            files,
        });
    }

    let mut results = Vec::with_capacity(files.len());
    let mut edits = Vec::new();
    for file in &files {
        match engine::apply_file(repo, base, file, Direction::Forward) {
            Ok(outcome) => {
                results.push(outcome.result);
                edits.extend(outcome.edits);
            }
            Err(engine::Refusal::Failed(failure)) => return Err(failure),
            Err(refusal) => {
                if already_applied(repo, base, &files) {
                    return Err(ApplyFailure::AlreadyApplied {
                        files: files.iter().map(parse::FilePatch::path_text).collect(),
                    });
                }
                return Err(engine::explain(file, refusal));
            }
        }
    }
    let tree = engine::write_tree(repo, base, edits)?;
    let method = results
        .iter()
        .map(|r| r.method)
        .max()
        .unwrap_or(Method::Exact);
    Ok(Applied {
        tree,
        method,
        files: results,
    })
}

/// Whether every file of the reversed patch applies to `base`.
fn already_applied(repo: &Repository, base: &Tree<'_>, files: &[parse::FilePatch]) -> bool {
    files
        .iter()
        .all(|f| engine::apply_file(repo, base, &f.reversed(), Direction::Reverse).is_ok())
}
