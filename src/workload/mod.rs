//! Workloads on the host: the campaign's `workload:` section
//! ([`WorkloadConfig`]), validated against the VM into the agent's
//! [`Workload`], and the specs of each guest workload, read from
//! `workloads/<name>.yaml`. The report takes metric names, units and
//! directions from the specs, so the documentation and the tables cannot
//! drift.

use std::time::Duration;

use bytesize::ByteSize;
use patchbench_agent::{BuildDriver, Fault, Limit, SwapBackend, Workload};
use serde::{Deserialize, Deserializer};

use crate::config::VmConfig;

const ZSWAP_PAGEOUT: &str = include_str!("../../workloads/zswap-pageout.yaml");
const RSTAT_FLUSH: &str = include_str!("../../workloads/rstat-flush.yaml");
const RECLAIM_REFAULT: &str = include_str!("../../workloads/reclaim-refault.yaml");
const KERNEL_BUILD: &str = include_str!("../../workloads/kernel-build.yaml");

/// The campaign's `workload:` section. Every parameter is documented, with
/// its default and unit, in the workload's spec (`workloads/<kind>.yaml`).
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum WorkloadConfig {
    ZswapPageout {
        #[serde(deserialize_with = "workers", default = "one")]
        workers: u32,
        #[serde(deserialize_with = "mib_per_worker")]
        mib_per_worker: u64,
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
    },
    ReclaimRefault {
        #[serde(deserialize_with = "cgroups", default = "two_per_cpu")]
        cgroups: CgroupCount,
        #[serde(deserialize_with = "file_size", default = "default_file_size")]
        file_size: ByteSize,
        #[serde(deserialize_with = "swap", default = "zram")]
        swap: SwapBackend,
    },
    KernelBuild {
        #[serde(deserialize_with = "config", default = "defconfig")]
        config: String,
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
    },
    GuestFault {
        fault: Fault,
    },
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
    mib_per_worker: u64 = u64::deserialize;
    random_percent: u8 = u8::deserialize;
    zswap_max: Limit = limit;
    memory_max: Limit = limit;
    swap_max: Limit = limit;
    count_flushes: bool = bool::deserialize;
    cgroups: CgroupCount = CgroupCount::deserialize;
    dirty_size: ByteSize = ByteSize::deserialize;
    dirty_pause: Duration = humantime_serde::deserialize;
    reads: u32 = u32::deserialize;
    file_size: ByteSize = ByteSize::deserialize;
    swap: SwapBackend = SwapBackend::deserialize;
    config: String = String::deserialize;
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

fn defconfig() -> String {
    "defconfig".into()
}

fn kbuild() -> BuildDriver {
    BuildDriver::Kbuild
}

fn vmlinux() -> Vec<String> {
    vec!["vmlinux".into()]
}

fn quarter_gib() -> Limit {
    Limit::Bytes(256 << 20)
}

/// The configurations the kernel-build workload's tree may be made with.
const BUILD_CONFIGS: [&str; 3] = ["defconfig", "tinyconfig", "allnoconfig"];

fn zram() -> SwapBackend {
    SwapBackend::Zram
}

/// A cgroup limit written as a byte size (`64 MiB`) or `max`.
fn limit<'de, D: Deserializer<'de>>(d: D) -> Result<Limit, D::Error> {
    let text = String::deserialize(d)?;
    crate::config::parse_limit(&text).map_err(serde::de::Error::custom)
}

/// The most cgroups a workload may ask for: each is a process in the guest.
const MAX_CGROUPS: u32 = 4096;

impl WorkloadConfig {
    /// Checks the parameters against the VM and resolves per-CPU counts.
    pub fn into_workload(self, vm: &VmConfig) -> Result<Workload, WorkloadError> {
        let online = vm.cpus.online;
        let memory = vm.memory;
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
        Ok(match self {
            WorkloadConfig::ZswapPageout {
                workers,
                mib_per_worker,
                random_percent,
                zswap_max,
                memory_max,
                swap_max,
                count_flushes,
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
                let total = mib_per_worker.saturating_mul(u64::from(workers));
                // Leave room for the kernel and the initramfs.
                if mib_per_worker == 0 || total.saturating_mul(2 << 20) > memory.as_u64() {
                    return Err(WorkloadError {
                        param: "mib_per_worker",
                        value: mib_per_worker.to_string(),
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
                Workload::ZswapPageout {
                    workers,
                    mib_per_worker,
                    random_percent,
                    zswap_max,
                    memory_max,
                    swap_max,
                    count_flushes,
                }
            }
            WorkloadConfig::RstatFlush {
                cgroups,
                dirty_size,
                dirty_pause,
                reads,
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
                Workload::RstatFlush {
                    cgroups,
                    dirty_kib: dirty_size.as_u64().div_ceil(1024),
                    dirty_pause,
                    reads,
                }
            }
            WorkloadConfig::ReclaimRefault {
                cgroups,
                file_size,
                swap,
            } => {
                let cgroups = cgroup_count(cgroups)?;
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
                Workload::ReclaimRefault {
                    cgroups,
                    file_mib: file_size.as_u64() / mib,
                    swap,
                }
            }
            WorkloadConfig::KernelBuild {
                config,
                driver,
                targets,
                jobs,
                memory_max,
                zswap_max,
            } => {
                if !BUILD_CONFIGS.contains(&config.as_str()) {
                    return Err(WorkloadError {
                        param: "config",
                        value: config,
                        problem: format!("must be one of {}", BUILD_CONFIGS.join(", ")),
                    });
                }
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
                match memory_max {
                    Limit::Bytes(b) if b >= 16 << 20 && b <= memory.as_u64() => {}
                    _ => {
                        return Err(WorkloadError {
                            param: "memory_max",
                            value: memory_max.cgroup_value(),
                            problem: format!(
                                "must be a size between 16 MiB and vm.memory ({}): the build's cgroup limit, below its peak",
                                iec(memory)
                            ),
                        });
                    }
                }
                Workload::KernelBuild {
                    config,
                    driver,
                    // Filled in by crate::kbuild::prepare before the first boot.
                    src: String::new(),
                    build: String::new(),
                    targets,
                    jobs,
                    memory_max,
                    zswap_max,
                }
            }
            WorkloadConfig::GuestFault { fault } => Workload::GuestFault { fault },
        })
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

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    pub name: String,
    pub description: String,
    pub params: Vec<ParamSpec>,
    pub metrics: Vec<MetricSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamSpec {
    pub name: String,
    pub unit: String,
    pub default: yaml_serde::Value,
    pub description: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricSpec {
    pub name: String,
    pub unit: Unit,
    pub better: Better,
    /// Values within ±this (in the metric's unit) are negligible: when every
    /// A and B sample is, the verdict is "no clear difference" (rule 3 of
    /// docs/statistics.md). Absent: no such level.
    #[serde(default)]
    pub negligible: Option<f64>,
    pub description: String,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Ns,
    Pages,
    Count,
    /// Events per second (a rate).
    #[serde(rename = "per-second")]
    PerSecond,
    /// Bytes, shown in MiB.
    Bytes,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Lower,
    Higher,
    /// A counter that explains a result rather than being one.
    None,
}

/// The spec of a workload of the agent protocol.
pub fn spec_for(workload: &Workload) -> Option<WorkloadSpec> {
    let text = match workload {
        Workload::ZswapPageout { .. } => ZSWAP_PAGEOUT,
        Workload::RstatFlush { .. } => RSTAT_FLUSH,
        Workload::ReclaimRefault { .. } => RECLAIM_REFAULT,
        Workload::KernelBuild { .. } => KERNEL_BUILD,
        Workload::GuestFault { .. } | Workload::Exec { .. } => return None,
    };
    Some(yaml_serde::from_str(text).expect("workloads/*.yaml are valid (tested)"))
}

#[cfg(test)]
mod tests;
