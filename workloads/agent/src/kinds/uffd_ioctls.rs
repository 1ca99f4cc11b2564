//! `uffd-ioctls`: userfaultfd's resolving ioctls other than UFFDIO_COPY,
//! each used the way its user uses it: UFFDIO_ZEROPAGE and UFFDIO_COPY
//! over ranges as QEMU's postcopy live migration fills guest memory,
//! UFFDIO_WRITEPROTECT on and off as CRIU's and QEMU's dirty tracking
//! does, UFFDIO_MOVE as a compacting garbage collector moves pages (the
//! Android ART use that added it), UFFDIO_POISON as postcopy marks a page
//! lost to a memory error, and UFFDIO_CONTINUE on a shmem minor fault
//! mapping as a VM's shared memory is installed; each is in the kernel's
//! selftests/mm/uffd-unit-tests.c. `userfaultfd` runs the missing fault
//! and UFFDIO_COPY page by page; this runs the rest of mm/userfaultfd.c,
//! with no faults: every ioctl resolves ahead of any access.
//!
//! Each task, before its window, has a memfd of `size` written through a
//! shared mapping (the page cache UFFDIO_CONTINUE maps). Each operation:
//! 1. opens a userfaultfd (UFFD_USER_MODE_ONLY) asking for the features
//!    these need (write protection, shmem minor faults, poison, move);
//! 2. maps `size` of anonymous memory and registers it for missing faults
//!    and write protection; UFFDIO_ZEROPAGE fills its first half and one
//!    UFFDIO_COPY its second, and the bytes are checked;
//! 3. write-protects the whole range and removes the protection again;
//! 4. zaps the first half (MADV_DONTNEED) and UFFDIO_MOVEs a populated
//!    private region's pages into it, checking them;
//! 5. zaps the last page and UFFDIO_POISONs it;
//! 6. maps the memfd again, registers that mapping for minor faults,
//!    UFFDIO_CONTINUEs all of it and checks the bytes;
//! 7. unregisters both, closes the userfaultfd and unmaps everything.
//!
//! Spec: `workloads/uffd-ioctls.yaml`.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::FileExt;

use serde::{Deserialize, Serialize};

use super::userfaultfd::{UFFDIO_COPY, UFFDIO_REGISTER, ioctl, open};
use crate::bench::sys::{self, Map, page_size};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;

// include/uapi/linux/userfaultfd.h: _IOWR(0xAA, nr, size) and friends.
const UFFDIO_UNREGISTER: libc::c_ulong = 0x8010_aa01;
const UFFDIO_ZEROPAGE: libc::c_ulong = 0xc020_aa04;
const UFFDIO_MOVE: libc::c_ulong = 0xc028_aa05;
const UFFDIO_WRITEPROTECT: libc::c_ulong = 0xc018_aa06;
const UFFDIO_CONTINUE: libc::c_ulong = 0xc020_aa07;
const UFFDIO_POISON: libc::c_ulong = 0xc020_aa08;
const FEATURE_PAGEFAULT_FLAG_WP: u64 = 1 << 0;
const FEATURE_MINOR_SHMEM: u64 = 1 << 10;
const FEATURE_POISON: u64 = 1 << 14;
const FEATURE_MOVE: u64 = 1 << 16;
const MODE_MISSING: u64 = 1 << 0;
const MODE_WP: u64 = 1 << 1;
const MODE_MINOR: u64 = 1 << 2;
const WRITEPROTECT_MODE_WP: u64 = 1 << 0;

/// The bytes the copied, moved and memfd pages hold.
const COPIED: u8 = 0x5a;
const MOVED: u8 = 1;
const SHARED: u8 = 0x3c;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UffdIoctls {
    pub tasks: u32,
    pub ops: u32,
    /// The registered area, and the memfd.
    pub size: Bytes,
}

impl Default for UffdIoctls {
    fn default() -> Self {
        UffdIoctls {
            tasks: 1,
            ops: 16,
            size: Bytes::mib(1),
        }
    }
}

impl Kind for UffdIoctls {
    fn describe(&self) -> String {
        format!("size={}", self.size)
    }
}

impl Bench for UffdIoctls {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_held("size", Bytes(self.size.get() * 3), self.tasks, guest)?;
        if self.size.get() % 8192 != 0 || self.size.get() < 16384 {
            return Err(ParamError::new(
                "size",
                self.size,
                "must be a whole, even number of 4 KiB pages, at least four",
            ));
        }
        Ok(())
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        let len = self.size.bytes();
        let memfd = sys::memfd(c"uffd-ioctls")?;
        memfd.write_all_at(&vec![SHARED; len], 0)?;
        Ok(Box::new(Resolver {
            len,
            page: page_size(),
            memfd,
            source: vec![COPIED; len / 2],
        }))
    }
}

#[repr(C)]
struct Register {
    start: u64,
    len: u64,
    mode: u64,
    ioctls: u64,
}

/// uffdio_range, and each ioctl's range with a mode and a result.
#[repr(C)]
struct Range {
    start: u64,
    len: u64,
}

#[repr(C)]
struct RangeMode {
    start: u64,
    len: u64,
    mode: u64,
    result: i64,
}

#[repr(C)]
struct Writeprotect {
    start: u64,
    len: u64,
    mode: u64,
}

/// uffdio_copy and uffdio_move.
#[repr(C)]
struct Transfer {
    dst: u64,
    src: u64,
    len: u64,
    mode: u64,
    result: i64,
}

fn open_uffd() -> io::Result<OwnedFd> {
    open(
        FEATURE_PAGEFAULT_FLAG_WP | FEATURE_MINOR_SHMEM | FEATURE_POISON | FEATURE_MOVE,
        "UFFDIO_API asking for write protection, shmem minor faults, poison and move (Linux 6.8 on)",
    )
}

fn register(uffd: &OwnedFd, map: &Map, mode: u64) -> io::Result<()> {
    let mut r = Register {
        start: map.ptr as u64,
        len: map.len as u64,
        mode,
        ioctls: 0,
    };
    ioctl(uffd, UFFDIO_REGISTER, &mut r, "UFFDIO_REGISTER")
}

fn unregister(uffd: &OwnedFd, map: &Map) -> io::Result<()> {
    let mut r = Range {
        start: map.ptr as u64,
        len: map.len as u64,
    };
    ioctl(uffd, UFFDIO_UNREGISTER, &mut r, "UFFDIO_UNREGISTER")
}

fn range_mode(map: &Map, start: usize, len: usize, mode: u64) -> RangeMode {
    RangeMode {
        start: map.ptr as u64 + start as u64,
        len: len as u64,
        mode,
        result: 0,
    }
}

struct Resolver {
    len: usize,
    page: usize,
    memfd: File,
    source: Vec<u8>,
}

impl Resolver {
    /// Fails unless every page's first byte in `map[start..start + len]`
    /// is `want`.
    fn expect(&self, map: &Map, start: usize, len: usize, want: u8, what: &str) -> io::Result<()> {
        for off in (start..start + len).step_by(self.page) {
            // SAFETY: inside the readable mapping, resolved already.
            let got = unsafe { map.ptr.add(off).read_volatile() };
            if got != want {
                return Err(io::Error::other(format!(
                    "{what}: the page at offset {off} holds {got:#x}, not {want:#x}"
                )));
            }
        }
        Ok(())
    }

    fn anonymous(&self, uffd: &OwnedFd) -> io::Result<Map> {
        let half = self.len / 2;
        let dst = Map::anon(self.len)?;
        dst.advise(libc::MADV_NOHUGEPAGE)?;
        register(uffd, &dst, MODE_MISSING | MODE_WP)?;
        let mut zero = range_mode(&dst, 0, half, 0);
        ioctl(uffd, UFFDIO_ZEROPAGE, &mut zero, "UFFDIO_ZEROPAGE")?;
        let mut copy = Transfer {
            dst: dst.ptr as u64 + half as u64,
            src: self.source.as_ptr() as u64,
            len: half as u64,
            mode: 0,
            result: 0,
        };
        ioctl(uffd, UFFDIO_COPY, &mut copy, "UFFDIO_COPY")?;
        self.expect(&dst, 0, half, 0, "after UFFDIO_ZEROPAGE")?;
        self.expect(&dst, half, half, COPIED, "after UFFDIO_COPY")?;

        let mut wp = Writeprotect {
            start: dst.ptr as u64,
            len: self.len as u64,
            mode: WRITEPROTECT_MODE_WP,
        };
        ioctl(uffd, UFFDIO_WRITEPROTECT, &mut wp, "UFFDIO_WRITEPROTECT on")?;
        wp.mode = 0;
        ioctl(
            uffd,
            UFFDIO_WRITEPROTECT,
            &mut wp,
            "UFFDIO_WRITEPROTECT off",
        )?;

        dst.advise_range(0, half, libc::MADV_DONTNEED)?;
        let mut from = Map::anon(half)?;
        from.advise(libc::MADV_NOHUGEPAGE)?;
        from.touch(self.page);
        let mut moved = Transfer {
            dst: dst.ptr as u64,
            src: from.ptr as u64,
            len: half as u64,
            mode: 0,
            result: 0,
        };
        ioctl(uffd, UFFDIO_MOVE, &mut moved, "UFFDIO_MOVE")?;
        self.expect(&dst, 0, half, MOVED, "after UFFDIO_MOVE")?;
        from.unmap()?;

        let last = self.len - self.page;
        dst.advise_range(last, self.page, libc::MADV_DONTNEED)?;
        let mut poison = range_mode(&dst, last, self.page, 0);
        ioctl(uffd, UFFDIO_POISON, &mut poison, "UFFDIO_POISON")?;
        Ok(dst)
    }

    fn minor(&self, uffd: &OwnedFd) -> io::Result<Map> {
        let map = Map::new(
            self.len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            self.memfd.as_raw_fd(),
            0,
        )?;
        register(uffd, &map, MODE_MINOR)?;
        let mut cont = range_mode(&map, 0, self.len, 0);
        ioctl(uffd, UFFDIO_CONTINUE, &mut cont, "UFFDIO_CONTINUE")?;
        self.expect(&map, 0, self.len, SHARED, "after UFFDIO_CONTINUE")?;
        Ok(map)
    }
}

impl Task for Resolver {
    fn op(&mut self) -> io::Result<()> {
        let uffd = open_uffd()?;
        let dst = self.anonymous(&uffd)?;
        let shared = self.minor(&uffd)?;
        unregister(&uffd, &dst)?;
        unregister(&uffd, &shared)?;
        drop(uffd);
        dst.unmap()?;
        shared.unmap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_size_is_halves_of_pages() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        assert!(UffdIoctls::default().check(guest).is_ok());
        for size in [Bytes::kib(8), Bytes::kib(12), Bytes(20000)] {
            let u = UffdIoctls {
                size,
                ..UffdIoctls::default()
            };
            assert_eq!(u.check(guest).unwrap_err().param, "size", "{size}");
        }
    }

    /// Needs Linux 6.8 or later on the host (UFFDIO_MOVE), as the
    /// userfaultfd test needs 5.11 (UFFD_USER_MODE_ONLY).
    #[test]
    fn an_operation_resolves_and_checks_every_range() {
        let mut task = UffdIoctls::default().task(0).unwrap();
        for _ in 0..3 {
            task.op().unwrap();
        }
    }
}
