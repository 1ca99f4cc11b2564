//! Moving build directories between the work directory and the cache
//! without copying what did not change.
//!
//! A kernel build directory holds thousands of files (objects, `.cmd`
//! files, `vmlinux`), and an incremental build rewrites only a few of them.
//! Copying the whole directory after every build, and again to seed the
//! next one, cost about 19 s of B's 42 s on this project's 2-core runners.
//! Two operations replace those copies:
//!
//! - [`restore`] makes the work directory hold exactly what a cache entry
//!   holds, copying only the files that differ and deleting the ones the
//!   entry lacks (restore in place);
//! - [`snapshot`] makes a new cache entry from the work directory,
//!   hard-linking every file unchanged since the entry the build started
//!   from, and copying the rest.
//!
//! "Unchanged" is rsync's quick check: same size and same modification
//! time, to the nanosecond. Both sides keep each file's mtime (make
//! depends on it), and every tool a kernel build runs writes a file with a
//! new mtime, so a file whose size and mtime match was not rewritten.
//!
//! Hard links are safe only between cache entries, which are never written
//! after they are made. The work directory never shares an inode with an
//! entry: make rewrites some files in place (`.cmd` files through a shell
//! redirection, objects through objtool), which would change every entry
//! linked to them. So [`restore`] copies, and only [`snapshot`] links.
//! The build stage keeps the rest of the ordering right: the work
//! directory's marker is removed before a restore begins, so an interrupted
//! restore is never mistaken for a finished build.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs::{self, Metadata};
use std::io;
use std::path::Path;

/// What a [`restore`] or [`snapshot`] did, for the record and for tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Transfer {
    /// Files copied (their content written anew).
    pub copied: usize,
    /// Bytes those copies wrote.
    pub bytes_copied: u64,
    /// Files hard-linked to the previous entry's ([`snapshot`]).
    pub linked: usize,
    /// Files already right in place ([`restore`]).
    pub kept: usize,
    /// Files and directories deleted because the source lacks them ([`restore`]).
    pub removed: usize,
}

/// rsync's quick check: two regular files of the same size and mtime.
fn same_file(a: &Metadata, b: &Metadata) -> bool {
    a.is_file()
        && b.is_file()
        && a.len() == b.len()
        && matches!((a.modified(), b.modified()), (Ok(x), Ok(y)) if x == y)
}

/// Copy one regular file's content and permissions to `to` (which must not
/// exist), then give it `from`'s mtime so that make sees it as `from`.
fn copy_file(from: &Path, to: &Path, meta: &Metadata, t: &mut Transfer) -> io::Result<()> {
    // std::fs::copy uses copy_file_range, which shares extents on file
    // systems that can (btrfs, XFS) and copies in the kernel elsewhere.
    t.bytes_copied += fs::copy(from, to)?;
    let file = fs::File::options().write(true).open(to)?;
    file.set_modified(meta.modified()?)?;
    t.copied += 1;
    Ok(())
}

/// Remove whatever is at `path`: a directory with its content, or a file.
fn remove_any(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

fn copy_symlink(from: &Path, to: &Path, t: &mut Transfer) -> io::Result<()> {
    std::os::unix::fs::symlink(fs::read_link(from)?, to)?;
    t.copied += 1;
    Ok(())
}

/// Make `to` hold exactly what `from` holds: files whose size or mtime
/// differ are copied (mtime included), missing directories created, and
/// anything `from` lacks deleted. A restore that stops half-way leaves a
/// mixture; the caller marks `to` as in flux before calling.
pub fn restore(from: &Path, to: &Path) -> io::Result<Transfer> {
    let mut t = Transfer::default();
    fs::create_dir_all(to)?;
    restore_dir(from, to, &mut t)?;
    Ok(t)
}

fn restore_dir(from: &Path, to: &Path, t: &mut Transfer) -> io::Result<()> {
    let mut names = HashSet::<OsString>::new();
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        let (src, dst) = (entry.path(), to.join(&name));
        let meta = fs::symlink_metadata(&src)?;
        let here = fs::symlink_metadata(&dst).ok();
        if meta.is_dir() {
            if !here.as_ref().is_some_and(Metadata::is_dir) {
                remove_any(&dst)?;
                fs::create_dir(&dst)?;
            }
            restore_dir(&src, &dst, t)?;
        } else if meta.is_symlink() {
            let same = here.as_ref().is_some_and(Metadata::is_symlink)
                && fs::read_link(&dst)? == fs::read_link(&src)?;
            if same {
                t.kept += 1;
            } else {
                remove_any(&dst)?;
                copy_symlink(&src, &dst, t)?;
            }
        } else if here.as_ref().is_some_and(|h| same_file(&meta, h)) {
            t.kept += 1;
        } else {
            // Unlink first: a new inode, never a write through an old one.
            remove_any(&dst)?;
            copy_file(&src, &dst, &meta, t)?;
        }
        names.insert(name);
    }
    for entry in fs::read_dir(to)? {
        let entry = entry?;
        if !names.contains(&entry.file_name()) {
            remove_any(&entry.path())?;
            t.removed += 1;
        }
    }
    Ok(())
}

/// Make a new directory `to` from `work`, except the names in `skip` (at
/// its top level): every file that has the same size and mtime as in
/// `previous` (a cache entry, never written again) becomes a hard link to
/// `previous`'s, every other file a copy. `to` is built under a staging
/// name and renamed into place, so it appears whole or not at all.
pub fn snapshot(
    work: &Path,
    to: &Path,
    previous: Option<&Path>,
    skip: &[&str],
) -> io::Result<Transfer> {
    let staging = to.with_extension("copying");
    remove_any(&staging)?;
    fs::create_dir(&staging)?;
    let mut t = Transfer::default();
    snapshot_dir(work, &staging, previous, skip, &mut t)?;
    remove_any(to)?;
    fs::rename(&staging, to)?;
    Ok(t)
}

fn snapshot_dir(
    work: &Path,
    to: &Path,
    previous: Option<&Path>,
    skip: &[&str],
    t: &mut Transfer,
) -> io::Result<()> {
    for entry in fs::read_dir(work)? {
        let entry = entry?;
        let name = entry.file_name();
        if skip.iter().any(|s| name == *s) {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        let old = previous.map(|p| p.join(&name));
        let meta = fs::symlink_metadata(&src)?;
        if meta.is_dir() {
            fs::create_dir(&dst)?;
            snapshot_dir(&src, &dst, old.as_deref(), &[], t)?;
        } else if meta.is_symlink() {
            copy_symlink(&src, &dst, t)?;
        } else {
            let unchanged = old
                .as_deref()
                .and_then(|o| fs::symlink_metadata(o).ok().map(|m| (o, m)))
                .filter(|(_, m)| same_file(&meta, m));
            match unchanged.map(|(o, _)| fs::hard_link(o, &dst)) {
                Some(Ok(())) => t.linked += 1,
                // Too many links on one inode, or another file system:
                // a copy is always right.
                Some(Err(_)) | None => copy_file(&src, &dst, &meta, t)?,
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;
    use std::time::{Duration, SystemTime};

    use super::*;

    fn write(path: &Path, text: &str, mtime_secs: u64) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
        let f = fs::File::options().write(true).open(path).unwrap();
        f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(mtime_secs))
            .unwrap();
    }

    fn read(path: &Path) -> String {
        fs::read_to_string(path).unwrap()
    }

    fn ino(path: &Path) -> u64 {
        fs::metadata(path).unwrap().ino()
    }

    fn mtime(path: &Path) -> SystemTime {
        fs::metadata(path).unwrap().modified().unwrap()
    }

    #[test]
    fn a_restore_copies_only_what_differs_and_deletes_what_the_entry_lacks() {
        let tmp = tempfile::tempdir().unwrap();
        let (entry, work) = (tmp.path().join("entry"), tmp.path().join("work"));
        write(&entry.join("mm/a.o"), "a", 100);
        write(&entry.join("mm/b.o"), "b-entry", 100);
        write(&entry.join("vmlinux"), "v", 100);
        std::os::unix::fs::symlink("/src", entry.join("source")).unwrap();
        // The work directory holds another build: b.o rewritten, c.o new,
        // a directory the entry lacks.
        write(&work.join("mm/a.o"), "a", 100);
        write(&work.join("mm/b.o"), "b-other", 200);
        write(&work.join("mm/c.o"), "c", 200);
        write(&work.join("extra/x.o"), "x", 200);
        let kept_inode = ino(&work.join("mm/a.o"));

        let t = restore(&entry, &work).unwrap();
        assert_eq!(read(&work.join("mm/b.o")), "b-entry");
        assert_eq!(mtime(&work.join("mm/b.o")), mtime(&entry.join("mm/b.o")));
        assert!(!work.join("mm/c.o").exists() && !work.join("extra").exists());
        assert_eq!(
            fs::read_link(work.join("source")).unwrap(),
            Path::new("/src")
        );
        // a.o was right: left alone, same inode.
        assert_eq!(ino(&work.join("mm/a.o")), kept_inode);
        assert_eq!((t.kept, t.copied, t.removed), (1, 3, 2), "{t:?}");
        // The work directory shares no inode with the entry.
        assert_ne!(ino(&work.join("mm/b.o")), ino(&entry.join("mm/b.o")));
        // Again: nothing to do.
        let again = restore(&entry, &work).unwrap();
        assert_eq!((again.copied, again.removed, again.kept), (0, 0, 4));
    }

    #[test]
    fn a_snapshot_links_unchanged_files_to_the_previous_entry_and_copies_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let (prev, work, new) = (
            tmp.path().join("prev"),
            tmp.path().join("work"),
            tmp.path().join("new"),
        );
        write(&prev.join("mm/a.o"), "a", 100);
        write(&prev.join("mm/b.o"), "b-old", 100);
        write(&work.join("mm/a.o"), "a", 100);
        write(&work.join("mm/b.o"), "b-new", 300);
        write(&work.join("mm/c.o"), "c", 300);
        write(&work.join("marker.json"), "{}", 300);

        let t = snapshot(&work, &new, Some(&prev), &["marker.json"]).unwrap();
        assert_eq!((t.linked, t.copied), (1, 2), "{t:?}");
        assert_eq!(ino(&new.join("mm/a.o")), ino(&prev.join("mm/a.o")));
        assert_ne!(ino(&new.join("mm/a.o")), ino(&work.join("mm/a.o")));
        assert_eq!(read(&new.join("mm/b.o")), "b-new");
        assert_eq!(mtime(&new.join("mm/b.o")), mtime(&work.join("mm/b.o")));
        assert_ne!(ino(&new.join("mm/b.o")), ino(&work.join("mm/b.o")));
        assert!(!new.join("marker.json").exists());
        assert!(!tmp.path().join("new.copying").exists());
        // The previous entry is untouched.
        assert_eq!(read(&prev.join("mm/b.o")), "b-old");
    }

    #[test]
    fn a_file_of_the_same_size_but_another_mtime_is_copied_not_linked() {
        let tmp = tempfile::tempdir().unwrap();
        let (prev, work, new) = (
            tmp.path().join("prev"),
            tmp.path().join("work"),
            tmp.path().join("new"),
        );
        write(&prev.join("x.o"), "aaaa", 100);
        write(&work.join("x.o"), "bbbb", 101);
        let t = snapshot(&work, &new, Some(&prev), &[]).unwrap();
        assert_eq!((t.linked, t.copied), (0, 1));
        assert_eq!(read(&new.join("x.o")), "bbbb");
        // Without a previous entry everything is copied.
        let first = snapshot(&work, &tmp.path().join("first"), None, &[]).unwrap();
        assert_eq!((first.linked, first.copied), (0, 1));
    }

    #[test]
    fn a_snapshot_replaces_an_older_entry_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let (work, new) = (tmp.path().join("work"), tmp.path().join("new"));
        write(&work.join("a.o"), "a", 100);
        write(&new.join("stale.o"), "s", 100);
        snapshot(&work, &new, None, &[]).unwrap();
        assert!(new.join("a.o").exists() && !new.join("stale.o").exists());
    }
}
