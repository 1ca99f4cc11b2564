//! `ksm-merge`: KSM merging a region of identical pages, as the kernel's
//! selftest `tools/testing/selftests/mm/ksm_tests.c` times it with `-P`
//! (its merge-time test; run_vmtests.sh runs `ksm_tests -P -s 100`): map
//! `-s` MiB, fill every byte with `'*'`, `madvise(MADV_MERGEABLE)`, set
//! `run` to 1 and wait for two more `full_scans` (KSM merges a page only
//! once its checksum held over a whole scan), with `sleep_millisecs` 0.
//!
//! Once per boot: `/sys/kernel/mm/ksm/` `pages_to_scan` every task's
//! region's pages (a whole scan in one batch) and `run` 1;
//! `sleep_millisecs` stays at its default, 20. Each operation maps `size`
//! of anonymous memory, fills it with one byte (each task its own, so that
//! tasks' pages do not merge with each other), advises it MADV_MERGEABLE
//! and waits until ksmd has merged every page (`/proc/self/ksm_merging_pages`
//! equals the region's pages: checksums, the unstable and stable trees,
//! write-protecting and replacing each page), then advises it
//! MADV_UNMERGEABLE (a copy-on-write break per page), unmaps it and waits
//! until ksmd has dropped the region's bookkeeping (`ksm_merging_pages`
//! back to 0), so that every operation starts from the same state. The
//! waits poll the file every millisecond; ksmd's work is on the other
//! vCPU, which the counting lane counts too.
//!
//! Not ksm_tests' `sleep_millisecs` 0: with it ksmd never sleeps while a
//! process with a mergeable region lives, so its instructions in the
//! window grow with the window's time, and under TCG a boot took minutes
//! a sample. With 20 ms ksmd scans a batch, the whole region, every 20 ms
//! of guest time: the scans an operation waits for are whole scans, and
//! what varies is where in ksmd's sleep the operation starts and how many
//! polls the wait takes.
//!
//! With `via: prctl`, KSM is driven as a service manager drives it
//! (systemd's `MemoryKSM=`: prctl(2)'s PR_SET_MEMORY_MERGE, every VMA of
//! the process mergeable, present and future), watched as its monitors
//! watch it (/proc/self/ksm_stat) and tuned as its advisor's users tune it.
//! Each operation sets PR_SET_MEMORY_MERGE, maps and fills the region (no
//! madvise) and waits until at least the region's pages are merged; checks
//! ksm_stat counts them; writes 2 to `run` (every merged page unmerged,
//! every stable node removed) and waits until none is merged; writes
//! `merge_across_nodes` and the five `advisor_*` files back with the
//! values read once per boot (the first is writable only while nothing is
//! merged); writes 1 to `run`; clears PR_SET_MEMORY_MERGE and unmaps the
//! region. One task: `run` is the kernel's. Spec: `workloads/ksm-merge.yaml`.

use std::io;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{Map, Saved, last, page_size, poll, read_file, read_u64, write_file};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held, check_one_task};
use crate::kind::Kind;

const KSM: &str = "/sys/kernel/mm/ksm";
const MERGING: &str = "/proc/self/ksm_merging_pages";
const STAT: &str = "/proc/self/ksm_stat";
/// How long an operation waits for ksmd: ksm_tests' own scan limit.
const SCAN_LIMIT: Duration = Duration::from_secs(120);
const POLL: Duration = Duration::from_millis(1);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KsmMerge {
    pub tasks: u32,
    pub ops: u32,
    /// The region of identical pages each operation has merged.
    pub size: Bytes,
    /// How the region is made mergeable and unmerged.
    pub via: Via,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    /// MADV_MERGEABLE on the region, MADV_UNMERGEABLE to unmerge it.
    Madvise,
    /// PR_SET_MEMORY_MERGE on the process, `run` 2 to unmerge, and the
    /// tunables written back.
    Prctl,
}

/// The tunables `via: prctl` writes back each operation.
const TUNABLES: [&str; 6] = [
    "merge_across_nodes",
    "advisor_mode",
    "advisor_max_cpu",
    "advisor_min_pages_to_scan",
    "advisor_max_pages_to_scan",
    "advisor_target_scan_time",
];

impl Default for KsmMerge {
    fn default() -> Self {
        KsmMerge {
            tasks: 1,
            ops: 4,
            size: Bytes::mib(4),
            via: Via::Madvise,
        }
    }
}

impl KsmMerge {
    fn pages(&self) -> usize {
        self.size.pages(page_size())
    }
}

impl Kind for KsmMerge {
    fn describe(&self) -> String {
        match self.via {
            Via::Madvise => format!("size={}", self.size),
            Via::Prctl => format!("size={} via=prctl", self.size),
        }
    }
}

impl Bench for KsmMerge {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        if self.via == Via::Prctl {
            check_one_task(
                self.tasks,
                "via: prctl writes 2 to run, which unmerges every process's pages",
            )?;
        }
        // Merged, the region takes a page; unmerged it takes its size again.
        check_held("size", self.size, self.tasks, guest)
    }

    fn prepare(&self) -> io::Result<()> {
        if !std::path::Path::new(KSM).exists() {
            return Err(io::Error::other(format!(
                "{KSM} is missing: the kernel has no CONFIG_KSM"
            )));
        }
        if self.via == Via::Prctl {
            // PR_SET_MEMORY_MERGE came with general_profit (6.4), the
            // advisor's files in 6.9.
            for (file, what) in [
                (
                    "general_profit",
                    "process-wide merging (PR_SET_MEMORY_MERGE, Linux 6.4)",
                ),
                ("advisor_mode", "the scan-time advisor (Linux 6.9)"),
            ] {
                let path = format!("{KSM}/{file}");
                if !std::path::Path::new(&path).exists() {
                    return Err(io::Error::other(format!(
                        "via: prctl needs KSM's {what}: this kernel has no {path}"
                    )));
                }
            }
        }
        let batch = self.pages() * self.tasks as usize;
        write_file(format!("{KSM}/pages_to_scan"), &batch.to_string())?;
        write_file(format!("{KSM}/run"), "1")
    }

    fn task(&self, index: usize) -> io::Result<Box<dyn Task>> {
        let merger = Merger {
            len: self.size.bytes(),
            pages: self.pages() as u64,
            fill: b'*'.wrapping_add(index as u8),
        };
        Ok(match self.via {
            Via::Madvise => Box::new(merger),
            Via::Prctl => {
                let tunables = Saved::read(TUNABLES.map(|name| format!("{KSM}/{name}")))?;
                Box::new(ProcessMerger { merger, tunables })
            }
        })
    }
}

struct Merger {
    len: usize,
    pages: u64,
    fill: u8,
}

impl Merger {
    /// The region mapped and filled with the task's byte.
    fn filled(&self) -> io::Result<Map> {
        let map = Map::anon(self.len)?;
        // SAFETY: the whole mapping, which is writable.
        unsafe { std::ptr::write_bytes(map.ptr, self.fill, map.len) };
        Ok(map)
    }
}

/// `via: prctl`: the process made mergeable whole, as systemd's
/// MemoryKSM= makes a service.
struct ProcessMerger {
    merger: Merger,
    /// The tunables' values once per boot.
    tunables: Saved,
}

fn memory_merge(on: bool) -> io::Result<()> {
    // SAFETY: no pointers.
    let ret = unsafe { libc::prctl(libc::PR_SET_MEMORY_MERGE, libc::c_ulong::from(on), 0, 0, 0) };
    if ret != 0 {
        return Err(last(&format!(
            "prctl(PR_SET_MEMORY_MERGE, {})",
            u8::from(on)
        )));
    }
    Ok(())
}

impl Task for ProcessMerger {
    fn op(&mut self) -> io::Result<()> {
        let pages = self.merger.pages;
        memory_merge(true)?;
        let map = self.merger.filled()?;
        // The process's other pages may merge too: at least the region's.
        wait_for_merging(|n| n >= pages, "the region's pages merged")?;
        let stat = read_file(STAT)?;
        let merging = stat
            .lines()
            .find_map(|l| l.strip_prefix("ksm_merging_pages "))
            .and_then(|v| v.trim().parse::<u64>().ok());
        if merging.is_none_or(|n| n < pages) {
            return Err(io::Error::other(format!(
                "{STAT} counts fewer merged pages than the region's {pages}: {stat:?}"
            )));
        }
        write_file(format!("{KSM}/run"), "2")?;
        wait_for_merging(|n| n == 0, "no page merged after run 2")?;
        self.tunables.restore()?;
        write_file(format!("{KSM}/run"), "1")?;
        memory_merge(false)?;
        map.unmap()
    }
}

impl Task for Merger {
    fn op(&mut self) -> io::Result<()> {
        let map = self.filled()?;
        map.advise(libc::MADV_MERGEABLE)?;
        wait_for_merging(|n| n == self.pages, "every page merged")?;
        map.advise(libc::MADV_UNMERGEABLE)?;
        map.unmap()?;
        wait_for_merging(|n| n == 0, "no page merged")
    }
}

/// Polls this process's merged pages until `done` holds, within
/// ksm_tests' scan limit.
fn wait_for_merging(done: impl Fn(u64) -> bool, what: &str) -> io::Result<()> {
    poll(|| read_u64(MERGING), |&n| done(n), SCAN_LIMIT, POLL)?.map_err(|n| {
        io::Error::other(format!(
            "ksmd did not reach {what} within {SCAN_LIMIT:?}: {MERGING} reads {n}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_region_fits_in_half_the_guest() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        let bench = KsmMerge::default();
        assert!(bench.check(guest).is_ok());
        assert_eq!(bench.pages(), 1024);
        let big = KsmMerge {
            size: Bytes::mib(600),
            ..KsmMerge::default()
        };
        assert_eq!(big.check(guest).unwrap_err().param, "size");
    }
}
