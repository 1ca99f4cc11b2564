//! Small filesystem helpers shared by the stages.

use std::io::Write;
use std::path::Path;

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
}
