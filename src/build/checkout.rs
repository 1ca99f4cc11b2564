//! Checking out the commit to build so that `make` rebuilds exactly what
//! differs from the objects a work directory holds: source mtimes set from
//! content, and git's index told about them.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use git2::Oid;

use super::error::{BuildError, io_err};

/// A time older than any object file: sources whose content matches the
/// objects' get it, so make does not rebuild them.
const OLD: SystemTime = SystemTime::UNIX_EPOCH;

/// Check out `target` and set source mtimes so that make rebuilds exactly
/// what differs from `objects_from`, the commit the work directory's
/// objects were built from. A checkout writes the files it changes with
/// the current time, so after a series was checked out once, its files
/// stay newer than the base's objects forever, and switching back to the
/// base would rebuild them. So every source file whose content is
/// `objects_from`'s gets an old mtime, and every file that differs gets
/// the current time (even if this checkout did not write it). The first
/// pass sets all 87k files (about a second); later passes only the few a
/// series touched. Returns the paths that differ.
pub(super) fn checkout_for_make(
    src: &Path,
    target: Oid,
    objects_from: Option<Oid>,
    work: &Path,
) -> Result<Vec<PathBuf>, BuildError> {
    let repo = &crate::tree::Tree::open_path(src)?;
    crate::tree::checkout(repo, target)?;
    let Some(from) = objects_from else {
        return Ok(Vec::new());
    };
    let workdir = repo.workdir().unwrap_or(repo.path()).to_owned();
    let touched = crate::tree::changed_paths(repo, from, target)?;
    let oldest = oldest_mtime(work).map_err(io_err(work))?;
    let mut reset = Vec::new();
    let set = |path: &Path, when: SystemTime| -> Result<(), BuildError> {
        std::fs::File::options()
            .write(true)
            .open(path)
            .and_then(|file| file.set_modified(when))
            .map_err(|source| BuildError::Mtime {
                path: path.to_owned(),
                source,
            })
    };
    let files = walkdir::WalkDir::new(&workdir)
        .into_iter()
        .filter_entry(|e| e.file_name() != ".git");
    for entry in files {
        let entry = entry.map_err(|e| BuildError::Io {
            path: e.path().unwrap_or(&workdir).to_owned(),
            source: e.into(),
        })?;
        let path = entry.path();
        if entry.file_type().is_file()
            && entry
                .metadata()
                .map_err(std::io::Error::from)
                .and_then(|m| m.modified())
                .is_ok_and(|m| m != OLD && m >= oldest)
        {
            let rel = path.strip_prefix(&workdir).unwrap_or(path);
            if !touched.iter().any(|t| t == rel) {
                set(path, OLD)?;
                reset.push(rel.to_owned());
            }
        }
    }
    let now = SystemTime::now();
    for rel in &touched {
        let path = workdir.join(rel);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            set(&path, now)?;
            reset.push(rel.clone());
        }
    }
    refresh_index(repo, &workdir, &reset)?;
    Ok(touched)
}

/// The oldest modification time of any file in a build directory: a
/// source file older than that is older than every target, so make
/// rebuilds nothing for it. An empty directory gives the epoch.
fn oldest_mtime(dir: &Path) -> std::io::Result<SystemTime> {
    let mut oldest: Option<SystemTime> = None;
    for entry in walkdir::WalkDir::new(dir) {
        let entry = entry.map_err(std::io::Error::from)?;
        if entry.file_type().is_file() {
            let modified = entry.metadata().map_err(std::io::Error::from)?.modified()?;
            oldest = Some(oldest.map_or(modified, |o| o.min(modified)));
        }
    }
    Ok(oldest.unwrap_or(OLD))
}

/// Record files' new mtimes (and the ctimes that setting them changed) in
/// the index. Their content is what the index says (the checkout just
/// wrote it, or left it), but without this the next checkout finds their
/// stat data changed and reads and hashes every one of them again: after
/// the first pass that is the whole tree, 87k files, about 25 s of every
/// incremental build on a loaded 2-core machine.
fn refresh_index(
    repo: &git2::Repository,
    workdir: &Path,
    paths: &[PathBuf],
) -> Result<(), BuildError> {
    use std::os::unix::fs::MetadataExt;
    if paths.is_empty() {
        return Ok(());
    }
    let git = |what: &'static str| move |source| BuildError::Index { what, source };
    let mut index = repo.index().map_err(git("open the tree's index"))?;
    for rel in paths {
        let Some(mut entry) = index.get_path(rel, 0) else {
            continue;
        };
        let meta =
            std::fs::symlink_metadata(workdir.join(rel)).map_err(io_err(&workdir.join(rel)))?;
        // The index stores 32-bit fields, truncated as git truncates them.
        entry.mtime = git2::IndexTime::new(meta.mtime() as i32, meta.mtime_nsec() as u32);
        entry.ctime = git2::IndexTime::new(meta.ctime() as i32, meta.ctime_nsec() as u32);
        entry.dev = meta.dev() as u32;
        entry.ino = meta.ino() as u32;
        entry.uid = meta.uid();
        entry.gid = meta.gid();
        entry.file_size = meta.len() as u32;
        index.add(&entry).map_err(git("update an index entry"))?;
    }
    index.write().map_err(git("write the tree's index"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Files as the base's objects saw them get an old mtime; files the
    /// target changed get the current time; `.git` is left alone.
    #[test]
    fn the_mtime_pass_ages_unchanged_files_and_freshens_changed_ones() {
        use git2::{Repository, Signature, Time};
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let sig = Signature::new("t", "t@t", &Time::new(0, 0)).unwrap();
        let commit = |files: &[(&str, &str)], parents: &[&git2::Commit]| {
            let mut tb = repo.treebuilder(None).unwrap();
            let mut mm = repo.treebuilder(None).unwrap();
            for (path, text) in files {
                let blob = repo.blob(text.as_bytes()).unwrap();
                match path.strip_prefix("mm/") {
                    Some(name) => mm.insert(name, blob, 0o100644).unwrap(),
                    None => tb.insert(path, blob, 0o100644).unwrap(),
                };
            }
            tb.insert("mm", mm.write().unwrap(), 0o040000).unwrap();
            let tree = repo.find_tree(tb.write().unwrap()).unwrap();
            repo.commit(None, &sig, &sig, "c", &tree, parents).unwrap()
        };
        let base = commit(&[("Makefile", "all:\n"), ("mm/zswap.c", "int a;\n")], &[]);
        let base_commit = repo.find_commit(base).unwrap();
        let next = commit(
            &[("Makefile", "all:\n"), ("mm/zswap.c", "int b;\n")],
            &[&base_commit],
        );
        let before = SystemTime::now();
        // An empty build directory: every source file may be newer than it.
        let work = tempfile::tempdir().unwrap();
        let touched = checkout_for_make(dir.path(), next, Some(base), work.path()).unwrap();
        assert_eq!(touched, [PathBuf::from("mm/zswap.c")]);
        let mtime = |p: &str| {
            std::fs::metadata(dir.path().join(p))
                .unwrap()
                .modified()
                .unwrap()
        };
        assert_eq!(mtime("Makefile"), OLD);
        assert!(mtime("mm/zswap.c") >= before);
        assert_ne!(mtime(".git/config"), OLD, "the walk entered .git");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("mm/zswap.c")).unwrap(),
            "int b;\n"
        );
    }

    #[test]
    fn the_oldest_file_of_a_build_directory_is_found() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(oldest_mtime(dir.path()).unwrap(), OLD);
        let at = |secs| SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
        std::fs::create_dir_all(dir.path().join("mm")).unwrap();
        for (file, secs) in [(".config", 2000), ("mm/zswap.o", 1500), ("vmlinux", 3000)] {
            let f = std::fs::File::create(dir.path().join(file)).unwrap();
            f.set_modified(at(secs)).unwrap();
        }
        assert_eq!(oldest_mtime(dir.path()).unwrap(), at(1500));
    }
}
