//! `tmpfs-ops`: the namespace and splice operations on tmpfs that
//! package managers, build systems and systemd's /run make, beside the
//! reads, writes and faults page-cache and page-fault-shmem run:
//! an O_TMPFILE linked into place (how systemd and glibc write a file
//! atomically), hard links, renames and an exchange (how dpkg and rpm put
//! files in place), a long symbolic link read back (longer than 128 bytes
//! tmpfs keeps its target in a page of its own), a directory listed, a
//! sparse file spliced into a pipe and teed (holes go into the pipe as the
//! zero page), a hole punched into a file backed by a huge page (the
//! huge page split), and the mount's size changed and its options listed
//! (`mount -o remount,size=`, /proc/self/mountinfo).
//!
//! Once per boot, untimed: tmpfs is mounted at [`MOUNT`] with
//! `huge=always`, and each task makes its own directory. Each operation,
//! in that directory:
//! 1. opens an O_TMPFILE, writes a page and links it in as `a`;
//! 2. links `a` as `b`, renames `b` to `c` and exchanges `a` and `c`
//!    (RENAME_EXCHANGE);
//! 3. makes `l`, a symbolic link with a 200-byte target, and checks
//!    readlink(2) gives the target back;
//! 4. lists the directory and checks it holds `a`, `c` and `l`;
//! 5. makes `s`, a 64 KiB file whose first page is written and the rest a
//!    hole, splices 32 KiB of it into a pipe, tees that pipe into a second,
//!    and checks both give back the page and then zeros;
//! 6. writes `h`, 2 MiB (a huge page under `huge=always`), punches a 4 KiB
//!    hole in its middle and checks the hole reads as zeros;
//! 7. remounts the tmpfs with its size and checks /proc/self/mountinfo
//!    lists it;
//! 8. unlinks every file.
//!
//! Spec: `workloads/tmpfs-ops.yaml`.

use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::bench::sys::{last, mount_flags, mount_once, pipe, read_file};
use crate::bench::{Bench, GuestSize, Load, ParamError, Task};
use crate::kind::Kind;

/// Where the tmpfs is mounted.
pub const MOUNT: &str = "/run/patchbench-tmpfs-ops";
/// The mount's options: a huge page for every file large enough.
const OPTIONS: &str = "huge=always,size=256m";
const PAGE: usize = 4096;
const HUGE: usize = 2 << 20;
/// Longer than tmpfs's inline symlink (SHORT_SYMLINK_LEN, 128 bytes).
const LINK_TARGET_LEN: usize = 200;
/// The sparse file, and the part of it spliced.
const SPARSE: usize = 64 << 10;
const SPLICED: usize = 32 << 10;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TmpfsOps {
    pub tasks: u32,
    pub ops: u32,
}

impl Default for TmpfsOps {
    fn default() -> Self {
        TmpfsOps { tasks: 1, ops: 16 }
    }
}

impl Kind for TmpfsOps {
    fn describe(&self) -> String {
        "tmpfile, link, rename, symlink, readdir, splice, punch, remount".to_string()
    }
}

impl Bench for TmpfsOps {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, _guest: GuestSize) -> Result<(), ParamError> {
        // Each task holds 2 MiB and 72 KiB at most: MAX_TASKS of them fit
        // the 256 MiB mount.
        Ok(())
    }

    fn prepare(&self) -> io::Result<()> {
        mount_once("tmpfs", MOUNT, "tmpfs", 0, Some(OPTIONS))
    }

    fn task(&self, index: usize) -> io::Result<Box<dyn Task>> {
        let dir = Path::new(MOUNT).join(format!("task{index}"));
        fs::create_dir_all(&dir)?;
        let target: String = (0..LINK_TARGET_LEN)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        Ok(Box::new(Namer {
            dir,
            target,
            page: vec![0x5a; PAGE],
            huge: vec![0xa5; HUGE],
        }))
    }
}

struct Namer {
    dir: PathBuf,
    target: String,
    page: Vec<u8>,
    huge: Vec<u8>,
}

fn cstr(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
}

impl Namer {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// An O_TMPFILE with one page, linked in as `a`.
    fn tmpfile(&self) -> io::Result<()> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_TMPFILE)
            .mode(0o600)
            .open(&self.dir)
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("O_TMPFILE in {}: {e}", self.dir.display()),
                )
            })?;
        file.write_all(&self.page)?;
        let a = cstr(&self.path("a"))?;
        // SAFETY: a live descriptor and NUL-terminated strings.
        let ret = unsafe {
            libc::linkat(
                file.as_raw_fd(),
                c"".as_ptr(),
                libc::AT_FDCWD,
                a.as_ptr(),
                libc::AT_EMPTY_PATH,
            )
        };
        if ret != 0 {
            return Err(last("linkat of an O_TMPFILE"));
        }
        Ok(())
    }

    fn links_and_renames(&self) -> io::Result<()> {
        fs::hard_link(self.path("a"), self.path("b"))?;
        fs::rename(self.path("b"), self.path("c"))?;
        let (a, c) = (cstr(&self.path("a"))?, cstr(&self.path("c"))?);
        // SAFETY: NUL-terminated paths.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_renameat2,
                libc::AT_FDCWD,
                a.as_ptr(),
                libc::AT_FDCWD,
                c.as_ptr(),
                libc::RENAME_EXCHANGE,
            )
        };
        if ret != 0 {
            return Err(last("renameat2(RENAME_EXCHANGE)"));
        }
        Ok(())
    }

    fn symlink(&self) -> io::Result<()> {
        let link = self.path("l");
        std::os::unix::fs::symlink(&self.target, &link)?;
        let back = fs::read_link(&link)?;
        if back.as_os_str() != self.target.as_str() {
            return Err(io::Error::other(format!(
                "readlink of {} gave {back:?}, not the {LINK_TARGET_LEN}-byte target",
                link.display()
            )));
        }
        Ok(())
    }

    fn list(&self) -> io::Result<()> {
        let mut names = fs::read_dir(&self.dir)?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<io::Result<Vec<_>>>()?;
        names.sort();
        if names != ["a", "c", "l"] {
            return Err(io::Error::other(format!(
                "{} lists {names:?}, not a, c and l",
                self.dir.display()
            )));
        }
        Ok(())
    }

    /// A sparse file spliced into a pipe, teed into a second.
    fn splice(&self) -> io::Result<()> {
        let file = File::create_new(self.path("s"))?;
        file.write_all_at(&self.page, 0)?;
        file.set_len(SPARSE as u64)?;
        let (r1, w1) = pipe()?;
        let (r2, w2) = pipe()?;
        let mut off: libc::loff_t = 0;
        let mut moved = 0;
        while moved < SPLICED {
            // SAFETY: live descriptors; the offset is ours.
            let n = unsafe {
                libc::splice(
                    file.as_raw_fd(),
                    &mut off,
                    w1.as_raw_fd(),
                    std::ptr::null_mut(),
                    SPLICED - moved,
                    0,
                )
            };
            if n <= 0 {
                return Err(last("splice from a tmpfs file into a pipe"));
            }
            moved += n as usize;
        }
        // SAFETY: live descriptors.
        let teed = unsafe { libc::tee(r1.as_raw_fd(), w2.as_raw_fd(), SPLICED, 0) };
        if teed != SPLICED as isize {
            return Err(last(&format!("tee of {SPLICED} bytes gave {teed}")));
        }
        drop((w1, w2));
        for read_end in [r1, r2] {
            // SAFETY: the pipe's read end, owned here.
            let mut pipe =
                unsafe { File::from_raw_fd(std::os::fd::IntoRawFd::into_raw_fd(read_end)) };
            let mut got = Vec::with_capacity(SPLICED);
            pipe.read_to_end(&mut got)?;
            if got.len() != SPLICED
                || got[..PAGE] != self.page[..]
                || got[PAGE..].iter().any(|&b| b != 0)
            {
                return Err(io::Error::other(
                    "a pipe fed by splice and tee from a sparse tmpfs file did not give its page and then zeros",
                ));
            }
        }
        Ok(())
    }

    /// A hole punched into a file a huge page backs.
    fn punch(&self) -> io::Result<()> {
        let file = File::create_new(self.path("h"))?;
        file.write_all_at(&self.huge, 0)?;
        let at = (HUGE / 2) as i64;
        // SAFETY: a live descriptor.
        let ret = unsafe {
            libc::fallocate(
                file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                at,
                PAGE as i64,
            )
        };
        if ret != 0 {
            return Err(last("fallocate(PUNCH_HOLE) on tmpfs"));
        }
        let mut hole = vec![1u8; PAGE];
        file.read_exact_at(&mut hole, at as u64)?;
        if hole.iter().any(|&b| b != 0) {
            return Err(io::Error::other(
                "a punched hole on tmpfs reads back non-zero",
            ));
        }
        Ok(())
    }

    fn remount(&self) -> io::Result<()> {
        mount_flags("tmpfs", MOUNT, "tmpfs", libc::MS_REMOUNT, Some(OPTIONS))?;
        let info = read_file("/proc/self/mountinfo")?;
        if !info
            .lines()
            .any(|l| l.split_whitespace().nth(4) == Some(MOUNT))
        {
            return Err(io::Error::other(format!(
                "/proc/self/mountinfo does not list {MOUNT} after its remount"
            )));
        }
        Ok(())
    }
}

impl Task for Namer {
    fn op(&mut self) -> io::Result<()> {
        self.tmpfile()?;
        self.links_and_renames()?;
        self.symlink()?;
        self.list()?;
        self.splice()?;
        self.punch()?;
        self.remount()?;
        for name in ["a", "c", "l", "s", "h"] {
            fs::remove_file(self.path(name))?;
        }
        Ok(())
    }
}
