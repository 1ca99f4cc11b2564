//! `mprotect`: VMA splitting and merging by mprotect(2) over populated
//! memory. will-it-scale has no mprotect testcase; this follows
//! stress-ng's mprotect stressor (mprotect of page ranges inside a
//! mapping, stress-mprotect.c), made deterministic, with LTP's mprotect05
//! split-then-merge pattern (a range inside a mapping made read-only, then
//! the whole mapping given one protection again, which merges it back).
//!
//! Each task maps `size` of private anonymous memory, 2 MiB aligned (so
//! the default size is one page table's span), advised MADV_NOHUGEPAGE,
//! and writes every page, untimed. Each operation makes every other page
//! PROT_READ, one mprotect call a page (each splits the VMA and changes
//! one page table entry and flushes its TLB entry), leaving as many VMAs
//! as pages; then one mprotect of the whole mapping back to
//! PROT_READ|PROT_WRITE merges them into one again, its pages writable
//! without a fault.
//!
//! With `pkey: true` the same splits and merge are made with protection
//! keys, as the kernel's selftests/mm/protection_keys.c makes them: each
//! operation allocates a key (pkey_alloc(2)), tags every other page with
//! it through pkey_mprotect(2), merges the mapping back under key 0 and
//! frees the key (pkey_free(2)). It needs a CPU with protection keys
//! (pku, ospke: QEMU's `-cpu max` has them) and
//! X86_INTEL_MEMORY_PROTECTION_KEYS. Spec: `workloads/mprotect.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use super::page_fault_anon::THP_SIZE;
use crate::bench::sys::{Map, last, page_size};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;

/// The guest's page (x86-64), which sizes are checked against on the host.
const GUEST_PAGE: u64 = 4096;

/// The largest region: a VMA a page at the split's peak, well within the
/// default `vm.max_map_count` (65530) beside the task's own mappings.
pub const MAX_SIZE: Bytes = Bytes::mib(128);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Mprotect {
    pub tasks: u32,
    pub ops: u32,
    /// The populated mapping whose every other page each operation makes
    /// read-only, then all of it writable again.
    pub size: Bytes,
    /// Tag the pages with a protection key (pkey_mprotect) as well.
    pub pkey: bool,
}

impl Default for Mprotect {
    fn default() -> Self {
        Mprotect {
            tasks: 1,
            ops: 64,
            size: Bytes::mib(2),
            pkey: false,
        }
    }
}

impl Kind for Mprotect {
    fn describe(&self) -> String {
        if self.pkey {
            format!("size={} pkey", self.size)
        } else {
            format!("size={}", self.size)
        }
    }
}

impl Bench for Mprotect {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_held("size", self.size, self.tasks, guest)?;
        if self.size.get() % GUEST_PAGE != 0
            || self.size.get() < 2 * GUEST_PAGE
            || self.size > MAX_SIZE
        {
            return Err(ParamError::new(
                "size",
                self.size,
                format!("must be a whole number of pages, at least two and at most {MAX_SIZE}"),
            ));
        }
        Ok(())
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        let mut protector = Protector::new(self.size.bytes())?;
        protector.pkey = self.pkey;
        Ok(Box::new(protector))
    }
}

struct Protector {
    map: Map,
    page: usize,
    pkey: bool,
}

/// pkey_mprotect(2) of `len` bytes at `start` into `map`.
fn pkey_protect(
    map: &Map,
    start: usize,
    len: usize,
    prot: libc::c_int,
    key: libc::c_int,
) -> io::Result<()> {
    // SAFETY: a range inside the task's own mapping.
    let ret = unsafe { libc::syscall(libc::SYS_pkey_mprotect, map.ptr.add(start), len, prot, key) };
    if ret != 0 {
        return Err(last(&format!(
            "pkey_mprotect of {len} bytes with key {key}"
        )));
    }
    Ok(())
}

impl Protector {
    fn new(len: usize) -> io::Result<Protector> {
        let mut map = Map::anon_aligned(len, THP_SIZE)?;
        map.advise(libc::MADV_NOHUGEPAGE)?;
        let page = page_size();
        map.touch(page);
        Ok(Protector {
            map,
            page,
            pkey: false,
        })
    }

    /// The splits and merge with a protection key: every other page
    /// tagged with a fresh key, all of it back under key 0, the key freed.
    fn op_pkey(&self) -> io::Result<()> {
        // SAFETY: no pointers.
        let key = unsafe { libc::syscall(libc::SYS_pkey_alloc, 0, 0) };
        if key < 0 {
            return Err(last(
                "pkey_alloc (the CPU needs protection keys, pku and ospke, and the kernel X86_INTEL_MEMORY_PROTECTION_KEYS)",
            ));
        }
        let key = key as libc::c_int;
        let mut start = self.page;
        while start < self.map.len {
            pkey_protect(&self.map, start, self.page, libc::PROT_READ, key)?;
            start += 2 * self.page;
        }
        pkey_protect(
            &self.map,
            0,
            self.map.len,
            libc::PROT_READ | libc::PROT_WRITE,
            0,
        )?;
        // SAFETY: no pointers.
        if unsafe { libc::syscall(libc::SYS_pkey_free, key) } != 0 {
            return Err(last(&format!("pkey_free of key {key}")));
        }
        Ok(())
    }
}

impl Task for Protector {
    fn op(&mut self) -> io::Result<()> {
        if self.pkey {
            return self.op_pkey();
        }
        let mut start = self.page;
        while start < self.map.len {
            self.map.protect(start, self.page, libc::PROT_READ)?;
            start += 2 * self.page;
        }
        self.map
            .protect(0, self.map.len, libc::PROT_READ | libc::PROT_WRITE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The task's VMAs in /proc/self/maps that lie inside `map`.
    fn vmas_inside(map: &Map) -> usize {
        let (lo, hi) = (map.ptr as usize, map.ptr as usize + map.len);
        std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter_map(|range| range.split_once('-'))
            .map(|(a, b)| {
                (
                    usize::from_str_radix(a, 16).unwrap(),
                    usize::from_str_radix(b, 16).unwrap(),
                )
            })
            .filter(|&(a, b)| a >= lo && b <= hi)
            .count()
    }

    #[test]
    fn every_other_page_is_split_off_and_merged_back() {
        let mut task = Protector::new(64 << 10).unwrap();
        for _ in 0..3 {
            task.op().unwrap();
            assert_eq!(vmas_inside(&task.map), 1, "merged back into one VMA");
        }
        task.map.touch(task.page);
    }

    #[test]
    fn the_size_is_whole_pages_within_the_map_count() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        assert!(Mprotect::default().check(guest).is_ok());
        for size in [Bytes(6000), Bytes::kib(4), Bytes::mib(256)] {
            let m = Mprotect {
                size,
                ..Mprotect::default()
            };
            assert_eq!(m.check(guest).unwrap_err().param, "size", "{size}");
        }
    }
}
