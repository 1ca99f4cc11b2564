//! `userfaultfd`: missing-page faults resolved from user space, as the
//! kernel's selftests/mm/uffd-stress.c does in its bounces (an anonymous
//! area registered with UFFDIO_REGISTER_MODE_MISSING, a fault handler
//! thread reading each fault message and resolving it with UFFDIO_COPY
//! from a source page, the area zapped with MADV_DONTNEED between
//! bounces; `uffd-stress anon 20 16` in run_vmtests.sh: 20 MiB, 16
//! bounces). Each task maps `size` of private anonymous memory
//! (MADV_NOHUGEPAGE), registers it with a userfaultfd of its own
//! (UFFD_USER_MODE_ONLY) and starts one handler thread; the task and its
//! handler are pinned to one CPU (task i on online CPU i mod n), so each
//! fault is a sleep, a wake-up and a switch on that CPU rather than a
//! cross-CPU wake-up whose cost depends on where the scheduler put them.
//! Each operation reads one byte of every page (a missing fault each,
//! which the handler fills with UFFDIO_COPY), checks the bytes it read
//! and frees the area with MADV_DONTNEED, so the next operation faults
//! again. Spec: `workloads/userfaultfd.yaml`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::thread::JoinHandle;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{self, Map, page_size};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;

/// The byte every page the handler copies in holds.
pub const FILL: u8 = 0x5a;

// The userfaultfd ABI (include/uapi/linux/userfaultfd.h), which the libc
// crate does not carry.
const UFFD_API: u64 = 0xaa;
const UFFD_USER_MODE_ONLY: libc::c_int = 1;
const UFFD_EVENT_PAGEFAULT: u8 = 0x12;
const UFFDIO_REGISTER_MODE_MISSING: u64 = 1;
/// _IOWR(0xAA, 0x3F, struct uffdio_api): 24 bytes.
const UFFDIO_API: libc::c_ulong = 0xc018_aa3f;
/// _IOWR(0xAA, 0x00, struct uffdio_register): 32 bytes.
pub const UFFDIO_REGISTER: libc::c_ulong = 0xc020_aa00;
/// _IOWR(0xAA, 0x03, struct uffdio_copy): 40 bytes.
pub const UFFDIO_COPY: libc::c_ulong = 0xc028_aa03;
/// sizeof(struct uffd_msg).
const MSG_SIZE: usize = 32;

#[repr(C)]
struct UffdioApi {
    api: u64,
    features: u64,
    ioctls: u64,
}

#[repr(C)]
struct UffdioRegister {
    start: u64,
    len: u64,
    mode: u64,
    ioctls: u64,
}

#[repr(C)]
struct UffdioCopy {
    dst: u64,
    src: u64,
    len: u64,
    mode: u64,
    copy: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Userfaultfd {
    pub tasks: u32,
    pub ops: u32,
    /// The registered area each operation faults in through the handler.
    pub size: Bytes,
}

impl Default for Userfaultfd {
    fn default() -> Self {
        Userfaultfd {
            tasks: 1,
            ops: 4,
            size: Bytes::mib(20),
        }
    }
}

impl Kind for Userfaultfd {
    fn describe(&self) -> String {
        format!("size={}", self.size)
    }
}

impl Bench for Userfaultfd {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_held("size", self.size, self.tasks, guest)
    }

    fn task(&self, index: usize) -> io::Result<Box<dyn Task>> {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        pin_to(index % cpus)?;
        Ok(Box::new(Faulter::new(self.size.bytes())?))
    }
}

/// Pins the calling thread (and the threads it starts) to `cpu`.
fn pin_to(cpu: usize) -> io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET stays inside it.
    let ret = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if ret != 0 {
        return Err(sys::last(&format!("sched_setaffinity to CPU {cpu}")));
    }
    Ok(())
}

/// A userfaultfd for this process's user-space faults
/// (UFFD_USER_MODE_ONLY, no privilege needed), its API handshake made
/// asking for `features`; `what` names the handshake in an error.
pub fn open(features: u64, what: &str) -> io::Result<OwnedFd> {
    // SAFETY: a system call with no memory arguments.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_userfaultfd,
            libc::O_CLOEXEC | libc::O_NONBLOCK | UFFD_USER_MODE_ONLY,
        )
    };
    if fd < 0 {
        return Err(sys::last("userfaultfd (a kernel with USERFAULTFD)"));
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let uffd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
    let mut api = UffdioApi {
        api: UFFD_API,
        features,
        ioctls: 0,
    };
    ioctl(&uffd, UFFDIO_API, &mut api, what)?;
    Ok(uffd)
}

/// One userfaultfd ioctl on `arg`, the struct `request` takes.
pub fn ioctl<T>(fd: &OwnedFd, request: libc::c_ulong, arg: &mut T, what: &str) -> io::Result<()> {
    // SAFETY: `arg` is the struct `request` reads and writes.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), request, arg as *mut T) };
    if ret != 0 {
        return Err(sys::last(what));
    }
    Ok(())
}

struct Faulter {
    map: Map,
    /// Written to end the handler; closed after it is joined.
    stop: OwnedFd,
    handler: Option<JoinHandle<io::Result<()>>>,
}

impl Faulter {
    fn new(len: usize) -> io::Result<Faulter> {
        let map = Map::anon(len)?;
        map.advise(libc::MADV_NOHUGEPAGE)?;
        let uffd = open(0, "UFFDIO_API")?;
        let mut register = UffdioRegister {
            start: map.ptr as u64,
            len: len as u64,
            mode: UFFDIO_REGISTER_MODE_MISSING,
            ioctls: 0,
        };
        ioctl(&uffd, UFFDIO_REGISTER, &mut register, "UFFDIO_REGISTER")?;
        let (stop_read, stop) = sys::pipe()?;
        let handler = std::thread::Builder::new()
            .name("uffd-handler".into())
            .spawn(move || handle(&uffd, &stop_read))?;
        Ok(Faulter {
            map,
            stop,
            handler: Some(handler),
        })
    }
}

/// The handler thread: every missing fault on the area filled with a
/// page of [`FILL`], until `stop` is readable.
fn handle(uffd: &OwnedFd, stop: &OwnedFd) -> io::Result<()> {
    let page = page_size();
    let source = vec![FILL; page];
    let mut msgs = [0u8; MSG_SIZE * 16];
    loop {
        let mut fds = [
            libc::pollfd {
                fd: uffd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: stop.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two pollfds.
        let ret = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if ret < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(sys::last("poll"));
        }
        if fds[1].revents != 0 {
            return Ok(());
        }
        // SAFETY: reads into the buffer, at most its length.
        let n = unsafe { libc::read(uffd.as_raw_fd(), msgs.as_mut_ptr().cast(), msgs.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(sys::last("reading the userfaultfd"));
        }
        for msg in msgs[..n as usize].chunks_exact(MSG_SIZE) {
            if msg[0] != UFFD_EVENT_PAGEFAULT {
                return Err(io::Error::other(format!("unexpected event {:#x}", msg[0])));
            }
            let address = u64::from_ne_bytes(msg[16..24].try_into().expect("8 bytes"));
            let mut copy = UffdioCopy {
                dst: address & !(page as u64 - 1),
                src: source.as_ptr() as u64,
                len: page as u64,
                mode: 0,
                copy: 0,
            };
            if let Err(e) = ioctl(uffd, UFFDIO_COPY, &mut copy, "UFFDIO_COPY") {
                // Another message for a page already copied in.
                if e.raw_os_error() != Some(libc::EEXIST) {
                    return Err(e);
                }
            }
        }
    }
}

impl Task for Faulter {
    fn op(&mut self) -> io::Result<()> {
        let page = page_size();
        let sum = self.map.read(page);
        let want = u64::from(FILL) * (self.map.len / page) as u64;
        if sum != want {
            return Err(io::Error::other(format!(
                "the area's pages sum to {sum}, not {want}: the handler did not fill them"
            )));
        }
        self.map.advise(libc::MADV_DONTNEED)
    }
}

impl Drop for Faulter {
    fn drop(&mut self) {
        // SAFETY: one byte to the pipe the handler polls.
        unsafe { libc::write(self.stop.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        if let Some(handler) = self.handler.take() {
            let _ = handler.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// UFFD_USER_MODE_ONLY needs no privilege (Linux 5.11 and later).
    #[test]
    fn every_page_is_filled_by_the_handler() {
        let mut faulter = Faulter::new(1 << 20).unwrap();
        for _ in 0..3 {
            faulter.op().unwrap();
        }
    }
}
