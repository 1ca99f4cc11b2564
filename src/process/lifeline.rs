//! The lifeline: no child of patchbench outlives it, however it dies.
//!
//! Each child runs in its own process group (so that a timeout kills make's
//! compilers with make). When patchbench exits normally or is interrupted,
//! [`super`]'s guards kill those groups. A SIGKILL, an OOM kill or a panic
//! that aborts runs no guard, and the groups would run on: make to the end
//! of the build, QEMU until its own deadline.
//!
//! So the first spawn forks a small watchdog process that holds one end of
//! a Unix socket pair; patchbench holds the other end, close-on-exec, and
//! nothing else does. Every child, between fork and exec (`pre_exec`),
//! sends its own pid (which is its process group id) to the watchdog, and
//! patchbench sends the negated pid once the child is reaped. When
//! patchbench dies the kernel closes its end, the watchdog reads end of
//! file, SIGKILLs every group still registered, and exits.
//!
//! Why not `PR_SET_PDEATHSIG`: it reaches only the direct child (make, not
//! the compilers make started, which share its group), and it fires when
//! the *thread* that forked the child exits, not the process: tokio's
//! blocking threads exit after being idle. A child subreaper does not help
//! either: it adopts orphans only while it lives.
//!
//! The watchdog is a fork of a multithreaded process, so from the fork on
//! it makes only async-signal-safe calls (no allocation, no locks): it
//! closes every inherited file but its socket, leaves patchbench's process
//! group (a Ctrl-C or a group kill aimed at patchbench is not aimed at it),
//! ignores SIGINT, SIGTERM and SIGHUP (a `pkill patchbench` must not take
//! the guard down before the guarded), and keeps its table in a fixed array
//! on its stack.

use std::io;
use std::os::fd::RawFd;
use std::sync::OnceLock;

/// How many children the watchdog can guard at once. patchbench runs a
/// handful (one make or QEMU, tar and xz); a registration beyond this is
/// dropped, and that child is guarded only by the in-process guards.
const CAPACITY: usize = 4096;

/// Patchbench's end of the socket pair, or the errno that prevented it.
static LIFELINE: OnceLock<Result<RawFd, i32>> = OnceLock::new();

fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// Patchbench's end of the lifeline, starting the watchdog on first use.
pub(super) fn fd() -> io::Result<RawFd> {
    match LIFELINE.get_or_init(start) {
        Ok(fd) => Ok(*fd),
        Err(errno) => Err(io::Error::from_raw_os_error(*errno)),
    }
}

fn start() -> Result<RawFd, i32> {
    let mut fds: [libc::c_int; 2] = [-1; 2];
    // SAFETY: socketpair(2) writes two descriptors into `fds`.
    let made = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if made != 0 {
        return Err(errno());
    }
    let (ours, theirs) = (fds[0], fds[1]);
    // SAFETY: the child runs only `watchdog`, which makes async-signal-safe
    // calls and never returns.
    match unsafe { libc::fork() } {
        -1 => {
            let e = errno();
            // SAFETY: closing the descriptors made above.
            unsafe {
                libc::close(ours);
                libc::close(theirs);
            }
            Err(e)
        }
        0 => unsafe { watchdog(theirs) },
        _ => {
            // SAFETY: the watchdog has its copy; ours is no longer needed.
            unsafe { libc::close(theirs) };
            Ok(ours)
        }
    }
}

/// The watchdog's whole life. See the module docs for the rules it keeps.
unsafe fn watchdog(socket: RawFd) -> ! {
    // SAFETY (whole function): plain system calls on descriptors and
    // process ids, and stack memory; no allocation, no locks.
    unsafe {
        libc::dup2(socket, 0);
        // Every other inherited descriptor: patchbench's end of the
        // lifeline (holding it would keep us alive), its pipes and logs.
        if libc::syscall(libc::SYS_close_range, 1u32, u32::MAX, 0u32) != 0 {
            for fd in 1..4096 {
                libc::close(fd);
            }
        }
        libc::setpgid(0, 0);
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
            libc::signal(signal, libc::SIG_IGN);
        }
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        libc::prctl(libc::PR_SET_NAME, c"patchbench-guard".as_ptr(), 0, 0, 0);

        let mut groups: [libc::pid_t; CAPACITY] = [0; CAPACITY];
        let mut len = 0usize;
        let mut word = [0u8; 4];
        let mut have = 0usize;
        loop {
            let n = libc::read(0, word.as_mut_ptr().add(have).cast(), word.len() - have);
            if n == 0 {
                break;
            }
            if n < 0 {
                if *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                break;
            }
            have += n as usize;
            if have < word.len() {
                continue;
            }
            have = 0;
            let value = i32::from_ne_bytes(word);
            if value > 0 {
                if len < CAPACITY {
                    groups[len] = value;
                    len += 1;
                }
            } else if let Some(i) = groups[..len].iter().position(|&g| g == -value) {
                groups[i] = groups[len - 1];
                len -= 1;
            }
        }
        for &group in &groups[..len] {
            libc::kill(-group, libc::SIGKILL);
        }
        libc::_exit(0)
    }
}

fn send(fd: RawFd, value: i32) -> io::Result<()> {
    let bytes = value.to_ne_bytes();
    // SAFETY: send(2) of a 4-byte buffer; MSG_NOSIGNAL turns a dead
    // watchdog into EPIPE rather than a SIGPIPE.
    let sent = unsafe { libc::send(fd, bytes.as_ptr().cast(), bytes.len(), libc::MSG_NOSIGNAL) };
    if sent == bytes.len() as isize {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// In a freshly forked child, before exec: register its process group
/// (its own pid: children are spawned with `process_group(0)`). Only
/// async-signal-safe calls.
pub(super) fn register_self(fd: RawFd) -> io::Result<()> {
    // SAFETY: getpid(2) cannot fail.
    let pid = unsafe { libc::getpid() };
    send(fd, pid)
}

/// The child leading group `pid` was reaped or killed: forget it, so that a
/// later process reusing the id is not killed.
pub(super) fn unregister(pid: u32) {
    if let Ok(fd) = fd() {
        // Nothing to do if the watchdog is gone: there is no one to tell.
        let _ = send(fd, -(pid as i32));
    }
}
