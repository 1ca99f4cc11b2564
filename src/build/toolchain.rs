//! Before a build: is the toolchain there, and is there room on the disk?
//! A kernel build that dies ten minutes in for want of `bc` or of space is
//! the failure this module turns into one clear message up front.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use bytesize::ByteSize;

/// Free space a build needs before it starts: a tiny kernel's build
/// directory is about 300 MB, plus a snapshot of it for the build cache; a
/// distribution config needs far more, and fails with [`disk_full_in`]'s
/// message if it runs out.
pub const MIN_FREE: ByteSize = ByteSize::gib(2);

/// Something the kernel build needs and the host lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// A program, or a description such as "libelf headers (gelf.h)".
    pub what: String,
    /// The Debian package that provides it.
    pub package: &'static str,
}

/// Programs the build runs, with their Debian packages. Kconfig needs flex
/// and bison, `kernel/time/timeconst.h` needs bc, objtool needs libelf.
const PROGRAMS: &[(&str, &str)] = &[
    ("make", "make"),
    ("gcc", "gcc"),
    ("ld", "binutils"),
    ("flex", "flex"),
    ("bison", "bison"),
    ("bc", "bc"),
    ("perl", "perl"),
];

/// Headers the host-side build tools include.
const HEADERS: &[(&str, &[&str], &str)] = &[(
    "libelf headers (gelf.h, for objtool)",
    &["/usr/include/gelf.h", "/usr/include/libelf/gelf.h"],
    "libelf-dev",
)];

/// Whether `program` is an executable file in one of `path`'s directories.
fn on_path(program: &str, path: &OsStr) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path).any(|dir| {
        std::fs::metadata(dir.join(program))
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// What is missing, given a `PATH` and a way to test for files.
pub fn missing_with(path: &OsStr, exists: impl Fn(&Path) -> bool) -> Vec<Missing> {
    let programs = PROGRAMS
        .iter()
        .filter(|(program, _)| !on_path(program, path))
        .map(|(program, package)| Missing {
            what: (*program).to_string(),
            package,
        });
    let headers = HEADERS
        .iter()
        .filter(|(_, candidates, _)| !candidates.iter().any(|c| exists(Path::new(c))))
        .map(|(what, _, package)| Missing {
            what: (*what).to_string(),
            package,
        });
    programs.chain(headers).collect()
}

/// What this host lacks for a kernel build.
pub fn missing() -> Vec<Missing> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    missing_with(&path, Path::exists)
}

/// The message for a missing toolchain: every gap, and one install command.
pub fn describe_missing(missing: &[Missing]) -> String {
    let mut packages: Vec<&str> = missing.iter().map(|m| m.package).collect();
    packages.dedup();
    format!(
        "the kernel build needs {}; install with `apt-get install {}` (or run ci/setup-host.sh)",
        missing
            .iter()
            .map(|m| format!("{} (package {})", m.what, m.package))
            .collect::<Vec<_>>()
            .join(", "),
        packages.join(" ")
    )
}

/// Free bytes for an unprivileged user on the filesystem holding `dir`.
pub fn free_space(dir: &Path) -> std::io::Result<ByteSize> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a valid NUL-terminated path and `st` a valid out-pointer.
    let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: statvfs returned 0, so it filled `st`.
    let st = unsafe { st.assume_init() };
    Ok(ByteSize::b(st.f_bavail * st.f_frsize))
}

/// Whether a build log says the disk filled up.
pub fn disk_full_in(log_text: &str) -> bool {
    log_text.contains("No space left on device")
}

/// The directory whose filesystem a build directory will live on: the
/// nearest existing ancestor.
pub fn existing_ancestor(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|p| p.exists())
        .unwrap_or(Path::new("/"))
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_with_everything_lacks_nothing() {
        let dir = tempfile::tempdir().unwrap();
        for (program, _) in PROGRAMS {
            let p = dir.path().join(program);
            std::fs::write(&p, "").unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        assert_eq!(missing_with(dir.path().as_os_str(), |_| true), vec![]);
    }

    #[test]
    fn missing_tools_and_headers_name_their_packages() {
        let dir = tempfile::tempdir().unwrap();
        // `bc` exists but is not executable: it does not count.
        std::fs::write(dir.path().join("bc"), "").unwrap();
        let gaps = missing_with(dir.path().as_os_str(), |_| false);
        let names: Vec<_> = gaps.iter().map(|m| m.what.as_str()).collect();
        assert!(
            names.contains(&"flex") && names.contains(&"bc"),
            "{names:?}"
        );
        let text = describe_missing(&gaps);
        assert!(text.contains("flex (package flex)"), "{text}");
        assert!(
            text.contains("libelf headers (gelf.h, for objtool) (package libelf-dev)"),
            "{text}"
        );
        assert!(text.contains("apt-get install make gcc binutils flex bison bc perl libelf-dev"));
    }

    #[test]
    fn a_full_disk_is_recognised_in_a_build_log() {
        assert!(disk_full_in(
            "  CC      mm/zswap.o\nmm/zswap.c: fatal error: error writing to /tmp/cc.s: No space left on device"
        ));
        assert!(!disk_full_in("mm/zswap.c:12:1: error: expected ';'"));
    }

    #[test]
    fn free_space_is_read_from_the_filesystem() {
        let free = free_space(Path::new("/")).unwrap();
        assert!(free.as_u64() > 0);
        assert!(free_space(Path::new("/does/not/exist")).is_err());
        assert_eq!(
            existing_ancestor(Path::new("/does/not/exist")),
            PathBuf::from("/")
        );
    }
}
