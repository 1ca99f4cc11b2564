//! Thin, safe wrappers around the raw system calls the agent needs.
//!
//! This is the only module with `unsafe`. Each wrapper turns a failing call
//! into an `io::Error` from `errno`; callers add the path or step.

use std::ffi::CString;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn cstring(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// `mount(2)`, with the file system's option string (`data`) if any.
pub fn mount(
    source: &str,
    target: &Path,
    fstype: &str,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> io::Result<()> {
    let source = CString::new(source)?;
    let fstype = CString::new(fstype)?;
    let target = cstring(target)?;
    let data = data.map(CString::new).transpose()?;
    let data_ptr = data
        .as_ref()
        .map_or(std::ptr::null(), |d| d.as_ptr().cast::<libc::c_void>());
    // SAFETY: all pointers are valid NUL-terminated strings or NULL.
    check(unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            flags,
            data_ptr,
        )
    })
    .map(drop)
}

/// `umount2(2)` with `MNT_DETACH`: the mount and every mount under it
/// leave the tree now, and go when nothing uses them.
pub fn umount_detach(target: &Path) -> io::Result<()> {
    let target = cstring(target)?;
    // SAFETY: a valid NUL-terminated path.
    check(unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) }).map(drop)
}

/// Makes `cmd`'s child join a cgroup (by writing `0` to its open
/// `cgroup.procs`, if given), then `chroot(root)` and `chdir(cwd)` (a path
/// inside the new root) before it executes.
pub fn confine(
    cmd: &mut std::process::Command,
    cgroup_procs: Option<OwnedFd>,
    root: &Path,
    cwd: &Path,
) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let root = cstring(root)?;
    let cwd = cstring(cwd)?;
    // SAFETY: the closure runs between fork and exec and calls only
    // async-signal-safe functions (write, chroot, chdir) on data prepared
    // before the fork; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(fd) = &cgroup_procs {
                let zero = b"0";
                if libc::write(fd.as_raw_fd(), zero.as_ptr().cast(), zero.len()) != 1 {
                    return Err(io::Error::last_os_error());
                }
            }
            check(libc::chroot(root.as_ptr()))?;
            check(libc::chdir(cwd.as_ptr()))?;
            Ok(())
        });
    }
    Ok(())
}

/// `swapon(2)` with default priority and no flags.
pub fn swapon(device: &Path) -> io::Result<()> {
    let device = cstring(device)?;
    // SAFETY: a valid NUL-terminated path.
    check(unsafe { libc::swapon(device.as_ptr(), 0) }).map(drop)
}

/// `swapon(2)` with an explicit priority (higher is used first).
pub fn swapon_with_priority(device: &Path, priority: u16) -> io::Result<()> {
    let device = cstring(device)?;
    // <linux/swap.h>; libc does not export them.
    const SWAP_FLAG_PREFER: libc::c_int = 0x8000;
    const SWAP_FLAG_PRIO_MASK: libc::c_int = 0x7fff;
    let flags = SWAP_FLAG_PREFER | (libc::c_int::from(priority) & SWAP_FLAG_PRIO_MASK);
    // SAFETY: a valid NUL-terminated path.
    check(unsafe { libc::swapon(device.as_ptr(), flags) }).map(drop)
}

/// User and system CPU time of every waited-for child, in ns
/// (`getrusage(RUSAGE_CHILDREN)`).
pub fn children_cpu_ns() -> io::Result<(u64, u64)> {
    // SAFETY: rusage is plain data; getrusage fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage.
    check(unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) })?;
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    Ok((ns(usage.ru_utime), ns(usage.ru_stime)))
}

/// User and system CPU time of the calling thread, in ns
/// (`getrusage(RUSAGE_THREAD)`).
pub fn thread_cpu_ns() -> io::Result<(u64, u64)> {
    // SAFETY: rusage is plain data; getrusage fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage.
    check(unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) })?;
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    Ok((ns(usage.ru_utime), ns(usage.ru_stime)))
}

/// The CPU time process `pid` (every thread, a kernel thread included) has
/// run, in ns: its `clock_getcpuclockid()` clock, the scheduler's exact
/// runtime. `None` when the process is gone.
pub fn other_process_cpu_ns(pid: libc::pid_t) -> io::Result<Option<u64>> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: a valid pointer to a clockid_t.
    match unsafe { libc::clock_getcpuclockid(pid, &mut clock) } {
        0 => {}
        libc::ESRCH => return Ok(None),
        e => return Err(io::Error::from_raw_os_error(e)),
    }
    match clock_ns(clock) {
        Ok(ns) => Ok(Some(ns)),
        // It exited between the two calls.
        Err(e)
            if e.raw_os_error() == Some(libc::EINVAL) || e.raw_os_error() == Some(libc::ESRCH) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The kernel's clock tick for `/proc/stat` and friends (`USER_HZ`).
pub fn clock_ticks_per_second() -> u64 {
    // SAFETY: no pointers involved.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(ticks).ok().filter(|&t| t > 0).unwrap_or(100)
}

/// `kill(pid, SIGKILL)`.
pub fn kill(pid: libc::pid_t) -> io::Result<()> {
    // SAFETY: no pointers involved.
    check(unsafe { libc::kill(pid, libc::SIGKILL) }).map(drop)
}

/// `waitpid(pid, WNOHANG)`: `None` while the child runs.
pub fn try_wait(pid: libc::pid_t) -> io::Result<Option<Exit>> {
    let mut status = 0;
    // SAFETY: a valid pointer to an int.
    let ret = check(unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) })?;
    if ret == 0 {
        return Ok(None);
    }
    Ok(Some(exit_of(status)))
}

fn exit_of(status: libc::c_int) -> Exit {
    if libc::WIFSIGNALED(status) {
        Exit::Signal(libc::WTERMSIG(status))
    } else {
        Exit::Code(libc::WEXITSTATUS(status))
    }
}

/// `sync(2)`.
pub fn sync() {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::sync() }
}

/// `reboot(RB_AUTOBOOT)`; returns only if the kernel refused.
pub fn reboot() -> io::Error {
    // SAFETY: no pointers involved.
    unsafe { libc::reboot(libc::RB_AUTOBOOT) };
    io::Error::last_os_error()
}

/// Sleeps until a signal arrives, forever.
pub fn pause_forever() -> ! {
    loop {
        // SAFETY: no arguments.
        unsafe { libc::pause() };
    }
}

/// Ends the calling process at once: no destructors, no stdio flushing.
/// Forked workers leave through here so they never run the parent's cleanup.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: `_exit` is always safe to call.
    unsafe { libc::_exit(code) }
}

/// This process's id.
pub fn getpid() -> u32 {
    // SAFETY: no arguments, cannot fail.
    let pid = unsafe { libc::getpid() };
    pid as u32
}

/// `uname(2)`: (release, version).
pub fn uname() -> io::Result<(String, String)> {
    // SAFETY: utsname is plain data; uname fills it.
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a utsname.
    check(unsafe { libc::uname(&mut uts) })?;
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Ok((field(&uts.release), field(&uts.version)))
}

/// `clock_gettime` in nanoseconds.
fn clock_ns(clock: libc::clockid_t) -> io::Result<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid pointer to a timespec.
    check(unsafe { libc::clock_gettime(clock, &mut ts) })?;
    Ok(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// CPU time of the whole calling process (`CLOCK_PROCESS_CPUTIME_ID`).
pub fn process_cpu_ns() -> io::Result<u64> {
    clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// `CLOCK_BOOTTIME`: time since the kernel's clock started, suspends
/// included.
pub fn boottime_ns() -> io::Result<u64> {
    clock_ns(libc::CLOCK_BOOTTIME)
}

/// `CLOCK_MONOTONIC`, comparable between processes.
pub fn monotonic_ns() -> io::Result<u64> {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// The first whole second of `now_ns`'s clock at least [`SETTLE_NS`]
/// after it, in nanoseconds.
fn next_whole_second(now_ns: u64) -> u64 {
    ((now_ns + SETTLE_NS) / 1_000_000_000 + 1) * 1_000_000_000
}

/// The shortest idle time [`sleep_to_next_second`] leaves: a quarter
/// of a second, 250 ticks at HZ=1000 and 25 at HZ=100.
pub const SETTLE_NS: u64 = 250_000_000;

/// Sleeps until `CLOCK_MONOTONIC` reaches a whole second at least
/// [`SETTLE_NS`] away: every timer the kernel rounds to a whole second
/// (`round_jiffies`, such as `vmstat_update`) and the tick then fall at
/// the same offsets from the return, call after call, and the CPUs have
/// been idle long enough for RCU to end the grace periods they began.
pub fn sleep_to_next_second() -> io::Result<()> {
    let next = next_whole_second(monotonic_ns()?);
    let ts = libc::timespec {
        tv_sec: (next / 1_000_000_000) as libc::time_t,
        tv_nsec: 0,
    };
    loop {
        // SAFETY: a valid pointer to a timespec; no remainder is asked for.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        match rc {
            0 => return Ok(()),
            libc::EINTR => continue,
            errno => return Err(io::Error::from_raw_os_error(errno)),
        }
    }
}

/// Pins the calling process to one CPU.
pub fn pin_to_cpu(cpu: u32) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    if cpu as usize >= max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} is beyond cpu_set_t ({max} CPUs)"),
        ));
    }
    // SAFETY: cpu is in range of the set.
    unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    set_affinity(&set)
}

/// The CPUs the calling thread may run on.
fn affinity() -> io::Result<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is plain data.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a cpu_set_t of the given size.
    check(unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) })?;
    Ok(set)
}

/// Lets the calling thread run on the CPUs of `set` only.
fn set_affinity(set: &libc::cpu_set_t) -> io::Result<()> {
    // SAFETY: a valid pointer to a cpu_set_t of the given size.
    check(unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(set), set) }).map(drop)
}

/// Runs the calling thread on each of `cpus` in turn, then gives it back
/// the CPUs it had. Each hop is a context switch on that CPU into this
/// process's mm: a CPU that has been idle since a process exited there
/// still holds the dead process's mm as its lazy-TLB mm, and lets it go
/// (the kernel frees it) only when it switches to another mm.
pub fn run_on_each(cpus: &[u32]) -> io::Result<()> {
    let saved = affinity()?;
    let hops = cpus.iter().try_for_each(|&cpu| pin_to_cpu(cpu));
    let restored = set_affinity(&saved);
    hops.and(restored)
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no pointer arguments.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 { size as usize } else { 4096 }
}

/// A private anonymous mapping, unmapped on drop unless [`Mapping::unmap`]
/// was called.
pub struct Mapping {
    ptr: *mut libc::c_void,
    len: usize,
}

impl Mapping {
    /// `mmap(PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS)` of `len` bytes.
    pub fn anonymous(len: usize) -> io::Result<Mapping> {
        // SAFETY: a fresh anonymous mapping aliases nothing.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping { ptr, len })
    }

    /// `madvise(2)` over the whole mapping.
    pub fn advise(&self, advice: libc::c_int) -> io::Result<()> {
        // SAFETY: the range is exactly our own mapping.
        check(unsafe { libc::madvise(self.ptr, self.len, advice) }).map(drop)
    }

    /// `madvise(2)` over `pages` pages from page `first`.
    pub fn advise_pages(&self, first: usize, pages: usize, advice: libc::c_int) -> io::Result<()> {
        let page = page_size();
        assert!(
            (first + pages) * page <= self.len,
            "pages {first}+{pages} are past the mapping"
        );
        // SAFETY: the range lies inside our own mapping (checked above).
        check(unsafe { libc::madvise(self.ptr.add(first * page), pages * page, advice) }).map(drop)
    }

    /// The mapping as machine words, for writing.
    pub fn words_mut(&mut self) -> &mut [u64] {
        // SAFETY: mmap returns page-aligned memory we own for `len` bytes, and
        // `&mut self` makes this the only live view of it.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<u64>(), self.len / 8) }
    }

    /// The mapping as machine words, for reading. A fresh view is taken after
    /// each `madvise`, which the compiler must assume wrote through `ptr`.
    pub fn words(&self) -> &[u64] {
        // SAFETY: as for `words_mut`; shared borrow, no writers.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u64>(), self.len / 8) }
    }

    /// `munmap(2)`, reporting its error.
    pub fn unmap(self) -> io::Result<()> {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: our own mapping, not used after this.
        check(unsafe { libc::munmap(this.ptr, this.len) }).map(drop)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our own mapping, not used after this.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

/// `pipe2(O_CLOEXEC)`: (read end, write end).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: a valid pointer to two ints.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: pipe2 just returned these fds, and nothing else owns them.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Which side of a `fork` we are on.
pub enum Forked {
    Child,
    Parent { pid: libc::pid_t },
}

/// `fork(2)`. The agent is single-threaded, so the child may allocate; it
/// must leave through [`exit_now`].
pub fn fork() -> io::Result<Forked> {
    // SAFETY: the agent has one thread, so the child's copy of the address
    // space is consistent.
    match check(unsafe { libc::fork() })? {
        0 => Ok(Forked::Child),
        pid => Ok(Forked::Parent { pid }),
    }
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

/// `waitpid(2)` for one child, retrying on `EINTR`.
pub fn wait_for(pid: libc::pid_t) -> io::Result<Exit> {
    let mut status = 0;
    loop {
        // SAFETY: a valid pointer to an int.
        match check(unsafe { libc::waitpid(pid, &mut status, 0) }) {
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(exit_of(status))
}

/// The conventional name of a signal, such as `SIGKILL`.
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        _ => return format!("signal {signal}"),
    };
    name.to_string()
}

/// Starts `argv[0]` with only `env` (`NAME=value` words), its stdin
/// `/dev/null` and its stdout and stderr `log`, chrooted into `root` if
/// given (`argv[0]` and `cwd` are then paths inside it), in `cwd`: `fork`,
/// then in the child `dup2`, `chroot`, `chdir` and `execve` on memory
/// prepared before the fork, nothing else. std's `Command` cannot do it
/// on the mm library's kernel: with a `pre_exec` hook (where it forks
/// itself rather than use posix_spawn) it fails with ENOSYS before running
/// anything on a kernel without CONFIG_NET. A step that fails in the child
/// ends it with status 127 (the shell's "cannot execute").
pub fn spawn_in(
    root: Option<&Path>,
    cwd: &Path,
    argv: &[String],
    env: &[String],
    log: &std::fs::File,
) -> io::Result<libc::pid_t> {
    use std::os::fd::AsRawFd;
    let words = |list: &[String]| -> io::Result<Vec<CString>> {
        list.iter()
            .map(|w| {
                CString::new(w.as_bytes()).map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "an argument contains a NUL byte",
                    )
                })
            })
            .collect()
    };
    let root = root.map(cstring).transpose()?;
    let cwd = cstring(cwd)?;
    let (argv, env) = (words(argv)?, words(env)?);
    let program = argv
        .first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no program"))?;
    let argv_ptrs: Vec<*const libc::c_char> = argv
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let env_ptrs: Vec<*const libc::c_char> = env
        .iter()
        .map(|e| e.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let null = std::fs::File::open("/dev/null")?;
    let (null_fd, log_fd) = (null.as_raw_fd(), log.as_raw_fd());
    // SAFETY: the agent has one thread; the child makes only
    // async-signal-safe calls on memory prepared above, and leaves by
    // execve or _exit.
    match check(unsafe { libc::fork() })? {
        0 => unsafe {
            if libc::dup2(null_fd, 0) == -1
                || libc::dup2(log_fd, 1) == -1
                || libc::dup2(log_fd, 2) == -1
                || root
                    .as_ref()
                    .is_some_and(|r| libc::chroot(r.as_ptr()) == -1)
                || libc::chdir(cwd.as_ptr()) == -1
            {
                libc::_exit(127);
            }
            libc::execve(program.as_ptr(), argv_ptrs.as_ptr(), env_ptrs.as_ptr());
            libc::_exit(127)
        },
        pid => Ok(pid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_starts_on_a_whole_second_at_least_a_quarter_second_away() {
        assert_eq!(next_whole_second(0), 1_000_000_000);
        assert_eq!(next_whole_second(700_000_000), 1_000_000_000);
        assert_eq!(next_whole_second(750_000_000), 2_000_000_000);
        assert_eq!(next_whole_second(1_000_000_000), 2_000_000_000);
        assert_eq!(next_whole_second(1_900_000_000), 3_000_000_000);
    }

    #[test]
    fn signal_names_are_conventional() {
        assert_eq!(signal_name(libc::SIGKILL), "SIGKILL");
        assert_eq!(signal_name(libc::SIGSEGV), "SIGSEGV");
        assert_eq!(signal_name(64), "signal 64");
    }

    fn cpus_allowed() -> Vec<usize> {
        let set = affinity().unwrap();
        let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: every index is in range of the set.
        (0..max)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect()
    }

    /// The thread visits the CPUs and gets its own CPUs back, even when a
    /// hop fails.
    #[test]
    fn run_on_each_gives_the_cpus_back() {
        let before = cpus_allowed();
        let cpus: Vec<u32> = before.iter().take(2).map(|&c| c as u32).collect();
        run_on_each(&cpus).unwrap();
        assert_eq!(cpus_allowed(), before);
        let err = run_on_each(&[cpus[0], 100_000]).unwrap_err();
        assert!(err.to_string().contains("CPU 100000"), "{err}");
        assert_eq!(cpus_allowed(), before);
    }

    #[test]
    fn mapping_round_trips_words() {
        let mut map = Mapping::anonymous(2 * page_size()).unwrap();
        map.words_mut()[5] = 42;
        assert_eq!(map.words()[5], 42);
        map.unmap().unwrap();
    }

    #[test]
    fn children_report_codes_and_signals() {
        match fork().unwrap() {
            Forked::Child => exit_now(7),
            Forked::Parent { pid } => assert_eq!(wait_for(pid).unwrap(), Exit::Code(7)),
        }
        match fork().unwrap() {
            Forked::Child => pause_forever(),
            Forked::Parent { pid } => {
                assert_eq!(try_wait(pid).unwrap(), None);
                kill(pid).unwrap();
                assert_eq!(wait_for(pid).unwrap(), Exit::Signal(libc::SIGKILL));
            }
        }
        let (user, sys) = children_cpu_ns().unwrap();
        assert!(user < u64::MAX && sys < u64::MAX);
    }
}
