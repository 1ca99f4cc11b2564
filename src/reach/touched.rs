//! What an applied series changes, function by function: for each patch,
//! git2's diff between its parent's tree and its own (no context lines),
//! read as the apply engine reads a patch (`apply::changed_lines`); each
//! removed line placed in the parent's file and each added line in the
//! patch's, by the C scan of that file as the tree holds it (`cscan`).
//! The line numbers are the trees' own, so a patch that applied with
//! offsets, fuzz or a 3-way merge is placed where it landed, not where its
//! hunk headers said; a hunk header's function name is never used.
//! Comment and blank lines change no code and are left out.

use std::path::Path;

use git2::{DiffOptions, Oid, Repository, Tree};

use super::cscan::{self, ItemKind, Scan};

/// One place a series changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Touched {
    /// The file, as the tree names it.
    pub file: String,
    pub place: Place,
    /// The patches (1-based) that change it.
    pub patches: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Place {
    /// A function definition whose lines change; `in_base`: the base tree
    /// defines it in that file (else the series adds it).
    Function { name: String, in_base: bool },
    /// Code outside any function: a struct, an initialiser, a declaration
    /// or a macro, named by its first line.
    Outside { what: String },
    /// A file that is not C (`.c`, `.h`): a Kconfig, a Makefile, a document.
    NotC,
}

impl Touched {
    /// The function's name, for a function.
    pub fn function(&self) -> Option<&str> {
        match &self.place {
            Place::Function { name, .. } => Some(name),
            _ => None,
        }
    }
}

/// Why what a series changes could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TouchedError {
    #[error("cannot {what} for patch {patch}")]
    Git {
        patch: usize,
        what: &'static str,
        #[source]
        source: git2::Error,
    },
    #[error("patch {patch}: cannot read the diff git2 made of it")]
    Diff {
        patch: usize,
        #[source]
        source: Box<crate::apply::ApplyFailure>,
    },
}

/// The places `commits` change, each against the one before (`base`
/// first); `None` stands for a patch that was already applied (no commit).
/// Places are in the order the series first changes them.
pub fn of_commits(
    repo: &Repository,
    base: Oid,
    commits: &[Option<Oid>],
) -> Result<Vec<Touched>, TouchedError> {
    let base_tree = tree_of(repo, base, 0)?;
    let mut touched: Vec<Touched> = Vec::new();
    let mut parent = base;
    for (k, commit) in commits.iter().enumerate() {
        let patch = k + 1;
        let Some(commit) = *commit else { continue };
        let git = |what| {
            move |source| TouchedError::Git {
                patch,
                what,
                source,
            }
        };
        let old = tree_of(repo, parent, patch)?;
        let new = tree_of(repo, commit, patch)?;
        let mut opts = DiffOptions::new();
        opts.context_lines(0);
        let diff = repo
            .diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))
            .map_err(git("diff the patch's tree with its parent's"))?;
        if diff.deltas().len() == 0 {
            parent = commit;
            continue;
        }
        let files = crate::apply::changed_lines(&diff).map_err(|source| TouchedError::Diff {
            patch,
            source: Box::new(source),
        })?;
        for file in files {
            let Some(path) = file.new_path.as_ref().or(file.old_path.as_ref()) else {
                continue;
            };
            let name = path.to_string_lossy().into_owned();
            let mut places = Vec::new();
            if !is_c(path) || file.binary {
                places.push(Place::NotC);
            } else {
                let old_text = match &file.old_path {
                    Some(p) => Some(read(repo, &old, p, patch)?),
                    None => None,
                };
                let new_text = match &file.new_path {
                    Some(p) => Some(read(repo, &new, p, patch)?),
                    None => None,
                };
                let base_scan = cscan::scan(&read(repo, &base_tree, path, patch)?);
                for (text, lines) in [(old_text, &file.removed), (new_text, &file.added)] {
                    let Some(text) = text else { continue };
                    let scan = cscan::scan(&text);
                    for &line in lines {
                        if let Some(place) = place_of(&scan, &text, line, &base_scan) {
                            places.push(place);
                        }
                    }
                }
            }
            for place in places {
                match touched
                    .iter_mut()
                    .find(|t| t.file == name && t.place == place)
                {
                    Some(t) => {
                        if !t.patches.contains(&patch) {
                            t.patches.push(patch);
                        }
                    }
                    None => touched.push(Touched {
                        file: name.clone(),
                        place,
                        patches: vec![patch],
                    }),
                }
            }
        }
        parent = commit;
    }
    // A function the series adds and then changes is one place.
    touched.dedup_by(|a, b| a.file == b.file && a.place == b.place);
    Ok(touched)
}

/// Where `line` of a file is, unless it holds no code.
fn place_of(scan: &Scan, text: &[u8], line: usize, base: &Scan) -> Option<Place> {
    if !scan.is_code(line) {
        return None;
    }
    Some(match scan.item_at(line).map(|i| &i.kind) {
        Some(ItemKind::Function(name)) => Place::Function {
            name: name.clone(),
            in_base: base.function_names().any(|n| n == name),
        },
        Some(ItemKind::Other(header)) => Place::Outside {
            what: shorten(header),
        },
        None => Place::Outside {
            what: shorten(&String::from_utf8_lossy(
                text.split(|&b| b == b'\n').nth(line - 1).unwrap_or(b""),
            )),
        },
    })
}

fn shorten(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

fn is_c(path: &Path) -> bool {
    matches!(path.extension().and_then(|e| e.to_str()), Some("c" | "h"))
}

fn tree_of(repo: &Repository, commit: Oid, patch: usize) -> Result<Tree<'_>, TouchedError> {
    repo.find_commit(commit)
        .and_then(|c| c.tree())
        .map_err(|source| TouchedError::Git {
            patch,
            what: "read a commit's tree",
            source,
        })
}

/// The file's bytes in `tree`; empty when the tree does not hold it.
fn read(
    repo: &Repository,
    tree: &Tree<'_>,
    path: &Path,
    patch: usize,
) -> Result<Vec<u8>, TouchedError> {
    let entry = match tree.get_path(path) {
        Ok(entry) => entry,
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(TouchedError::Git {
                patch,
                what: "look a file up in a tree",
                source,
            });
        }
    };
    let blob = repo
        .find_blob(entry.id())
        .map_err(|source| TouchedError::Git {
            patch,
            what: "read a file's blob",
            source,
        })?;
    Ok(blob.content().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository with `base` committed, then each of `patches` (files
    /// written whole) as one commit on top.
    fn repo_with(
        base: &[(&str, &str)],
        patches: &[&[(&str, &str)]],
    ) -> (tempfile::TempDir, Oid, Vec<Option<Oid>>) {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let sig = git2::Signature::now("t", "t@t").unwrap();
        let empty = repo.treebuilder(None).unwrap().write().unwrap();
        let commit = |files: &[(&str, &str)], parent: Option<Oid>| {
            let tree = match parent {
                Some(p) => repo.find_commit(p).unwrap().tree().unwrap(),
                None => repo.find_tree(empty).unwrap(),
            };
            let mut update = git2::build::TreeUpdateBuilder::new();
            for (path, text) in files {
                let blob = repo.blob(text.as_bytes()).unwrap();
                update.upsert(*path, blob, git2::FileMode::Blob);
            }
            let id = update.create_updated(&repo, &tree).unwrap();
            let tree = repo.find_tree(id).unwrap();
            let parents: Vec<git2::Commit> = parent
                .map(|p| repo.find_commit(p).unwrap())
                .into_iter()
                .collect();
            let refs: Vec<&git2::Commit> = parents.iter().collect();
            repo.commit(None, &sig, &sig, "m", &tree, &refs).unwrap()
        };
        let base_id = commit(base, None);
        let mut head = base_id;
        let mut ids = Vec::new();
        for files in patches {
            head = commit(files, Some(head));
            ids.push(Some(head));
        }
        (dir, base_id, ids)
    }

    const BASE: &str = "\
struct stats {
\tlong a;
};

/* Flush the stats. */
static void flush(struct stats *s)
{
\ts->a = 0;
}

int reader(struct stats *s)
{
\tflush(s);
\treturn s->a;
}
";

    #[test]
    fn a_changed_body_names_its_function_and_comments_change_nothing() {
        let patched = BASE
            .replace(
                "/* Flush the stats. */",
                "/* Flush the stats, all of them. */",
            )
            .replace("\tflush(s);\n", "\tif (s->a)\n\t\tflush(s);\n");
        let (dir, base, commits) = repo_with(&[("mm/x.c", BASE)], &[&[("mm/x.c", &patched)]]);
        let repo = Repository::open(dir.path()).unwrap();
        let touched = of_commits(&repo, base, &commits).unwrap();
        assert_eq!(
            touched,
            [Touched {
                file: "mm/x.c".into(),
                place: Place::Function {
                    name: "reader".into(),
                    in_base: true
                },
                patches: vec![1],
            }]
        );
    }

    #[test]
    fn new_functions_structs_and_other_files_are_told_apart() {
        let patched = BASE.replace("\tlong a;\n", "\tlong a;\n\tlong b;\n")
            + "\nstatic int added(void)\n{\n\treturn 1;\n}\n";
        let (dir, base, commits) = repo_with(
            &[("mm/x.c", BASE), ("mm/Kconfig", "config X\n")],
            &[
                &[("mm/x.c", &patched)],
                &[("mm/Kconfig", "config X\n\tbool\n")],
            ],
        );
        let repo = Repository::open(dir.path()).unwrap();
        let touched = of_commits(&repo, base, &commits).unwrap();
        let places: Vec<(&str, &Place, &[usize])> = touched
            .iter()
            .map(|t| (t.file.as_str(), &t.place, t.patches.as_slice()))
            .collect();
        assert_eq!(
            places,
            [
                (
                    "mm/x.c",
                    &Place::Outside {
                        what: "struct stats".into()
                    },
                    &[1][..]
                ),
                (
                    "mm/x.c",
                    &Place::Function {
                        name: "added".into(),
                        in_base: false
                    },
                    &[1][..]
                ),
                ("mm/Kconfig", &Place::NotC, &[2][..]),
            ]
        );
    }

    #[test]
    fn an_already_applied_patch_is_skipped_and_later_ones_counted() {
        let patched = BASE.replace("\ts->a = 0;\n", "\ts->a = 1;\n");
        let (dir, base, commits) = repo_with(&[("mm/x.c", BASE)], &[&[("mm/x.c", &patched)]]);
        let repo = Repository::open(dir.path()).unwrap();
        let touched = of_commits(&repo, base, &[None, commits[0]]).unwrap();
        assert_eq!(touched.len(), 1);
        assert_eq!(touched[0].function(), Some("flush"));
        assert_eq!(touched[0].patches, [2]);
    }
}
