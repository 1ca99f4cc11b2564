//! Patch series: read `git format-patch` mails (or files with no mail
//! header: bare and traditional diffs, quilt patches) and apply them with
//! git2, one commit per patch, keeping each patch's author, date and
//! message.
//!
//! Applying works on trees and the object database only: the working
//! directory and HEAD are never touched, so a failed series leaves the
//! repository exactly as it was.

pub mod lore;
pub mod mail;

use std::path::{Path, PathBuf};

use git2::{Oid, Repository, Signature, Time};

use crate::apply;
use sha2::{Digest, Sha256};

/// Where a series comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeriesSource {
    /// A directory of patch files (in `series`-file or name order), an mbox
    /// holding many mails, or one patch file.
    Path(PathBuf),
    /// `lore:<message-id>`: the thread of that message, fetched from a
    /// public-inbox archive.
    Lore { message_id: String },
    /// `none`: no patches, so B is the base itself. An A/A self-check: its
    /// verdicts must all be "no clear difference".
    None,
}

impl SeriesSource {
    /// `lore:<id>` or a path, resolved against `base_dir` when relative.
    pub fn parse(text: &str, base_dir: &Path) -> SeriesSource {
        if text == "none" {
            return SeriesSource::None;
        }
        match text.strip_prefix("lore:") {
            Some(id) => SeriesSource::Lore {
                message_id: id.trim().to_string(),
            },
            None => SeriesSource::Path(base_dir.join(text)),
        }
    }
}

impl std::fmt::Display for SeriesSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SeriesSource::Path(p) => write!(f, "{}", p.display()),
            SeriesSource::Lore { message_id } => write!(f, "lore:{message_id}"),
            SeriesSource::None => f.write_str("none"),
        }
    }
}

/// One patch of a series, parsed from its mail.
#[derive(Debug, Clone)]
pub struct Patch {
    /// Where the mail came from: its file, or the series source and index.
    pub origin: String,
    pub mail: mail::Mail,
    /// The raw mail, which git2 parses for the diff.
    pub raw: Vec<u8>,
}

impl Series {
    /// sha256 over the first `k` patches' bytes, in order: the hash of a
    /// prefix of the series (the whole series' for `k` = its length).
    pub fn prefix_sha256(&self, k: usize) -> String {
        let mut hasher = Sha256::new();
        for p in self.patches.iter().take(k) {
            hasher.update(&p.raw);
        }
        hex::encode(hasher.finalize())
    }
}

impl Patch {
    pub fn subject(&self) -> &str {
        &self.mail.subject
    }

    /// What the user should know about how this patch was read: a file
    /// with no mail header, a mail with no date.
    pub fn note(&self) -> Option<String> {
        if self.mail.headerless {
            return Some(format!(
                "{} has no mail header: subject \"{}\" from its file name, author patchbench's \
                 identity ({} <{}>), date its parent commit's",
                self.origin,
                self.mail.subject,
                mail::IDENTITY_NAME,
                mail::IDENTITY_EMAIL
            ));
        }
        self.mail.date.is_none().then(|| {
            format!(
                "{} has no Date: header: its commit takes its parent commit's date (git am would \
                 take the current time; a fixed one keeps the commit, and so its cached kernel, \
                 the same on every run)",
                self.origin
            )
        })
    }

    /// The commit message: subject, body, and a `Link:` to the mail when it
    /// has a Message-ID and the body has no link yet.
    pub fn commit_message(&self) -> String {
        let mut message = self.mail.subject.clone();
        message.push('\n');
        if !self.mail.body.is_empty() {
            message.push('\n');
            message.push_str(&self.mail.body);
            message.push('\n');
        }
        if let Some(id) = &self.mail.message_id
            && !self.mail.body.lines().any(|l| l.starts_with("Link:"))
        {
            message.push_str(&format!("\nLink: https://lore.kernel.org/r/{id}\n"));
        }
        message
    }
}

/// An ordered series of patches with a content hash.
#[derive(Debug, Clone)]
pub struct Series {
    pub source: SeriesSource,
    pub patches: Vec<Patch>,
    /// Cover letters found and skipped.
    pub cover_letters: usize,
    /// The `base-commit:` trailer of any mail of the series.
    pub base_commit: Option<String>,
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
    #[error("series {source_name} holds no patch mails")]
    Empty { source_name: String },
    #[error("series {source_name} holds only a cover letter, no patches")]
    OnlyCoverLetter { source_name: String },
    #[error("series file {} names {name}, which does not exist", series_file.display())]
    MissingListed { series_file: PathBuf, name: String },
    #[error("patch {origin}: {reason}")]
    Malformed { origin: String, reason: String },
    #[error("cannot fetch series {source_name}")]
    Lore {
        source_name: String,
        #[source]
        source: lore::LoreError,
    },
    // The cause is part of the message, before the evidence, not a
    // `source`: anyhow would print it after the evidence, on a line of its
    // own that starts with ": ".
    #[error("patch {number}/{total} \"{subject}\" ({origin}) does not apply: {failure}{}", details.as_ref().map(|d| format!("\n{}", d.trim_end())).unwrap_or_default())]
    DoesNotApply {
        number: usize,
        total: usize,
        subject: String,
        origin: String,
        /// The hunk and the nearest region of the file, for a conflict.
        details: Option<String>,
        failure: Box<apply::ApplyFailure>,
    },
    #[error(
        "every patch of series {source_name} is already in the base ({total} patch(es), none changes the tree): B would be the base itself; for a deliberate A/A self-check use `--series none`"
    )]
    NothingNew { source_name: String, total: usize },
    #[error("cannot {what} for patch {number} \"{subject}\"")]
    Git {
        number: usize,
        subject: String,
        what: &'static str,
        #[source]
        source: git2::Error,
    },
}

fn is_patch_file(p: &Path) -> bool {
    p.is_file()
        && matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("patch" | "diff" | "eml" | "mbox" | "mbx")
        )
}

/// The files of a series directory: the order of its quilt-style `series`
/// file when it has one (`#` comments and blank lines skipped), else every
/// patch file in name order.
pub fn directory_files(dir: &Path) -> Result<Vec<PathBuf>, SeriesError> {
    let read_err = |path: &Path| {
        let path = path.to_owned();
        move |source| SeriesError::Read { path, source }
    };
    let series_file = dir.join("series");
    if series_file.is_file() {
        let text = std::fs::read_to_string(&series_file).map_err(read_err(&series_file))?;
        return text
            .lines()
            .map(|l| l.split('#').next().unwrap_or("").trim())
            .filter(|l| !l.is_empty())
            // quilt allows options after the name (`-p1`); the name is the first word.
            .map(|l| l.split_whitespace().next().unwrap_or(l))
            .map(|name| {
                let path = dir.join(name);
                if path.is_file() {
                    Ok(path)
                } else {
                    Err(SeriesError::MissingListed {
                        series_file: series_file.clone(),
                        name: name.to_string(),
                    })
                }
            })
            .collect();
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(read_err(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| is_patch_file(p))
        .collect();
    files.sort();
    Ok(files)
}

/// One mail of a series as read, before it is parsed.
#[derive(Debug, Clone)]
pub struct RawMail {
    /// Where it came from, for messages: its file, and its place in an mbox.
    pub origin: String,
    /// The name of its file, which gives the subject of a patch with no
    /// mail header.
    pub file_name: String,
    pub bytes: Vec<u8>,
}

/// Build a series from mails: replies are dropped, cover letters skipped
/// (their `base-commit:` kept), and numbered patches put in `n/N` order.
/// A file with no mail header is a patch of its own (see
/// [`mail::headerless`]). A mail with no diff that is not a cover letter
/// is refused, as `git am` refuses it ("Patch is empty"), except an
/// unnumbered one in a lore thread, which is discussion, as a reply is.
pub fn from_mails(source: SeriesSource, mails: Vec<RawMail>) -> Result<Series, SeriesError> {
    let source_name = source.to_string();
    let thread = matches!(source, SeriesSource::Lore { .. });
    let mut patches = Vec::new();
    let mut cover_letters = 0;
    let mut base_commit = None;
    for RawMail {
        origin,
        file_name,
        bytes: raw,
    } in mails
    {
        let parsed = if mail::has_mail_header(&raw) {
            mail::parse(&raw)
        } else {
            mail::headerless(&raw, &file_name)
        }
        .map_err(|reason| SeriesError::Malformed {
            origin: origin.clone(),
            reason,
        })?;
        if parsed.is_reply() {
            continue;
        }
        if base_commit.is_none() {
            base_commit = parsed.base_commit.clone();
        }
        if parsed.is_cover_letter() {
            cover_letters += 1;
            continue;
        }
        if !parsed.has_diff && thread && parsed.number.is_none() {
            continue;
        }
        if !parsed.has_diff {
            return Err(SeriesError::Malformed {
                origin,
                reason: "the patch is empty: no diff found in the mail (git am stops at it: \
                         \"Patch is empty\"); a cover letter is numbered 0, as in [PATCH 0/3]"
                    .into(),
            });
        }
        patches.push(Patch {
            origin,
            mail: parsed,
            raw,
        });
    }
    if patches.is_empty() {
        return Err(if cover_letters > 0 {
            SeriesError::OnlyCoverLetter { source_name }
        } else {
            SeriesError::Empty { source_name }
        });
    }
    if patches.iter().all(|p| p.mail.number.is_some()) {
        patches.sort_by_key(|p| p.mail.number);
    }
    let mut hasher = Sha256::new();
    for p in &patches {
        hasher.update(&p.raw);
    }
    Ok(Series {
        source,
        patches,
        cover_letters,
        base_commit,
        sha256: hex::encode(hasher.finalize()),
    })
}

/// Read a series from a path: a directory, an mbox, or one patch file.
pub fn load_path(path: &Path) -> Result<Series, SeriesError> {
    let files = if path.is_dir() {
        directory_files(path)?
    } else {
        vec![path.to_owned()]
    };
    let mut mails = Vec::new();
    for file in files {
        let raw = std::fs::read(&file).map_err(|source| SeriesError::Read {
            path: file.clone(),
            source,
        })?;
        let parts = mail::split_mbox(&raw);
        let many = parts.len() > 1;
        let file_name = file.file_name().map_or_else(
            || file.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        for (i, part) in parts.into_iter().enumerate() {
            let origin = if many {
                format!("{} (mail {})", file.display(), i + 1)
            } else {
                file.display().to_string()
            };
            mails.push(RawMail {
                origin,
                file_name: file_name.clone(),
                bytes: part.to_vec(),
            });
        }
    }
    from_mails(SeriesSource::Path(path.to_owned()), mails)
}

/// Read a series from wherever it is.
pub async fn load(source: &SeriesSource, lore_url: &str) -> Result<Series, SeriesError> {
    match source {
        SeriesSource::None => Ok(Series {
            source: SeriesSource::None,
            patches: Vec::new(),
            cover_letters: 0,
            base_commit: None,
            sha256: hex::encode(Sha256::digest(b"")),
        }),
        SeriesSource::Path(path) => load_path(path),
        SeriesSource::Lore { message_id } => {
            let mbox = lore::fetch_thread(lore_url, message_id)
                .await
                .map_err(|e| SeriesError::Lore {
                    source_name: source.to_string(),
                    source: e,
                })?;
            let mails = mail::split_mbox(&mbox)
                .into_iter()
                .enumerate()
                .map(|(i, m)| RawMail {
                    origin: format!("{source} (mail {})", i + 1),
                    file_name: source.to_string(),
                    bytes: m.to_vec(),
                })
                .collect();
            from_mails(source.clone(), mails)
        }
    }
}

/// How one patch applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchApplied {
    /// The patch's commit. For an already-applied patch nothing is
    /// committed, and this is the commit it was checked against (the
    /// previous patch's, or the base).
    pub commit: Oid,
    pub landing: Landing,
}

/// What applying one patch did to the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Landing {
    /// The patch changed the tree and became a commit.
    Applied {
        method: apply::Method,
        files: Vec<apply::FileResult>,
    },
    /// The tree already holds the patch's changes: skipped, not committed.
    AlreadyApplied(AlreadyApplied),
}

/// How a patch was found to be applied already.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlreadyApplied {
    /// It applied (by this method) and left the tree exactly as it was:
    /// a 3-way merge of a change the file already has, say.
    NoChange(apply::Method),
    /// It does not apply, but its reverse applies to every file it touches.
    ReverseApplies { files: Vec<String> },
}

impl PatchApplied {
    /// `exact`, `3-way`, `at an offset (file hunk #n offset +k, ...)`,
    /// `fuzzy (file hunk #n offset +k fuzz f, ...)` or
    /// `already applied (...)`: what a reader needs to judge whether the
    /// patch landed where its author meant.
    pub fn describe(&self) -> String {
        let (method, files) = match &self.landing {
            Landing::AlreadyApplied(how) => {
                let why = match how {
                    AlreadyApplied::NoChange(method) => {
                        format!("applying it ({}) changes nothing", method_name(*method))
                    }
                    AlreadyApplied::ReverseApplies { files } => {
                        format!("its reverse applies to {}", files.join(", "))
                    }
                };
                return format!("already applied: {why}; skipped, nothing committed");
            }
            Landing::Applied { method, files } => (*method, files),
        };
        match method {
            apply::Method::Exact | apply::Method::ThreeWay => method_name(method).into(),
            apply::Method::Fuzzy => {
                // Offsets alone are what git apply allows; fuzz is named
                // only where some hunk used it.
                let fuzzed = self.has_fuzz();
                let hunks: Vec<String> = files
                    .iter()
                    .flat_map(|f| {
                        f.hunks
                            .iter()
                            .filter(|h| h.offset != 0 || h.fuzz != 0)
                            .map(move |h| {
                                let mut text =
                                    format!("{} hunk #{} offset {:+}", f.path, h.index, h.offset);
                                if fuzzed {
                                    text.push_str(&format!(" fuzz {}", h.fuzz));
                                }
                                text
                            })
                    })
                    .collect();
                let name = if fuzzed { "fuzzy" } else { "at an offset" };
                format!("{name} ({})", hunks.join(", "))
            }
        }
    }

    /// The method that applied it, unless it was already applied.
    pub fn method(&self) -> Option<apply::Method> {
        match &self.landing {
            Landing::Applied { method, .. } => Some(*method),
            Landing::AlreadyApplied(_) => None,
        }
    }

    pub fn already_applied(&self) -> bool {
        matches!(self.landing, Landing::AlreadyApplied(_))
    }

    /// Applied with fuzz: context lines were ignored, which deserves a warning.
    pub fn has_fuzz(&self) -> bool {
        match &self.landing {
            Landing::Applied { files, .. } => {
                files.iter().any(|f| f.hunks.iter().any(|h| h.fuzz > 0))
            }
            Landing::AlreadyApplied(_) => false,
        }
    }
}

fn method_name(method: apply::Method) -> &'static str {
    match method {
        apply::Method::Exact => "exact",
        apply::Method::ThreeWay => "3-way merge on the preimage blobs",
        apply::Method::Fuzzy => "with offsets or fuzz",
    }
}

/// A name or e-mail address as libgit2 accepts it in a signature: it
/// refuses `<` and `>` anywhere (they delimit the address), and a NUL or a
/// line break would forge a header line in the commit. Those become
/// nothing and spaces, runs of spaces one, and what is left is trimmed;
/// `fallback` stands in for a name that is left empty (libgit2 refuses an
/// empty one). The original text stays in the series (and so in the
/// results and reports); only the commit's signature carries this.
pub fn signature_text(text: &str, fallback: &str) -> String {
    let cleaned: String = text
        .chars()
        .filter(|c| !matches!(c, '<' | '>' | '\0'))
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let words: Vec<&str> = cleaned.split_whitespace().collect();
    let joined = words.join(" ");
    // libgit2 also trims these from both ends, and refuses what is then
    // empty.
    let crud = |c: char| ".,:;\"\\'".contains(c) || c.is_whitespace();
    if joined.trim_matches(crud).is_empty() {
        fallback.to_string()
    } else {
        joined
    }
}

/// Apply every patch on top of `base`, one commit each: exactly, else by a
/// 3-way merge, else at an offset, with up to `fuzz` context lines ignored
/// (see [`apply`]; 0 by default, as `git am`). Nothing but new
/// objects is written: no ref, no index, no files.
///
/// A patch whose changes the tree already holds (applying it, by any
/// method, leaves the tree as it was, or only its reverse applies) is
/// reported as already applied and skipped: no commit, so no empty commit
/// reaches a build. The series goes on, unlike `git am`, which stops: a
/// series rebased onto a tree that has since taken one of its patches
/// still measures the rest, and every report names the skipped patch. If
/// no patch changes anything, B would be A, and that fails
/// ([`SeriesError::NothingNew`], exit code 4).
pub fn apply(
    repo: &Repository,
    base: Oid,
    series: &Series,
    fuzz: u32,
) -> Result<Vec<PatchApplied>, SeriesError> {
    let total = series.patches.len();
    let mut head = base;
    let mut applied = Vec::new();
    for (i, patch) in series.patches.iter().enumerate() {
        let number = i + 1;
        let git = |what: &'static str| {
            let subject = patch.mail.subject.clone();
            move |source| SeriesError::Git {
                number,
                subject,
                what,
                source,
            }
        };
        let parent = repo.find_commit(head).map_err(git("find the parent"))?;
        let parent_tree = parent.tree().map_err(git("read the parent tree"))?;
        let result = match apply::apply_patch(repo, &parent_tree, &patch.raw, fuzz) {
            Ok(result) => result,
            Err(apply::ApplyFailure::AlreadyApplied { files }) => {
                applied.push(PatchApplied {
                    commit: head,
                    landing: Landing::AlreadyApplied(AlreadyApplied::ReverseApplies { files }),
                });
                continue;
            }
            Err(failure) => {
                return Err(SeriesError::DoesNotApply {
                    number,
                    total,
                    subject: patch.mail.subject.clone(),
                    origin: patch.origin.clone(),
                    details: failure.details(),
                    failure: Box::new(failure),
                });
            }
        };
        if result.tree == parent_tree.id() {
            applied.push(PatchApplied {
                commit: head,
                landing: Landing::AlreadyApplied(AlreadyApplied::NoChange(result.method)),
            });
            continue;
        }
        let tree = repo.find_tree(result.tree).map_err(git("find the tree"))?;
        // A mail without a date takes its parent's, not the current time
        // as git am does: the commit, and so the build cache's key, must be
        // the same on every run.
        let when = match patch.mail.date {
            Some((secs, offset)) => Time::new(secs, offset),
            None => parent.time(),
        };
        let author = Signature::new(
            &signature_text(&patch.mail.author_name, "Unknown Author"),
            &signature_text(&patch.mail.author_email, "unknown@unknown"),
            &when,
        )
        .map_err(git("make the author"))?;
        let committer = Signature::new(mail::IDENTITY_NAME, mail::IDENTITY_EMAIL, &when)
            .map_err(git("make the committer"))?;
        head = repo
            .commit(
                None,
                &author,
                &committer,
                &patch.commit_message(),
                &tree,
                &[&parent],
            )
            .map_err(git("commit"))?;
        applied.push(PatchApplied {
            commit: head,
            landing: Landing::Applied {
                method: result.method,
                files: result.files,
            },
        });
    }
    if total > 0 && head == base {
        return Err(SeriesError::NothingNew {
            source_name: series.source.to_string(),
            total,
        });
    }
    Ok(applied)
}

#[cfg(test)]
mod tests;
