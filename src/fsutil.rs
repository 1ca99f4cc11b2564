//! Small filesystem helpers shared by the stages: atomic writes, counting
//! files, and advisory locks (`flock`) on lock files, which runs sharing a
//! cache directory use to stay out of each other's way.

use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Write `bytes` to `path` atomically: a temporary file in the same
/// directory, fsynced, then renamed over the target. A reader sees the old
/// content or the new, never a torn file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// `path` as a kept document names it, so that no path of one machine is
/// recorded: below `base` when it lies there, else (an absolute path) from
/// its last component named `anchor` (`boots/1-B/console.log` of any run
/// directory, `builds/<tree>/<key>` of any cache), else as it is.
pub fn portable(path: &Path, base: Option<&Path>, anchor: &str) -> PathBuf {
    if let Some(rel) = base.and_then(|b| path.strip_prefix(b).ok())
        && !rel.as_os_str().is_empty()
    {
        return rel.to_path_buf();
    }
    if path.is_absolute()
        && let Some(at) = path
            .components()
            .collect::<Vec<_>>()
            .iter()
            .rposition(|c| c.as_os_str() == anchor)
    {
        return path.components().skip(at).collect();
    }
    path.to_path_buf()
}

/// Count the non-directory entries below `dir` that `counts` accepts,
/// descending only into directories `descend` accepts. Symlinks count as
/// entries and are not followed.
pub fn count_files(
    dir: &Path,
    descend: impl Fn(&walkdir::DirEntry) -> bool,
    counts: impl Fn(&walkdir::DirEntry) -> bool,
) -> std::io::Result<usize> {
    let mut count = 0;
    let walk = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_type().is_dir() || descend(e));
    for entry in walk {
        let entry = entry?;
        if !entry.file_type().is_dir() && counts(&entry) {
            count += 1;
        }
    }
    Ok(count)
}

/// A held `flock`: shared or exclusive. Released when dropped.
#[derive(Debug)]
pub struct Lease {
    _file: File,
    pub path: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Shared,
    Exclusive,
}

/// Open (creating) a lock file without changing its content.
pub fn open_lock(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
}

fn flock(path: &Path, mode: Mode, wait: bool) -> std::io::Result<Option<Lease>> {
    let file = open_lock(path)?;
    let mut op = match mode {
        Mode::Shared => libc::LOCK_SH,
        Mode::Exclusive => libc::LOCK_EX,
    };
    if !wait {
        op |= libc::LOCK_NB;
    }
    loop {
        // SAFETY: flock(2) on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return Ok(Some(Lease {
                _file: file,
                path: path.to_owned(),
            }));
        }
        let err = std::io::Error::last_os_error();
        match err.kind() {
            std::io::ErrorKind::WouldBlock => return Ok(None),
            std::io::ErrorKind::Interrupted => continue,
            _ => return Err(err),
        }
    }
}

/// Try to take the lock at `path` without waiting: `None` if another holds
/// it in a conflicting mode (this process too: flock locks belong to the
/// open file, so a second open conflicts with the first).
pub fn try_lock(path: &Path, mode: Mode) -> std::io::Result<Option<Lease>> {
    flock(path, mode, false)
}

/// Take the lock at `path`, blocking the thread until it is free: only for
/// code already off the async threads (see `blocking`).
pub fn lock_blocking(path: &Path, mode: Mode) -> std::io::Result<Lease> {
    flock(path, mode, true).map(|l| l.expect("a blocking flock returns a lock"))
}

/// Take the lock at `path`, polling every 200 ms until it is free, so that
/// the waiting future can be dropped (Ctrl-C) at any time.
pub async fn lock(path: &Path, mode: Mode) -> std::io::Result<Lease> {
    loop {
        if let Some(lease) = try_lock(path, mode)? {
            return Ok(lease);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counting_skips_what_it_is_told_to() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git/objects")).unwrap();
        std::fs::create_dir_all(dir.path().join("mm")).unwrap();
        for f in [".git/objects/x", "mm/a.o", "mm/a.c", "top.o"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        let all = count_files(dir.path(), |e| e.file_name() != ".git", |_| true).unwrap();
        assert_eq!(all, 3);
        let objects = count_files(
            dir.path(),
            |_| true,
            |e| e.path().extension().is_some_and(|x| x == "o"),
        )
        .unwrap();
        assert_eq!(objects, 2);
    }

    #[test]
    fn atomic_writes_replace_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.json");
        write_atomic(&path, b"first, and longer").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn portable_paths_name_no_machine() {
        let p = |path: &str, base: Option<&str>, anchor: &str| {
            portable(Path::new(path), base.map(Path::new), anchor)
        };
        // Below the base: relative to it.
        assert_eq!(
            p("/out/run/boots/0-A/console.log", Some("/out/run"), "boots"),
            Path::new("boots/0-A/console.log")
        );
        // Elsewhere: from the anchor on.
        assert_eq!(
            p("/work/seeds30/x/boots/0-base/console.log", None, "boots"),
            Path::new("boots/0-base/console.log")
        );
        assert_eq!(
            p(
                "/root/.cache/patchbench/builds/t/k/arch/x86/boot/bzImage",
                Some("/c"),
                "builds"
            ),
            Path::new("builds/t/k/arch/x86/boot/bzImage")
        );
        // Relative already, or with no anchor: as it is.
        assert_eq!(
            p("boots/1-B/console.log", Some("/out"), "boots"),
            Path::new("boots/1-B/console.log")
        );
        assert_eq!(
            p("/k/bzImage-A", Some("/c"), "builds"),
            Path::new("/k/bzImage-A")
        );
    }
}
