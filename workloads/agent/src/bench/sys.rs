//! Thin, checked wrappers over the system calls the benchmarks make.

use std::ffi::CString;
use std::io;
use std::path::Path;

/// The last OS error, with what was being done.
pub fn last(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

fn check(ret: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if ret < 0 { Err(last(what)) } else { Ok(ret) }
}

pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).unwrap_or(4096)
}

/// A mapping, unmapped when dropped.
pub struct Map {
    pub ptr: *mut u8,
    pub len: usize,
}

impl Map {
    /// `mmap(NULL, len, prot, flags, fd, offset)`.
    pub fn new(
        len: usize,
        prot: libc::c_int,
        flags: libc::c_int,
        fd: libc::c_int,
        offset: i64,
    ) -> io::Result<Map> {
        // SAFETY: a fresh mapping at an address the kernel picks.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, fd, offset) };
        if ptr == libc::MAP_FAILED {
            return Err(last(&format!("mmap of {len} bytes")));
        }
        Ok(Map {
            ptr: ptr.cast(),
            len,
        })
    }

    /// Private anonymous read-write memory.
    pub fn anon(len: usize) -> io::Result<Map> {
        Map::new(
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    }

    /// Anonymous memory aligned to `align` (a THP's size), so that a
    /// huge page can back each aligned stretch of it.
    pub fn anon_aligned(len: usize, align: usize) -> io::Result<Map> {
        let mut outer = Map::anon(len + align)?;
        let start = (outer.ptr as usize).next_multiple_of(align);
        let head = start - outer.ptr as usize;
        let tail = align - head;
        // SAFETY: both stretches are inside `outer`, which is then
        // forgotten: the middle is what is kept.
        unsafe {
            if head > 0 {
                libc::munmap(outer.ptr.cast(), head);
            }
            if tail > 0 {
                libc::munmap((start + len) as *mut libc::c_void, tail);
            }
        }
        outer.len = 0;
        Ok(Map {
            ptr: start as *mut u8,
            len,
        })
    }

    pub fn advise(&self, advice: libc::c_int) -> io::Result<()> {
        self.advise_range(0, self.len, advice)
    }

    pub fn advise_range(&self, start: usize, len: usize, advice: libc::c_int) -> io::Result<()> {
        // SAFETY: a range inside this mapping.
        let ret = unsafe { libc::madvise(self.ptr.add(start).cast(), len, advice) };
        check(ret, &format!("madvise({advice}) of {len} bytes")).map(drop)
    }

    pub fn protect(&self, start: usize, len: usize, prot: libc::c_int) -> io::Result<()> {
        // SAFETY: a range inside this mapping.
        let ret = unsafe { libc::mprotect(self.ptr.add(start).cast(), len, prot) };
        check(ret, &format!("mprotect of {len} bytes")).map(drop)
    }

    /// Writes one byte in every `step` bytes: a write fault per page.
    pub fn touch(&mut self, step: usize) {
        let mut off = 0;
        while off < self.len {
            // SAFETY: inside the mapping, which is writable.
            unsafe { self.ptr.add(off).write_volatile(1) };
            off += step.max(1);
        }
    }

    /// Reads one byte in every `step` bytes: a read fault per page.
    pub fn read(&self, step: usize) -> u64 {
        let mut sum = 0u64;
        let mut off = 0;
        while off < self.len {
            // SAFETY: inside the mapping, which is readable.
            sum += u64::from(unsafe { self.ptr.add(off).read_volatile() });
            off += step.max(1);
        }
        sum
    }

    /// Unmaps it now, reporting a failure (dropping ignores one).
    pub fn unmap(mut self) -> io::Result<()> {
        let (ptr, len) = (self.ptr, self.len);
        self.len = 0;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: the whole mapping, which nothing uses after this.
        check(unsafe { libc::munmap(ptr.cast(), len) }, "munmap").map(drop)
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: the whole mapping, which nothing uses after this.
            unsafe { libc::munmap(self.ptr.cast(), self.len) };
        }
    }
}

/// Writes a sysfs, procfs or cgroup file, which must exist: opened
/// without O_CREAT, so a file this kernel lacks reads as missing
/// (sysfs answers O_CREAT of a missing file with EACCES, "Permission
/// denied", which misleads).
pub fn write_file(path: impl AsRef<Path>, value: &str) -> io::Result<()> {
    use std::io::Write;
    let path = path.as_ref();
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut f| f.write_all(value.as_bytes()))
        .map_err(|e| {
            let missing = if e.kind() == io::ErrorKind::NotFound {
                ", which this kernel does not have"
            } else {
                ""
            };
            io::Error::new(
                e.kind(),
                format!("writing {value:?} to {}: {e}{missing}", path.display()),
            )
        })
}

/// Tunable files' values as read once, to be written back later (a
/// choice file's bracketed choice, [`crate::sysfs::setting`]).
pub struct Saved(Vec<(String, String)>);

impl Saved {
    pub fn read(paths: impl IntoIterator<Item = String>) -> io::Result<Saved> {
        paths
            .into_iter()
            .map(|path| {
                let value = crate::sysfs::setting(&read_file(&path)?);
                Ok((path, value))
            })
            .collect::<io::Result<Vec<_>>>()
            .map(Saved)
    }

    /// Writes each file's saved value back.
    pub fn restore(&self) -> io::Result<()> {
        self.0
            .iter()
            .try_for_each(|(path, value)| write_file(path, value))
    }
}

/// Reads a sysfs, procfs or cgroup file, trimmed.
pub fn read_file(path: impl AsRef<Path>) -> io::Result<String> {
    let path = path.as_ref();
    std::fs::read_to_string(path)
        .map(|t| t.trim().to_string())
        .map_err(|e| io::Error::new(e.kind(), format!("reading {}: {e}", path.display())))
}

/// Mounts `fstype` from `source` on `target` (created if missing).
pub fn mount(source: &str, target: &str, fstype: &str, data: Option<&str>) -> io::Result<()> {
    mount_flags(source, target, fstype, 0, data)
}

/// [`mount`] with the `MS_*` `flags`.
pub fn mount_flags(
    source: &str,
    target: &str,
    fstype: &str,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> io::Result<()> {
    std::fs::create_dir_all(target)?;
    let c = |s: &str| CString::new(s).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e));
    let (source_c, target_c, fstype_c) = (c(source)?, c(target)?, c(fstype)?);
    let data_c = data.map(c).transpose()?;
    // SAFETY: NUL-terminated strings that outlive the call.
    let ret = unsafe {
        libc::mount(
            source_c.as_ptr(),
            target_c.as_ptr(),
            fstype_c.as_ptr(),
            flags,
            data_c
                .as_ref()
                .map_or(std::ptr::null(), |d| d.as_ptr().cast()),
        )
    };
    check(ret, &format!("mounting {fstype} {source} on {target}")).map(drop)
}

/// `fork()`, with the child running `child` and leaving with `_exit`
/// (its status: 0, or 1 on an error); the parent gets the child's PID.
pub fn fork_child(child: impl FnOnce() -> io::Result<()>) -> io::Result<libc::pid_t> {
    // SAFETY: the child only runs `child` and then `_exit`s.
    match unsafe { libc::fork() } {
        -1 => Err(last("fork")),
        0 => {
            let code = i32::from(child().is_err());
            // SAFETY: leaves the child at once.
            unsafe { libc::_exit(code) }
        }
        pid => Ok(pid),
    }
}

/// Waits for `pid` (again when a signal interrupts the wait) and
/// returns its wait status.
pub fn wait_status(pid: libc::pid_t) -> io::Result<libc::c_int> {
    let mut status = 0;
    loop {
        // SAFETY: a PID this process forked.
        if unsafe { libc::waitpid(pid, &mut status, 0) } == pid {
            return Ok(status);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(last("waitpid"));
        }
    }
}

/// Waits for `pid`; an error unless it exited with status 0.
pub fn wait_ok(pid: libc::pid_t) -> io::Result<()> {
    let status = wait_status(pid)?;
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "child {pid} ended with status {status:#x}"
        )))
    }
}

/// An anonymous shmem file (memfd_create(2), close-on-exec) named
/// `name` in /proc/self/fd.
pub fn memfd(name: &std::ffi::CStr) -> io::Result<std::fs::File> {
    // SAFETY: a NUL-terminated name; the descriptor is owned below.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(last("memfd_create"));
    }
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// A pipe (close-on-exec): its read end, then its write end.
pub fn pipe() -> io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: room for the two descriptors.
    check(
        unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) },
        "pipe2",
    )?;
    // SAFETY: fresh descriptors nothing else owns.
    Ok(unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    })
}

/// Pages of `map` in memory (mincore(2)).
pub fn resident_pages(map: &Map) -> io::Result<usize> {
    let mut vec = vec![0u8; map.len.div_ceil(page_size())];
    // SAFETY: the whole mapping, one byte per page in `vec`.
    let ret = unsafe { libc::mincore(map.ptr.cast(), map.len, vec.as_mut_ptr()) };
    if ret != 0 {
        return Err(last("mincore"));
    }
    Ok(vec.iter().filter(|b| **b & 1 != 0).count())
}

/// Creates the file `path` (it must not exist), read-write for its
/// owner, and unlinks it at once, as will-it-scale's mkstemp and
/// unlink do: it lives as long as the descriptor.
pub fn scratch_file(path: &str) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("creating {path}: {e}")))?;
    std::fs::remove_file(path)?;
    Ok(file)
}

/// `posix_fadvise(2)` over the whole of `file`; `what` names the
/// advice in an error. It returns its error rather than setting errno.
pub fn fadvise(file: &std::fs::File, advice: libc::c_int, what: &str) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a descriptor the caller owns.
    let ret = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, advice) };
    if ret != 0 {
        let e = io::Error::from_raw_os_error(ret);
        return Err(io::Error::new(
            e.kind(),
            format!("posix_fadvise({what}): {e}"),
        ));
    }
    Ok(())
}

/// Reads a sysfs or procfs file holding one number.
pub fn read_u64(path: impl AsRef<Path>) -> io::Result<u64> {
    let path = path.as_ref();
    let text = read_file(path)?;
    text.parse().map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} holds {text:?}, not a number", path.display()),
        )
    })
}

impl Map {
    /// Frees every other page of `page` bytes (MADV_DONTNEED on the
    /// odd ones), leaving the even ones resident: once the whole
    /// mapping was faulted in, no two free pages it leaves are buddies,
    /// so none merges into a larger free block.
    pub fn free_alternate_pages(&self, page: usize) -> io::Result<()> {
        let mut off = page;
        while off + page <= self.len {
            self.advise_range(off, page, libc::MADV_DONTNEED)?;
            off += 2 * page;
        }
        Ok(())
    }
}
// Shared by the page cache, memcg and swap benchmarks: a file system
// mounted once per boot (on a RAM disk for a block file system), the
// task's own cgroup, and page contents that swap must keep.

/// Whether something is mounted on `target` (`/proc/self/mounts`).
pub fn mounted(target: &str) -> io::Result<bool> {
    let mounts = read_file("/proc/self/mounts")?;
    Ok(mounts
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(target)))
}

/// Mounts `fstype` from `source` on `target` (created if missing) with
/// the `MS_*` `flags`, unless something is mounted there already: the
/// harness prepares once per condition, and a boot's controls are
/// conditions of the same kind.
pub fn mount_once(
    source: &str,
    target: &str,
    fstype: &str,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> io::Result<()> {
    if mounted(target)? {
        return Ok(());
    }
    mount_flags(source, target, fstype, flags, data)
}

/// Makes an ext2 file system (busybox's `mke2fs`, 4 KiB blocks, none
/// reserved) on the RAM disk `device` and mounts it on `target` with
/// `noatime` (reads dirty no inode), unless `target` is mounted
/// already. The RAM disk comes from the campaign's kernel command line
/// (`brd.rd_nr=1 brd.rd_size=<KiB>`): it must hold `need` bytes, and
/// must not be the swap device of `swap: ram`
/// ([`crate::RAM_SWAP_DEVICE`]).
pub fn ext2_on_ram_disk(device: &str, target: &str, need: u64) -> io::Result<()> {
    if mounted(target)? {
        return Ok(());
    }
    let cmdline = "the campaign's kernel.cmdline needs `brd.rd_nr=1 brd.rd_size=<KiB>`";
    if !Path::new(device).exists() {
        return Err(io::Error::other(format!(
            "{device} is missing: {cmdline} (a kernel with BLK_DEV_RAM)"
        )));
    }
    let swaps = read_file("/proc/swaps")?;
    if swaps
        .lines()
        .any(|l| l.split_whitespace().next() == Some(device))
    {
        return Err(io::Error::other(format!(
            "{device} is a swap device in this boot (a workload with swap: ram), not free for a file system"
        )));
    }
    let name = device.trim_start_matches("/dev/");
    let sectors = read_file(format!("/sys/block/{name}/size"))?;
    let bytes = sectors
        .parse::<u64>()
        .map_err(|e| io::Error::other(format!("/sys/block/{name}/size reads {sectors:?}: {e}")))?
        * 512;
    if bytes < need {
        return Err(io::Error::other(format!(
            "{device} holds {bytes} bytes, this benchmark needs {need}: {cmdline} with a larger rd_size"
        )));
    }
    let out = std::process::Command::new("/bin/busybox")
        .args(["mke2fs", "-F", "-b", "4096", "-m", "0", device])
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("running busybox mke2fs: {e}")))?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "busybox mke2fs {device}: {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    mount_once(device, target, "ext2", libc::MS_NOATIME, None)
}

/// The cgroup v2 directory this process is in: `/proc/self/cgroup`'s
/// `0::` line, under `/sys/fs/cgroup`.
pub fn own_cgroup() -> io::Result<std::path::PathBuf> {
    let text = read_file("/proc/self/cgroup")?;
    let path = text
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or_else(|| io::Error::other(format!("/proc/self/cgroup has no 0:: line: {text:?}")))?;
    Ok(Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/')))
}

/// The word [`stamp`] writes at the start of page `i`: distinct per
/// page, and never a page of one repeated word (which zram and zswap
/// store without compressing, and 6.12's swap not at all).
pub fn stamp_word(seed: u64, i: usize) -> u64 {
    (seed ^ 0x9e37_79b9_7f4a_7c15).wrapping_mul(i as u64 + 1) | 1
}

/// Writes [`stamp_word`] at the start of every `page` of `map`: a
/// write fault per page the first time, the rest of each page zero.
pub fn stamp(map: &mut Map, page: usize, seed: u64) {
    for i in 0..map.len / page.max(1) {
        // SAFETY: inside the mapping, which is writable; the page
        // size keeps the word aligned.
        unsafe {
            map.ptr
                .add(i * page)
                .cast::<u64>()
                .write_volatile(stamp_word(seed, i))
        };
    }
}

/// Reads back every page's [`stamp`]: an error naming the first page
/// that does not hold its word.
pub fn check_stamps(map: &Map, page: usize, seed: u64) -> io::Result<()> {
    for i in 0..map.len / page.max(1) {
        // SAFETY: inside the mapping, which is readable.
        let got = unsafe { map.ptr.add(i * page).cast::<u64>().read_volatile() };
        let want = stamp_word(seed, i);
        if got != want {
            return Err(io::Error::other(format!(
                "page {i} reads {got:#x}, not {want:#x}"
            )));
        }
    }
    Ok(())
}

/// Reads with `read` every `every` until `done` holds of what it read, or
/// `limit` has passed: `Ok(Err(last))` then, with the last value read, for
/// the caller's error. A failed read is an error at once.
pub fn poll<T>(
    mut read: impl FnMut() -> io::Result<T>,
    done: impl Fn(&T) -> bool,
    limit: std::time::Duration,
    every: std::time::Duration,
) -> io::Result<Result<(), T>> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        let value = read()?;
        if done(&value) {
            return Ok(Ok(()));
        }
        if std::time::Instant::now() > deadline {
            return Ok(Err(value));
        }
        std::thread::sleep(every);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn poll_stops_when_done_or_at_the_limit_with_the_last_value() {
        let mut n = 0;
        let read = || {
            n += 1;
            Ok(n)
        };
        assert_eq!(
            poll(read, |&v| v == 3, Duration::from_secs(5), Duration::ZERO).unwrap(),
            Ok(())
        );
        assert_eq!(n, 3);
        let never = poll(|| Ok(7), |_| false, Duration::ZERO, Duration::ZERO).unwrap();
        assert_eq!(never, Err(7));
        let failed = poll(
            || Err::<u32, _>(io::Error::other("gone")),
            |_| true,
            Duration::from_secs(5),
            Duration::ZERO,
        );
        assert_eq!(failed.unwrap_err().to_string(), "gone");
    }
}
