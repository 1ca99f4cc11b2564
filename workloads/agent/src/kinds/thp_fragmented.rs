//! `thp-fragmented`: THP faults that only direct compaction can satisfy,
//! after mmtests' thpscale (`configs/config-workload-thpscale`,
//! `shellpacks/shellpack-install-thpscale`), which fills memory, punches
//! holes in it and then faults a MADV_HUGEPAGE region a huge page at a
//! time, so that each huge page comes from compaction.
//!
//! Once per boot the agent fragments `fragment` of anonymous memory as
//! thpscale does: maps it aligned to 2 MiB with base pages
//! (MADV_NOHUGEPAGE, and MADV_DONTFORK so that the tasks it forks do not
//! share it), writes every page and frees the first half of every 2 MiB
//! (MADV_DONTNEED; thpscale munmaps it), so that every 2 MiB block is half
//! free and none whole; it holds the rest until the boot ends. It
//! also writes THP `defrag` `madvise` (the kernel's default, so that
//! MADV_HUGEPAGE faults compact directly; campaigns have no defrag
//! setting) and `/proc/sys/vm/compaction_proactiveness` 0, so that
//! kcompactd does not compact the holes away in the background.
//!
//! Each task, before its window, soaks up every free 2 MiB block:
//! MADV_HUGEPAGE huge pages faulted one at a time until one needed direct
//! compaction (`/proc/vmstat` `compact_stall` moved). In the window each
//! operation maps `size` aligned to 2 MiB, advises it MADV_HUGEPAGE and
//! writes one byte in each 2 MiB: every fault finds no free 2 MiB block
//! and compacts, migrating the used half of a fragmented block into the
//! free half of another, and maps the block it freed. The operation checks
//! that each 2 MiB is a huge page (`/proc/self/pagemap` and
//! `/proc/kpageflags`' KPF_THP) and fails if a fault fell back to base
//! pages. It keeps its mappings until the task ends: a huge page unmapped
//! in the window would go back to the free lists whole and serve the next
//! fault without compaction (the next sample's soak takes them).
//!
//! Why once per boot: compaction marks the pageblocks it scanned in vain
//! (PG_migrate_skip), and only kswapd going to sleep clears the marks,
//! which nothing here wakes. Memory fragmented afresh each sample lands in
//! blocks an earlier sample marked, and async compaction skips them and
//! fails; the boot's one fragmented range is scanned once, block after
//! block, each compaction resuming where the last stopped. Each huge page
//! uses up two of its blocks (the one emptied, the one whose holes took
//! its pages), so `fragment` / 4 MiB huge pages fit in a boot before the
//! scanners meet. Spec: `workloads/thp-fragmented.yaml`.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use serde::{Deserialize, Serialize};

use super::page_fault_anon::THP_SIZE;
use crate::bench::sys::{Map, page_size, read_file, write_file};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;
use crate::memory::SwapBackend;

const DEFRAG: &str = "/sys/kernel/mm/transparent_hugepage/defrag";
const PROACTIVENESS: &str = "/proc/sys/vm/compaction_proactiveness";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ThpFragmented {
    pub tasks: u32,
    pub ops: u32,
    /// The huge pages each operation faults (a whole number of 2 MiB).
    pub size: Bytes,
    /// The memory the agent fragments once per boot: half of it stays in
    /// use, the other half is the holes compaction fills. Once the free
    /// 2 MiB blocks are soaked up the holes are nearly all the free
    /// memory, and direct compaction runs only while free memory is above
    /// the low watermark plus twice the huge page (`compaction_suitable`);
    /// with THP on, khugepaged raises `min_free_kbytes` to about 44 MiB on
    /// a 1 GiB guest (low watermark about 55 MiB). 448 MiB (about the
    /// most a 1 GiB guest's half holds) leaves 224 MiB of holes and room
    /// for 112 huge pages before the scanners meet; each sample takes the
    /// default's 12 and the soak's one for good, so free memory stays
    /// above 59 MiB through a warm-up and 5 samples.
    pub fragment: Bytes,
}

impl Default for ThpFragmented {
    fn default() -> Self {
        ThpFragmented {
            tasks: 1,
            ops: 12,
            size: Bytes::mib(2),
            fragment: Bytes::mib(448),
        }
    }
}

impl Kind for ThpFragmented {
    /// Its soak maps as much as MemTotal before faulting any of it, which
    /// the kernel's default overcommit heuristic allows only with swap
    /// beside memory (without it: ENOMEM, 2026-12-08).
    fn swap_backend(&self) -> SwapBackend {
        SwapBackend::Disk
    }

    fn describe(&self) -> String {
        format!("size={} fragment={}", self.size, self.fragment)
    }
}

impl Bench for ThpFragmented {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_held("fragment", self.fragment, 1, guest)?;
        if self.fragment.bytes() % THP_SIZE != 0 {
            return Err(ParamError::new(
                "fragment",
                self.fragment,
                "must be a whole number of 2 MiB blocks",
            ));
        }
        if self.size.bytes() == 0 || self.size.bytes() % THP_SIZE != 0 {
            return Err(ParamError::new(
                "size",
                self.size,
                "must be a whole number of 2 MiB huge pages",
            ));
        }
        // Each huge page uses up two of the fragment's blocks, so
        // fragment / 2 of huge pages fit in a boot; a sample's may be an
        // eighth of that, so that a boot's warm-up and samples fit.
        let sample = self.size.get() * u64::from(self.ops) * u64::from(self.tasks);
        if sample > self.fragment.get() / 16 {
            return Err(ParamError::new(
                "size",
                self.size,
                format!(
                    "times ops ({}) times tasks ({}) must be at most a sixteenth of fragment ({}): a boot's samples must fit before compaction's scanners meet",
                    self.ops, self.tasks, self.fragment
                ),
            ));
        }
        Ok(())
    }

    fn prepare(&self) -> io::Result<()> {
        write_file(DEFRAG, "madvise")?;
        let mode = read_file(DEFRAG)?;
        if !mode.contains("[madvise]") {
            return Err(io::Error::other(format!(
                "{DEFRAG} reads {mode:?} after writing madvise"
            )));
        }
        write_file(PROACTIVENESS, "0")?;
        let page = page_size();
        let mut fragment = Map::anon_aligned(self.fragment.bytes(), THP_SIZE)?;
        fragment.advise(libc::MADV_NOHUGEPAGE)?;
        fragment.advise(libc::MADV_DONTFORK)?;
        fragment.touch(page);
        for block in (0..fragment.len).step_by(THP_SIZE) {
            fragment.advise_range(block, THP_SIZE / 2, libc::MADV_DONTNEED)?;
        }
        // Held by the agent until the guest powers off.
        std::mem::forget(fragment);
        Ok(())
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        let soak = soak_free_huge_pages()?;
        Ok(Box::new(Faulter {
            len: self.size.bytes(),
            flags: PageFlags::open()?,
            _soak: soak,
            faulted: Vec::with_capacity(self.ops as usize),
        }))
    }
}

/// Faults MADV_HUGEPAGE huge pages one at a time until one needed direct
/// compaction, or fell back to base pages: then no free 2 MiB block is
/// left. Its mapping reserves as much address space as the guest has
/// memory, of which it faults only what it takes.
fn soak_free_huge_pages() -> io::Result<Map> {
    let total = guest_memory()?;
    let soak = Map::anon_aligned(total.next_multiple_of(THP_SIZE), THP_SIZE)?;
    soak.advise(libc::MADV_HUGEPAGE)?;
    let mut off = 0;
    while off < soak.len {
        let before = (vmstat("compact_stall")?, vmstat("thp_fault_fallback")?);
        // SAFETY: inside the mapping, which is writable.
        unsafe { soak.ptr.add(off).write_volatile(1) };
        let after = (vmstat("compact_stall")?, vmstat("thp_fault_fallback")?);
        if after != before {
            return Ok(soak);
        }
        off += THP_SIZE;
    }
    // Every 2 MiB of the guest's memory was free: impossible, and a
    // window that would then compact nothing.
    Err(io::Error::other(
        "faulted the guest's whole memory in huge pages without compaction",
    ))
}

/// What explains a fallback: free memory, compaction's counters and the
/// free blocks of each order.
fn memory_state() -> String {
    let free = read_file("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemFree:"))
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_default();
    let counters: Vec<String> = read_file("/proc/vmstat")
        .unwrap_or_default()
        .lines()
        .filter(|l| {
            l.starts_with("compact_") || l.starts_with("thp_fault") || l.starts_with("pgsteal")
        })
        .map(str::to_string)
        .collect();
    let buddy = read_file("/proc/buddyinfo").unwrap_or_default();
    format!(
        "MemFree {free}; {}; buddyinfo {}",
        counters.join(", "),
        buddy.lines().collect::<Vec<_>>().join(" | ")
    )
}

fn guest_memory() -> io::Result<usize> {
    let text = read_file("/proc/meminfo")?;
    text.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map(|kib| kib << 10)
        .ok_or_else(|| io::Error::other("/proc/meminfo has no MemTotal"))
}

/// One event counter of `/proc/vmstat`.
pub fn vmstat(name: &str) -> io::Result<u64> {
    let text = read_file("/proc/vmstat")?;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| io::Error::other(format!("/proc/vmstat has no {name}")))
}

/// `/proc/self/pagemap` and `/proc/kpageflags`, open: whether an address
/// is mapped by a transparent huge page. PFNs need CAP_SYS_ADMIN, which
/// the agent has.
struct PageFlags {
    pagemap: File,
    kpageflags: File,
}

/// `KPF_THP` of `include/uapi/linux/kernel-page-flags.h`.
const KPF_THP: u64 = 1 << 22;
/// A pagemap entry's present bit and its PFN's bits.
const PM_PRESENT: u64 = 1 << 63;
const PM_PFN: u64 = (1 << 55) - 1;

impl PageFlags {
    fn open() -> io::Result<PageFlags> {
        let open = |path: &str| {
            File::open(path).map_err(|e| io::Error::new(e.kind(), format!("opening {path}: {e}")))
        };
        Ok(PageFlags {
            pagemap: open("/proc/self/pagemap")?,
            kpageflags: open("/proc/kpageflags")?,
        })
    }

    fn is_thp(&self, addr: usize) -> io::Result<bool> {
        let mut entry = [0u8; 8];
        let index = (addr / page_size()) as u64;
        self.pagemap.read_exact_at(&mut entry, index * 8)?;
        let entry = u64::from_ne_bytes(entry);
        if entry & PM_PRESENT == 0 || entry & PM_PFN == 0 {
            return Ok(false);
        }
        let mut flags = [0u8; 8];
        self.kpageflags
            .read_exact_at(&mut flags, (entry & PM_PFN) * 8)?;
        Ok(u64::from_ne_bytes(flags) & KPF_THP != 0)
    }
}

struct Faulter {
    len: usize,
    flags: PageFlags,
    _soak: Map,
    /// This sample's huge pages, unmapped when the task ends.
    faulted: Vec<Map>,
}

impl Task for Faulter {
    fn op(&mut self) -> io::Result<()> {
        let mut map = Map::anon_aligned(self.len, THP_SIZE)?;
        map.advise(libc::MADV_HUGEPAGE)?;
        map.touch(THP_SIZE);
        for off in (0..self.len).step_by(THP_SIZE) {
            if !self.flags.is_thp(map.ptr as usize + off)? {
                return Err(io::Error::other(format!(
                    "the fault at +{off:#x} mapped base pages: compaction made no 2 MiB block ({})",
                    memory_state()
                )));
            }
        }
        self.faulted.push(map);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GUEST: GuestSize = GuestSize {
        online_cpus: 2,
        memory: 1 << 30,
    };

    #[test]
    fn a_boots_samples_fit_in_the_fragment() {
        assert!(ThpFragmented::default().check(GUEST).is_ok());
        let over = ThpFragmented {
            tasks: 2,
            ..ThpFragmented::default()
        };
        let e = over.check(GUEST).unwrap_err();
        assert_eq!(e.param, "size");
        assert!(e.problem.contains("a sixteenth of fragment"), "{e:?}");
        let odd = ThpFragmented {
            size: Bytes::mib(3),
            ..ThpFragmented::default()
        };
        assert!(odd.check(GUEST).unwrap_err().problem.contains("2 MiB"));
    }

    #[test]
    fn vmstat_counters_are_read_by_their_whole_name() {
        // `nr_free_pages` is a prefix of `nr_free_pages_blocks` on some
        // kernels: the name must be followed by its value.
        assert!(vmstat("nr_free_pages").is_ok());
        assert!(vmstat("nr_free").is_err());
    }
}
