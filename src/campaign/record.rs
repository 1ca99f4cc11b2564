//! The results document's records from the stages' own types: a built
//! kernel, the guest's facts and samples. Converted here, at the edge, so
//! that `results` imports neither the build nor the agent's wire types.

use std::collections::BTreeMap;

use crate::build::KernelArtifact;
use crate::results;

impl From<&KernelArtifact> for results::KernelRecord {
    fn from(k: &KernelArtifact) -> Self {
        use crate::build::objects::Reason;
        results::KernelRecord {
            commit: k.commit.clone(),
            build_dir: k.build_dir.clone(),
            bzimage: k.bzimage.clone(),
            bzimage_sha256: k.bzimage_sha256.clone(),
            config_sha256: k.config_sha256.clone(),
            compiler: k.compiler.clone(),
            key: k.key.clone(),
            series_sha256: k.series_sha256.clone(),
            build_seconds: k.build_seconds,
            incremental: k.incremental,
            started_from: k.started_from.clone(),
            reused: k.reused,
            objects_rebuilt: k.objects_rebuilt,
            rebuilt: k
                .rebuilt
                .iter()
                .map(|r| results::RebuiltRecord {
                    object: r.object.clone(),
                    reason: match r.reason {
                        Reason::Series => "series",
                        Reason::Link => "link",
                        Reason::Unexpected => "unexpected",
                    }
                    .into(),
                })
                .collect(),
        }
    }
}

impl From<&patchbench_agent::cputime::CputimeFacts> for results::Cputime {
    fn from(f: &patchbench_agent::cputime::CputimeFacts) -> Self {
        use patchbench_agent::cputime::Accounting;
        results::Cputime {
            accounting: match f.accounting {
                Accounting::Precise => results::CputimeAccounting::Precise,
                Accounting::Tick => results::CputimeAccounting::Tick,
                Accounting::Unknown => results::CputimeAccounting::Unknown,
            },
            hz: f.hz,
            irq_time: f.irq_time,
            missing: f.missing.clone(),
            paravirt_steal: f.paravirt_steal,
        }
    }
}

impl From<&patchbench_agent::GuestFacts> for results::Facts {
    fn from(f: &patchbench_agent::GuestFacts) -> Self {
        results::Facts {
            kernel_release: f.kernel_release.clone(),
            kernel_version: f.kernel_version.clone(),
            possible_cpus: f.possible_cpus.clone(),
            online_cpus: f.online_cpus.clone(),
            mem_total_kib: f.mem_total_kib,
            zswap: f.zswap.clone(),
            thp: f.thp.clone(),
            swaps: f.swaps.clone(),
            profiled_symbol: f.profiled_symbol.clone(),
            settings: f.settings.clone(),
            cputime: f.cputime.as_ref().map(results::Cputime::from),
            clocksource: f.clocksource.clone(),
            features: f.features.iter().map(|x| x.name().to_string()).collect(),
            rcu_barrier: f.rcu_barrier,
        }
    }
}

impl From<&patchbench_agent::Sample> for results::SampleRecord {
    fn from(s: &patchbench_agent::Sample) -> Self {
        results::SampleRecord {
            index: s.index,
            condition: s.condition.clone(),
            metrics: s.metrics.clone(),
            profile: BTreeMap::new(),
            split: BTreeMap::new(),
        }
    }
}
