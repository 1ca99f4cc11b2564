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
//!    **offset**, GNU patch's search: the stated line, offsets alternating
//!    ±1, ±2, ..., each hunk starting from the offset the one before it
//!    needed; then, only when asked (`fuzz: N`), fuzz 1 up to N. By
//!    default nothing is fuzzed, as `git am` and `b4 shazam` never fuzz: a
//!    kernel patched where its context no longer matches is not the
//!    kernel its author meant, and a refusal names the hunk, the nearest
//!    region (its differing lines marked) and the fuzz patch(1) would use.
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
//! A traditional unified diff (`diff -u`, quilt, the mm tree's patches),
//! which libgit2 does not parse, is first put in git's form
//! (`traditional`); failures name the lines of the patch as given.
//!
//! `search` and `nearest` are pure line logic, `lint` and `traditional`
//! read patch text; `parse`, `threeway` and `engine` do the git2 plumbing.

mod engine;
mod lint;
mod nearest;
mod parse;
mod search;
#[cfg(test)]
mod tests;
mod threeway;
mod traditional;
mod types;

pub use parse::ChangedLines;
pub use traditional::diff_start;
pub use types::{Applied, ApplyFailure, FileResult, HunkResult, Method, NearestRegion};

use git2::{Diff, Repository, Tree};

use engine::Direction;

/// Apply `patch_text` (a `git format-patch` mail, a bare `git diff`, or a
/// traditional unified diff with or without a mail around it) to `base`,
/// writing the resulting blobs and tree, ignoring up to `fuzz` context
/// lines at each end of a hunk (0, `git am`'s rule, unless asked). See the
/// module docs for the attempts made.
pub fn apply_patch(
    repo: &Repository,
    base: &Tree<'_>,
    patch_text: &[u8],
    fuzz: u32,
) -> Result<Applied, ApplyFailure> {
    let normalised = traditional::normalise(patch_text).map_err(|e| ApplyFailure::Malformed {
        line: Some(e.line),
        reason: e.reason,
    })?;
    match normalised {
        None => apply_git(repo, base, patch_text, &|n| n, fuzz),
        Some(n) => apply_git(repo, base, &n.text, &|line| n.original_line(line), fuzz),
    }
}

/// [`apply_patch`] on a patch in git's form, `patch_text`, whose 1-based
/// lines `original_line` maps to the patch as given: every failure names
/// a line of the patch as given.
fn apply_git(
    repo: &Repository,
    base: &Tree<'_>,
    patch_text: &[u8],
    original_line: &dyn Fn(usize) -> usize,
    fuzz: u32,
) -> Result<Applied, ApplyFailure> {
    let diff = Diff::from_buffer(patch_text)
        .map_err(|e| lint::malformed(patch_text, &e, original_line))?;
    let mut files = parse::files(&diff, patch_text)?;
    for file in &mut files {
        for line in file.header_lines.iter_mut().flatten() {
            *line = original_line(*line);
        }
    }

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
        match engine::apply_file(repo, base, file, Direction::Forward { fuzz }) {
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
                return Err(engine::explain(file, refusal, fuzz));
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

/// Every file of `diff` (a patch parsed by git2, or the diff git2 made
/// between two trees) with the lines it removes and adds, parsed as a patch
/// to apply is.
pub fn changed_lines(diff: &Diff<'_>) -> Result<Vec<ChangedLines>, ApplyFailure> {
    Ok(parse::files(diff, &[])?
        .iter()
        .map(parse::FilePatch::changed_lines)
        .collect())
}

/// Whether every file of the reversed patch applies to `base`.
fn already_applied(repo: &Repository, base: &Tree<'_>, files: &[parse::FilePatch]) -> bool {
    files
        .iter()
        .all(|f| engine::apply_file(repo, base, &f.reversed(), Direction::Reverse).is_ok())
}
