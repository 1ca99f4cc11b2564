//! `oom-kill`: the memcg OOM killer, as the kernel's
//! selftests/cgroup/test_memcontrol.c test_memcg_oom_events drives it (a
//! memory cgroup with memory.max 30M and memory.swap.max 0, a process in
//! it allocating 100M of anonymous memory, killed, memory.events counting
//! one oom_kill). Each task has a cgroup of its own for its children,
//! `/sys/fs/cgroup/patchbench-oom/t<i>`, with memory.max `limit` and
//! memory.swap.max 0. Each operation forks a child, which moves itself
//! into that cgroup, sets its oom_score_adj to 1000 and writes every page
//! of an anonymous mapping of `alloc_factor` x `limit`; at the limit the
//! charge fails after the memcg's reclaim retries (no swap, nothing to
//! reclaim) and the OOM killer kills it, the only process in the cgroup.
//! The task waits for it, checks that it died of SIGKILL and that the
//! cgroup's oom_kill count grew by one. The console's log level is set to
//! 3 for the boot (critical messages and worse: a panic, an oops, a BUG
//! still show), so the OOM report goes to the kernel's log buffer but not
//! to the serial console: no window pays for the serial port's
//! characters, and the host's console check, which fails a boot on any
//! "Killed process" line, does not see the kills this benchmark makes on
//! purpose and checks itself (a kill in any other cgroup, or a global
//! OOM, fails the operation's check or its task). Spec:
//! `workloads/oom-kill.yaml`.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::bench::sys::{self, Map, fork_child, page_size};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;
use crate::memory::SwapBackend;

/// The parent of the children's cgroups.
pub const CGROUP: &str = "/sys/fs/cgroup/patchbench-oom";
/// The child maps this many times the limit (test_memcg_oom_events: 100M
/// against 30M).
pub const ALLOC_FACTOR: usize = 4;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OomKill {
    pub tasks: u32,
    pub ops: u32,
    /// memory.max of the cgroup each child is killed in.
    pub limit: Bytes,
}

impl Default for OomKill {
    fn default() -> Self {
        OomKill {
            tasks: 1,
            ops: 4,
            limit: Bytes::mib(30),
        }
    }
}

impl Kind for OomKill {
    /// As test_memcg_oom_events runs: on a machine with swap, the cgroup's
    /// memory.swap.max 0 keeping its pages out of it.
    fn swap_backend(&self) -> SwapBackend {
        SwapBackend::Disk
    }

    fn describe(&self) -> String {
        format!("limit={}", self.limit)
    }
}

fn cgroup(index: usize) -> PathBuf {
    Path::new(CGROUP).join(format!("t{index}"))
}

impl Bench for OomKill {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_held("limit", self.limit, self.tasks, guest)?;
        if self.limit < Bytes::mib(1) {
            return Err(ParamError::new(
                "limit",
                self.limit,
                "must be at least 1 MiB: the child's page tables and stack are charged too",
            ));
        }
        Ok(())
    }

    fn prepare(&self) -> io::Result<()> {
        sys::write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory")?;
        create_dir(Path::new(CGROUP))?;
        sys::write_file(Path::new(CGROUP).join("cgroup.subtree_control"), "+memory")?;
        for index in 0..self.tasks as usize {
            let dir = cgroup(index);
            create_dir(&dir)?;
            sys::write_file(dir.join("memory.max"), &self.limit.get().to_string())?;
            sys::write_file(dir.join("memory.swap.max"), "0")?;
        }
        // Critical messages and worse on the console; the OOM report (the
        // "Killed process" line at KERN_ERR, and a stack trace, the
        // memcg's state and the task list ratelimited to 10 reports in 5
        // s) only in the log buffer: see the module's comment.
        sys::write_file("/proc/sys/kernel/printk", "3")
    }

    fn task(&self, index: usize) -> io::Result<Box<dyn Task>> {
        let dir = cgroup(index);
        let kills = oom_kills(&dir)?;
        Ok(Box::new(Victims {
            dir,
            len: self.limit.bytes() * ALLOC_FACTOR,
            kills,
        }))
    }
}

fn create_dir(dir: &Path) -> io::Result<()> {
    match std::fs::create_dir(dir) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(io::Error::new(
            e.kind(),
            format!("creating {}: {e}", dir.display()),
        )),
        _ => Ok(()),
    }
}

/// memory.events' `oom_kill` count of the cgroup at `dir`.
fn oom_kills(dir: &Path) -> io::Result<u64> {
    let path = dir.join("memory.events");
    let text = sys::read_file(&path)?;
    text.lines()
        .find_map(|l| l.strip_prefix("oom_kill "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| io::Error::other(format!("{} has no oom_kill: {text:?}", path.display())))
}

struct Victims {
    dir: PathBuf,
    len: usize,
    kills: u64,
}

impl Task for Victims {
    fn op(&mut self) -> io::Result<()> {
        let (procs, len) = (self.dir.join("cgroup.procs"), self.len);
        let pid = fork_child(|| {
            sys::write_file(&procs, "0")?;
            sys::write_file("/proc/self/oom_score_adj", "1000")?;
            let mut map = Map::anon(len)?;
            map.advise(libc::MADV_NOHUGEPAGE)?;
            map.touch(page_size());
            // Still alive with every page written: the limit held nothing.
            Err(io::Error::other("not killed"))
        })?;
        let status = sys::wait_status(pid)?;
        if !(libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL) {
            return Err(io::Error::other(format!(
                "child {pid} ended with status {status:#x}, not killed by SIGKILL (status 0x100: it wrote every page)"
            )));
        }
        let kills = oom_kills(&self.dir)?;
        if kills != self.kills + 1 {
            return Err(io::Error::other(format!(
                "{}: oom_kill went from {} to {kills}, not up by one",
                self.dir.display(),
                self.kills
            )));
        }
        self.kills = kills;
        Ok(())
    }
}
