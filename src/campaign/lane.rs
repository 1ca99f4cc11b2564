//! The campaign's lane, decided once: [`decide`] turns what the campaign
//! asks for (`vm.accel`, `vm.icount`, `vm.cost_model`) and the host's KVM
//! trial into a [`Lane`] (`model::lane::decide`, pure), which results.json
//! stores as `host.lane` and every later stage reads. Each boot's
//! [`vm::Clock`] comes from the lane ([`clock`]), and every QEMU argument
//! that depends on the lane from that clock; `patchbench boot` uses the
//! same two functions.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::config::Plan;
use crate::cost::{self, CostLane, PluginModel};
use crate::events::{Event, Sink};
use crate::model::lane::{Decision, LaneError};
use crate::model::{AccelChoice, Lane, LaneRequest, ParallelBoots, TcgThreads};
use crate::vm::{
    self,
    accel::{self, KvmProbe, KvmUnusable},
};

/// The lane every boot of the campaign runs in, and how.
pub(super) struct LaneSetup {
    pub lane: Lane,
    /// Why this lane, in the words results.json keeps (`host.accel_reason`).
    pub reason: String,
    /// Plain TCG's threading.
    pub tcg_threads: TcgThreads,
    /// The plugin, in the counting and the cost lanes.
    pub plugin: Option<PathBuf>,
    /// How many boots run at once ([`parallel_boots`]).
    pub parallel: usize,
    /// Rounds of the boot order until decided, or `None`: the fixed
    /// protocol (`protocol.sequential`, resolved for this lane).
    pub sequential: Option<crate::model::Sequential>,
}

impl LaneSetup {
    /// Samples each boot takes, per condition: a round's in a sequential
    /// campaign, else the protocol's.
    pub fn samples_per_boot(&self, plan: &Plan) -> u32 {
        self.sequential.map_or(plan.samples, |s| s.samples)
    }

    /// A sequential campaign in a lane whose boots run side by side by
    /// default, with `vm.parallel_boots: auto`, runs a round's `round`
    /// boots all at once, beyond the host's cores if need be (as many as
    /// its memory holds): their figures count instructions, so sharing the
    /// cores changes how long the round takes, not what it measures, and a
    /// round is one wave instead of two (A and B, then A' alone on one
    /// core).
    pub fn widen_for_rounds(&mut self, plan: &Plan, round: usize) {
        if self.sequential.is_some()
            && self.lane.side_by_side_by_default()
            && plan.vm.parallel_boots == ParallelBoots::Auto
        {
            self.parallel = round
                .min(boots_that_fit(plan.vm.memory.as_u64()))
                .max(self.parallel);
        }
    }

    /// The clock of a boot of `bzimage`: the lane's, and with the plugin,
    /// the booted kernel's `System.map` (from the top of its build
    /// directory).
    pub fn clock_for(&self, bzimage: &Path) -> anyhow::Result<vm::Clock> {
        let plugin = match &self.plugin {
            Some(plugin) => {
                let system_map = crate::build::system_map(bzimage).with_context(|| {
                    format!(
                        "{} needs the kernel's System.map, and there is none at the top of {}'s build directory (kernels from `patchbench build --out` do not carry it; build them in the campaign)",
                        self.lane.clock(),
                        bzimage.display()
                    )
                })?;
                Some((plugin.clone(), system_map))
            }
            None => None,
        };
        clock(self.lane, self.tcg_threads, plugin)
    }
}

/// The plugin's model in a lane that loads it.
pub fn plugin_model(lane: Lane) -> Option<PluginModel> {
    match lane {
        Lane::Counting => Some(PluginModel::Count),
        Lane::Cost => Some(PluginModel::Cache),
        Lane::Kvm | Lane::Tcg | Lane::Icount => None,
    }
}

/// A boot's clock in `lane`: plain TCG with `threads`, and in the plugin
/// lanes the plugin and the kernel's `System.map` (`plugin`), which they
/// need and the others refuse.
pub fn clock(
    lane: Lane,
    threads: TcgThreads,
    plugin: Option<(PathBuf, PathBuf)>,
) -> anyhow::Result<vm::Clock> {
    Ok(match (plugin_model(lane), plugin) {
        (Some(model), Some((plugin, system_map))) => vm::Clock::Plugin(CostLane {
            plugin,
            system_map,
            model,
            boot: false,
        }),
        (Some(_), None) => anyhow::bail!("{} needs the plugin and a System.map", lane.clock()),
        (None, Some(_)) => anyhow::bail!("{} loads no plugin", lane.label()),
        (None, None) => match lane {
            Lane::Kvm => vm::Clock::Kvm,
            Lane::Tcg => vm::Clock::Tcg(threads),
            Lane::Icount | Lane::Counting | Lane::Cost => vm::Clock::Icount,
        },
    })
}

/// The lane of `request` on this host (`probe`): the one decision
/// (`model::lane::decide`). A request that cannot be is a
/// [`crate::model::LaneRefused`] (a usage error); KVM asked for where it
/// ran no guest is a [`KvmUnusable`] with the trial's cause.
pub fn decide(request: LaneRequest, probe: &KvmProbe) -> anyhow::Result<Decision> {
    crate::model::lane::decide(request, probe.usable()).map_err(|e| match e {
        LaneError::Refused(refused) => anyhow::Error::new(refused),
        LaneError::KvmUnusable(cause) => anyhow::Error::new(KvmUnusable { cause }),
    })
}

/// The host's KVM, tried before the first build unless the campaign
/// asked for TCG, which no trial could change.
pub async fn probe(request: LaneRequest) -> KvmProbe {
    accel::probe_unless_tcg(request.accel == AccelChoice::Tcg).await
}

/// The lane ([`decide`]), said aloud when it is TCG; in the plugin lanes
/// the plugin found and the QEMU on `PATH` checked to speak its API,
/// before any build; how many boots run side by side, and the protocol.
pub(super) fn choose(plan: &Plan, probe: &KvmProbe, sink: &dyn Sink) -> anyhow::Result<LaneSetup> {
    let Decision { lane, reason } = decide(plan.vm.lane_request(), probe)?;
    if lane != Lane::Kvm {
        sink.emit(Event::Note(format!(
            "lane: {} \u{2014} {reason}",
            lane.label()
        )));
    }
    // Under KVM each online vCPU gets a physical core of its own, with one
    // core kept for QEMU's main loop and patchbench: a host with too few
    // is refused here, before any build, not at the first boot.
    if lane == Lane::Kvm {
        let topology = vm::pin::Topology::read(Path::new(vm::pin::SYSFS_CPU))?;
        vm::pin::check_fits(&topology, plan.vm.cpus.online as usize)?;
    }
    let plugin = match plugin_model(lane) {
        Some(_) => Some(cost_plugin()?),
        None => None,
    };
    let parallel = parallel_boots(
        plan.vm.parallel_boots,
        lane,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        boots_that_fit(plan.vm.memory.as_u64()),
    )?;
    if parallel > 1 {
        sink.emit(Event::Note(format!(
            "boots: up to {parallel} side by side under icount (vm.parallel_boots: 1 boots one at a time)"
        )));
    }
    // Boots repeat under icount (the cost lane's included), so there a
    // campaign's samples become rounds by default; under KVM, rounds of
    // boots judged by boot.
    let sequential = plan.sequential.resolve(plan.samples, lane);
    if let Some(s) = sequential {
        sink.emit(Event::Note(format!(
            "protocol: sequential, up to {} round(s) of the boot order with {} sample(s) per boot{}, stopping when every primary metric is decided ({} spending)",
            s.rounds,
            s.samples,
            s.time
                .map(|t| format!(" and {} of time", humantime::format_duration(t)))
                .unwrap_or_default(),
            s.spending.name()
        )));
    }
    Ok(LaneSetup {
        lane,
        reason,
        tcg_threads: plan.vm.tcg_threads,
        plugin,
        parallel,
        sequential,
    })
}

/// `vm.parallel_boots` above 1 in a lane whose guest time is the host's.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "vm.parallel_boots: {0} boots side by side would measure each other: this campaign runs on the host's time (plain TCG or KVM); boots run side by side only under icount (vm.icount: true under TCG) or in the cost lane (vm.cost_model: cache). Remove the setting, or set it to 1"
)]
pub struct ParallelBootsNeedIcount(pub u32);

/// How many boots run at once. Side by side only under icount, where
/// the guest clock counts instructions, so that host contention changes
/// how long a boot takes far more than what it measures: the smoke's
/// within-boot CVs reached 0.5% side by side against 0.17% one at a time,
/// with the same verdicts (README, "Boots side by side"). `auto` takes the
/// host's `cores`, no more boots than `fit` in its memory, and one at a
/// time in the cost lane (`cost`), whose promise is that a boot repeats to
/// 0.05%. A number is taken as it is in either.
pub fn parallel_boots(
    choice: ParallelBoots,
    lane: Lane,
    cores: usize,
    fit: usize,
) -> Result<usize, ParallelBootsNeedIcount> {
    match choice {
        ParallelBoots::Auto if lane.side_by_side_by_default() => Ok(cores.min(fit).max(1)),
        ParallelBoots::Auto => Ok(1),
        ParallelBoots::AtMost(n) if n > 1 && !lane.side_by_side() => {
            Err(ParallelBootsNeedIcount(n))
        }
        ParallelBoots::AtMost(n) => Ok(n as usize),
    }
}

/// How many guests of `memory` bytes the host's available memory holds,
/// with 512 MiB more for each QEMU (its translation cache and itself);
/// unbounded where `/proc/meminfo` cannot be read.
fn boots_that_fit(memory: u64) -> usize {
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| mem_available(&text));
    match available {
        Some(bytes) => (bytes / (memory + (512 << 20))) as usize,
        None => usize::MAX,
    }
}

/// `MemAvailable` from `/proc/meminfo`'s text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

/// The plugin, and a QEMU that can load it.
fn cost_plugin() -> anyhow::Result<PathBuf> {
    let plugin = cost::find_plugin()?;
    let qemu = cost::api::qemu_on_path()
        .context("qemu-system-x86_64 is not on PATH: apt-get install qemu-system-x86")?;
    cost::api::check_qemu(&qemu)?;
    Ok(plugin)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(lane: Lane, plugin: bool) -> LaneSetup {
        LaneSetup {
            lane,
            reason: String::new(),
            tcg_threads: TcgThreads::Multi,
            plugin: plugin.then(|| "/p/libpatchbench_cost_plugin.so".into()),
            parallel: 1,
            sequential: None,
        }
    }

    /// The lane is decided once, and each boot's clock follows from it:
    /// every QEMU argument that depends on the lane comes from that clock
    /// (`vm::qemu_command`).
    #[test]
    fn each_boots_clock_comes_from_the_lane() {
        let k = Path::new("/k/arch/x86/boot/bzImage");
        assert_eq!(
            setup(Lane::Kvm, false).clock_for(k).unwrap(),
            vm::Clock::Kvm
        );
        assert_eq!(
            setup(Lane::Tcg, false).clock_for(k).unwrap(),
            vm::Clock::Tcg(TcgThreads::Multi)
        );
        assert_eq!(
            setup(Lane::Icount, false).clock_for(k).unwrap(),
            vm::Clock::Icount
        );
        // With the plugin: the kernel's own System.map, or an error that
        // says which lane needs it.
        let build = tempfile::tempdir().unwrap();
        let bzimage = build.path().join("arch/x86/boot/bzImage");
        std::fs::create_dir_all(bzimage.parent().unwrap()).unwrap();
        std::fs::write(&bzimage, b"k").unwrap();
        let counting = setup(Lane::Counting, true);
        let err = counting.clock_for(&bzimage).unwrap_err().to_string();
        assert!(
            err.starts_with("the counting lane needs the kernel's System.map"),
            "{err}"
        );
        std::fs::write(build.path().join("System.map"), b"").unwrap();
        match counting.clock_for(&bzimage).unwrap() {
            vm::Clock::Plugin(l) => {
                assert_eq!(l.model, PluginModel::Count);
                assert_eq!(l.system_map, build.path().join("System.map"));
            }
            other => panic!("{other:?}"),
        }
        match setup(Lane::Cost, true).clock_for(&bzimage).unwrap() {
            vm::Clock::Plugin(l) => assert_eq!(l.model, PluginModel::Cache),
            other => panic!("{other:?}"),
        }
        // A plugin lane without its plugin, or a plugin elsewhere, is a bug
        // the clock refuses rather than boots.
        assert!(clock(Lane::Cost, TcgThreads::Multi, None).is_err());
        assert!(clock(Lane::Kvm, TcgThreads::Multi, Some(("p".into(), "m".into()))).is_err());
    }

    fn probe(kvm: bool) -> KvmProbe {
        KvmProbe {
            outcome: if kvm {
                Ok(())
            } else {
                Err(accel::KvmUnfit::CreateVm {
                    why: "ioctl(KVM_CREATE_VM) failed: 16 Device or resource busy".into(),
                })
            },
        }
    }

    /// The errors keep their types, which exit.rs maps: a refused request
    /// is the user's (exit 2), KVM that ran no guest the host's (exit 3).
    #[test]
    fn a_refused_lane_and_an_unusable_kvm_keep_their_types() {
        use crate::model::CostModel;
        let request = |accel, icount, cost_model| LaneRequest {
            accel,
            icount,
            cost_model,
        };
        let refused = decide(
            request(AccelChoice::Kvm, true, CostModel::None),
            &probe(true),
        )
        .unwrap_err();
        assert_eq!(
            crate::exit::code_for(&refused),
            crate::exit::USAGE,
            "{refused}"
        );
        let refused = decide(
            request(AccelChoice::Kvm, false, CostModel::Cache),
            &probe(true),
        )
        .unwrap_err();
        assert!(
            refused.to_string().contains("vm.cost_model: cache"),
            "{refused}"
        );
        let unusable = decide(
            request(AccelChoice::Kvm, false, CostModel::None),
            &probe(false),
        )
        .unwrap_err();
        assert_eq!(
            crate::exit::code_for(&unusable),
            crate::exit::INFRASTRUCTURE,
            "{unusable}"
        );
        let icount = decide(
            request(AccelChoice::Auto, true, CostModel::None),
            &probe(true),
        );
        assert_eq!(icount.unwrap().lane, Lane::Icount);
    }

    #[test]
    fn boots_run_side_by_side_only_under_icount() {
        use ParallelBoots::{AtMost, Auto};
        // auto: the host's cores under icount, bounded by memory; one at a
        // time in the cost lane and on the host's clock.
        assert_eq!(parallel_boots(Auto, Lane::Icount, 2, usize::MAX), Ok(2));
        assert_eq!(parallel_boots(Auto, Lane::Counting, 8, 3), Ok(3));
        assert_eq!(parallel_boots(Auto, Lane::Icount, 2, 0), Ok(1));
        assert_eq!(parallel_boots(Auto, Lane::Cost, 8, 8), Ok(1));
        assert_eq!(parallel_boots(Auto, Lane::Kvm, 8, 8), Ok(1));
        assert_eq!(parallel_boots(Auto, Lane::Tcg, 8, 8), Ok(1));
        // A number is taken as it is under icount (the cost lane's
        // included), and 1 anywhere.
        assert_eq!(parallel_boots(AtMost(3), Lane::Icount, 2, 1), Ok(3));
        assert_eq!(parallel_boots(AtMost(2), Lane::Cost, 2, 1), Ok(2));
        assert_eq!(parallel_boots(AtMost(1), Lane::Kvm, 2, 2), Ok(1));
        let err = parallel_boots(AtMost(2), Lane::Tcg, 2, 2).unwrap_err();
        assert!(err.to_string().contains("vm.parallel_boots: 2"), "{err}");
        assert!(err.to_string().contains("vm.icount: true"), "{err}");
    }

    #[test]
    fn available_memory_is_read_from_meminfo() {
        let text =
            "MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:   20971520 kB\n";
        assert_eq!(mem_available(text), Some(20 << 30));
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
    }
}
