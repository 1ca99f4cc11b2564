//! `hwpoison`: memory-failure handling (mm/memory-failure.c), driven the
//! way its own tests drive it: errors injected with `madvise(2)`'s
//! MADV_HWPOISON and MADV_SOFT_OFFLINE (as the kernel's selftests and
//! LTP's madvise tests do, and as mce-test's hwpoison cases do through the
//! injector), and each poisoned page given back through the injector's
//! `/sys/kernel/debug/hwpoison/unpoison-pfn` (mm/hwpoison-inject.c,
//! `unpoison_memory()`), so that every operation starts from the same
//! memory.
//!
//! Each operation does three things:
//! 1. **A hard error on a dirty anonymous page.** A child maps one page,
//!    writes it, reads its frame from `/proc/self/pagemap`, sends the
//!    frame to the task and calls MADV_HWPOISON on it: `memory_failure()`
//!    unmaps the page from every process (a hwpoison entry in its place)
//!    and, the page being dirty, kills the child with SIGBUS
//!    (BUS_MCEERR_AR); 6.1 kills late, so there the child dies of SIGBUS
//!    at its next access to the page, which it makes. The task checks
//!    that the child died of SIGBUS and unpoisons the frame.
//! 2. **A soft offline.** The task maps one page, writes it and calls
//!    MADV_SOFT_OFFLINE: `soft_offline_page()` migrates the contents to
//!    a new page and takes the old one out of use, poisoned. The task
//!    checks that its page moved and unpoisons the old frame.
//! 3. **An error on a page already poisoned and still mapped.** A child
//!    maps one anonymous page and reads it, which maps the shared zero
//!    page, and calls MADV_HWPOISON on it. The zero page was poisoned once
//!    per boot (below), so `memory_failure()` takes its "already
//!    poisoned" path: `kill_accessing_process()` walks the child's page
//!    tables, finds the page mapped and kills the child with SIGBUS. This
//!    is the path of a second report of one error (a machine check after
//!    a corrected-error interrupt); a poisoned page stays mapped when
//!    `memory_failure()` could not isolate it, as with the zero page, a
//!    reserved kernel page it only marks ("reserved kernel page:
//!    Ignored"). The zero page cannot be unpoisoned (`unpoison_memory()`
//!    refuses reserved pages), so it stays poisoned until the guest
//!    powers off; reading it still reads zeros.
//!
//! Once per boot, untimed: a child poisons the zero page (step 3's setup).
//! Every step's kernel messages go to the console, as on a real machine.
//!
//! With `page: hugetlb` each operation instead soft-offlines a huge page
//! in use, as mce-test's and the selftests' hugetlb cases do (a corrected
//! error reported in a 2 MiB hugetlb page): the task sets the 2 MiB pool
//! to two pages, maps one MAP_HUGETLB, stamps it and calls
//! MADV_SOFT_OFFLINE on it. soft_offline_page() isolates the huge page,
//! migrates it to the pool's other page, dissolves the old one into the
//! buddy allocator and takes the poisoned base page off the free lists.
//! The task checks that its page moved with its contents, unpoisons the
//! old frame (the base page back to the buddy allocator) and unmaps the
//! page; the pool, one page smaller after the dissolve, is refilled at the
//! next operation. Spec: `workloads/hwpoison.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{self, Map, last, page_size, write_file};
use crate::bench::{Bench, GuestSize, Load, ParamError, Task, check_one_task};
use crate::kind::Kind;
use crate::kinds::hugetlb_gigantic::{HUGE, set};

const UNPOISON: &str = "/sys/kernel/debug/hwpoison/unpoison-pfn";
const HUGE_PAGE: usize = 2 << 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Hwpoison {
    pub tasks: u32,
    pub ops: u32,
    /// The pages errors are injected into.
    pub page: PageKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PageKind {
    /// Base anonymous pages: a hard error, a soft offline, and an error on
    /// a page already poisoned.
    Base,
    /// A 2 MiB hugetlb page in use, soft-offlined.
    Hugetlb,
}

impl Default for Hwpoison {
    fn default() -> Self {
        Hwpoison {
            tasks: 1,
            ops: 16,
            page: PageKind::Base,
        }
    }
}

impl Kind for Hwpoison {
    fn describe(&self) -> String {
        match self.page {
            PageKind::Base => "hard error, soft offline, already-poisoned page".to_string(),
            PageKind::Hugetlb => "soft offline of a hugetlb page in use".to_string(),
        }
    }
}

impl Bench for Hwpoison {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, _guest: GuestSize) -> Result<(), ParamError> {
        // memory_failure() runs under one mutex; two tasks would only
        // queue on it, and their messages would interleave.
        check_one_task(
            self.tasks,
            "memory_failure() and unpoison_memory() run one at a time (mf_mutex)",
        )
    }

    /// Poisons the zero page, in a child: if it is poisoned already (a
    /// second condition in one boot), the child dies of SIGBUS instead.
    fn prepare(&self) -> io::Result<()> {
        if self.page == PageKind::Hugetlb {
            if !std::path::Path::new(HUGE).exists() {
                return Err(io::Error::other(format!(
                    "page: hugetlb needs 2 MiB hugetlb pages (CONFIG_HUGETLBFS): this kernel has no {HUGE}"
                )));
            }
            return Ok(());
        }
        let child = fork_quiet(poison_zero_page)?;
        match wait_status(child)? {
            Ended::Exited(0) | Ended::Signal(libc::SIGBUS) => Ok(()),
            other => Err(io::Error::other(format!(
                "poisoning the zero page: the child {other}"
            ))),
        }
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        Ok(match self.page {
            PageKind::Base => Box::new(Poisoner { page: page_size() }),
            PageKind::Hugetlb => Box::new(HugeOffliner),
        })
    }
}

struct Poisoner {
    page: usize,
}

impl Task for Poisoner {
    fn op(&mut self) -> io::Result<()> {
        self.hard_error()?;
        self.soft_offline()?;
        self.already_poisoned()
    }
}

/// `page: hugetlb`: a huge page in use, soft-offlined.
struct HugeOffliner;

impl Task for HugeOffliner {
    fn op(&mut self) -> io::Result<()> {
        // One page to map, one to migrate it to.
        set(HUGE, "nr_hugepages", 2, 2)?;
        let mut map = Map::new(
            HUGE_PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_HUGETLB,
            -1,
            0,
        )?;
        sys::stamp(&mut map, page_size(), 0x4857);
        let before = frame_of(map.ptr)?;
        map.advise(libc::MADV_SOFT_OFFLINE)?;
        let after = frame_of(map.ptr)?;
        if after == before {
            return Err(io::Error::other(format!(
                "MADV_SOFT_OFFLINE left the hugetlb page at frame {before:#x}"
            )));
        }
        sys::check_stamps(&map, page_size(), 0x4857)?;
        unpoison(before)?;
        map.unmap()
    }
}

impl Poisoner {
    fn hard_error(&self) -> io::Result<()> {
        let page = self.page;
        let (read_end, write_end) = pipe()?;
        let child = fork_quiet(|| {
            // SAFETY: the child's own copy of the read end.
            unsafe { libc::close(read_end) };
            let Ok(mut map) = Map::anon(page) else {
                return 1;
            };
            map.touch(page);
            let Some(pfn) = present_frame(map.ptr) else {
                return 2;
            };
            let bytes = pfn.to_ne_bytes();
            // SAFETY: eight bytes from a live array.
            if unsafe { libc::write(write_end, bytes.as_ptr().cast(), bytes.len()) } != 8 {
                return 3;
            }
            // Dies here of SIGBUS (6.12: memory_failure() kills the
            // process that injected the error), or at its next access to
            // the page (6.1 kills late, vm.memory_failure_early_kill 0
            // being the default); returning is the failure.
            raw_madvise(&map, libc::MADV_HWPOISON);
            let _ = map.read(page);
            4
        });
        // SAFETY: the parent's copy of the write end.
        unsafe { libc::close(write_end) };
        let child = child.inspect_err(|_| close(read_end))?;
        let mut bytes = [0u8; 8];
        // SAFETY: reads into a live eight-byte array.
        let got = unsafe { libc::read(read_end, bytes.as_mut_ptr().cast(), bytes.len()) };
        close(read_end);
        let ended = wait_status(child)?;
        if ended != Ended::Signal(libc::SIGBUS) {
            return Err(io::Error::other(format!(
                "MADV_HWPOISON on a dirty anonymous page: the child {ended}, where memory_failure() kills it with SIGBUS"
            )));
        }
        if got != 8 {
            return Err(io::Error::other(
                "MADV_HWPOISON on a dirty anonymous page: the child sent no page frame",
            ));
        }
        unpoison(u64::from_ne_bytes(bytes))
    }

    fn soft_offline(&self) -> io::Result<()> {
        let mut map = Map::anon(self.page)?;
        map.touch(self.page);
        let before = frame_of(map.ptr)?;
        map.advise(libc::MADV_SOFT_OFFLINE)?;
        let after = frame_of(map.ptr)?;
        if after == before {
            return Err(io::Error::other(format!(
                "MADV_SOFT_OFFLINE left the page at frame {before:#x}"
            )));
        }
        unpoison(before)?;
        map.unmap()
    }

    fn already_poisoned(&self) -> io::Result<()> {
        match wait_status(fork_quiet(poison_zero_page)?)? {
            Ended::Signal(libc::SIGBUS) => Ok(()),
            // 6.1's MADV_HWPOISON calls memory_failure() without
            // MF_ACTION_REQUIRED (6.12's with it), and only an
            // action-required error runs kill_accessing_process().
            Ended::Exited(0) => Err(io::Error::other(
                "MADV_HWPOISON on the poisoned zero page left the child alive: this kernel's MADV_HWPOISON reports no action-required error (Linux 6.1 calls memory_failure() without MF_ACTION_REQUIRED), so kill_accessing_process() never runs, and this benchmark's third step needs it (6.12 has it)",
            )),
            other => Err(io::Error::other(format!(
                "MADV_HWPOISON on the poisoned zero page: the child {other}, where kill_accessing_process() kills it with SIGBUS"
            ))),
        }
    }
}

/// A child's body: maps one anonymous page, reads it (which maps the
/// shared zero page) and calls MADV_HWPOISON on it. The first time in a
/// boot memory_failure() marks the zero page and returns (a reserved
/// page: ignored), and the child exits 0; every time after, the page
/// being poisoned already, kill_accessing_process() kills the child with
/// SIGBUS.
fn poison_zero_page() -> i32 {
    let page = page_size();
    let Ok(map) = Map::anon(page) else { return 1 };
    let _ = map.read(page);
    raw_madvise(&map, libc::MADV_HWPOISON);
    0
}

/// Gives a poisoned frame back (`unpoison_memory()`).
fn unpoison(pfn: u64) -> io::Result<()> {
    write_file(UNPOISON, &pfn.to_string())
}

/// The page frame behind `addr` in this process, from
/// `/proc/self/pagemap` (root sees frames).
fn frame_of(addr: *const u8) -> io::Result<u64> {
    present_frame(addr).ok_or_else(|| {
        io::Error::other(format!(
            "/proc/self/pagemap shows no page frame at {addr:p} (is the agent root?)"
        ))
    })
}

/// [`frame_of`] without allocating, so that a forked child may call it:
/// bit 63 of the entry says present, bits 0 to 54 are the frame.
fn present_frame(addr: *const u8) -> Option<u64> {
    // SAFETY: a NUL-terminated path.
    let fd = unsafe { libc::open(c"/proc/self/pagemap".as_ptr(), libc::O_RDONLY) };
    if fd < 0 {
        return None;
    }
    let offset = (addr as usize / page_size() * 8) as libc::off_t;
    let mut entry = [0u8; 8];
    // SAFETY: reads into a live eight-byte array.
    let got = unsafe { libc::pread(fd, entry.as_mut_ptr().cast(), 8, offset) };
    close(fd);
    let entry = u64::from_ne_bytes(entry);
    let pfn = entry & ((1 << 55) - 1);
    (got == 8 && entry >> 63 == 1 && pfn != 0).then_some(pfn)
}

/// `madvise` over the whole of `map`, its result ignored, allocating
/// nothing (a child's error path may not allocate).
fn raw_madvise(map: &Map, advice: libc::c_int) {
    // SAFETY: the whole of a live mapping.
    unsafe { libc::madvise(map.ptr.cast(), map.len, advice) };
}

fn pipe() -> io::Result<(libc::c_int, libc::c_int)> {
    let mut fds = [0; 2];
    // SAFETY: a two-element array for the two ends.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(last("pipe2"));
    }
    Ok((fds[0], fds[1]))
}

fn close(fd: libc::c_int) {
    // SAFETY: a descriptor this process owns and uses no more.
    unsafe { libc::close(fd) };
}

/// `fork()`, the child running `child` and leaving with `_exit` of what
/// it returns. `child` must not allocate: the child of a process with
/// threads may not.
fn fork_quiet(child: impl FnOnce() -> i32) -> io::Result<libc::pid_t> {
    // SAFETY: the child only runs `child` and then `_exit`s.
    match unsafe { libc::fork() } {
        -1 => Err(last("fork")),
        0 => {
            // Rust's runtime handles SIGBUS (for stack overflows) and, the
            // fault being elsewhere, returns from it: the child would live
            // on past memory_failure()'s SIGBUS. The default kills it.
            // SAFETY: resets one signal's disposition in this process.
            unsafe { libc::signal(libc::SIGBUS, libc::SIG_DFL) };
            let code = child();
            // SAFETY: leaves the child at once.
            unsafe { libc::_exit(code) }
        }
        pid => Ok(pid),
    }
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Exited(i32),
    Signal(i32),
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Ended::Exited(code) => write!(f, "exited with status {code}"),
            Ended::Signal(sig) => write!(f, "died of signal {sig}"),
        }
    }
}

fn wait_status(pid: libc::pid_t) -> io::Result<Ended> {
    let status = sys::wait_status(pid)?;
    if libc::WIFSIGNALED(status) {
        Ok(Ended::Signal(libc::WTERMSIG(status)))
    } else {
        Ok(Ended::Exited(libc::WEXITSTATUS(status)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_that_exits_and_one_that_is_killed_are_told_apart() {
        let exited = fork_quiet(|| 3).unwrap();
        assert_eq!(wait_status(exited).unwrap(), Ended::Exited(3));
        let killed = fork_quiet(|| {
            // SAFETY: the child signals itself.
            unsafe { libc::raise(libc::SIGBUS) };
            0
        })
        .unwrap();
        assert_eq!(wait_status(killed).unwrap(), Ended::Signal(libc::SIGBUS));
    }

    #[test]
    fn only_two_tasks_are_refused() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        assert!(Hwpoison::default().check(guest).is_ok());
        let two = Hwpoison {
            tasks: 2,
            ..Hwpoison::default()
        };
        assert_eq!(two.check(guest).unwrap_err().param, "tasks");
        let huge = Hwpoison {
            tasks: 2,
            page: PageKind::Hugetlb,
            ..Hwpoison::default()
        };
        assert_eq!(huge.check(guest).unwrap_err().param, "tasks");
    }
}
