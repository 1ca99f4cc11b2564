//! The ReclaimRefault workload (seed 003, Yosry Ahmed's
//! `stress_reclaim_refault.sh`): `cgroups` cgroups, each with `memory.max`
//! at a quarter of `file_mib`; per sample one worker in each writes a tmpfs
//! file of `file_mib` MiB (reclaim: the file is 4x the limit) and reads it
//! back (refaults), all at once. Swap is zram when the job asks for it (set
//! up at boot, see [`crate::setup::zram`]).
//!
//! Setup, untimed: the parent `/sys/fs/cgroup/patchbench-refault` and its
//! children with their limits, a tmpfs. Timed: from the start of every
//! worker (gate 0, after fork and cgroup migration) to the last one's end,
//! wall clock (`real`) and the workers' user and system CPU time
//! (`getrusage(RUSAGE_CHILDREN)`, like `time` on the script); that span is
//! the cost model's `run` phase. The files are
//! deleted after each sample, outside the timing. The parent's
//! `memory.stat` before and after gives pgscan, pgsteal, refaults and the
//! faults; `/proc/vmstat` the pages swapped in and out (the guest has no
//! other swapper); the mTHP per-size stats under
//! `/sys/kernel/mm/transparent_hugepage/hugepages-*kB/stats/` the large
//! folios faulted in and swapped out whole.
//!
//! With `memory: anon` a worker fills a private anonymous mapping instead
//! of a tmpfs file and reads every page back, checking it: with mTHP sizes
//! enabled its faults allocate large folios, reclaim swaps them out whole,
//! and the re-reads swap them in through `do_swap_page()`, large when
//! `alloc_swap_folio()` allows it (seed 004's mechanism). `limit_percent`
//! sets `memory.max` (25, the seed's quarter, by default). `reread: random`
//! reads the pages back in a fixed random order (every page once, the
//! permutation drawn from [`REREAD_SEED`]) instead of in address order, so
//! that a large folio swapped in brings pages that are not read soon.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use patchbench_agent::marker::Phase;
use patchbench_agent::{Limit, REREAD_SEED, RefaultMemory, RefaultOrder};

use crate::cgroup;
use crate::console;
use crate::cpustat;
use crate::error::{Context, Error, Result, bail};
use crate::mark;
use crate::pageout::{counter_delta, emit, read_stat};
use crate::pattern;
use crate::port::Port;
use crate::report::Fields;
use crate::setup;
use crate::spawn::{self, Gate, Slot};
use crate::swapstat::{self, SwapCounters};
use crate::sys::{self, Mapping};

const CGROUP: &str = "patchbench-refault";
const TMPFS: &str = "/tmp/patchbench-refault";
const MIB: u64 = 1 << 20;
/// Writes and reads go in chunks this big: the worker's own buffers are
/// charged to its small cgroup too.
const CHUNK: usize = 64 << 10;

/// The workload's parameters, as the job gives them.
pub struct Params {
    pub cgroups: u32,
    pub file_mib: u64,
    pub memory: RefaultMemory,
    /// `memory.max` as a percentage of `file_mib`.
    pub limit_percent: u8,
    /// The order anonymous memory is read back in.
    pub reread: RefaultOrder,
}

/// Sets up the cgroups once, then runs and reports every sample.
pub fn run(params: &Params, warmups: u32, samples: u32, port: &mut Port) -> Result<()> {
    if params.cgroups == 0 || params.file_mib == 0 {
        bail!("cgroups and file_mib must be at least 1");
    }
    if !(1..=100).contains(&params.limit_percent) {
        bail!("limit_percent {} is not 1 to 100", params.limit_percent);
    }
    if params.reread == RefaultOrder::Random && params.memory != RefaultMemory::Anon {
        bail!("reread: random needs memory: anon");
    }
    let (parent, children) = cgroup::tree(CGROUP, params.cgroups)?;
    let limit = Limit::Bytes(limit_bytes(
        params.file_mib,
        params.limit_percent,
        sys::page_size() as u64,
    ));
    let mut shown = String::new();
    for dir in &children {
        shown = cgroup::set_limit(dir, "memory.max", limit)?;
    }
    setup::mount_on(
        "tmpfs",
        Path::new(TMPFS),
        "tmpfs",
        libc::MS_NOSUID | libc::MS_NODEV,
        None,
    )?;
    console::say(format!(
        "reclaim-refault: {} cgroups {}/cg* memory.max={shown}, {} MiB {} each",
        params.cgroups,
        parent.display(),
        params.file_mib,
        match params.memory {
            RefaultMemory::Tmpfs => format!("file on {TMPFS}"),
            RefaultMemory::Anon => format!(
                "of anonymous memory, read back in {} order",
                match params.reread {
                    RefaultOrder::Sequential => "address",
                    RefaultOrder::Random => "a fixed random",
                }
            ),
        }
    ));
    let procs: Vec<PathBuf> = children.iter().map(|d| d.join("cgroup.procs")).collect();
    let slots: Vec<Slot> = procs
        .iter()
        .map(|p| Slot {
            cpu: None,
            cgroup_procs: Some(p),
        })
        .collect();
    let stat = parent.join("memory.stat");
    let file_mib = params.file_mib;
    let memory = params.memory;
    let reread = params.reread;
    let body = |index: usize, _: &mut Gate| -> Result<Fields> {
        match memory {
            RefaultMemory::Tmpfs => write_and_read(index, file_mib),
            RefaultMemory::Anon => fill_and_check(file_mib, reread),
        }
    };
    let total = warmups + samples;
    for index in 0..total {
        let during = || format!("sample {index}");
        let before = Counters::read(&stat, memory).with_context(during)?;
        let meter = cpustat::Meter::start(cpustat::Whose::Children).with_context(during)?;
        let mut start = 0;
        spawn::run_workers(&slots, &body, &mut |_| {
            start = sys::monotonic_ns().context("reading CLOCK_MONOTONIC")?;
            mark::begin(Phase::Run);
            Ok(())
        })
        .with_context(during)?;
        mark::end(Phase::Run);
        let end = sys::monotonic_ns().context("reading CLOCK_MONOTONIC")?;
        let cpu = meter.stop().with_context(during)?;
        let after = Counters::read(&stat, memory).with_context(during)?;
        if memory == RefaultMemory::Tmpfs {
            for i in 0..slots.len() {
                let path = file_path(i);
                std::fs::remove_file(&path)
                    .with_context(|| format!("removing {}", path.display()))
                    .with_context(during)?;
            }
        }
        let times = Times {
            real_ns: end - start,
            user_ns: cpu["user_ns"],
            sys_ns: cpu["sys_ns"],
        };
        let mut metrics = sample_metrics(times, &before, &after).with_context(during)?;
        metrics.extend(cpu);
        emit(port, index, warmups, total, metrics)?;
    }
    Ok(())
}

/// `memory.max` of each cgroup: `percent` of the file, in whole pages.
pub fn limit_bytes(file_mib: u64, percent: u8, page: u64) -> u64 {
    (file_mib * MIB * u64::from(percent) / 100) / page * page
}

fn file_path(index: usize) -> PathBuf {
    Path::new(TMPFS).join(format!("tmp{index}"))
}

/// A worker's timed body: write the file in 64 KiB chunks of compressible,
/// page-unique content (not zero pages, which 6.12's swap skips), then read
/// it all back.
fn write_and_read(index: usize, file_mib: u64) -> Result<Fields> {
    let path = file_path(index);
    let mut file =
        File::create_new(&path).with_context(|| format!("creating {}", path.display()))?;
    let page = sys::page_size();
    let pages_per_chunk = CHUNK / page;
    let chunks = file_mib * MIB / CHUNK as u64;
    let mut words = vec![0u64; CHUNK / 8];
    let mut bytes = Vec::with_capacity(CHUNK);
    for c in 0..chunks {
        for (i, page_words) in words.chunks_exact_mut(page / 8).enumerate() {
            pattern::fill_page(c * pages_per_chunk as u64 + i as u64, page_words);
        }
        bytes.clear();
        bytes.extend(words.iter().flat_map(|w| w.to_ne_bytes()));
        file.write_all(&bytes)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let mut read = 0u64;
    for c in 0..chunks {
        let n = file
            .read_at(&mut bytes, c * CHUNK as u64)
            .with_context(|| format!("reading {}", path.display()))?;
        read += n as u64;
    }
    if read != file_mib * MIB {
        bail!(
            "read {read} bytes back from {}, wrote {file_mib} MiB",
            path.display()
        );
    }
    Ok(Fields::new())
}

/// A worker's timed body with `memory: anon`: map `file_mib` MiB of private
/// anonymous memory (no madvise: the mTHP sizes' `enabled` decide the
/// folio size of each fault), fill every page with the same compressible,
/// page-unique content as the files, then read every page back in `order`
/// and check it, and unmap it.
fn fill_and_check(file_mib: u64, order: RefaultOrder) -> Result<Fields> {
    let page_words = sys::page_size() / 8;
    let len = usize::try_from(file_mib * MIB)
        .map_err(|_| Error::msg(format!("bad region size {file_mib} MiB")))?;
    let pages = len / (page_words * 8);
    // Drawn before the fill, so the permutation's own memory is charged
    // before the region's pages are.
    let reread = reread_order(pages, order);
    let mut map = Mapping::anonymous(len).with_context(|| format!("mmap of {file_mib} MiB"))?;
    for (index, page) in map.words_mut().chunks_exact_mut(page_words).enumerate() {
        pattern::fill_page(index as u64, page);
    }
    let words = map.words();
    for index in reread {
        let page = &words[index * page_words..(index + 1) * page_words];
        if let Err(m) = pattern::check_page_mixed(index as u64, page, 0) {
            bail!(
                "page {index} of the anonymous region is corrupt after swap-in: word {} is {:#x}, expected {:#x}",
                m.word,
                m.found,
                m.expected
            );
        }
    }
    map.unmap().context("munmap")?;
    Ok(Fields::new())
}

/// The page indices `0..pages` in the order they are read back: address
/// order, or a Fisher-Yates shuffle driven by SplitMix64 from
/// [`REREAD_SEED`] (the same permutation every time).
pub fn reread_order(pages: usize, order: RefaultOrder) -> Vec<usize> {
    let mut indices: Vec<usize> = (0..pages).collect();
    if order == RefaultOrder::Random {
        let mut state = REREAD_SEED;
        for i in (1..pages).rev() {
            let j = (splitmix64(&mut state) % (i as u64 + 1)) as usize;
            indices.swap(i, j);
        }
    }
    indices
}

/// SplitMix64 (Steele, Lea and Flood, 2014): the next of a seeded sequence.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The counters read before and after a sample: the parent cgroup's
/// `memory.stat`, and with `memory: anon` the guest's swap counters (seed
/// 004's evidence; pswpin needs CONFIG_VM_EVENT_COUNTERS, which the tiny
/// kernels of other campaigns leave out).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    pub memcg: BTreeMap<String, u64>,
    pub swap: Option<SwapCounters>,
}

impl Counters {
    fn read(memcg_stat: &Path, memory: RefaultMemory) -> Result<Counters> {
        Ok(Counters {
            memcg: read_stat(memcg_stat)?,
            swap: match memory {
                RefaultMemory::Anon => Some(SwapCounters::read()?),
                RefaultMemory::Tmpfs => None,
            },
        })
    }
}

/// A timed run's wall-clock and children's CPU times, in ns (what `time`
/// reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Times {
    pub real_ns: u64,
    pub user_ns: u64,
    pub sys_ns: u64,
}

/// One sample's metrics (names and units as in `workloads/reclaim-refault.yaml`).
pub fn sample_metrics(
    times: Times,
    before: &Counters,
    after: &Counters,
) -> Result<BTreeMap<String, u64>> {
    let mut metrics = match (&before.swap, &after.swap) {
        (Some(b), Some(a)) => swapstat::metrics(b, a)?,
        _ => BTreeMap::new(),
    };
    let (before, after) = (&before.memcg, &after.memcg);
    let refault = counter_delta("workingset_refault_anon", before, after)?
        + counter_delta("workingset_refault_file", before, after)?;
    let pgscan = counter_delta("pgscan", before, after)?;
    if pgscan == 0 {
        bail!("nothing was scanned: the limits did not force reclaim");
    }
    metrics.extend([
        (
            "pgfault".to_string(),
            counter_delta("pgfault", before, after)?,
        ),
        (
            "pgmajfault".to_string(),
            counter_delta("pgmajfault", before, after)?,
        ),
        ("real_ns".to_string(), times.real_ns),
        ("user_ns".to_string(), times.user_ns),
        ("sys_ns".to_string(), times.sys_ns),
        ("pgscan".to_string(), pgscan),
        (
            "pgsteal".to_string(),
            counter_delta("pgsteal", before, after)?,
        ),
        ("workingset_refault".to_string(), refault),
    ]);
    Ok(metrics)
}

impl crate::run::Run for patchbench_agent::kinds::reclaim_refault::ReclaimRefault {
    fn run(&self, boot: crate::run::Boot<'_>) -> Result<()> {
        let params = Params {
            cgroups: self.cgroups,
            file_mib: self.file_mib,
            memory: self.memory,
            limit_percent: self.limit_percent,
            reread: self.reread,
        };
        run(&params, boot.warmups, boot.samples, boot.port).context("reclaim-refault")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(scan: u64, steal: u64, anon: u64, file: u64, scale: u64) -> Counters {
        let memcg = BTreeMap::from([
            ("pgscan".to_string(), scan),
            ("pgsteal".to_string(), steal),
            ("workingset_refault_anon".to_string(), anon),
            ("workingset_refault_file".to_string(), file),
            ("pgfault".to_string(), 100 * scale),
            ("pgmajfault".to_string(), 10 * scale),
        ]);
        Counters {
            memcg,
            swap: Some(swapstat::tests::counters(scale)),
        }
    }

    const TIMES: Times = Times {
        real_ns: 3,
        user_ns: 2,
        sys_ns: 1,
    };

    #[test]
    fn metrics_are_times_and_counter_deltas() {
        let m = sample_metrics(
            TIMES,
            &counters(10, 5, 1, 1, 1),
            &counters(110, 85, 41, 2, 2),
        )
        .unwrap();
        let got: Vec<(&str, u64)> = m.iter().map(|(k, &v)| (k.as_str(), v)).collect();
        assert_eq!(
            got,
            [
                // Summed over every size (16 + 32 + 64 + 128) x base.
                ("mthp_fault_alloc", 240),
                ("mthp_swpout", 480),
                // One size each: 2 x kib.
                ("mthp_swpout_16k", 32),
                ("mthp_swpout_32k", 64),
                ("mthp_swpout_64k", 128),
                ("mthp_swpout_fallback", 720),
                ("pgfault", 100),
                ("pgmajfault", 10),
                ("pgscan", 100),
                ("pgsteal", 80),
                ("pswpin", 40),
                ("pswpout", 50),
                ("real_ns", 3),
                ("sys_ns", 1),
                ("user_ns", 2),
                ("workingset_refault", 41),
            ]
        );
    }

    #[test]
    fn tmpfs_runs_report_no_swap_counters() {
        let mut before = counters(10, 5, 1, 1, 1);
        let mut after = counters(110, 85, 41, 2, 2);
        before.swap = None;
        after.swap = None;
        let m = sample_metrics(TIMES, &before, &after).unwrap();
        assert!(!m.contains_key("pswpin"), "{m:?}");
        assert!(!m.contains_key("mthp_swpout"), "{m:?}");
        assert_eq!(m["pgmajfault"], 10);
    }

    #[test]
    fn a_run_without_reclaim_is_an_error() {
        let same = counters(10, 5, 1, 1, 1);
        let err = sample_metrics(TIMES, &same, &same).unwrap_err();
        assert!(err.to_string().contains("nothing was scanned"), "{err}");
    }

    #[test]
    fn a_missing_counter_names_its_source() {
        let before = counters(10, 5, 1, 1, 1);
        let mut after = counters(110, 85, 41, 2, 2);
        after.swap.as_mut().unwrap().vmstat.remove("pswpin");
        let err = sample_metrics(TIMES, &before, &after).unwrap_err();
        assert_eq!(
            err.to_string(),
            "/proc/vmstat has no pswpin after the sample"
        );
        let mut after = counters(110, 85, 41, 2, 2);
        after.swap.as_mut().unwrap().mthp.remove("swpout@32");
        let err = sample_metrics(TIMES, &before, &after).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the mTHP stats has no swpout@32 after the sample"
        );
    }

    #[test]
    fn the_reread_order_is_every_page_once_and_repeatable() {
        assert_eq!(reread_order(5, RefaultOrder::Sequential), [0, 1, 2, 3, 4]);
        let random = reread_order(8192, RefaultOrder::Random);
        assert_eq!(random, reread_order(8192, RefaultOrder::Random));
        let mut sorted = random.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..8192).collect::<Vec<_>>());
        // Shuffled: few pages are followed by their address neighbour
        // (about 1 in 8192 by chance; in address order, all of them).
        let next = random.windows(2).filter(|w| w[1] == w[0] + 1).count();
        assert!(next < 10, "{next} pages are followed by the next page");
        // SplitMix64's first output from seed 0 (the reference
        // implementation's test vector).
        assert_eq!(splitmix64(&mut 0), 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn the_limit_is_a_percentage_of_the_file_in_whole_pages() {
        // The seed's quarter of 50 MiB.
        assert_eq!(limit_bytes(50, 25, 4096), 50 << 18);
        // 90% of 33 MiB is 31142707.2 bytes: 7603 whole pages.
        assert_eq!(limit_bytes(33, 90, 4096), 7603 * 4096);
        assert_eq!(limit_bytes(8, 100, 4096), 8 << 20);
    }
}
