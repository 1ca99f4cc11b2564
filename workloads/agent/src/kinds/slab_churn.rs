//! `slab-churn`: system calls whose work is mostly slab allocations and
//! frees, one will-it-scale testcase each. Each operation is one pair of
//! calls, chosen by `call`:
//! - `open`: open(2) and close(2) of the task's existing file on a tmpfs
//!   (will-it-scale's open1: a `struct file` from filp, freed on close);
//! - `create`: open(O_CREAT), close and unlink(2) of the task's file
//!   (unlink1: a dentry, a shmem inode and a file each time);
//! - `pipe`: pipe(2) and two close(2)s (an inode, two files, the
//!   pipe_inode_info and its buffer array; will-it-scale's pipe1 keeps
//!   one pipe and writes through it, so only its setup is followed);
//! - `mmap`: mmap(2) of 128 MiB of private anonymous memory, never
//!   touched, and munmap(2) (mmap1: a vm_area_struct and maple tree
//!   nodes).
//!
//! will-it-scale's socket cases need networking, which the library's
//! kernel does not build. Spec: `workloads/slab-churn.yaml`.

use std::ffi::CString;
use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::bench::sys::{self, Map, mount_once};
use crate::bench::{Bench, GuestSize, Load, ParamError, Task};
use crate::kind::Kind;

/// The tmpfs the files are on.
pub const MOUNT: &str = "/run/patchbench-slab-churn";
/// will-it-scale mmap1's MEMSIZE.
pub const MMAP_SIZE: usize = 128 << 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlabChurn {
    pub tasks: u32,
    pub ops: u32,
    /// The pair of calls each operation makes.
    pub call: Call,
}

/// What a [`SlabChurn`] operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Call {
    Open,
    Create,
    Pipe,
    Mmap,
}

impl Default for SlabChurn {
    fn default() -> Self {
        SlabChurn {
            tasks: 1,
            ops: 20_000,
            call: Call::Open,
        }
    }
}

impl Kind for SlabChurn {
    fn describe(&self) -> String {
        format!("call={:?}", self.call)
    }
}

impl Bench for SlabChurn {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, _guest: GuestSize) -> Result<(), ParamError> {
        Ok(())
    }

    fn prepare(&self) -> io::Result<()> {
        mount_once("tmpfs", MOUNT, "tmpfs", 0, None)
    }

    fn task(&self, index: usize) -> io::Result<Box<dyn Task>> {
        Ok(Box::new(Churn::new(
            self.call,
            &Path::new(MOUNT).join(format!("task{index}")),
        )?))
    }
}

struct Churn {
    call: Call,
    path: PathBuf,
    c_path: CString,
}

impl Churn {
    fn new(call: Call, path: &Path) -> io::Result<Churn> {
        let c_path = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        if call == Call::Open {
            // open1 opens a file made beforehand.
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .map_err(|e| {
                    io::Error::new(e.kind(), format!("creating {}: {e}", path.display()))
                })?;
        }
        Ok(Churn {
            call,
            path: path.to_owned(),
            c_path,
        })
    }

    fn open(&self, flags: libc::c_int) -> io::Result<()> {
        // SAFETY: a NUL-terminated path; the descriptor is closed at once.
        let fd = unsafe { libc::open(self.c_path.as_ptr(), flags, 0o600) };
        if fd < 0 {
            return Err(sys::last(&format!("open {}", self.path.display())));
        }
        close(fd)
    }
}

fn close(fd: libc::c_int) -> io::Result<()> {
    // SAFETY: a descriptor this task opened and nothing else holds.
    if unsafe { libc::close(fd) } != 0 {
        return Err(sys::last("close"));
    }
    Ok(())
}

impl Task for Churn {
    fn op(&mut self) -> io::Result<()> {
        match self.call {
            Call::Open => self.open(libc::O_RDWR),
            Call::Create => {
                self.open(libc::O_RDWR | libc::O_CREAT)?;
                // SAFETY: a NUL-terminated path.
                if unsafe { libc::unlink(self.c_path.as_ptr()) } != 0 {
                    return Err(sys::last(&format!("unlink {}", self.path.display())));
                }
                Ok(())
            }
            Call::Pipe => {
                let mut fds = [0; 2];
                // SAFETY: room for the two descriptors.
                if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
                    return Err(sys::last("pipe"));
                }
                close(fds[0])?;
                close(fds[1])
            }
            Call::Mmap => Map::anon(MMAP_SIZE)?.unmap(),
        }
    }
}

impl Drop for Churn {
    fn drop(&mut self) {
        if self.call == Call::Open {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_runs_and_leaves_the_directory_as_it_found_it() {
        let dir = tempfile::tempdir().unwrap();
        for call in [Call::Open, Call::Create, Call::Pipe, Call::Mmap] {
            let path = dir.path().join("task0");
            let mut churn = Churn::new(call, &path).unwrap();
            for _ in 0..100 {
                churn.op().unwrap();
            }
            assert_eq!(path.exists(), call == Call::Open, "{call:?}");
            drop(churn);
            assert_eq!(
                std::fs::read_dir(dir.path()).unwrap().count(),
                0,
                "{call:?}"
            );
        }
    }
}
