//! Kernel trees: import a source tarball or clone a local git repository into
//! a cached git repository, and check out the commit a build needs.
//!
//! The cached repository's working directory is the source tree that builds
//! use (with `O=` build directories elsewhere). A checkout rewrites only the
//! files that differ, so unchanged sources keep their mtimes and `make`
//! rebuilds only what a series touched.

use std::path::{Path, PathBuf};

use git2::{IndexAddOption, Oid, Repository, Signature, Time, build::CheckoutBuilder};
use sha2::{Digest, Sha256};

use crate::process::{self, Cmd};

/// The branch holding an imported tarball's single commit.
const BASE_REF: &str = "refs/heads/patchbench-base";

#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("cannot read kernel tarball {}", path.display())]
    ReadTarball {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("extracting {} failed", tarball.display())]
    Extract {
        tarball: PathBuf,
        #[source]
        source: process::ProcessError,
    },
    #[error(
        "importing {} committed {committed} files but the extracted tree has {on_disk}",
        tarball.display()
    )]
    IncompleteImport {
        tarball: PathBuf,
        committed: usize,
        on_disk: usize,
    },
    #[error("git operation on {} failed: {what}", repo.display())]
    Git {
        repo: PathBuf,
        what: String,
        #[source]
        source: git2::Error,
    },
    #[error("i/o on {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A kernel tree ready to build from: a cached repository and a base commit.
#[derive(Debug, Clone)]
pub struct Tree {
    /// The cached repository; its working directory is the source tree.
    pub repo_path: PathBuf,
    /// The base commit (variant A).
    pub base: Oid,
    /// Where the tree came from, for the results.
    pub origin: String,
    /// Whether this run imported or cloned it (false: reused from the cache).
    pub fresh: bool,
}

impl Tree {
    pub fn open(&self) -> Result<Repository, TreeError> {
        Repository::open(&self.repo_path).map_err(|source| TreeError::Git {
            repo: self.repo_path.clone(),
            what: "open the cached repository".into(),
            source,
        })
    }
}

fn git_err(repo: &Path, what: &str) -> impl FnOnce(git2::Error) -> TreeError {
    let repo = repo.to_owned();
    let what = what.to_owned();
    move |source| TreeError::Git { repo, what, source }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> TreeError {
    let path = path.to_owned();
    move |source| TreeError::Io { path, source }
}

/// The hex sha256 of a file.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(hex::encode(hasher.finalize()));
        }
        hasher.update(&buf[..n]);
    }
}

/// The cache directory name for a tarball: its stem plus a content hash.
pub fn tarball_cache_name(tarball: &Path, sha256: &str) -> String {
    let name = tarball
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tree".into());
    let stem = name
        .trim_end_matches(".xz")
        .trim_end_matches(".gz")
        .trim_end_matches(".tar");
    format!("{stem}-{}", &sha256[..16])
}

/// Hears `(files done, files in all)` while an imported tree is committed.
pub type FileProgress<'a> = &'a (dyn Fn(u64, Option<u64>) + Sync);

/// How many files the commit of an import adds between two progress reports.
const FILES_PER_REPORT: u64 = 1000;

/// Import a kernel tarball into `<cache>/trees/`, or reuse an earlier import.
///
/// The import commit has a fixed author and time, so its id is a function of
/// the tarball's content alone. `progress` hears how many of the extracted
/// files have been added to the commit.
pub async fn import_tarball(
    tarball: &Path,
    cache: &Path,
    progress: FileProgress<'_>,
) -> Result<Tree, TreeError> {
    let sha = {
        let owned = tarball.to_owned();
        tokio::task::spawn_blocking(move || sha256_file(&owned))
            .await
            .expect("hashing task panicked")
            .map_err(|source| TreeError::ReadTarball {
                path: tarball.to_owned(),
                source,
            })?
    };
    let trees = cache.join("trees");
    let dest = trees.join(tarball_cache_name(tarball, &sha));
    let origin = format!("tarball {} (sha256 {sha})", tarball.display());
    if let Ok(repo) = Repository::open(&dest)
        && let Ok(reference) = repo.find_reference(BASE_REF)
        && let Some(base) = reference.target()
    {
        return Ok(Tree {
            repo_path: dest,
            base,
            origin,
            fresh: false,
        });
    }
    std::fs::create_dir_all(&trees).map_err(io_err(&trees))?;
    let staging = tempfile::TempDir::with_prefix_in(".import-", &trees).map_err(io_err(&trees))?;
    let src = staging.path().join("src");
    std::fs::create_dir(&src).map_err(io_err(&src))?;
    let tar = Cmd::new("tar")
        .arg("-xf")
        .arg(tarball)
        .arg("-C")
        .arg(&src)
        .arg("--strip-components=1");
    process::run(&tar)
        .await
        .map_err(|source| TreeError::Extract {
            tarball: tarball.to_owned(),
            source,
        })?;
    let message = format!(
        "Import {}\n\nsha256: {sha}\nImported by patchbench; every file is committed, including\nthose the tree's own .gitignore would hide.\n",
        tarball.file_name().unwrap_or_default().to_string_lossy()
    );
    let base = {
        let src = src.clone();
        let tarball = tarball.to_owned();
        // The commit runs on a blocking thread; its counts come back here.
        let (tx, mut counts) = tokio::sync::mpsc::unbounded_channel();
        let mut task = tokio::task::spawn_blocking(move || {
            commit_whole_tree(&src, &tarball, &message, &|done, total| {
                let _ = tx.send((done, total));
            })
        });
        loop {
            tokio::select! {
                Some((done, total)) = counts.recv() => progress(done, total),
                joined = &mut task => {
                    while let Ok((done, total)) = counts.try_recv() {
                        progress(done, total);
                    }
                    break joined.expect("import task panicked")?;
                }
            }
        }
    };
    std::fs::rename(&src, &dest).map_err(io_err(&dest))?;
    Ok(Tree {
        repo_path: dest,
        base,
        origin,
        fresh: true,
    })
}

/// `git init` + force-add everything + commit, then check the commit holds
/// every file that is on disk.
fn commit_whole_tree(
    src: &Path,
    tarball: &Path,
    message: &str,
    progress: &dyn Fn(u64, Option<u64>),
) -> Result<Oid, TreeError> {
    let on_disk = count_files(src).map_err(io_err(src))?;
    let repo = Repository::init(src).map_err(git_err(src, "init"))?;
    let mut index = repo.index().map_err(git_err(src, "open the index"))?;
    let mut added = 0;
    progress(0, Some(on_disk as u64));
    let mut each = |_: &Path, _: &[u8]| {
        added += 1;
        if added % FILES_PER_REPORT == 0 {
            progress(added, Some(on_disk as u64));
        }
        0
    };
    // FORCE: Debian's tree ignores everything at its top level (`/*`), so a
    // plain add would commit nothing.
    index
        .add_all(["*"], IndexAddOption::FORCE, Some(&mut each))
        .map_err(git_err(src, "add the extracted files"))?;
    progress(added, Some(on_disk as u64));
    index.write().map_err(git_err(src, "write the index"))?;
    let committed = index.len();
    if committed != on_disk {
        return Err(TreeError::IncompleteImport {
            tarball: tarball.to_owned(),
            committed,
            on_disk,
        });
    }
    let tree_id = index.write_tree().map_err(git_err(src, "write the tree"))?;
    let tree = repo
        .find_tree(tree_id)
        .map_err(git_err(src, "find the tree"))?;
    let sig = Signature::new("patchbench", "patchbench@localhost", &Time::new(0, 0))
        .map_err(git_err(src, "make a signature"))?;
    let oid = repo
        .commit(Some(BASE_REF), &sig, &sig, message, &tree, &[])
        .map_err(git_err(src, "commit the import"))?;
    repo.set_head(BASE_REF)
        .map_err(git_err(src, "point HEAD at the import"))?;
    Ok(oid)
}

/// Regular files and symlinks below `dir`, not counting `.git`.
fn count_files(dir: &Path) -> std::io::Result<usize> {
    crate::fsutil::count_files(dir, |e| e.file_name() != ".git", |_| Ok(true))
}

/// Clone a local git repository into the cache (once), fetch it, and resolve
/// `rev` (default: the source's HEAD) to the base commit.
pub fn clone_local(path: &Path, rev: Option<&str>, cache: &Path) -> Result<Tree, TreeError> {
    let source = Repository::open(path).map_err(git_err(path, "open the source repository"))?;
    let spec = rev.unwrap_or("HEAD");
    let base = source
        .revparse_single(spec)
        .and_then(|o| o.peel_to_commit())
        .map_err(git_err(path, &format!("resolve `{spec}` to a commit")))?
        .id();
    let canonical = path.canonicalize().map_err(io_err(path))?;
    let key = hex::encode(Sha256::digest(canonical.to_string_lossy().as_bytes()));
    let name = canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "repo".into());
    let dest = cache.join("trees").join(format!("{name}-{}", &key[..16]));
    let (repo, fresh) = match Repository::open(&dest) {
        Ok(repo) => (repo, false),
        Err(_) => {
            std::fs::create_dir_all(cache.join("trees")).map_err(io_err(cache))?;
            let repo = git2::build::RepoBuilder::new()
                .clone_local(git2::build::CloneLocal::Local)
                .clone(&canonical.to_string_lossy(), &dest)
                .map_err(git_err(path, "clone into the cache"))?;
            (repo, true)
        }
    };
    if repo.find_commit(base).is_err() {
        let mut remote = repo
            .find_remote("origin")
            .map_err(git_err(&dest, "find the origin remote"))?;
        remote
            .fetch(&["+refs/heads/*:refs/remotes/origin/*"], None, None)
            .and_then(|_| remote.fetch(&[base.to_string().as_str()], None, None))
            .map_err(git_err(&dest, "fetch from the source repository"))?;
    }
    Ok(Tree {
        repo_path: dest,
        base,
        origin: format!("git {} at {spec} ({base})", canonical.display()),
        fresh,
    })
}

/// Get the tree a campaign names, from the cache when it is there.
/// A tarball's import reports its files to `progress`.
pub async fn obtain(
    source: &crate::config::TreeSource,
    cache: &Path,
    progress: FileProgress<'_>,
) -> Result<Tree, TreeError> {
    match source {
        crate::config::TreeSource::Tarball(path) => import_tarball(path, cache, progress).await,
        crate::config::TreeSource::Git { path, rev } => clone_local(path, rev.as_deref(), cache),
        crate::config::TreeSource::Url { url, rev } => {
            let (url, rev, cache) = (url.clone(), rev.clone(), cache.to_owned());
            tokio::task::spawn_blocking(move || fetch_shallow(&url, rev.as_deref(), &cache))
                .await
                .expect("fetch task panicked")
        }
    }
}

/// The ref a shallow fetch stores its result under.
const FETCHED_REF: &str = "refs/patchbench/fetched";

/// Fetch `rev` (default: the remote's HEAD) of a remote repository at
/// depth 1 into `<cache>/trees/`, and check it out. A later run fetches
/// into the same repository, so unchanged objects are not downloaded again.
pub fn fetch_shallow(url: &str, rev: Option<&str>, cache: &Path) -> Result<Tree, TreeError> {
    let key = hex::encode(Sha256::digest(url.as_bytes()));
    let name = url
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or("repo")
        .trim_end_matches(".git")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect::<String>();
    let dest = cache.join("trees").join(format!("{name}-{}", &key[..16]));
    let (repo, fresh) = match Repository::open(&dest) {
        Ok(repo) => (repo, false),
        Err(_) => {
            std::fs::create_dir_all(&dest).map_err(io_err(&dest))?;
            (
                Repository::init(&dest).map_err(git_err(&dest, "init"))?,
                true,
            )
        }
    };
    let spec = rev.unwrap_or("HEAD");
    let mut remote = repo
        .remote_anonymous(url)
        .map_err(git_err(&dest, &format!("use remote {url}")))?;
    let mut opts = git2::FetchOptions::new();
    // Shallow: one commit's tree, not the kernel's history.
    opts.depth(1);
    remote
        .fetch(
            &[format!("+{spec}:{FETCHED_REF}").as_str()],
            Some(&mut opts),
            None,
        )
        .map_err(git_err(&dest, &format!("fetch `{spec}` from {url}")))?;
    let base = repo
        .find_reference(FETCHED_REF)
        .and_then(|r| r.peel_to_commit())
        .map_err(git_err(&dest, "read the fetched commit"))?
        .id();
    checkout(&repo, base)?;
    Ok(Tree {
        repo_path: dest,
        base,
        origin: format!("git {url} at {spec} ({base}, shallow)"),
        fresh,
    })
}

/// The ref the campaign names explicitly, if any.
pub fn explicit_rev(source: &crate::config::TreeSource) -> Option<&str> {
    match source {
        crate::config::TreeSource::Git { rev, .. } | crate::config::TreeSource::Url { rev, .. } => {
            rev.as_deref()
        }
        crate::config::TreeSource::Tarball(_) => None,
    }
}

/// Make the working directory hold exactly `commit`, touching only the files
/// that differ from what is there.
pub fn checkout(repo: &Repository, commit: Oid) -> Result<(), TreeError> {
    let path = repo.workdir().unwrap_or(repo.path()).to_owned();
    let commit_obj = repo
        .find_commit(commit)
        .map_err(git_err(&path, &format!("find commit {commit}")))?;
    let mut opts = CheckoutBuilder::new();
    opts.force().remove_untracked(false);
    repo.checkout_tree(commit_obj.as_object(), Some(&mut opts))
        .map_err(git_err(&path, &format!("check out {commit}")))?;
    repo.set_head_detached(commit)
        .map_err(git_err(&path, &format!("detach HEAD at {commit}")))?;
    Ok(())
}

/// The paths (relative to the tree) that differ between two commits.
pub fn changed_paths(repo: &Repository, from: Oid, to: Oid) -> Result<Vec<PathBuf>, TreeError> {
    let path = repo.workdir().unwrap_or(repo.path()).to_owned();
    let tree_of = |id: Oid| {
        repo.find_commit(id)
            .and_then(|c| c.tree())
            .map_err(git_err(&path, &format!("read the tree of {id}")))
    };
    let (old, new) = (tree_of(from)?, tree_of(to)?);
    let diff = repo
        .diff_tree_to_tree(Some(&old), Some(&new), None)
        .map_err(git_err(&path, &format!("diff {from}..{to}")))?;
    let mut paths: Vec<PathBuf> = diff
        .deltas()
        .flat_map(|d| [d.old_file().path(), d.new_file().path()])
        .flatten()
        .map(Path::to_path_buf)
        .collect();
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// Choose the base commit: the campaign's explicit ref, then the series'
/// `base-commit:` trailer when this tree has that commit, then the tree's
/// HEAD. Returns the commit and a sentence saying which and why.
pub fn choose_base(
    repo: &Repository,
    head: Oid,
    explicit_rev: Option<&str>,
    trailer: Option<&str>,
) -> (Oid, String) {
    if let Some(rev) = explicit_rev {
        return (head, format!("the campaign's ref `{rev}`"));
    }
    match trailer {
        Some(id) => match repo.revparse_single(id).and_then(|o| o.peel_to_commit()) {
            Ok(commit) => (
                commit.id(),
                format!("the series' base-commit: trailer ({id})"),
            ),
            Err(_) => (
                head,
                format!("the tree's HEAD (the series' base-commit {id} is not in this tree)"),
            ),
        },
        None => (
            head,
            "the tree's HEAD (no ref given, no base-commit: trailer)".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_is_the_ref_then_the_trailer_then_head() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let sig = Signature::new("t", "t@t", &Time::new(0, 0)).unwrap();
        let tree = repo
            .find_tree(repo.treebuilder(None).unwrap().write().unwrap())
            .unwrap();
        let first = repo.commit(None, &sig, &sig, "first", &tree, &[]).unwrap();
        let parent = repo.find_commit(first).unwrap();
        let second = repo
            .commit(None, &sig, &sig, "second", &tree, &[&parent])
            .unwrap();
        let first_hex = first.to_string();
        assert_eq!(
            choose_base(&repo, second, Some("v1"), Some(&first_hex)).0,
            second
        );
        let (oid, why) = choose_base(&repo, second, None, Some(&first_hex));
        assert_eq!(oid, first);
        assert!(why.starts_with("the series' base-commit: trailer"), "{why}");
        let (oid, why) = choose_base(
            &repo,
            second,
            None,
            Some("0123456789abcdef0123456789abcdef01234567"),
        );
        assert_eq!(oid, second);
        assert!(why.contains("is not in this tree"), "{why}");
        assert_eq!(choose_base(&repo, second, None, None).0, second);
    }

    /// A real network transport: `git daemon` on loopback serves a two-commit
    /// repository, and the fetch must be shallow and land on the tip.
    #[test]
    fn a_url_tree_is_fetched_shallow_over_the_network() {
        let work = tempfile::tempdir().unwrap();
        let served = work.path().join("served/linux.git");
        let repo = Repository::init(&served).unwrap();
        let sig = Signature::new("t", "t@t", &Time::new(0, 0)).unwrap();
        let blob = repo.blob(b"v1\n").unwrap();
        let mut tb = repo.treebuilder(None).unwrap();
        tb.insert("Makefile", blob, 0o100644).unwrap();
        let t1 = repo.find_tree(tb.write().unwrap()).unwrap();
        let c1 = repo
            .commit(Some("HEAD"), &sig, &sig, "one", &t1, &[])
            .unwrap();
        let blob = repo.blob(b"v2\n").unwrap();
        tb.insert("Makefile", blob, 0o100644).unwrap();
        let t2 = repo.find_tree(tb.write().unwrap()).unwrap();
        let parent = repo.find_commit(c1).unwrap();
        let c2 = repo
            .commit(Some("HEAD"), &sig, &sig, "two", &t2, &[&parent])
            .unwrap();
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        /// Kills the daemon's whole process group, even if the test panics:
        /// `git daemon` runs `git-daemon` as a child, which outlives a kill
        /// of `git` alone.
        struct Group(std::process::Child);
        impl Drop for Group {
            fn drop(&mut self) {
                // SAFETY: kill(2) on the group this child leads.
                unsafe { libc::kill(-(self.0.id() as libc::pid_t), libc::SIGKILL) };
                let _ = self.0.wait();
            }
        }
        use std::os::unix::process::CommandExt;
        let daemon = std::process::Command::new("git")
            .args([
                "daemon",
                "--export-all",
                "--reuseaddr",
                "--listen=127.0.0.1",
            ])
            .arg(format!("--port={port}"))
            .arg(format!(
                "--base-path={}",
                work.path().join("served").display()
            ))
            .arg(work.path().join("served"))
            .process_group(0)
            .spawn()
            .expect("git daemon (Debian package git) starts");
        let daemon = Group(daemon);
        let url = format!("git://127.0.0.1:{port}/linux.git");
        let cache = work.path().join("cache");
        // Readiness: the daemon accepts connections (bounded wait).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "git daemon never listened"
            );
            std::thread::yield_now();
        }
        let result = fetch_shallow(&url, None, &cache);
        drop(daemon);
        let tree = result.unwrap();
        assert_eq!(tree.base, c2);
        let fetched = tree.open().unwrap();
        assert!(fetched.is_shallow());
        assert!(
            fetched.find_commit(c1).is_err(),
            "history beyond depth 1 was fetched"
        );
        assert_eq!(
            std::fs::read(tree.repo_path.join("Makefile")).unwrap(),
            b"v2\n"
        );
    }

    #[test]
    fn cache_names_keep_the_stem_and_a_hash_prefix() {
        let sha = "0123456789abcdef0123456789abcdef";
        assert_eq!(
            tarball_cache_name(Path::new("/usr/src/linux-source-6.12.tar.xz"), sha),
            "linux-source-6.12-0123456789abcdef"
        );
    }

    /// A tarball whose top-level .gitignore hides everything, like Debian's.
    #[tokio::test]
    async fn import_commits_files_the_trees_gitignore_hides_and_is_reused() {
        let work = tempfile::tempdir().unwrap();
        let top = work.path().join("linux-source-9.9");
        std::fs::create_dir_all(top.join("mm")).unwrap();
        std::fs::write(top.join(".gitignore"), "/*\n!/debian/\n").unwrap();
        std::fs::write(top.join("Makefile"), "all:\n").unwrap();
        std::fs::write(top.join("mm/memcontrol.c"), "int x;\n").unwrap();
        let tarball = work.path().join("linux-source-9.9.tar.xz");
        process::run(
            &Cmd::new("tar")
                .arg("-cJf")
                .arg(&tarball)
                .arg("-C")
                .arg(work.path())
                .arg("linux-source-9.9"),
        )
        .await
        .unwrap();
        let cache = work.path().join("cache");
        let reports = std::sync::Mutex::new(Vec::new());
        let progress = |done, total| reports.lock().unwrap().push((done, total));
        let tree = import_tarball(&tarball, &cache, &progress).await.unwrap();
        // Every file the commit holds was reported, of all on disk.
        let last = *reports.lock().unwrap().last().unwrap();
        assert_eq!(last.0, last.1.unwrap());
        assert!(last.0 > 0);
        assert!(tree.fresh);
        let repo = tree.open().unwrap();
        let commit = repo.find_commit(tree.base).unwrap();
        let files = commit.tree().unwrap();
        assert!(files.get_path(Path::new("mm/memcontrol.c")).is_ok());
        assert!(files.get_path(Path::new("Makefile")).is_ok());
        let again = import_tarball(&tarball, &cache, &progress).await.unwrap();
        assert!(!again.fresh);
        assert_eq!(again.base, tree.base);
    }
}
