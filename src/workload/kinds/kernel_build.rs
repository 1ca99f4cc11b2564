//! `kernel-build`'s campaign section: its parameters, checked against the
//! guest into a plan whose tree the host prepares (`crate::kbuild`), and as
//! the results document records them.

use bytesize::ByteSize;
use patchbench_agent::kinds::kernel_build::KernelBuild;
use patchbench_agent::{BuildDriver, SwapBackend};
use serde::Deserialize;

use crate::model::Limit;
use crate::workload::param::*;
use crate::workload::planned::{BuildConfig, KernelBuildPlan, Params, Planned, limit_text};

named! {
    ,
    config: BuildConfig = BuildConfig::deserialize;
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(deserialize_with = "config", default = "defconfig")]
    pub config: BuildConfig,
    #[serde(deserialize_with = "driver", default = "kbuild")]
    pub driver: BuildDriver,
    #[serde(deserialize_with = "targets", default = "vmlinux")]
    pub targets: Vec<String>,
    #[serde(deserialize_with = "jobs", default)]
    pub jobs: Option<u32>,
    #[serde(deserialize_with = "memory_max", default = "quarter_gib")]
    pub memory_max: Limit,
    #[serde(deserialize_with = "zswap_max", default = "max")]
    pub zswap_max: Limit,
    #[serde(deserialize_with = "swap", default = "disk")]
    pub swap: SwapBackend,
}

impl HostKind for Config {
    fn plan(self, guest: &Guest) -> Result<Planned, WorkloadError> {
        let Config {
            config,
            driver,
            targets,
            jobs,
            memory_max,
            zswap_max,
            swap,
        } = self;
        let Guest { online, memory, .. } = *guest;
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
}

impl Params for KernelBuild {
    fn params(&self) -> Vec<(&'static str, String)> {
        let KernelBuild {
            config,
            driver,
            src,
            build,
            targets,
            jobs,
            memory_max,
            zswap_max,
            swap,
        } = self;
        vec![
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
            ("memory_max", limit_text(memory_max)),
            ("zswap_max", limit_text(zswap_max)),
            ("swap", swap_text(*swap).into()),
        ]
    }
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
