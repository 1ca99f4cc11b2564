//! `kmemleak-scan`: the kernel memory leak detector used as
//! Documentation/dev-tools/kmemleak.rst tells a developer to use it: run
//! the code suspected of leaking, `echo scan > /sys/kernel/debug/kmemleak`,
//! then `cat /sys/kernel/debug/kmemleak` for what it found. It runs
//! mm/kmemleak.c's own code, which only a kernel built with
//! DEBUG_KMEMLEAK has (kconfigs/mm-kmemleak.config: never the library's
//! kernel, whose every allocation it would slow).
//!
//! One task: a scan holds kmemleak's scan mutex, so a second task would
//! wait for the first. Each operation:
//! 1. forks a child that exits at once and waits for it: the suspected
//!    code, whose every allocation and free kmemleak tracks (its slab
//!    objects; its mm's per-CPU RSS counters, through
//!    `kmemleak_alloc_percpu`);
//! 2. writes `scan` (`kmemleak_scan()`, in this task: every tracked
//!    object marked white, then the data and bss sections, every
//!    node's struct pages and every object reached scanned for pointers
//!    to them, and those never reached reported);
//! 3. reads the file whole (every tracked object visited; each reported
//!    leak printed with `print_unreferenced()`, its backtrace included).
//!
//! How many leaks a scan reports is the kernel's business: the agent does
//! not clear them, so a leak reported once is printed by every read after
//! it, and counts them ([`LEAKS`] lines) only to check the read parsed.
//! Once per boot, untimed, it checks the file is there and writes
//! `scan=off`, so that no scanning thread (the kernel may start one at
//! boot) scans at a moment of its own. Spec: `workloads/kmemleak-scan.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{fork_child, read_file, wait_ok, write_file};
use crate::bench::{Bench, GuestSize, Load, ParamError, Task, check_one_task};
use crate::kind::Kind;

/// kmemleak's debugfs file (the agent mounts debugfs at boot).
const KMEMLEAK: &str = "/sys/kernel/debug/kmemleak";
/// How `print_unreferenced()` opens each leak it prints.
const LEAKS: &str = "unreferenced object 0x";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KmemleakScan {
    pub tasks: u32,
    pub ops: u32,
}

impl Default for KmemleakScan {
    fn default() -> Self {
        KmemleakScan { tasks: 1, ops: 2 }
    }
}

impl Kind for KmemleakScan {
    fn describe(&self) -> String {
        "fork, scan, read the report".into()
    }
}

impl Bench for KmemleakScan {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, _guest: GuestSize) -> Result<(), ParamError> {
        check_one_task(
            self.tasks,
            "a scan holds kmemleak's scan mutex, and a second task would wait for it",
        )
    }

    fn prepare(&self) -> io::Result<()> {
        write_file(KMEMLEAK, "scan=off").map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "{KMEMLEAK}: {e} (the kernel needs DEBUG_KMEMLEAK, on at boot: kconfigs/mm-kmemleak.config)"
                ),
            )
        })
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        Ok(Box::new(Scanner))
    }
}

struct Scanner;

impl Task for Scanner {
    fn op(&mut self) -> io::Result<()> {
        wait_ok(fork_child(|| Ok(()))?)?;
        write_file(KMEMLEAK, "scan")?;
        let report = read_file(KMEMLEAK)?;
        let leaks = report.matches(LEAKS).count();
        if leaks == 0 && !report.trim().is_empty() {
            return Err(io::Error::other(format!(
                "{KMEMLEAK} holds no \"{LEAKS}\" line but is not empty: {:?}",
                report.chars().take(200).collect::<String>()
            )));
        }
        Ok(())
    }
}
