//! A validated workload ([`Planned`]) and one ready to run ([`Prepared`]:
//! the guest agent's wire workload, with its parameters as the results
//! document records them).

use std::collections::BTreeMap;
use std::path::Path;

use bytesize::ByteSize;
use patchbench_agent::kinds::kernel_build::KernelBuild;
use patchbench_agent::kinds::mm_selftest::{MmSelftest, SelftestProgram};
use patchbench_agent::kinds::stress_ng::StressNg;
use patchbench_agent::{BuildDriver, SwapBackend, Workload};
use serde::Deserialize;

use crate::model::Limit;
use crate::model::guest::size_text;

/// A kind's wire parameters as people write them, for the results
/// document (`workload.params`). A parameter added after results were
/// kept is left out at its old behaviour, so that they still resume.
pub trait Params {
    fn params(&self) -> Vec<(&'static str, String)>;
}

/// A validated workload. Every kind is ready to run as it is, except a
/// kernel build, whose tree the host must prepare first
/// ([`KernelBuildPlan::prepared`]), and a kind that runs a program the
/// host stages into the initramfs first ([`StagedPlan::prepared`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Planned {
    Ready(Prepared),
    KernelBuild(KernelBuildPlan),
    Staged(StagedPlan),
}

impl Planned {
    /// The kind, as campaign files and specs name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Planned::Ready(p) => p.kind(),
            Planned::KernelBuild(_) => "kernel-build",
            Planned::Staged(plan) => plan.kind(),
        }
    }

    /// The swap device it needs (set up once per boot).
    pub fn swap_backend(&self) -> SwapBackend {
        match self {
            Planned::Ready(p) => p.wire().swap_backend(),
            Planned::KernelBuild(plan) => plan.swap,
            // Neither stages a swap device of its own: the default one.
            Planned::Staged(_) => SwapBackend::Disk,
        }
    }

    /// The kernel functions the profiler counts for it (set up once per
    /// boot); empty when none.
    pub fn profile_candidates(&self) -> &'static [&'static str] {
        match self {
            Planned::Ready(p) => p.wire().profile_candidates(),
            Planned::KernelBuild(_) | Planned::Staged(_) => &[],
        }
    }
}

/// A workload ready to run: the guest agent's [`Workload`], complete, and
/// its parameters as people write them.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    wire: Workload,
    params: BTreeMap<String, String>,
}

impl Prepared {
    /// A kind's wire parameters, ready.
    pub fn new<K: Params + Into<Workload>>(kind: K) -> Prepared {
        let params = kind
            .params()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        Prepared {
            wire: kind.into(),
            params,
        }
    }

    /// A wire workload with its parameters as people write them (a
    /// benchmark of the mm library, `workload::bench`).
    pub fn with_params(wire: Workload, params: BTreeMap<String, String>) -> Prepared {
        Prepared { wire, params }
    }

    /// A workload given directly in the guest protocol's terms
    /// (`patchbench boot -- CMD`).
    pub fn exec(argv: Vec<String>) -> Prepared {
        let params = BTreeMap::from([("argv".to_string(), argv.join(" "))]);
        Prepared {
            wire: Workload::Exec(patchbench_agent::Exec { argv }),
            params,
        }
    }

    pub fn wire(&self) -> &Workload {
        &self.wire
    }

    /// The kind, as campaign files and specs name it.
    pub fn kind(&self) -> &'static str {
        self.wire.kind()
    }

    /// Every parameter as people write it, for the results document.
    pub fn params(&self) -> BTreeMap<String, String> {
        self.params.clone()
    }
}

/// A limit as the guest protocol carries it.
pub fn wire_limit(limit: Limit) -> patchbench_agent::Limit {
    match limit.bytes() {
        Some(b) => patchbench_agent::Limit::Bytes(b),
        None => patchbench_agent::Limit::Max,
    }
}

/// A wire limit as campaign files write it.
pub fn limit_text(limit: &patchbench_agent::Limit) -> String {
    match limit {
        patchbench_agent::Limit::Bytes(b) => size_text(ByteSize::b(*b)),
        patchbench_agent::Limit::Max => "max".into(),
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
        Prepared::new(KernelBuild {
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

/// A workload that runs a program the host stages into every boot's
/// initramfs (`crate::staged`): everything but the staged archive.
#[derive(Debug, Clone, PartialEq)]
pub enum StagedPlan {
    /// The host's stress-ng and the libraries it loads.
    StressNg(StressNgPlan),
    /// A selftest, built from the tree under test.
    MmSelftest(SelftestPlan),
}

/// `stress-ng`'s parameters, checked against the host's stress-ng.
#[derive(Debug, Clone, PartialEq)]
pub struct StressNgPlan {
    pub stressor: String,
    pub instances: u32,
    pub ops: u64,
    pub options: BTreeMap<String, String>,
}

/// `mm-selftest`'s parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct SelftestPlan {
    pub program: SelftestProgram,
}

/// What the host staged for a [`StagedPlan`]: the archive, and what it
/// was made from (stress-ng's version; the selftest's tree, by commit).
#[derive(Debug, Clone, PartialEq)]
pub struct StagedArchive {
    pub archive: std::path::PathBuf,
    pub source: String,
}

impl StagedPlan {
    /// The kind, as campaign files and specs name it.
    pub fn kind(&self) -> &'static str {
        match self {
            StagedPlan::StressNg(_) => "stress-ng",
            StagedPlan::MmSelftest(_) => "mm-selftest",
        }
    }

    /// The workload once its program is staged.
    pub fn prepared(&self, staged: &StagedArchive) -> Prepared {
        let archive = staged.archive.display().to_string();
        match self {
            StagedPlan::StressNg(plan) => Prepared::new(StressNg {
                stressor: plan.stressor.clone(),
                instances: plan.instances,
                ops: plan.ops,
                options: plan.options.clone(),
                version: staged.source.clone(),
                archive,
            }),
            StagedPlan::MmSelftest(plan) => Prepared::new(MmSelftest {
                program: plan.program,
                archive,
                commit: staged.source.clone(),
            }),
        }
    }
}
