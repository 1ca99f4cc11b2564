//! stress-ng's staged root: the host's `/usr/bin/stress-ng` (Debian's
//! package, which ci/setup-host.sh installs), its ELF interpreter and
//! every shared library `ldd` resolves for it, each copied as the kernel
//! walks its path (`/lib` is a link to `usr/lib` on a merged-/usr host,
//! and stays one), plus the empty `/tmp`, `/proc`, `/sys` and `/dev` the
//! guest's run needs. The guest runs it chrooted there; with its loader
//! and libraries at their host paths, it loads exactly what it loads on
//! the host.

use std::path::{Path, PathBuf};
use std::time::Duration;

use patchbench_agent::kinds::stress_ng::STRESS_NG;
use sha2::{Digest, Sha256};

use super::archive::{archive_name, write};
use super::error::{StageError, io_err};
use crate::kbuild::{Staged, stage_path};
use crate::process::{self, Cmd};
use crate::workload::StagedArchive;

/// `ldd` and `--version` answer at once on any host.
const QUERY_DEADLINE: Duration = Duration::from_secs(60);

/// Directories a chrooted run needs that no library lies in.
const EMPTY_DIRS: [&str; 4] = ["tmp", "proc", "sys", "dev"];

/// The host's stress-ng, staged (made unless the cache holds it).
pub(super) async fn stage(dir: &Path) -> Result<StagedArchive, StageError> {
    let version = process::run(&Cmd::new(STRESS_NG, QUERY_DEADLINE).arg("--version"))
        .await
        .map_err(|e| query_err("--version", e))?;
    let version = version_of(&version.stdout).unwrap_or_else(|| version.stdout.trim().into());
    let ldd = process::run(&Cmd::new("ldd", QUERY_DEADLINE).arg(STRESS_NG))
        .await
        .map_err(|e| query_err("for its libraries (ldd)", e))?;
    let mut files = vec![PathBuf::from(STRESS_NG)];
    files.extend(
        ldd_paths(&ldd.stdout).map_err(|library| StageError::MissingLibrary {
            program: STRESS_NG.into(),
            library,
        })?,
    );
    let key = {
        let files = files.clone();
        crate::blocking::unblock(move || content_key(&files)).await?
    };
    let archive = dir.join(archive_name("stress-ng", &key));
    if !archive.is_file() {
        let root = tempfile::Builder::new()
            .prefix(".stress-ng-")
            .tempdir_in(dir)
            .map_err(io_err(dir))?;
        let at = root.path().to_owned();
        crate::blocking::unblock(move || copy_root(&files, &at)).await?;
        write(root.path(), &archive).await?;
    }
    Ok(StagedArchive {
        archive,
        source: version,
    })
}

fn query_err(what: &'static str, e: process::ProcessError) -> StageError {
    StageError::Query {
        program: STRESS_NG.into(),
        what,
        source: Box::new(e),
    }
}

/// Copies every file into the root at `root`, and makes the empty
/// directories.
fn copy_root(files: &[PathBuf], root: &Path) -> Result<Staged, StageError> {
    use std::os::unix::fs::PermissionsExt;
    let mut staged = Staged::default();
    for file in files {
        stage_path(Path::new("/"), root, file, &mut staged).map_err(|source| StageError::Copy {
            program: file.display().to_string(),
            source,
        })?;
    }
    for dir in EMPTY_DIRS {
        let d = root.join(dir);
        std::fs::create_dir_all(&d).map_err(io_err(&d))?;
    }
    let tmp = root.join("tmp");
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777))
        .map_err(io_err(&tmp))?;
    Ok(staged)
}

/// A key over every file's path and bytes (read through its links).
fn content_key(files: &[PathBuf]) -> Result<Vec<u8>, StageError> {
    let mut h = Sha256::new();
    for file in files {
        h.update(file.as_os_str().as_encoded_bytes());
        h.update(b"\0");
        h.update(std::fs::read(file).map_err(io_err(file))?);
        h.update(b"\0");
    }
    Ok(h.finalize().to_vec())
}

/// The files `ldd`'s output names: each library it resolved and the ELF
/// interpreter, in its order (the vDSO, which the kernel provides, left
/// out); `Err(name)` for a library it found nowhere.
pub fn ldd_paths(text: &str) -> Result<Vec<PathBuf>, String> {
    let mut paths = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let (name, resolved) = match line.split_once(" => ") {
            Some((name, rest)) => (name, rest),
            None => (line, line),
        };
        if resolved.starts_with("not found") {
            return Err(name.to_string());
        }
        let path = resolved.split(" (").next().unwrap_or("").trim();
        if path.starts_with('/') {
            paths.push(PathBuf::from(path));
        }
    }
    Ok(paths)
}

/// The version number in `stress-ng --version`'s line.
pub fn version_of(text: &str) -> Option<String> {
    let mut words = text.split_whitespace();
    words.find(|w| *w == "version")?;
    words.next().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_gives_the_libraries_and_the_loader_but_not_the_vdso() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd5a5f2000)\n\
            \tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f8bf1036000)\n\
            \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f8bf001e000)\n\
            \t/lib64/ld-linux-x86-64.so.2 (0x00007f8bf2272000)\n";
        assert_eq!(
            ldd_paths(text).unwrap(),
            [
                PathBuf::from("/lib/x86_64-linux-gnu/libm.so.6"),
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2"),
            ]
        );
        assert_eq!(
            ldd_paths("\tlibJudy.so.1 => not found\n").unwrap_err(),
            "libJudy.so.1"
        );
    }

    /// The host's own stress-ng (ci/setup-host.sh installs it), staged
    /// into a cache of the test's.
    #[tokio::test]
    async fn the_hosts_stress_ng_is_staged_with_its_loader_and_libraries() {
        let dir = tempfile::tempdir().unwrap();
        let staged = stage(dir.path()).await.unwrap();
        assert!(staged.source.starts_with("0."), "the version: {staged:?}");
        let name = staged.archive.file_stem().unwrap().to_str().unwrap();
        let members = crate::staged::archive::members(&std::fs::read(&staged.archive).unwrap());
        let names: Vec<&str> = members.iter().map(|m| m.0.as_str()).collect();
        assert_eq!(names[..2], ["staged", &format!("staged/{name}")]);
        for want in ["/usr/bin/stress-ng", "/tmp", "/proc", "/sys", "/dev"] {
            let member = format!("staged/{name}{want}");
            assert!(names.contains(&member.as_str()), "{member} in {names:?}");
        }
        for file in ["ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6"] {
            assert!(
                names.iter().any(|n| n.ends_with(&format!("/{file}"))),
                "{file} in {names:?}"
            );
        }
        assert_eq!(
            stage(dir.path()).await.unwrap(),
            staged,
            "the same key again"
        );
    }

    #[test]
    fn the_version_is_the_word_after_version() {
        assert_eq!(
            version_of("stress-ng, version 0.15.06 (gcc 12.2.0, x86_64 Linux 6.1.0)\n").as_deref(),
            Some("0.15.06")
        );
        assert_eq!(version_of("nothing"), None);
    }
}
