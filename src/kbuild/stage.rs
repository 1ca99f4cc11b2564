//! The kernel-build workload's staged root: every file the timed build
//! reads, copied out of the host's `/` into a directory of the cache and
//! written as a cpio archive beside it, which every boot's initramfs
//! carries ([`write_archive`]): the guest has the build's files in memory
//! from its first instruction and reads nothing over 9p (whose requests
//! QEMU completes in host threads, at instruction counts the host's speed
//! decides).
//!
//! Which files: the host runs the sample's own command once under
//! `strace -f` ([`trace`]), with the guest's environment, and keeps every
//! path a successful file or exec system call named ([`paths_in_trace`]):
//! `make`, the shell, `gcc` and the programs it runs (`cc1`, `as`), their
//! shared libraries, the sources, the headers, `.config` and the files
//! `make prepare` generated. This is the set the `deps_` lists of the
//! targets' `.cmd` files give, plus the toolchain, and it needs no list of
//! the toolchain's parts. Each path is copied as the kernel walks it
//! ([`stage_path`]): a symbolic link on the way is copied as a link and
//! followed, so `/lib`, `/usr/bin/gcc` and `gcc-12` resolve in the copy as
//! they do on the host.

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use patchbench_agent::{BuildDriver, HOST_PATH, kbuild_command};

use super::error::{KbuildError, io_err};
use crate::process::{self, Cmd};

/// Marks a complete staged root, and says how much it holds.
pub const STAGED: &str = ".patchbench-staged";

/// The guest mounts these itself, so nothing of them is copied.
const GUEST_OWN: [&str; 3] = ["/proc", "/sys", "/dev"];

/// What a staged root holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Staged {
    pub files: u64,
    pub bytes: u64,
}

/// What to trace: the sample's command, as the guest runs it.
pub struct Build<'a> {
    pub driver: BuildDriver,
    pub src: &'a Path,
    pub build: &'a Path,
    pub jobs: u32,
    pub targets: &'a [String],
}

/// The staged root at `stage` for `build`, made if it is not complete:
/// the build run once under strace, the files it read copied, and
/// whatever the traced build wrote into the build directory removed
/// again, so that the prepared tree is as it was.
pub async fn ensure(build: &Build<'_>, stage: &Path) -> Result<Staged, KbuildError> {
    let archive = PathBuf::from(patchbench_agent::kbuild_stage_archive(
        &build.build.display().to_string(),
    ));
    // An archive of an earlier, incomplete root is not this one's.
    if read_marker(stage).is_none() && archive.exists() {
        fs::remove_file(&archive).map_err(io_err(&archive))?;
    }
    let staged = staged_root(build, stage).await?;
    if !archive.is_file() {
        let mut bytes = Vec::new();
        write_archive(stage, patchbench_agent::KBUILD_STAGE_GUEST, &mut bytes)
            .map_err(io_err(stage))?;
        crate::fsutil::write_atomic(&archive, &bytes).map_err(io_err(&archive))?;
    }
    Ok(staged)
}

/// The staged root's directory, made unless it is complete.
async fn staged_root(build: &Build<'_>, stage: &Path) -> Result<Staged, KbuildError> {
    if let Some(staged) = read_marker(stage) {
        return Ok(staged);
    }
    if stage.exists() {
        fs::remove_dir_all(stage).map_err(io_err(stage))?;
    }
    let before = files_under(build.build)?;
    let traces = tempfile::Builder::new()
        .prefix(".patchbench-trace")
        .tempdir_in(stage.parent().unwrap_or(Path::new("/tmp")))
        .map_err(io_err(stage))?;
    let traced = trace(build, traces.path()).await;
    // Whatever the traced build left behind (its objects, make's .d files)
    // goes, success or not: the samples start from the prepared tree.
    remove_new_files(build.build, &before)?;
    traced?;
    let (cwd, _) = command(build);
    let mut paths = BTreeSet::new();
    for entry in fs::read_dir(traces.path()).map_err(io_err(traces.path()))? {
        let path = entry.map_err(io_err(traces.path()))?.path();
        let text = fs::read_to_string(&path).map_err(io_err(&path))?;
        paths.extend(paths_in_trace(&text, Path::new(&cwd)));
    }
    // The kernel loads an executable's ELF interpreter itself, with no
    // system call of the process's naming it.
    let interpreters: Vec<PathBuf> = paths.iter().filter_map(|p| interpreter(p)).collect();
    paths.extend(interpreters);
    let staging = stage.with_extension("partial");
    if staging.exists() {
        fs::remove_dir_all(&staging).map_err(io_err(&staging))?;
    }
    fs::create_dir_all(&staging).map_err(io_err(&staging))?;
    let mut staged = Staged::default();
    for path in &paths {
        stage_path(Path::new("/"), &staging, path, &mut staged)?;
    }
    // A sample writes its temporary files (gcc's assembler output) here.
    let tmp = staging.join("tmp");
    fs::create_dir_all(&tmp).map_err(io_err(&tmp))?;
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o1777)).map_err(io_err(&tmp))?;
    for dir in GUEST_OWN {
        let d = staging.join(dir.trim_start_matches('/'));
        fs::create_dir_all(&d).map_err(io_err(&d))?;
    }
    let marker = serde_json::to_string(&staged).expect("counts serialize");
    fs::write(staging.join(STAGED), marker).map_err(io_err(&staging.join(STAGED)))?;
    fs::rename(&staging, stage).map_err(io_err(stage))?;
    Ok(staged)
}

/// Writes the staged root at `stage` as a newc cpio archive, every member
/// under `prefix` (a guest path without its leading `/`, such as
/// [`patchbench_agent::KBUILD_STAGE_GUEST`]'s), each directory of the
/// prefix first, with its mode and modification time (make compares
/// times), links as links; sorted, owned by root, so the same root gives
/// the same bytes. The kernel unpacks it after the boot's own archive.
pub fn write_archive(stage: &Path, prefix: &str, out: impl std::io::Write) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::MetadataExt;
    let mut out = out;
    let prefix = prefix.trim_matches('/');
    let mut ino = 1u32;
    let mut member = |out: &mut dyn Write, name: &str, meta: &fs::Metadata, data: &[u8]| {
        let builder = cpio::newc::Builder::new(name)
            .ino(ino)
            .uid(0)
            .gid(0)
            .mode(meta.mode())
            .nlink(if meta.is_dir() { 2 } else { 1 })
            .mtime(u32::try_from(meta.mtime().max(0)).unwrap_or(u32::MAX));
        ino += 1;
        crate::image::write_member(builder, name, data, out)
    };
    let root_meta = fs::metadata(stage)?;
    let parts: Vec<&str> = prefix.split('/').collect();
    for depth in 1..parts.len() {
        member(&mut out, &parts[..depth].join("/"), &root_meta, &[])?;
    }
    member(&mut out, prefix, &root_meta, &[])?;
    for entry in walkdir::WalkDir::new(stage)
        .sort_by_file_name()
        .min_depth(1)
    {
        let entry = entry?;
        let rel = entry.path().strip_prefix(stage).expect("under the stage");
        if rel == Path::new(STAGED) {
            continue;
        }
        let name = format!("{prefix}/{}", rel.display());
        let meta = fs::symlink_metadata(entry.path())?;
        if meta.file_type().is_symlink() {
            let target = fs::read_link(entry.path())?;
            member(
                &mut out,
                &name,
                &meta,
                target.as_os_str().as_encoded_bytes(),
            )?;
        } else if meta.is_file() {
            member(&mut out, &name, &meta, &fs::read(entry.path())?)?;
        } else if meta.is_dir() {
            member(&mut out, &name, &meta, &[])?;
        }
    }
    cpio::newc::trailer(&mut out)?;
    Ok(())
}

/// The interpreter the kernel loads for the executable file at `path`,
/// if it has one: an ELF file's `PT_INTERP` (the dynamic loader), or a
/// script's `#!` line.
pub fn interpreter(path: &Path) -> Option<PathBuf> {
    let meta = fs::metadata(path).ok()?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return None;
    }
    let mut head = [0u8; 256];
    use std::io::Read;
    let n = fs::File::open(path).ok()?.read(&mut head).ok()?;
    let head = &head[..n];
    if let Some(line) = head.strip_prefix(b"#!") {
        let line = line.split(|&b| b == b'\n').next()?;
        let program = std::str::from_utf8(line).ok()?.split_whitespace().next()?;
        return Some(PathBuf::from(program));
    }
    if !head.starts_with(b"\x7fELF") {
        return None;
    }
    let bytes = fs::read(path).ok()?;
    let elf = goblin::elf::Elf::parse(&bytes).ok()?;
    elf.interpreter.map(PathBuf::from)
}

/// The counts of a complete staged root, or `None`.
fn read_marker(stage: &Path) -> Option<Staged> {
    let text = fs::read_to_string(stage.join(STAGED)).ok()?;
    serde_json::from_str(&text).ok()
}

fn command(build: &Build<'_>) -> (String, Vec<String>) {
    kbuild_command(
        build.driver,
        &build.src.display().to_string(),
        &build.build.display().to_string(),
        build.jobs,
        build.targets,
    )
}

/// Runs the sample's command under `strace`, one trace file per process
/// in `out`, with the environment the guest gives it (only `PATH`, `HOME`
/// and `LC_ALL`).
async fn trace(build: &Build<'_>, out: &Path) -> Result<(), KbuildError> {
    let (cwd, argv) = command(build);
    // strace itself in that environment too, so that nothing of this
    // process's own (a test harness's LD_LIBRARY_PATH) enters the trace.
    let cmd = Cmd::new("env", crate::build::BUILD_DEADLINE)
        .arg("-i")
        .arg(format!("PATH={HOST_PATH}"))
        .args(["HOME=/root", "LC_ALL=C", "strace"])
        .args(["-ff", "-qq", "-y", "-s", "4096"])
        .args(["-e", "trace=%file,%process"])
        .arg("-o")
        .arg(out.join("t"))
        .args(&argv)
        .cwd(cwd);
    process::run(&cmd)
        .await
        .map(drop)
        .map_err(|source| KbuildError::Trace {
            source: Box::new(source),
        })
}

/// Every path a successful file or exec system call of one process's
/// trace (`strace -y` output) named, absolute: a relative path is joined
/// to the directory strace names beside its `dirfd` (`AT_FDCWD</dir>`),
/// or else to `cwd`. Paths under `/proc`, `/sys` and `/dev` are left out.
pub fn paths_in_trace(text: &str, cwd: &Path) -> Vec<PathBuf> {
    let mut cwd = cwd.to_path_buf();
    let mut paths = Vec::new();
    for line in text.lines() {
        let Some((call, rest)) = line.split_once('(') else {
            continue;
        };
        if !call.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || failed(rest) {
            continue;
        }
        // An optional dirfd, annotated with its path by -y.
        let (base, rest) = match rest.split_once(", \"") {
            Some((fd, _)) if fd.starts_with('"') => (None, rest),
            Some((fd, tail)) => (annotation(fd), &rest[rest.len() - tail.len() - 1..]),
            None => (None, rest),
        };
        let Some(name) = quoted(rest) else { continue };
        if name.is_empty() {
            continue;
        }
        let name = PathBuf::from(name);
        let path = if name.is_absolute() {
            name
        } else {
            base.unwrap_or_else(|| cwd.clone()).join(name)
        };
        if call == "chdir" {
            cwd = path.clone();
        }
        if !GUEST_OWN.iter().any(|own| path.starts_with(own)) {
            paths.push(path);
        }
    }
    paths
}

/// Whether the call's result is an error (`= -1 ENOENT ...`) or none
/// (`= ?`). strace pads the space before the `=` to align the results.
fn failed(rest: &str) -> bool {
    rest.rsplit_once(" = ")
        .is_none_or(|(_, ret)| ret.starts_with('-') || ret.starts_with('?'))
}

/// The path in `fd</path>`.
fn annotation(fd: &str) -> Option<PathBuf> {
    let (_, tail) = fd.split_once('<')?;
    Some(PathBuf::from(tail.strip_suffix('>')?))
}

/// The first C string of `text`, which starts at its opening quote,
/// unescaped as strace escapes it.
fn quoted(text: &str) -> Option<String> {
    let mut chars = text.strip_prefix('"')?.chars();
    let mut bytes = Vec::new();
    while let Some(c) = chars.next() {
        match c {
            '"' => return String::from_utf8(bytes).ok(),
            '\\' => match chars.next()? {
                'n' => bytes.push(b'\n'),
                't' => bytes.push(b'\t'),
                'x' => {
                    let hex: String = [chars.next()?, chars.next()?].iter().collect();
                    bytes.push(u8::from_str_radix(&hex, 16).ok()?);
                }
                other => bytes.extend(other.to_string().as_bytes()),
            },
            c => bytes.extend(c.to_string().as_bytes()),
        }
    }
    None
}

/// An i/o error on one path while copying a staged root
/// ([`stage_path`]); the kernel-build workload reports it as its own
/// ([`KbuildError::Io`]), a staged program's as its own.
#[derive(Debug, thiserror::Error)]
#[error("i/o on {}", path.display())]
pub struct CopyError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl From<CopyError> for KbuildError {
    fn from(e: CopyError) -> KbuildError {
        KbuildError::Io {
            path: e.path,
            source: e.source,
        }
    }
}

fn copy_err(path: &Path) -> impl FnOnce(std::io::Error) -> CopyError {
    let path = path.to_owned();
    move |source| CopyError { path, source }
}

/// How many links one path may pass through, as the kernel's `MAXSYMLINKS`.
const MAX_LINKS: usize = 40;

/// Copies `path`, as the kernel walks it from `root`, into `stage`: each
/// directory on the way is made, each symbolic link copied as a link and
/// followed, and the last component copied if it is a file, with its mode
/// and modification time (make compares times). The walk stops quietly
/// where a component does not exist: an output the traced build wrote and
/// that was removed after it still has its directory staged.
pub fn stage_path(
    root: &Path,
    stage: &Path,
    path: &Path,
    staged: &mut Staged,
) -> Result<(), CopyError> {
    let mut real = PathBuf::from("/");
    let mut pending: VecDeque<OsString> = components(path);
    let mut links = 0;
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            real.pop();
            continue;
        }
        let at = real.join(&name);
        let host = root.join(at.strip_prefix("/").expect("absolute"));
        let dest = stage.join(at.strip_prefix("/").expect("absolute"));
        let meta = match fs::symlink_metadata(&host) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(copy_err(&host)(e)),
        };
        if meta.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return Ok(());
            }
            let target = fs::read_link(&host).map_err(copy_err(&host))?;
            if fs::symlink_metadata(&dest).is_err() {
                std::os::unix::fs::symlink(&target, &dest).map_err(copy_err(&dest))?;
            }
            if target.is_absolute() {
                real = PathBuf::from("/");
            }
            for part in components(&target).into_iter().rev() {
                pending.push_front(part);
            }
        } else if meta.is_dir() {
            if !dest.is_dir() {
                fs::create_dir(&dest).map_err(copy_err(&dest))?;
                fs::set_permissions(&dest, meta.permissions()).map_err(copy_err(&dest))?;
            }
            real = at;
        } else if meta.is_file() && pending.is_empty() {
            if !dest.exists() {
                fs::copy(&host, &dest).map_err(copy_err(&dest))?;
                let modified = meta.modified().map_err(copy_err(&host))?;
                fs::File::options()
                    .write(true)
                    .open(&dest)
                    .and_then(|f| f.set_modified(modified))
                    .map_err(copy_err(&dest))?;
                staged.files += 1;
                staged.bytes += meta.len();
            }
            return Ok(());
        } else {
            // A file in the middle of a path, or a device or socket.
            return Ok(());
        }
    }
    Ok(())
}

/// The names of a path's components, `.` left out and `..` kept.
fn components(path: &Path) -> VecDeque<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_owned()),
            Component::ParentDir => Some("..".into()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

/// Every file and directory under `dir`.
fn files_under(dir: &Path) -> Result<HashSet<PathBuf>, KbuildError> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.map(|e| e.into_path()).map_err(|e| io_err(dir)(e.into())))
        .collect()
}

/// Removes what is under `dir` and not in `before`, deepest first.
fn remove_new_files(dir: &Path, before: &HashSet<PathBuf>) -> Result<(), KbuildError> {
    let mut new: Vec<PathBuf> = files_under(dir)?
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    new.sort_by(|a, b| b.cmp(a));
    for path in new {
        let removed = if path.is_dir() && !path.is_symlink() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        match removed {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&path)(e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = r#"execve("/usr/bin/make", ["make", "-f", "patchbench-targets.mk", "-j2"], 0x7ffe /* 3 vars */) = 0
access("/etc/ld.so.preload", R_OK)      = -1 ENOENT (No such file or directory)
openat(AT_FDCWD</k/build>, "/etc/ld.so.cache", O_RDONLY|O_CLOEXEC) = 3</etc/ld.so.cache>
newfstatat(3</etc/ld.so.cache>, "", {st_mode=S_IFREG|0644, st_size=37371, ...}, AT_EMPTY_PATH) = 0
openat(AT_FDCWD</k/build>, "./include/generated/autoconf.h", O_RDONLY|O_NOCTTY) = 4</k/build/include/generated/autoconf.h>
openat(AT_FDCWD</k/build>, "/proc/meminfo", O_RDONLY) = 5</proc/meminfo>
readlink("/usr/bin/gcc", "gcc-12", 1023) = 6
stat("mm/x\"y\x41.h", 0x7ffd) = 0
openat(3</k/src>, "include/linux/mm.h", O_RDONLY) = 6</k/src/include/linux/mm.h>
chdir("/elsewhere")                    = 0
access("rel", R_OK)                    = 0
exit_group(0)                           = ?
"#;

    #[test]
    fn a_trace_gives_every_path_that_was_there() {
        let got = paths_in_trace(TRACE, Path::new("/k/build"));
        let want: Vec<PathBuf> = [
            "/usr/bin/make",
            "/etc/ld.so.cache",
            "/k/build/./include/generated/autoconf.h",
            "/usr/bin/gcc",
            "/k/build/mm/x\"yA.h",
            "/k/src/include/linux/mm.h",
            "/elsewhere",
            "/elsewhere/rel",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_path_is_staged_as_the_kernel_walks_it() {
        use std::os::unix::fs::symlink;
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        // Debian's merged /usr: /lib is a link to usr/lib, and gcc is a
        // chain of links to the real program.
        fs::create_dir_all(r.join("usr/lib/gcc")).unwrap();
        fs::create_dir_all(r.join("usr/bin")).unwrap();
        symlink("usr/lib", r.join("lib")).unwrap();
        fs::write(r.join("usr/lib/libc.so.6"), b"libc").unwrap();
        fs::write(r.join("usr/bin/x86_64-linux-gnu-gcc-12"), b"gcc").unwrap();
        fs::set_permissions(
            r.join("usr/bin/x86_64-linux-gnu-gcc-12"),
            fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        symlink("gcc-12", r.join("usr/bin/gcc")).unwrap();
        symlink("/usr/bin/x86_64-linux-gnu-gcc-12", r.join("usr/bin/gcc-12")).unwrap();
        fs::write(r.join("usr/lib/gcc/crt1.o"), b"crt").unwrap();
        fs::write(r.join("usr/lib/unread"), b"x").unwrap();
        let stage = tempfile::tempdir().unwrap();
        let s = stage.path();
        let mut staged = Staged::default();
        for path in [
            "/lib/libc.so.6",
            "/usr/bin/gcc",
            "/usr/lib/gcc/../gcc/./crt1.o",
            "/usr/lib/gcc/gone.o",
            "/usr/bin/gcc",
        ] {
            stage_path(r, s, Path::new(path), &mut staged).unwrap();
        }
        // (An absolute link in the copy points into the real root here,
        // so links are checked as links.)
        assert_eq!(fs::read_link(s.join("lib")).unwrap(), Path::new("usr/lib"));
        assert_eq!(fs::read(s.join("usr/lib/libc.so.6")).unwrap(), b"libc");
        assert_eq!(
            fs::read_link(s.join("usr/bin/gcc")).unwrap(),
            Path::new("gcc-12")
        );
        assert_eq!(
            fs::read_link(s.join("usr/bin/gcc-12")).unwrap(),
            Path::new("/usr/bin/x86_64-linux-gnu-gcc-12")
        );
        assert_eq!(
            fs::read(s.join("usr/bin/x86_64-linux-gnu-gcc-12")).unwrap(),
            b"gcc"
        );
        assert_eq!(
            fs::metadata(s.join("usr/bin/x86_64-linux-gnu-gcc-12"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o755
        );
        assert_eq!(fs::read(s.join("usr/lib/gcc/crt1.o")).unwrap(), b"crt");
        assert!(!s.join("usr/lib/unread").exists());
        assert!(!s.join("usr/lib/gcc/gone.o").exists());
        assert_eq!(
            fs::metadata(s.join("usr/lib/gcc/crt1.o"))
                .unwrap()
                .modified()
                .unwrap(),
            fs::metadata(r.join("usr/lib/gcc/crt1.o"))
                .unwrap()
                .modified()
                .unwrap()
        );
        assert_eq!(
            staged,
            Staged {
                files: 3,
                bytes: 10
            }
        );
    }

    #[test]
    fn an_executable_names_its_dynamic_loader() {
        // This test's own binary is a dynamically linked executable.
        let exe = std::env::current_exe().unwrap();
        let interp = interpreter(&exe).expect("a dynamic executable has an interpreter");
        assert!(interp.to_string_lossy().contains("ld-linux"), "{interp:?}");
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("script");
        fs::write(&script, "#! /bin/sh -e\necho\n").unwrap();
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(interpreter(&script), Some(PathBuf::from("/bin/sh")));
        fs::write(&script, "plain text\n").unwrap();
        assert_eq!(interpreter(&script), None);
    }

    #[test]
    fn the_archive_holds_the_root_under_its_guest_path() {
        use std::os::unix::fs::symlink;
        let stage = tempfile::tempdir().unwrap();
        let s = stage.path();
        fs::create_dir_all(s.join("usr/bin")).unwrap();
        fs::write(s.join("usr/bin/gcc-12"), b"gcc").unwrap();
        fs::set_permissions(s.join("usr/bin/gcc-12"), fs::Permissions::from_mode(0o755)).unwrap();
        symlink("gcc-12", s.join("usr/bin/gcc")).unwrap();
        fs::write(s.join(STAGED), b"{}").unwrap();
        let mut bytes = Vec::new();
        write_archive(s, patchbench_agent::KBUILD_STAGE_GUEST, &mut bytes).unwrap();
        let mut again = Vec::new();
        write_archive(s, patchbench_agent::KBUILD_STAGE_GUEST, &mut again).unwrap();
        assert_eq!(bytes, again, "the same root gives the same archive");
        let mut members = Vec::new();
        let mut rest = &bytes[..];
        loop {
            let mut reader = cpio::NewcReader::new(rest).unwrap();
            let entry = reader.entry();
            if entry.is_trailer() {
                break;
            }
            let (name, mode) = (entry.name().to_string(), entry.mode());
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut reader, &mut data).unwrap();
            members.push((name, mode, data));
            rest = reader.finish().unwrap();
        }
        let names: Vec<&str> = members.iter().map(|m| m.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "kbuild-stage",
                "kbuild-stage/usr",
                "kbuild-stage/usr/bin",
                "kbuild-stage/usr/bin/gcc",
                "kbuild-stage/usr/bin/gcc-12"
            ]
        );
        assert_eq!(members[3].1 & 0o170000, 0o120000, "a link stays a link");
        assert_eq!(members[3].2, b"gcc-12");
        assert_eq!(members[4].1 & 0o7777, 0o755);
        assert_eq!(members[4].2, b"gcc");
    }

    #[test]
    fn new_files_go_and_old_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::create_dir(d.join("mm")).unwrap();
        fs::write(d.join("mm/old.c"), b"").unwrap();
        let before = files_under(d).unwrap();
        fs::write(d.join("mm/new.o"), b"").unwrap();
        fs::create_dir_all(d.join("new/deep")).unwrap();
        fs::write(d.join("new/deep/f"), b"").unwrap();
        remove_new_files(d, &before).unwrap();
        assert!(d.join("mm/old.c").exists());
        assert!(!d.join("mm/new.o").exists());
        assert!(!d.join("new").exists());
    }
}
