//! Workloads on the host: the campaign's `workload:` section
//! ([`WorkloadConfig`]), validated against the VM into the agent's
//! [`Workload`], and the specs of each guest workload, read from
//! `workloads/<name>.yaml`. The report takes metric names, units and
//! directions from the specs, so the documentation and the tables cannot
//! drift.

use std::time::Duration;

use bytesize::ByteSize;
use patchbench_agent::{Fault, Limit, SwapBackend, Workload};
use serde::{Deserialize, Deserializer};

use crate::config::VmConfig;

const ZSWAP_PAGEOUT: &str = include_str!("../workloads/zswap-pageout.yaml");
const RSTAT_FLUSH: &str = include_str!("../workloads/rstat-flush.yaml");
const RECLAIM_REFAULT: &str = include_str!("../workloads/reclaim-refault.yaml");

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
                Workload::ZswapPageout {
                    workers,
                    mib_per_worker,
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
            WorkloadConfig::GuestFault { fault } => Workload::GuestFault { fault },
        })
    }
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
        Workload::GuestFault { .. } | Workload::Exec { .. } => return None,
    };
    Some(yaml_serde::from_str(text).expect("workloads/*.yaml are valid (tested)"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Campaign, DEFAULT_CAMPAIGN};
    use std::path::Path;

    fn names(spec: &WorkloadSpec) -> Vec<&str> {
        spec.metrics.iter().map(|m| m.name.as_str()).collect()
    }

    #[test]
    fn every_spec_parses_and_names_the_agents_metrics() {
        let cases: [(&str, &str, &[&str]); 3] = [
            (
                ZSWAP_PAGEOUT,
                "zswap-pageout",
                &[
                    "pageout_cpu_ns",
                    "verify_cpu_ns",
                    "total_cpu_ns",
                    "elapsed_ns",
                    "zswpout_pages",
                    "zswpin_pages",
                    "pageout_flushes",
                ],
            ),
            (
                RSTAT_FLUSH,
                "rstat-flush",
                &[
                    "flush_calls",
                    "flush_mean_ns",
                    "flush_total_ns",
                    "reads_per_s",
                    "read_mean_ns",
                    "read_loop_ns",
                ],
            ),
            (
                RECLAIM_REFAULT,
                "reclaim-refault",
                &[
                    "real_ns",
                    "user_ns",
                    "sys_ns",
                    "pgscan",
                    "pgsteal",
                    "workingset_refault",
                ],
            ),
        ];
        for (text, name, metrics) in cases {
            let spec: WorkloadSpec = yaml_serde::from_str(text).unwrap();
            assert_eq!(spec.name, name);
            assert_eq!(names(&spec), metrics, "{name}");
            for m in &spec.metrics {
                let suffix_ns = m.name.ends_with("_ns");
                assert_eq!(suffix_ns, m.unit == Unit::Ns, "{name}: {}", m.name);
            }
        }
    }

    #[test]
    fn spec_for_covers_every_measuring_workload() {
        let vm = vm("1 GiB", 2);
        for text in [
            "kind: zswap-pageout\nmib_per_worker: 32\nzswap_max: 64 MiB",
            "kind: rstat-flush",
            "kind: reclaim-refault",
        ] {
            let workload = parse(text).unwrap().into_workload(&vm).unwrap();
            let spec = spec_for(&workload).unwrap();
            assert_eq!(
                Some(spec.name.as_str()),
                text.strip_prefix("kind: ")
                    .map(|k| k.lines().next().unwrap())
            );
        }
        let fault = parse("kind: guest-fault\nfault: hang").unwrap();
        assert!(spec_for(&fault.into_workload(&vm).unwrap()).is_none());
    }

    /// The workload section of the smoke campaign replaced by `workload`,
    /// parsed as a whole campaign (so errors carry the YAML path).
    fn campaign_error(workload: &str) -> String {
        let start = DEFAULT_CAMPAIGN.find("workload:\n").unwrap();
        let end = DEFAULT_CAMPAIGN.find("protocol:\n").unwrap();
        let indented: String = workload.lines().map(|l| format!("  {l}\n")).collect();
        let text = format!(
            "{}workload:\n{indented}{}",
            &DEFAULT_CAMPAIGN[..start],
            &DEFAULT_CAMPAIGN[end..]
        );
        Campaign::parse(&text, Path::new("x.yaml"))
            .unwrap_err()
            .to_string()
    }

    fn parse(text: &str) -> Result<WorkloadConfig, String> {
        yaml_serde::from_str(text).map_err(|e| e.to_string())
    }

    fn vm(memory: &str, online: u32) -> VmConfig {
        yaml_serde::from_str(&format!(
            "memory: {memory}\ncpus: {{possible: {online}, online: {online}}}\nboot_timeout: 1m\nrun_timeout: 1m\nswap_size: 1 GiB"
        ))
        .unwrap()
    }

    #[test]
    fn an_unknown_parameter_is_named() {
        for (workload, bad) in [
            ("kind: rstat-flush\nreadz: 5", "readz"),
            ("kind: reclaim-refault\nfile_mib: 5", "file_mib"),
            (
                "kind: zswap-pageout\nmib_per_worker: 32\nzswap_max: max\nworker: 2",
                "worker",
            ),
        ] {
            let err = campaign_error(workload);
            assert!(
                err.contains(bad) && err.contains("unknown field"),
                "{workload}: {err}"
            );
        }
    }

    #[test]
    fn a_wrong_unit_is_named() {
        for (workload, param) in [
            ("kind: reclaim-refault\nfile_size: lots", "file_size"),
            ("kind: reclaim-refault\nfile_size: -5 MiB", "file_size"),
            ("kind: reclaim-refault\ncgroups: lots", "cgroups"),
            ("kind: reclaim-refault\ncgroups: -2", "cgroups"),
            ("kind: reclaim-refault\nswap: tape", "swap"),
            ("kind: rstat-flush\ndirty_pause: soon", "dirty_pause"),
            ("kind: rstat-flush\ndirty_size: big", "dirty_size"),
            ("kind: rstat-flush\nreads: -1", "reads"),
            (
                "kind: zswap-pageout\nmib_per_worker: -32\nzswap_max: max",
                "mib_per_worker",
            ),
            (
                "kind: zswap-pageout\nmib_per_worker: 32\nzswap_max: lots",
                "zswap_max",
            ),
        ] {
            let err = campaign_error(workload);
            assert!(
                err.contains(&format!("workload.{param}")),
                "{workload}: {err}"
            );
        }
    }

    #[test]
    fn more_memory_than_the_guest_has_is_named_before_boot() {
        let vm = vm("1 GiB", 2);
        for (workload, param) in [
            (
                "kind: zswap-pageout\nmib_per_worker: 4096\nzswap_max: max",
                "mib_per_worker",
            ),
            (
                "kind: zswap-pageout\nmib_per_worker: 300\nworkers: 2\nzswap_max: max",
                "mib_per_worker",
            ),
            ("kind: reclaim-refault\nfile_size: 2 GiB", "file_size"),
            (
                "kind: reclaim-refault\ncgroups: 2 per cpu\nfile_size: 200 MiB",
                "file_size",
            ),
            ("kind: rstat-flush\ndirty_size: 512 MiB", "dirty_size"),
            (
                "kind: zswap-pageout\nmib_per_worker: 32\nworkers: 3\nzswap_max: max",
                "workers",
            ),
            ("kind: rstat-flush\ncgroups: 0", "cgroups"),
            ("kind: rstat-flush\nreads: 0", "reads"),
            ("kind: reclaim-refault\nfile_size: 5000 KiB", "file_size"),
        ] {
            let err = parse(workload).unwrap().into_workload(&vm).unwrap_err();
            assert_eq!(err.param, param, "{workload}: {err}");
            assert!(
                err.to_string().starts_with(&format!("workload.{param} (")),
                "{err}"
            );
        }
    }

    #[test]
    fn defaults_scale_with_the_online_cpus() {
        let workload = parse("kind: reclaim-refault")
            .unwrap()
            .into_workload(&vm("4 GiB", 4));
        assert_eq!(
            workload,
            Ok(Workload::ReclaimRefault {
                cgroups: 8,
                file_mib: 50,
                swap: SwapBackend::Zram
            })
        );
        let workload = parse("kind: rstat-flush\ncgroups: 3\ndirty_pause: 0s")
            .unwrap()
            .into_workload(&vm("1 GiB", 2));
        assert_eq!(
            workload,
            Ok(Workload::RstatFlush {
                cgroups: 3,
                dirty_kib: 256,
                dirty_pause: Duration::ZERO,
                reads: 1000
            })
        );
        assert_eq!(CgroupCount::parse("2 per cpu"), Ok(CgroupCount::PerCpu(2)));
        assert!(CgroupCount::parse("2 per core").is_err());
    }

    #[test]
    fn zswap_pageout_counts_flushes_unless_told_not_to() {
        let vm = vm("1 GiB", 2);
        let get = |extra: &str| match parse(&format!(
            "kind: zswap-pageout\nmib_per_worker: 32\nzswap_max: 64 MiB{extra}"
        ))
        .unwrap()
        .into_workload(&vm)
        .unwrap()
        {
            Workload::ZswapPageout { count_flushes, .. } => count_flushes,
            other => panic!("{other:?}"),
        };
        assert!(get(""));
        assert!(!get("\ncount_flushes: false"));
    }
}
