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
//! polls the wait takes. Spec: `workloads/ksm-merge.yaml`.

use std::io;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::bench::sys::{Map, page_size, read_u64, write_file};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;

const KSM: &str = "/sys/kernel/mm/ksm";
const MERGING: &str = "/proc/self/ksm_merging_pages";
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
}

impl Default for KsmMerge {
    fn default() -> Self {
        KsmMerge {
            tasks: 1,
            ops: 4,
            size: Bytes::mib(4),
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
        format!("size={}", self.size)
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
        // Merged, the region takes a page; unmerged it takes its size again.
        check_held("size", self.size, self.tasks, guest)
    }

    fn prepare(&self) -> io::Result<()> {
        if !std::path::Path::new(KSM).exists() {
            return Err(io::Error::other(format!(
                "{KSM} is missing: the kernel has no CONFIG_KSM"
            )));
        }
        let batch = self.pages() * self.tasks as usize;
        write_file(format!("{KSM}/pages_to_scan"), &batch.to_string())?;
        write_file(format!("{KSM}/run"), "1")
    }

    fn task(&self, index: usize) -> io::Result<Box<dyn Task>> {
        Ok(Box::new(Merger {
            len: self.size.bytes(),
            pages: self.pages() as u64,
            fill: b'*'.wrapping_add(index as u8),
        }))
    }
}

struct Merger {
    len: usize,
    pages: u64,
    fill: u8,
}

impl Task for Merger {
    fn op(&mut self) -> io::Result<()> {
        let map = Map::anon(self.len)?;
        // SAFETY: the whole mapping, which is writable.
        unsafe { std::ptr::write_bytes(map.ptr, self.fill, map.len) };
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
    let deadline = Instant::now() + SCAN_LIMIT;
    loop {
        let n = read_u64(MERGING)?;
        if done(n) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(io::Error::other(format!(
                "ksmd did not reach {what} within {SCAN_LIMIT:?}: {MERGING} reads {n}"
            )));
        }
        std::thread::sleep(POLL);
    }
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
