//! What applying a patch produces and how it fails: the types the apply
//! engine's parts share, below all of them.

use git2::Oid;

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
    /// `hunk_text` the hunk as the patch has it (bounded in size);
    /// `fuzz_would_apply`, the fuzz with which patch(1) would have placed
    /// the file's hunks, when that is more than was allowed.
    #[error(
        "hunk #{hunk} of {file} does not apply at line {expected_line}{}",
        fuzz_note(fuzz_would_apply)
    )]
    Conflict {
        file: String,
        hunk: usize,
        expected_line: usize,
        hunk_text: String,
        nearest: Option<NearestRegion>,
        fuzz_would_apply: Option<u32>,
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

fn fuzz_note(fuzz: &Option<u32>) -> String {
    fuzz.map(|n| {
        format!(
            " (patch(1) would apply it with fuzz {n}, ignoring context that differs from the tree; \
             like git am, patchbench does not fuzz unless asked: `fuzz: {n}` in the campaign or --fuzz {n})"
        )
    })
    .unwrap_or_default()
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
                    "the nearest region of {file}, {} of {} lines matching (! marks a line the hunk does not have):\n",
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
