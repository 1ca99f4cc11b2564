//! The wire protocol between the patchbench host and its guest agent.
//!
//! This crate is a contract of its own: the host (`patchbench`) and the guest
//! agent (this crate's binary, PID 1 inside the VM) are built from it, and a
//! change here is a protocol change (bump [`PROTOCOL_VERSION`]).
//!
//! Direction host → guest: one [`Job`], as JSON, in the initramfs at
//! [`JOB_PATH`]. Nothing is passed through the kernel command line or by
//! string interpolation into a script.
//!
//! Direction guest → host: one JSON [`Message`] per line on the virtio-serial
//! port named [`PORT_NAME`]. Every message is written the moment it exists, so
//! a sample measured before a crash is never lost.
//!
//! Direction guest → cost-model plugin: phase markers in the instruction
//! stream ([`marker`]).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub mod cputime;
pub mod marker;
pub mod sysfs;

/// Bumped on any incompatible change to [`Job`] or [`Message`].
///
/// 2: the `rstat-flush` and `reclaim-refault` workloads, `count_flushes` on
/// `zswap-pageout`, and [`GuestFacts::profiled_symbol`].
/// 3: control conditions in the same boot ([`Job::controls`] and
/// [`Sample::condition`]), [`Job::host_root`], the `kernel-build`
/// workload, and `random_percent` on `zswap-pageout`.
/// 4: runtime settings ([`Job::settings`], read back into
/// [`GuestFacts::settings`]).
/// 5: [`GuestFacts::cputime`] (how the kernel splits CPU time), and every
/// workload's samples carry the whole guest's CPU time by mode.
/// 6: [`GuestFacts::clocksource`], [`cputime::CputimeFacts::paravirt_steal`],
/// and every workload's samples carry the whole guest's steal time
/// (`guest_steal_ns`).
pub const PROTOCOL_VERSION: u32 = 6;

/// Where the host places the job description inside the initramfs.
pub const JOB_PATH: &str = "/patchbench/job.json";

/// The name of the virtio-serial port that carries [`Message`]s.
pub const PORT_NAME: &str = "org.patchbench.agent";

/// The 9p mount tag of the host's `/` in host-root mode ([`Job::host_root`]).
pub const HOST_ROOT_TAG: &str = "hostroot";

/// The `PATH` programs run with in the host root and in a kernel build's
/// staged root: a usual Debian one. The host traces the build with it, so
/// that the programs it finds are the ones the guest's build finds.
pub const HOST_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Everything the guest is asked to do during one boot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    pub protocol: u32,
    /// A human label for this boot, such as `A`, `B` or `A'` (for logs only).
    pub boot_label: String,
    pub swap: SwapSetup,
    pub zswap: ZswapSetup,
    pub thp: ThpMode,
    /// Samples run and discarded before the measured ones.
    pub warmups: u32,
    /// Samples measured and reported.
    pub samples: u32,
    /// Host-root mode: the host exports its `/` read-only over 9p (tag
    /// [`HOST_ROOT_TAG`]), and the agent mounts it under a tmpfs overlay, so
    /// workloads can run the host's programs (a compiler) on the host's
    /// files (a kernel tree) without writing to either.
    #[serde(default)]
    pub host_root: bool,
    pub workload: Workload,
    /// Control conditions, run in this same boot after the main workload's
    /// warm-ups and samples, in order, each with as many warm-ups and
    /// samples. Each is the main workload's kind with some parameters
    /// changed (the host checks that). Absent: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub controls: Vec<Control>,
    /// Files under `/sys` or `/proc/sys` and the values to write to them,
    /// in order, after the swap, zswap and THP setup and before the
    /// workload; each must read back ([`reads_back`]). Absent: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settings: Vec<Setting>,
    /// The boot's memory layout (`protocol.layouts: varied`): before the
    /// workload, the agent scatters the free page lists by a permutation
    /// drawn from this number (`layout::scatter`), so that this boot's
    /// allocations land on other physical pages than another layout's.
    /// Absent: the layout the boot's inputs give.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<u32>,
}

/// A runtime setting: a file under `/sys` or `/proc/sys` (the host checks
/// the path) and the text to write to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setting {
    pub path: String,
    pub value: String,
}

/// Whether the text `read` back from a setting's file shows the value
/// `written`: the same text; or, in a sysfs choice file, the value as the
/// bracketed choice (`always [madvise] never`); or, for a boolean module
/// parameter, the same truth (`Y` after `1`, `N` after `false`).
pub fn reads_back(written: &str, read: &str) -> bool {
    let (written, read) = (written.trim(), read.trim());
    if written == read || read.split_whitespace().any(|w| w == format!("[{written}]")) {
        return true;
    }
    let truth = |s: &str| match s.to_ascii_lowercase().as_str() {
        "1" | "y" | "yes" | "true" | "on" => Some(true),
        "0" | "n" | "no" | "false" | "off" => Some(false),
        _ => None,
    };
    matches!((truth(written), truth(read)), (Some(a), Some(b)) if a == b)
}

/// A control condition: a named variant of the main workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Control {
    /// A short name (letters, digits, `-`, `_`), unique in the job; it tags
    /// the control's samples ([`Sample::condition`]).
    pub name: String,
    pub workload: Workload,
}

impl Job {
    /// Every condition the boot runs, in order: the main workload (no
    /// name), then each control by name.
    pub fn conditions(&self) -> Vec<(Option<&str>, &Workload)> {
        std::iter::once((None, &self.workload))
            .chain(
                self.controls
                    .iter()
                    .map(|c| (Some(c.name.as_str()), &c.workload)),
            )
            .collect()
    }
}

/// The swap device the guest formats and enables before the workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwapSetup {
    /// A block device path, such as `/dev/vda` (the host attaches a sparse
    /// file as a virtio-blk disk).
    pub device: String,
}

/// zswap module parameters, written to `/sys/module/zswap/parameters` and
/// read back; a value that does not stick fails the boot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZswapSetup {
    pub enabled: bool,
    pub compressor: String,
    pub zpool: String,
    pub max_pool_percent: u32,
}

/// `/sys/kernel/mm/transparent_hugepage/enabled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThpMode {
    Never,
    Madvise,
    Always,
}

impl ThpMode {
    /// The word the kernel's sysfs file takes.
    pub fn sysfs_word(self) -> &'static str {
        match self {
            ThpMode::Never => "never",
            ThpMode::Madvise => "madvise",
            ThpMode::Always => "always",
        }
    }
}

/// A cgroup v2 limit: a byte count, or `max` for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limit {
    Bytes(u64),
    Max,
}

impl Limit {
    /// The text a cgroup v2 limit file takes.
    pub fn cgroup_value(self) -> String {
        match self {
            Limit::Bytes(n) => n.to_string(),
            Limit::Max => "max".to_string(),
        }
    }
}

/// The workload the agent runs, with its parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Workload {
    /// Seed 000: MADV_PAGEOUT over compressible anonymous memory in a private
    /// cgroup with a zswap limit.
    ZswapPageout {
        /// Worker processes, each pinned to its own online CPU.
        workers: u32,
        /// Anonymous memory per worker, in MiB.
        mib_per_worker: u64,
        /// Share of each page's words filled with random (incompressible)
        /// data, 0 to 100; the rest is a 16-byte repeating pattern. Left out
        /// of the JSON at 0, the content before protocol 3.
        #[serde(default, skip_serializing_if = "is_zero")]
        random_percent: u8,
        /// `memory.zswap.max` of the private cgroup.
        zswap_max: Limit,
        /// `memory.max` of the private cgroup.
        memory_max: Limit,
        /// `memory.swap.max` of the private cgroup.
        swap_max: Limit,
        /// Count the memcg stats flushes of each PAGEOUT with ftrace's function
        /// profiler (`pageout_flushes`). The profiler's hook adds a little
        /// time to every counted call. Absent (documents of protocol 1): off.
        #[serde(default)]
        count_flushes: bool,
        /// The swap device zswap sits in front of: the job's disk, or zram
        /// (no host I/O at all). Left out of the JSON for the disk, the
        /// only device before.
        #[serde(default = "disk", skip_serializing_if = "is_disk")]
        swap: SwapBackend,
        /// Compact memory (`/proc/sys/vm/compact_memory`) before each
        /// sample's timed pass, outside every clock and window, so that
        /// every sample allocates from compacted free memory. Left out of
        /// the JSON when off, the only behaviour before.
        #[serde(default, skip_serializing_if = "is_false")]
        compact: bool,
        /// Before each pass, outside every clock and window, free the last
        /// pass's workers' mms (the agent runs once on each worker CPU), and
        /// before each timed pass run every pending RCU callback
        /// (`rcutree.do_rcu_barrier`) and refresh the VM statistics
        /// (`/proc/sys/vm/stat_refresh`). Left out of the JSON when off,
        /// the only behaviour before.
        #[serde(default, skip_serializing_if = "is_false")]
        settle: bool,
    },
    /// Seed 002: `cgroups` cgroups each hold a process that keeps dirtying
    /// anon, file (tmpfs) and slab counters, while the agent reads their
    /// parent's `memory.stat` `reads` times per sample with `pread()`; the
    /// function profiler counts and times `mem_cgroup_css_rstat_flush`.
    RstatFlush {
        /// Child cgroups, one dirtying process in each.
        cgroups: u32,
        /// Anonymous memory and tmpfs file size each dirtier cycles through
        /// per round, in KiB.
        dirty_kib: u64,
        /// A dirtier sleeps this long between rounds (0: never).
        dirty_pause: Duration,
        /// `memory.stat` reads per sample.
        reads: u32,
        /// The swap device: the job's disk, or zram. The workload never
        /// swaps; with zram a boot has no disk, whose host-timed
        /// completions would make the cost lane's boots differ. Left out
        /// of the JSON for the disk, the only device before.
        #[serde(default = "disk", skip_serializing_if = "is_disk")]
        swap: SwapBackend,
        /// Each dirtier does one round when asked, before a sample, and none
        /// during it, instead of looping on its own (`dirtying: lockstep`):
        /// each sample's flushes then find the same pending updates. Left
        /// out of the JSON when off, the only way before.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        lockstep: bool,
    },
    /// Seed 003: `cgroups` cgroups, each with `memory.max` at a quarter of
    /// `file_mib`; a worker in each writes a tmpfs file of `file_mib` MiB and
    /// reads it back, all workers at once.
    ReclaimRefault {
        cgroups: u32,
        /// The tmpfs file (or anonymous region) each worker writes and reads
        /// back, in MiB.
        file_mib: u64,
        /// Where reclaimed pages go.
        swap: SwapBackend,
        /// What each worker fills and reads back: a tmpfs file (the seed's
        /// script) or anonymous memory (large-folio swap-in, seed 004).
        /// Left out of the JSON for tmpfs, the only memory before it existed.
        #[serde(default, skip_serializing_if = "RefaultMemory::is_tmpfs")]
        memory: RefaultMemory,
        /// Each cgroup's `memory.max` as a percentage of `file_mib`, 1 to
        /// 100. Left out of the JSON at 25, the seed's quarter.
        #[serde(
            default = "refault_quarter",
            skip_serializing_if = "is_refault_quarter"
        )]
        limit_percent: u8,
        /// The order anonymous memory is read back in (`memory: anon`
        /// only). Left out of the JSON when sequential, the only order
        /// before it existed.
        #[serde(default, skip_serializing_if = "RefaultOrder::is_sequential")]
        reread: RefaultOrder,
    },
    /// Seeds 001 and 004: build `targets` of a kernel tree with the host's
    /// toolchain, `make -j jobs` in a cgroup limited to `memory_max` with
    /// `memory.zswap.max` at `zswap_max`, from the staged root the boot's
    /// initramfs holds ([`kbuild_stage_archive`]). Each sample starts from
    /// the same state: a fresh tmpfs overlay over that root.
    KernelBuild {
        /// The make target that configured the tree (`defconfig`...).
        config: String,
        /// How the build is driven.
        driver: BuildDriver,
        /// The kernel source tree: an absolute host path.
        src: String,
        /// The out-of-tree build directory (`O=`) the host configured and
        /// prepared, without the targets' outputs: an absolute host path.
        build: String,
        /// `make` targets relative to the build directory, such as
        /// `mm/zswap.o`; each must exist after every sample.
        targets: Vec<String>,
        /// `make -j`.
        jobs: u32,
        /// `memory.max` of the build's cgroup.
        memory_max: Limit,
        /// `memory.zswap.max` of the build's cgroup.
        zswap_max: Limit,
        /// The swap device: the job's disk, or zram (synchronous, so 6.12
        /// swaps large folios back in from it). Left out of the JSON for
        /// the disk, the only device before.
        #[serde(default = "disk", skip_serializing_if = "is_disk")]
        swap: SwapBackend,
    },
    /// A deliberately broken guest, used to test the host's failure handling.
    GuestFault { fault: Fault },
    /// Run one command (`patchbench boot -- CMD`), its output on the
    /// console; a non-zero exit is a workload error. For debugging a kernel.
    Exec {
        /// The program and its arguments, run without a shell.
        argv: Vec<String>,
    },
}

/// How a [`Workload::KernelBuild`] sample builds its targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BuildDriver {
    /// `make O=<build> -j<jobs> <targets>` in the source tree: kbuild's
    /// whole machinery, as a developer types it.
    Kbuild,
    /// `make -f` [`RECORDED_MAKEFILE`] `-j<jobs>` in the build directory:
    /// only the compile commands kbuild recorded for the targets when the
    /// host built them. Under TCG kbuild's own start-up (its `$(shell)`
    /// probes, each a process) takes minutes; this runs just the compilers.
    Recorded,
}

/// The makefile the host writes into a prepared build directory for
/// [`BuildDriver::Recorded`].
pub const RECORDED_MAKEFILE: &str = "patchbench-targets.mk";

/// The staged root of the prepared build directory `build` (a host
/// path): every file a sample's build reads, toolchain and tree, under
/// their host paths, which the host writes beside the build directory and
/// the guest copies into its memory before the first sample.
pub fn kbuild_stage(build: &str) -> String {
    format!("{}.stage", build.trim_end_matches('/'))
}

/// The staged root of `build` as a newc cpio archive (a host path), its
/// members under [`KBUILD_STAGE_GUEST`]: the host appends it to every
/// boot's initramfs, so that the guest has the build's files in memory
/// from its first instruction and reads nothing over 9p.
pub fn kbuild_stage_archive(build: &str) -> String {
    format!("{}.cpio", kbuild_stage(build))
}

/// Where the kernel unpacks a kernel build's staged root in the guest.
pub const KBUILD_STAGE_GUEST: &str = "/kbuild-stage";

/// The command a kernel-build sample runs: its working directory and its
/// argv (`make` first), in host paths. The guest runs it in every sample;
/// the host runs it once, traced, to learn which files the build reads.
pub fn kbuild_command(
    driver: BuildDriver,
    src: &str,
    build: &str,
    jobs: u32,
    targets: &[String],
) -> (String, Vec<String>) {
    let jobs = format!("-j{jobs}");
    match driver {
        BuildDriver::Kbuild => {
            let mut argv = vec!["make".to_string(), format!("O={build}"), jobs];
            argv.extend(targets.iter().cloned());
            (src.to_string(), argv)
        }
        BuildDriver::Recorded => (
            build.to_string(),
            vec![
                "make".to_string(),
                "-f".to_string(),
                RECORDED_MAKEFILE.to_string(),
                jobs,
            ],
        ),
    }
}

fn is_false(value: &bool) -> bool {
    !value
}

fn is_zero(value: &u8) -> bool {
    *value == 0
}

/// What a [`Workload::ReclaimRefault`] worker writes and reads back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefaultMemory {
    /// A tmpfs file, written and read with write(2)/pread(2): shmem pages.
    #[default]
    Tmpfs,
    /// A private anonymous mapping, filled then read page by page: anon
    /// faults, and (with mTHP sizes enabled) large folios swapped out and
    /// back in.
    Anon,
}

impl RefaultMemory {
    fn is_tmpfs(&self) -> bool {
        *self == RefaultMemory::Tmpfs
    }
}

/// The order a [`Workload::ReclaimRefault`] worker reads its anonymous
/// memory back in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefaultOrder {
    /// Page 0, 1, 2...: each large folio swapped in brings the pages read
    /// next.
    #[default]
    Sequential,
    /// Every page once, in a random order drawn from [`REREAD_SEED`] (the
    /// same order in every sample, boot and kernel): a large folio swapped
    /// in mostly brings pages not read soon.
    Random,
}

impl RefaultOrder {
    fn is_sequential(&self) -> bool {
        *self == RefaultOrder::Sequential
    }
}

/// The seed of [`RefaultOrder::Random`]'s permutation: fixed, so the order
/// is repeatable (an arbitrary constant, "patchrer" in ASCII, fixed
/// before any run).
pub const REREAD_SEED: u64 = 0x7061_7463_6872_6572;

fn disk() -> SwapBackend {
    SwapBackend::Disk
}

fn is_disk(swap: &SwapBackend) -> bool {
    *swap == SwapBackend::Disk
}

/// The seed's `memory.max`: a quarter of each worker's file.
pub const REFAULT_QUARTER: u8 = 25;

fn refault_quarter() -> u8 {
    REFAULT_QUARTER
}

fn is_refault_quarter(value: &u8) -> bool {
    *value == REFAULT_QUARTER
}

/// The swap device a workload runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SwapBackend {
    /// The job's [`SwapSetup`] device (the host's virtio-blk disk).
    Disk,
    /// `/dev/zram0`, sized by the workload, instead of the job's device.
    Zram,
    /// [`RAM_SWAP_DEVICE`], a RAM block device (brd) in the guest's own
    /// memory, instead of the job's device: a disk that swaps without
    /// compressing, whose every read and write completes inside the guest,
    /// so no swap I/O of a window is timed by the host (the virtio disk's
    /// completions are, even under icount). The host boots the kernel with
    /// [`ram_swap_cmdline`]; the kernel needs `CONFIG_BLK_DEV_RAM`
    /// (`kconfigs/variants/ram-swap.config`). Its pages are the kernel's,
    /// charged to no cgroup, as a disk's blocks are to none.
    Ram,
}

/// The RAM block device a [`SwapBackend::Ram`] workload swaps on.
pub const RAM_SWAP_DEVICE: &str = "/dev/ram0";

/// The kernel parameters that make [`RAM_SWAP_DEVICE`] `bytes` large (brd
/// counts in KiB), and no other RAM disk.
pub fn ram_swap_cmdline(bytes: u64) -> Vec<String> {
    vec![
        "brd.rd_nr=1".to_string(),
        format!("brd.rd_size={}", bytes >> 10),
    ]
}

impl Workload {
    /// The swap device the workload needs.
    pub fn swap_backend(&self) -> SwapBackend {
        match self {
            Workload::ReclaimRefault { swap, .. }
            | Workload::KernelBuild { swap, .. }
            | Workload::ZswapPageout { swap, .. }
            | Workload::RstatFlush { swap, .. } => *swap,
            _ => SwapBackend::Disk,
        }
    }

    /// Whether the workload runs host programs, so needs [`Job::host_root`].
    pub fn needs_host_root(&self) -> bool {
        matches!(
            self,
            Workload::GuestFault {
                fault: Fault::HostIo
            }
        )
    }

    /// The cost-lane metric the host derives from the profiled function
    /// ([`Workload::profile_candidates`]), if the workload has one.
    pub fn per_call_cost(&self) -> Option<PerCallCost> {
        match self {
            // Seed 002 timed mem_cgroup_css_rstat_flush per call; this is
            // the same, in modeled cycles.
            Workload::RstatFlush { .. } => Some(PerCallCost {
                phase: "read_loop",
                calls: "flush_calls",
                metric: "flush_modeled_cycles",
            }),
            _ => None,
        }
    }

    /// Kernel functions to count with the function profiler, most wanted
    /// first: the first one the kernel can trace is used (and reported as
    /// [`GuestFacts::profiled_symbol`]). Empty: no profiling.
    pub fn profile_candidates(&self) -> &'static [&'static str] {
        match self {
            // In 6.12 obj_cgroup_may_zswap() calls do_flush_stats() directly;
            // cgroup_rstat_flush() is what it calls, should it be inlined.
            Workload::ZswapPageout {
                count_flushes: true,
                ..
            } => &["do_flush_stats", "cgroup_rstat_flush"],
            Workload::RstatFlush { .. } => &["mem_cgroup_css_rstat_flush"],
            _ => &[],
        }
    }
}

/// A cost-lane metric per call of the profiled function: its own modeled
/// cycles (its instructions and their misses, not its callees') in the
/// `phase` window, over the calls the agent's `calls` metric counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerCallCost {
    pub phase: &'static str,
    pub calls: &'static str,
    pub metric: &'static str,
}

/// What [`Workload::GuestFault`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    /// PID 1 exits, so the kernel panics ("Attempted to kill init").
    ExitInit,
    /// The agent stops answering forever; the host's run deadline must fire.
    Hang,
    /// The workload reports an error message.
    Fail,
    /// A timed window that reads the host over 9p (host-root mode), which
    /// the agent must refuse as a kernel build's would be.
    HostIo,
}

/// One line from the guest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Message {
    /// The agent is running and the channel works: the readiness signal.
    Hello {
        protocol: u32,
        agent_version: String,
    },
    /// What the guest looks like, after setup.
    Facts(Box<GuestFacts>),
    /// One measured (or warm-up) sample.
    Sample(Sample),
    /// The workload or the setup failed; the boot's results are unusable.
    Error { message: String },
    /// Every sample was sent; the agent is about to power off.
    Done,
}

/// Facts about the booted guest, read back after setup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuestFacts {
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v` (holds the build number and date).
    pub kernel_version: String,
    /// `/sys/devices/system/cpu/possible`, such as `0-19`.
    pub possible_cpus: String,
    /// `/sys/devices/system/cpu/online`, such as `0-1`.
    pub online_cpus: String,
    /// `MemTotal` from `/proc/meminfo`, in KiB.
    pub mem_total_kib: u64,
    /// The zswap parameters as read back from sysfs, by name.
    pub zswap: BTreeMap<String, String>,
    /// The THP mode line as read back, such as `always madvise [never]`.
    pub thp: String,
    /// `/proc/swaps`, without its header line.
    pub swaps: Vec<String>,
    /// The kernel function the function profiler counts for this workload
    /// (the first of [`Workload::profile_candidates`] found in
    /// `available_filter_functions`); `None` when nothing is profiled.
    #[serde(default)]
    pub profiled_symbol: Option<String>,
    /// Each of the job's [`Job::settings`] as read back after writing it,
    /// by path. Absent: none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, String>,
    /// How the kernel splits CPU time between user and system mode, from
    /// its own `/proc/config.gz` ([`cputime`]). Absent before protocol 5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cputime: Option<cputime::CputimeFacts>,
    /// The guest's clocksource
    /// (`/sys/devices/system/clocksource/clocksource0/current_clocksource`:
    /// `tsc`, `kvm-clock`, `hpet`); absent when the kernel does not say,
    /// and before protocol 6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clocksource: Option<String>,
}

/// One sample of a workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sample {
    /// 0-based, counting warm-ups first.
    pub index: u32,
    pub warmup: bool,
    /// Metric name → value. Units are part of the name's definition in the
    /// workload's spec (`workloads/<name>.yaml`); times are nanoseconds.
    pub metrics: BTreeMap<String, u64>,
    /// The control condition ([`Control::name`]) this sample measured;
    /// absent for the main workload (and in documents of protocol 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_lines_round_trip() {
        let msg = Message::Sample(Sample {
            index: 2,
            warmup: false,
            metrics: BTreeMap::from([("pageout_cpu_ns".to_string(), 17_180_000)]),
            condition: Some("unlimited".into()),
        });
        let line = serde_json::to_string(&msg).unwrap();
        assert!(!line.contains('\n'));
        assert_eq!(serde_json::from_str::<Message>(&line).unwrap(), msg);
    }

    #[test]
    fn main_samples_and_jobs_without_controls_keep_their_old_shape() {
        let json = r#"{"index":0,"warmup":false,"metrics":{}}"#;
        let sample: Sample = serde_json::from_str(json).unwrap();
        assert_eq!(sample.condition, None);
        assert_eq!(serde_json::to_string(&sample).unwrap(), json);
    }

    #[test]
    fn a_job_runs_its_main_workload_then_each_control() {
        let pageout = |zswap_max| Workload::ZswapPageout {
            workers: 1,
            mib_per_worker: 32,
            random_percent: 0,
            zswap_max,
            memory_max: Limit::Max,
            swap_max: Limit::Max,
            count_flushes: true,
            swap: SwapBackend::Disk,
            compact: false,
            settle: false,
        };
        let json = serde_json::json!({
            "protocol": PROTOCOL_VERSION, "boot_label": "A",
            "swap": {"device": "/dev/vda"},
            "zswap": {"enabled": true, "compressor": "lzo", "zpool": "zsmalloc", "max_pool_percent": 20},
            "thp": "never", "warmups": 1, "samples": 5,
            "workload": serde_json::to_value(pageout(Limit::Bytes(64 << 20))).unwrap(),
        });
        // The disk, the only device before, and compaction off, the only
        // behaviour before, stay out of the JSON.
        assert!(json["workload"].get("swap").is_none(), "{json}");
        assert!(json["workload"].get("compact").is_none(), "{json}");
        let mut job: Job = serde_json::from_value(json).unwrap();
        assert_eq!(job.conditions(), [(None, &job.workload)]);
        job.controls.push(Control {
            name: "unlimited".into(),
            workload: pageout(Limit::Max),
        });
        let back: Job = serde_json::from_str(&serde_json::to_string(&job).unwrap()).unwrap();
        assert_eq!(back, job);
        let names: Vec<_> = job.conditions().iter().map(|(n, _)| *n).collect();
        assert_eq!(names, [None, Some("unlimited")]);
        assert_eq!(job.conditions()[1].1, &pageout(Limit::Max));
    }

    #[test]
    fn job_rejects_unknown_fields() {
        let err = serde_json::from_str::<Job>(r#"{"protocol":1,"bogus":true}"#).unwrap_err();
        assert!(err.to_string().contains("bogus"), "{err}");
    }

    #[test]
    fn facts_without_a_profiled_symbol_still_parse() {
        let json = r#"{"kernel_release":"6.12","kernel_version":"v1","possible_cpus":"0-1",
            "online_cpus":"0-1","mem_total_kib":1,"zswap":{},"thp":"never","swaps":[]}"#;
        let facts: GuestFacts = serde_json::from_str(json).unwrap();
        assert_eq!(facts.profiled_symbol, None);
    }

    #[test]
    fn profiling_follows_the_workload() {
        let pageout = |count_flushes| Workload::ZswapPageout {
            workers: 1,
            mib_per_worker: 32,
            random_percent: 0,
            zswap_max: Limit::Max,
            memory_max: Limit::Max,
            swap_max: Limit::Max,
            count_flushes,
            swap: SwapBackend::Disk,
            compact: false,
            settle: false,
        };
        assert_eq!(pageout(true).profile_candidates()[0], "do_flush_stats");
        assert!(pageout(false).profile_candidates().is_empty());
        let refault = Workload::ReclaimRefault {
            cgroups: 4,
            file_mib: 16,
            swap: SwapBackend::Zram,
            memory: RefaultMemory::Tmpfs,
            limit_percent: REFAULT_QUARTER,
            reread: RefaultOrder::Sequential,
        };
        assert!(refault.profile_candidates().is_empty());
        assert_eq!(refault.swap_backend(), SwapBackend::Zram);
        assert_eq!(pageout(true).swap_backend(), SwapBackend::Disk);
        let mut on_zram = pageout(true);
        if let Workload::ZswapPageout { swap, .. } = &mut on_zram {
            *swap = SwapBackend::Zram;
        }
        assert_eq!(on_zram.swap_backend(), SwapBackend::Zram);
    }

    #[test]
    fn limit_renders_cgroup_text() {
        assert_eq!(Limit::Bytes(67_108_864).cgroup_value(), "67108864");
        assert_eq!(Limit::Max.cgroup_value(), "max");
    }
}
