//! Workloads on the host: the campaign's `workload:` section
//! ([`WorkloadConfig`]), validated against the guest's shape into a
//! [`Planned`] workload, made ready to run by preparation into a
//! [`Prepared`] one (which is what the guest agent gets), and the specs of
//! each guest workload, read from `workloads/<name>.yaml`. The report takes
//! metric names, units and directions from the specs, so the documentation
//! and the tables cannot drift.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use bytesize::ByteSize;
use patchbench_agent::{
    BuildDriver, Fault, REFAULT_QUARTER, RefaultMemory, RefaultOrder, SwapBackend, Workload,
};
use serde::{Deserialize, Deserializer};

use crate::model::guest::size_text;
pub use crate::model::{Direction, Unit};
use crate::model::{GuestShape, Limit};

mod spec;
pub mod steal;
pub use spec::{
    Counted, MetricLane, MetricSpec, ParamSpec, Scope, TasksSpec, WorkloadSpec, spec_for_kind,
};
#[cfg(test)]
use spec::{KERNEL_BUILD, RECLAIM_REFAULT, RSTAT_FLUSH, ZSWAP_PAGEOUT};

/// The campaign's `workload:` section. Every parameter is documented, with
/// its default and unit, in the workload's spec (`workloads/<kind>.yaml`).
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum WorkloadConfig {
    ZswapPageout {
        #[serde(deserialize_with = "workers", default = "one")]
        workers: u32,
        /// Written as a whole number of MiB (the key names the unit).
        #[serde(deserialize_with = "mib_per_worker")]
        mib_per_worker: ByteSize,
        #[serde(deserialize_with = "random_percent", default)]
        random_percent: u8,
        #[serde(deserialize_with = "zswap_max")]
        zswap_max: Limit,
        #[serde(deserialize_with = "memory_max", default = "max")]
        memory_max: Limit,
        #[serde(deserialize_with = "swap_max", default = "max")]
        swap_max: Limit,
        #[serde(deserialize_with = "count_flushes", default = "yes")]
        count_flushes: bool,
        #[serde(deserialize_with = "swap", default = "disk")]
        swap: SwapBackend,
        #[serde(deserialize_with = "compact", default)]
        compact: bool,
        #[serde(deserialize_with = "settle", default)]
        settle: bool,
    },
    RstatFlush {
        #[serde(deserialize_with = "cgroups", default = "eight_per_cpu")]
        cgroups: CgroupCount,
        #[serde(deserialize_with = "dirty_size", default = "default_dirty_size")]
        dirty_size: ByteSize,
        #[serde(deserialize_with = "dirty_pause", default = "default_dirty_pause")]
        dirty_pause: Duration,
        #[serde(deserialize_with = "reads", default = "default_reads")]
        reads: u32,
        #[serde(deserialize_with = "swap", default = "disk")]
        swap: SwapBackend,
        #[serde(deserialize_with = "dirtying", default)]
        dirtying: Dirtying,
    },
    ReclaimRefault {
        #[serde(deserialize_with = "cgroups", default = "two_per_cpu")]
        cgroups: CgroupCount,
        #[serde(deserialize_with = "file_size", default = "default_file_size")]
        file_size: ByteSize,
        #[serde(deserialize_with = "swap", default = "zram")]
        swap: SwapBackend,
        #[serde(deserialize_with = "memory", default)]
        memory: RefaultMemory,
        #[serde(deserialize_with = "limit_percent", default = "quarter")]
        limit_percent: u8,
        #[serde(deserialize_with = "reread", default)]
        reread: RefaultOrder,
    },
    KernelBuild {
        #[serde(deserialize_with = "config", default = "defconfig")]
        config: BuildConfig,
        #[serde(deserialize_with = "driver", default = "kbuild")]
        driver: BuildDriver,
        #[serde(deserialize_with = "targets", default = "vmlinux")]
        targets: Vec<String>,
        #[serde(deserialize_with = "jobs", default)]
        jobs: Option<u32>,
        #[serde(deserialize_with = "memory_max", default = "quarter_gib")]
        memory_max: Limit,
        #[serde(deserialize_with = "zswap_max", default = "max")]
        zswap_max: Limit,
        #[serde(deserialize_with = "swap", default = "disk")]
        swap: SwapBackend,
    },
    GuestFault {
        fault: Fault,
    },
}

/// How rstat-flush's dirtiers run against the read loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dirtying {
    /// Each loops on its own, `dirty_pause` apart, through the read loop
    /// (the seed's shape).
    #[default]
    Concurrent,
    /// Each does one round before a sample and none during it: each
    /// sample's flushes find the same pending updates.
    Lockstep,
}

/// Deserializers that put the parameter's name in the error (the YAML
/// library's own errors give only a line and a column).
macro_rules! named {
    ($($name:ident: $ty:ty = $inner:expr;)*) => {$(
        fn $name<'de, D: Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
            $inner(d).map_err(|e| {
                serde::de::Error::custom(format!(concat!("workload.", stringify!($name), ": {}"), e))
            })
        }
    )*};
}

named! {
    workers: u32 = u32::deserialize;
    mib_per_worker: ByteSize = |d| u64::deserialize(d).map(ByteSize::mib);
    random_percent: u8 = u8::deserialize;
    zswap_max: Limit = limit;
    memory_max: Limit = limit;
    swap_max: Limit = limit;
    count_flushes: bool = bool::deserialize;
    compact: bool = bool::deserialize;
    settle: bool = bool::deserialize;
    cgroups: CgroupCount = CgroupCount::deserialize;
    dirty_size: ByteSize = ByteSize::deserialize;
    dirty_pause: Duration = humantime_serde::deserialize;
    reads: u32 = u32::deserialize;
    file_size: ByteSize = ByteSize::deserialize;
    swap: SwapBackend = SwapBackend::deserialize;
    dirtying: Dirtying = Dirtying::deserialize;
    memory: RefaultMemory = RefaultMemory::deserialize;
    limit_percent: u8 = u8::deserialize;
    reread: RefaultOrder = RefaultOrder::deserialize;
    config: BuildConfig = BuildConfig::deserialize;
    driver: BuildDriver = BuildDriver::deserialize;
    targets: Vec<String> = Vec::<String>::deserialize;
    jobs: Option<u32> = Option::<u32>::deserialize;
}

/// A number of cgroups: `16`, or `2 per cpu` (times the guest's online CPUs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupCount {
    Total(u32),
    PerCpu(u32),
}

impl CgroupCount {
    pub fn resolve(self, online_cpus: u32) -> u32 {
        match self {
            CgroupCount::Total(n) => n,
            CgroupCount::PerCpu(n) => n.saturating_mul(online_cpus),
        }
    }

    pub fn parse(text: &str) -> Result<CgroupCount, String> {
        let bad = || format!("`{text}` is neither a count such as `16` nor `N per cpu`");
        let words: Vec<&str> = text.split_whitespace().collect();
        match words.as_slice() {
            [n] => n.parse().map(CgroupCount::Total).map_err(|_| bad()),
            [n, "per", "cpu"] => n.parse().map(CgroupCount::PerCpu).map_err(|_| bad()),
            _ => Err(bad()),
        }
    }
}

impl<'de> Deserialize<'de> for CgroupCount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u32),
            Text(String),
        }
        match Raw::deserialize(d) {
            Ok(Raw::Number(n)) => Ok(CgroupCount::Total(n)),
            Ok(Raw::Text(text)) => CgroupCount::parse(&text).map_err(serde::de::Error::custom),
            Err(_) => Err(serde::de::Error::custom(
                "expected a count such as `16` or `N per cpu`",
            )),
        }
    }
}

/// A workload parameter that cannot run on this VM.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("workload.{param} ({value}) {problem}")]
pub struct WorkloadError {
    pub param: &'static str,
    pub value: String,
    pub problem: String,
}

fn one() -> u32 {
    1
}

fn yes() -> bool {
    true
}

fn max() -> Limit {
    Limit::Max
}

fn eight_per_cpu() -> CgroupCount {
    CgroupCount::PerCpu(8)
}

fn two_per_cpu() -> CgroupCount {
    CgroupCount::PerCpu(2)
}

fn default_dirty_size() -> ByteSize {
    ByteSize::kib(256)
}

fn default_dirty_pause() -> Duration {
    Duration::from_millis(1)
}

fn default_reads() -> u32 {
    1000
}

fn default_file_size() -> ByteSize {
    ByteSize::mib(50)
}

fn defconfig() -> BuildConfig {
    BuildConfig::Defconfig
}

fn kbuild() -> BuildDriver {
    BuildDriver::Kbuild
}

fn vmlinux() -> Vec<String> {
    vec!["vmlinux".into()]
}

fn quarter_gib() -> Limit {
    Limit::Size(ByteSize::mib(256))
}

/// The configuration the kernel-build workload's tree is made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BuildConfig {
    Defconfig,
    Tinyconfig,
    Allnoconfig,
}

impl BuildConfig {
    /// The make target that configures the tree.
    pub fn make_target(self) -> &'static str {
        match self {
            BuildConfig::Defconfig => "defconfig",
            BuildConfig::Tinyconfig => "tinyconfig",
            BuildConfig::Allnoconfig => "allnoconfig",
        }
    }
}

fn quarter() -> u8 {
    REFAULT_QUARTER
}

fn disk() -> SwapBackend {
    SwapBackend::Disk
}

fn zram() -> SwapBackend {
    SwapBackend::Zram
}

/// A cgroup limit written as a byte size (`64 MiB`) or `max`.
fn limit<'de, D: Deserializer<'de>>(d: D) -> Result<Limit, D::Error> {
    Limit::deserialize(d)
}

/// A limit as the guest protocol carries it.
fn wire_limit(limit: Limit) -> patchbench_agent::Limit {
    match limit.bytes() {
        Some(b) => patchbench_agent::Limit::Bytes(b),
        None => patchbench_agent::Limit::Max,
    }
}

/// The most cgroups a workload may ask for: each is a process in the guest.
const MAX_CGROUPS: u32 = 4096;

impl WorkloadConfig {
    /// Checks the parameters against the guest and resolves per-CPU counts.
    pub fn into_workload(self, guest: &GuestShape) -> Result<Planned, WorkloadError> {
        let online = guest.cpus.online();
        let memory = guest.memory;
        let half = ByteSize::b(memory.as_u64() / 2);
        let iec = |b: ByteSize| b.display().iec().to_string();
        let cgroup_count = |count: CgroupCount| {
            let n = count.resolve(online);
            if n == 0 || n > MAX_CGROUPS {
                return Err(WorkloadError {
                    param: "cgroups",
                    value: n.to_string(),
                    problem: format!(
                        "must be between 1 and {MAX_CGROUPS} (vm.cpus.online is {online})"
                    ),
                });
            }
            Ok(n)
        };
        let ready = |w| Ok(Planned::Ready(Prepared(w)));
        match self {
            WorkloadConfig::ZswapPageout {
                workers,
                mib_per_worker,
                random_percent,
                zswap_max,
                memory_max,
                swap_max,
                count_flushes,
                swap,
                compact,
                settle,
            } => {
                if workers == 0 || workers > online {
                    return Err(WorkloadError {
                        param: "workers",
                        value: workers.to_string(),
                        problem: format!(
                            "must be between 1 and vm.cpus.online ({online}): each worker is pinned to its own CPU"
                        ),
                    });
                }
                let mib = mib_per_worker.as_u64() >> 20;
                let total = mib.saturating_mul(u64::from(workers));
                // Leave room for the kernel and the initramfs.
                if mib == 0 || total.saturating_mul(2 << 20) > memory.as_u64() {
                    return Err(WorkloadError {
                        param: "mib_per_worker",
                        value: mib.to_string(),
                        problem: format!(
                            "must be at least 1, and {workers} worker(s) of it at most half of vm.memory ({})",
                            iec(memory)
                        ),
                    });
                }
                if random_percent > 100 {
                    return Err(WorkloadError {
                        param: "random_percent",
                        value: random_percent.to_string(),
                        problem: "is a share of each page, from 0 to 100".into(),
                    });
                }
                ready(Workload::ZswapPageout {
                    workers,
                    mib_per_worker: mib,
                    random_percent,
                    zswap_max: wire_limit(zswap_max),
                    memory_max: wire_limit(memory_max),
                    swap_max: wire_limit(swap_max),
                    count_flushes,
                    swap,
                    compact,
                    settle,
                })
            }
            WorkloadConfig::RstatFlush {
                cgroups,
                dirty_size,
                dirty_pause,
                reads,
                swap,
                dirtying,
            } => {
                let cgroups = cgroup_count(cgroups)?;
                // Each dirtier holds its anonymous region and its tmpfs file.
                let held = dirty_size.as_u64().saturating_mul(2 * u64::from(cgroups));
                if dirty_size.as_u64() < 4096 || held > half.as_u64() {
                    return Err(WorkloadError {
                        param: "dirty_size",
                        value: iec(dirty_size),
                        problem: format!(
                            "must be at least 4 KiB, and twice it for each of {cgroups} cgroups at most half of vm.memory ({})",
                            iec(memory)
                        ),
                    });
                }
                if reads == 0 {
                    return Err(WorkloadError {
                        param: "reads",
                        value: reads.to_string(),
                        problem: "must be at least 1".into(),
                    });
                }
                ready(Workload::RstatFlush {
                    cgroups,
                    dirty_kib: dirty_size.as_u64().div_ceil(1024),
                    dirty_pause,
                    reads,
                    swap,
                    lockstep: dirtying == Dirtying::Lockstep,
                })
            }
            WorkloadConfig::ReclaimRefault {
                cgroups,
                file_size,
                swap,
                memory: refault_memory,
                limit_percent,
                reread,
            } => {
                let cgroups = cgroup_count(cgroups)?;
                if reread == RefaultOrder::Random && refault_memory != RefaultMemory::Anon {
                    return Err(WorkloadError {
                        param: "reread",
                        value: "random".into(),
                        problem: "needs memory: anon (a tmpfs file is read back in order)".into(),
                    });
                }
                if !(1..=100).contains(&limit_percent) {
                    return Err(WorkloadError {
                        param: "limit_percent",
                        value: limit_percent.to_string(),
                        problem: "must be 1 to 100 (memory.max as a percentage of file_size)"
                            .into(),
                    });
                }
                let mib = 1 << 20;
                if file_size.as_u64() < 4 * mib || file_size.as_u64() % mib != 0 {
                    return Err(WorkloadError {
                        param: "file_size",
                        value: iec(file_size),
                        problem: "must be a whole number of MiB, at least 4 MiB (memory.max is a quarter of it)".into(),
                    });
                }
                // tmpfs holds at most half of memory by default.
                let total = file_size.as_u64().saturating_mul(u64::from(cgroups));
                if total > half.as_u64() {
                    return Err(WorkloadError {
                        param: "file_size",
                        value: iec(file_size),
                        problem: format!(
                            "for each of {cgroups} cgroups is {}, more than half of vm.memory ({}), the tmpfs's size",
                            iec(ByteSize::b(total)),
                            iec(memory)
                        ),
                    });
                }
                ready(Workload::ReclaimRefault {
                    cgroups,
                    file_mib: file_size.as_u64() / mib,
                    swap,
                    memory: refault_memory,
                    limit_percent,
                    reread,
                })
            }
            WorkloadConfig::KernelBuild {
                config,
                driver,
                targets,
                jobs,
                memory_max,
                zswap_max,
                swap,
            } => {
                check_targets(&targets)?;
                let jobs = jobs.unwrap_or(online);
                if jobs == 0 || jobs > online.saturating_mul(4) {
                    return Err(WorkloadError {
                        param: "jobs",
                        value: jobs.to_string(),
                        problem: format!(
                            "must be between 1 and 4 x vm.cpus.online ({})",
                            online.saturating_mul(4)
                        ),
                    });
                }
                match memory_max.bytes() {
                    Some(b) if b >= 16 << 20 && b <= memory.as_u64() => {}
                    _ => {
                        return Err(WorkloadError {
                            param: "memory_max",
                            value: memory_max.to_string(),
                            problem: format!(
                                "must be a size between 16 MiB and vm.memory ({}): the build's cgroup limit, below its peak",
                                iec(memory)
                            ),
                        });
                    }
                }
                Ok(Planned::KernelBuild(KernelBuildPlan {
                    config,
                    driver,
                    targets,
                    jobs,
                    memory_max,
                    zswap_max,
                    swap,
                }))
            }
            WorkloadConfig::GuestFault { fault } => ready(Workload::GuestFault { fault }),
        }
    }
}

/// A validated workload. Every kind is ready to run as it is, except a
/// kernel build, whose tree the host must prepare first
/// ([`KernelBuildPlan::prepared`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Planned {
    Ready(Prepared),
    KernelBuild(KernelBuildPlan),
}

impl Planned {
    /// The kind, as campaign files and specs name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Planned::Ready(p) => p.kind(),
            Planned::KernelBuild(_) => "kernel-build",
        }
    }

    /// The swap device it needs (set up once per boot).
    pub fn swap_backend(&self) -> SwapBackend {
        match self {
            Planned::Ready(p) => p.wire().swap_backend(),
            Planned::KernelBuild(plan) => plan.swap,
        }
    }

    /// The kernel functions the profiler counts for it (set up once per
    /// boot); empty when none.
    pub fn profile_candidates(&self) -> &'static [&'static str] {
        match self {
            Planned::Ready(p) => p.wire().profile_candidates(),
            Planned::KernelBuild(_) => &[],
        }
    }
}

/// A kernel build before its tree is prepared: everything but where the
/// tree is.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelBuildPlan {
    pub config: BuildConfig,
    pub driver: BuildDriver,
    pub targets: Vec<String>,
    pub jobs: u32,
    pub memory_max: Limit,
    pub zswap_max: Limit,
    pub swap: SwapBackend,
}

impl KernelBuildPlan {
    /// The workload once the host prepared its source tree `src` and its
    /// configured build directory `build` (see `crate::kbuild`).
    pub fn prepared(&self, src: &Path, build: &Path) -> Prepared {
        Prepared(Workload::KernelBuild {
            config: self.config.make_target().into(),
            driver: self.driver,
            src: src.display().to_string(),
            build: build.display().to_string(),
            targets: self.targets.clone(),
            jobs: self.jobs,
            memory_max: wire_limit(self.memory_max),
            zswap_max: wire_limit(self.zswap_max),
            swap: self.swap,
        })
    }
}

/// A workload ready to run: the guest agent's [`Workload`], complete.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared(Workload);

impl Prepared {
    /// A workload given directly in the guest protocol's terms
    /// (`patchbench boot -- CMD`).
    pub fn exec(argv: Vec<String>) -> Prepared {
        Prepared(Workload::Exec { argv })
    }

    pub fn wire(&self) -> &Workload {
        &self.0
    }

    /// The kind, as campaign files and specs name it.
    pub fn kind(&self) -> &'static str {
        match &self.0 {
            Workload::ZswapPageout { .. } => "zswap-pageout",
            Workload::RstatFlush { .. } => "rstat-flush",
            Workload::ReclaimRefault { .. } => "reclaim-refault",
            Workload::KernelBuild { .. } => "kernel-build",
            Workload::GuestFault { .. } => "guest-fault",
            Workload::Exec { .. } => "exec",
        }
    }

    /// Every parameter as people write it, for the results document.
    pub fn params(&self) -> BTreeMap<String, String> {
        let limit = |l: &patchbench_agent::Limit| match l {
            patchbench_agent::Limit::Bytes(b) => size_text(ByteSize::b(*b)),
            patchbench_agent::Limit::Max => "max".into(),
        };
        let pairs: Vec<(&str, String)> = match &self.0 {
            Workload::ZswapPageout {
                workers,
                mib_per_worker,
                random_percent,
                zswap_max,
                memory_max,
                swap_max,
                count_flushes,
                swap,
                compact,
                settle,
            } => vec![
                ("workers", workers.to_string()),
                ("mib_per_worker", mib_per_worker.to_string()),
                ("random_percent", random_percent.to_string()),
                ("zswap_max", limit(zswap_max)),
                ("memory_max", limit(memory_max)),
                ("swap_max", limit(swap_max)),
                ("count_flushes", count_flushes.to_string()),
                ("swap", swap_text(*swap).into()),
                ("compact", compact.to_string()),
                ("settle", settle.to_string()),
            ],
            Workload::RstatFlush {
                cgroups,
                dirty_kib,
                dirty_pause,
                reads,
                swap,
                lockstep,
            } => {
                let mut params = vec![
                    ("cgroups", cgroups.to_string()),
                    ("dirty_size", size_text(ByteSize::kib(*dirty_kib))),
                    (
                        "dirty_pause",
                        humantime::format_duration(*dirty_pause).to_string(),
                    ),
                    ("reads", reads.to_string()),
                ];
                // Each left out at its default (the only way before it
                // existed), so earlier results still resume.
                if *swap == SwapBackend::Zram {
                    params.push(("swap", swap_text(*swap).into()));
                }
                if *lockstep {
                    params.push(("dirtying", "lockstep".into()));
                }
                params
            }
            Workload::ReclaimRefault {
                cgroups,
                file_mib,
                swap,
                memory,
                limit_percent,
                reread,
            } => {
                let mut params = vec![
                    ("cgroups", cgroups.to_string()),
                    ("file_size", size_text(ByteSize::mib(*file_mib))),
                    ("swap", swap_text(*swap).into()),
                    (
                        "memory",
                        match memory {
                            RefaultMemory::Tmpfs => "tmpfs",
                            RefaultMemory::Anon => "anon",
                        }
                        .into(),
                    ),
                    ("limit_percent", limit_percent.to_string()),
                ];
                // Left out when sequential (the only order before it
                // existed), so earlier results still resume.
                if *reread == RefaultOrder::Random {
                    params.push(("reread", "random".into()));
                }
                params
            }
            Workload::KernelBuild {
                config,
                driver,
                src,
                build,
                targets,
                jobs,
                memory_max,
                zswap_max,
                swap,
            } => vec![
                ("config", config.clone()),
                (
                    "driver",
                    match driver {
                        BuildDriver::Kbuild => "kbuild",
                        BuildDriver::Recorded => "recorded",
                    }
                    .into(),
                ),
                ("src", src.clone()),
                ("build", build.clone()),
                ("targets", targets.join(" ")),
                ("jobs", jobs.to_string()),
                ("memory_max", limit(memory_max)),
                ("zswap_max", limit(zswap_max)),
                ("swap", swap_text(*swap).into()),
            ],
            Workload::GuestFault { fault } => vec![("fault", format!("{fault:?}"))],
            Workload::Exec { argv } => vec![("argv", argv.join(" "))],
        };
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }
}

/// A swap backend as campaign files write it.
fn swap_text(swap: SwapBackend) -> &'static str {
    match swap {
        SwapBackend::Disk => "disk",
        SwapBackend::Zram => "zram",
        SwapBackend::Ram => "ram",
    }
}

/// Kernel-build targets are files under the build directory.
fn check_targets(targets: &[String]) -> Result<(), WorkloadError> {
    if targets.is_empty() {
        return Err(WorkloadError {
            param: "targets",
            value: "[]".into(),
            problem: "must name at least one make target, such as mm/vmscan.o or vmlinux".into(),
        });
    }
    for target in targets {
        let bad = target.is_empty()
            || target.starts_with('/')
            || target.ends_with('/')
            || target.split('/').any(|p| p == ".." || p == ".")
            || !target
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c));
        if bad {
            return Err(WorkloadError {
                param: "targets",
                value: target.clone(),
                problem: "must be a file the build leaves behind, relative to the build directory (such as mm/vmscan.o), without `..` or special characters".into(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
