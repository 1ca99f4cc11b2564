//! The campaign's lane: the accelerator and clock of every boot, and in
//! the cost lane (`vm.cost_model: cache`) or the counting lane
//! (`vm.cost_model: count`) the plugin. The decision is a pure function of
//! the campaign and the host's KVM probe ([`decide`]), so that a KVM
//! host's choice is tested without KVM, and it is made here once: each
//! boot's [`vm::Clock`] comes from [`Lane::clock_for`], and every QEMU
//! argument that depends on the lane from that clock.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::config::{AccelChoice, CostModel, Plan};
use crate::cost::{self, CostLane, PluginModel};
use crate::events::{Event, Sink};
use crate::model::{ParallelBoots, TcgThreads};
use crate::vm::{
    self,
    accel::{self, Accel, Decision, KvmProbe},
};

/// The accelerator and clock every boot of the campaign uses.
pub(super) struct Lane {
    pub decision: Decision,
    /// TCG's instruction-count clock.
    pub icount: bool,
    /// Plain TCG's threading.
    pub tcg_threads: TcgThreads,
    /// The plugin and what it does (the cost or the counting lane);
    /// `None` outside them.
    pub cost: Option<CostPlugin>,
    /// How many boots run at once ([`parallel_boots`]).
    pub parallel: usize,
    /// Rounds of the boot order until decided, or `None`: the fixed
    /// protocol (`protocol.sequential`, resolved for this lane).
    pub sequential: Option<crate::model::Sequential>,
}

impl Lane {
    /// Samples each boot takes, per condition: a round's in a sequential
    /// campaign, else the protocol's.
    pub fn samples_per_boot(&self, plan: &Plan) -> u32 {
        self.sequential.map_or(plan.samples, |s| s.samples)
    }

    /// A sequential campaign under icount (not the cost lane) with
    /// `vm.parallel_boots: auto` runs a round's `round` boots all at once,
    /// beyond the host's cores if need be (as many as its memory holds):
    /// their figures count instructions, so sharing the cores changes how
    /// long the round takes, not what it measures, and a round is one wave
    /// instead of two (A and B, then A' alone on one core).
    pub fn widen_for_rounds(&mut self, plan: &Plan, round: usize) {
        if self.sequential.is_some()
            && self.icount
            && !self.cache_model()
            && plan.vm.parallel_boots == ParallelBoots::Auto
        {
            self.parallel = round
                .min(boots_that_fit(plan.vm.memory.as_u64()))
                .max(self.parallel);
        }
    }
}

/// The plugin a cost-lane or counting-lane campaign loads in every boot.
pub(super) struct CostPlugin {
    pub plugin: PathBuf,
    /// The cache model, or counting alone.
    pub model: PluginModel,
    /// The lane's model as results.json names it (`host.cost_model`):
    /// the machine model's (`skylake-client`), as the plugin writes it in
    /// every window, or `count`.
    pub name: &'static str,
}

impl Lane {
    /// The guest's clock, as the progress lines name it.
    pub fn clock(&self) -> &'static str {
        match (&self.cost, self.icount) {
            (Some(c), _) if c.model == PluginModel::Count => "the counting lane",
            (Some(_), _) => "the cost lane",
            (None, true) => "icount",
            (None, false) => "the host's clock",
        }
    }

    /// Whether boots run the cache model (one at a time, slow).
    pub fn cache_model(&self) -> bool {
        self.cost
            .as_ref()
            .is_some_and(|c| c.model == PluginModel::Cache)
    }

    /// The clock of a boot of `bzimage`: the lane's accelerator and clock,
    /// and with the plugin, the booted kernel's `System.map` (from the
    /// top of its build directory).
    pub fn clock_for(&self, bzimage: &Path) -> anyhow::Result<vm::Clock> {
        if let Some(cost) = &self.cost {
            let system_map = crate::build::system_map(bzimage).with_context(|| {
                format!(
                    "{} needs the kernel's System.map, and there is none at the top of {}'s build directory (kernels from `patchbench build --out` do not carry it; build them in the campaign)",
                    self.clock(),
                    bzimage.display()
                )
            })?;
            return Ok(vm::Clock::Plugin(CostLane {
                plugin: cost.plugin.clone(),
                system_map,
                model: cost.model,
            }));
        }
        Ok(match (self.decision.accel, self.icount) {
            (Accel::Kvm, _) => vm::Clock::Kvm,
            (Accel::Tcg, true) => vm::Clock::Icount,
            (Accel::Tcg, false) => vm::Clock::Tcg(self.tcg_threads),
        })
    }
}

/// A campaign that asks for the cost lane and for KVM at once.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "vm.cost_model: cache and count run only under TCG (single-threaded, with icount), but KVM was requested (vm.accel: kvm or --accel kvm); use accel auto or tcg"
)]
pub struct CostLaneWantsTcg;

/// The accelerator and whether TCG runs with icount, from the campaign's
/// `vm.accel`, `vm.icount` and `vm.cost_model` and the host's KVM probe.
/// The cost lane is TCG with icount on every host, KVM or not, and its
/// reason says so; asking for KVM in it is an error.
pub fn decide(
    choice: AccelChoice,
    icount: bool,
    cost_model: CostModel,
    probe: &KvmProbe,
) -> anyhow::Result<(Decision, bool)> {
    match cost_model {
        CostModel::None => {
            let decision = accel::decide(choice, probe)?;
            let icount = icount && decision.accel == Accel::Tcg;
            Ok((decision, icount))
        }
        CostModel::Cache | CostModel::Count => {
            if choice == AccelChoice::Kvm {
                return Err(CostLaneWantsTcg.into());
            }
            let host = match probe.usable() {
                Ok(()) => "KVM is usable on this host, and not used".to_string(),
                Err(why) => format!("KVM is not usable here anyway: {why}"),
            };
            Ok((
                Decision {
                    accel: Accel::Tcg,
                    reason: format!(
                        "{}: TCG forced (single-threaded, -icount shift=0,sleep=off, so that the {} repeat); {host}",
                        if cost_model == CostModel::Count {
                            "counting lane"
                        } else {
                            "cost model"
                        },
                        if cost_model == CostModel::Count {
                            "counts"
                        } else {
                            "modeled counts"
                        }
                    ),
                },
                true,
            ))
        }
    }
}

/// The host's KVM, tried before the first build unless the campaign
/// asked for plain TCG, which no probe could change.
pub(super) async fn probe(plan: &Plan) -> KvmProbe {
    accel::probe_unless_tcg(
        plan.vm.accel == AccelChoice::Tcg && plan.vm.cost_model == CostModel::None,
    )
    .await
}

/// KVM where a guest ran under it ([`probe`]), else TCG, said aloud;
/// `vm.icount` only applies under TCG. In the cost lane: TCG with icount,
/// the plugin found and the QEMU on `PATH` checked to speak its API,
/// before any build.
pub(super) fn choose(plan: &Plan, probe: &KvmProbe, sink: &dyn Sink) -> anyhow::Result<Lane> {
    let (decision, icount) = decide(plan.vm.accel, plan.vm.icount, plan.vm.cost_model, probe)?;
    if plan.vm.icount && !icount {
        sink.emit(Event::Note(
            "vm.icount is a TCG mode; with KVM the guest runs in real time without it".into(),
        ));
    }
    if decision.accel == Accel::Tcg {
        sink.emit(Event::Note(format!(
            "accelerator: TCG \u{2014} {}",
            decision.reason
        )));
    }
    let cost = match plan.vm.cost_model {
        CostModel::None => None,
        CostModel::Cache => Some(cost_plugin(PluginModel::Cache)?),
        CostModel::Count => Some(cost_plugin(PluginModel::Count)?),
    };
    let parallel = parallel_boots(
        plan.vm.parallel_boots,
        icount,
        plan.vm.cost_model == CostModel::Cache,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        boots_that_fit(plan.vm.memory.as_u64()),
    )?;
    if parallel > 1 {
        sink.emit(Event::Note(format!(
            "boots: up to {parallel} side by side under icount (vm.parallel_boots: 1 boots one at a time)"
        )));
    }
    // Boots repeat under icount (the cost lane's included), so there a
    // campaign's samples become rounds by default.
    let sequential = plan.sequential.resolve(plan.samples, icount);
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
    Ok(Lane {
        decision,
        icount,
        tcg_threads: plan.vm.tcg_threads,
        cost,
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
    icount: bool,
    cost: bool,
    cores: usize,
    fit: usize,
) -> Result<usize, ParallelBootsNeedIcount> {
    match choice {
        ParallelBoots::Auto if icount && !cost => Ok(cores.min(fit).max(1)),
        ParallelBoots::Auto => Ok(1),
        ParallelBoots::AtMost(n) if n > 1 && !icount => Err(ParallelBootsNeedIcount(n)),
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
fn cost_plugin(model: PluginModel) -> anyhow::Result<CostPlugin> {
    let plugin = cost::find_plugin()?;
    let qemu = cost::api::qemu_on_path()
        .context("qemu-system-x86_64 is not on PATH: apt-get install qemu-system-x86")?;
    cost::api::check_qemu(&qemu)?;
    Ok(CostPlugin {
        plugin,
        model,
        name: match model {
            PluginModel::Cache => patchbench_costmodel::machine::SKYLAKE_CLIENT.name,
            PluginModel::Count => cost::COUNT_MODEL,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(accel: Accel, icount: bool, cost: Option<PluginModel>) -> Lane {
        Lane {
            decision: Decision {
                accel,
                reason: String::new(),
            },
            icount,
            tcg_threads: TcgThreads::Multi,
            cost: cost.map(|model| CostPlugin {
                plugin: "/p/libpatchbench_cost_plugin.so".into(),
                model,
                name: "x",
            }),
            parallel: 1,
            sequential: None,
        }
    }

    /// The lane is decided here once, and each boot's clock follows from
    /// it: every QEMU argument that depends on the lane comes from that
    /// clock (`vm::qemu_command`).
    #[test]
    fn each_boots_clock_comes_from_the_lane() {
        let k = Path::new("/k/arch/x86/boot/bzImage");
        assert_eq!(
            lane(Accel::Kvm, false, None).clock_for(k).unwrap(),
            vm::Clock::Kvm
        );
        assert_eq!(
            lane(Accel::Tcg, false, None).clock_for(k).unwrap(),
            vm::Clock::Tcg(TcgThreads::Multi)
        );
        assert_eq!(
            lane(Accel::Tcg, true, None).clock_for(k).unwrap(),
            vm::Clock::Icount
        );
        // With the plugin: the kernel's own System.map, or an error that
        // says which lane needs it.
        let build = tempfile::tempdir().unwrap();
        let bzimage = build.path().join("arch/x86/boot/bzImage");
        std::fs::create_dir_all(bzimage.parent().unwrap()).unwrap();
        std::fs::write(&bzimage, b"k").unwrap();
        let counting = lane(Accel::Tcg, true, Some(PluginModel::Count));
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
        assert!(!counting.cache_model());
        assert!(lane(Accel::Tcg, true, Some(PluginModel::Cache)).cache_model());
        assert_eq!(counting.clock(), "the counting lane");
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

    #[test]
    fn the_cost_lane_is_tcg_with_icount_even_on_a_kvm_host() {
        for (choice, kvm) in [
            (AccelChoice::Auto, true),
            (AccelChoice::Auto, false),
            (AccelChoice::Tcg, true),
        ] {
            for icount in [false, true] {
                let (d, ic) = decide(choice, icount, CostModel::Cache, &probe(kvm)).unwrap();
                assert_eq!((d.accel, ic), (Accel::Tcg, true), "{choice:?} kvm={kvm}");
                assert!(
                    d.reason.starts_with("cost model: TCG forced"),
                    "{}",
                    d.reason
                );
                let says = if kvm { "usable" } else { "not usable" };
                assert!(d.reason.contains(says), "{}", d.reason);
            }
        }
        // The same KVM host outside the cost lane uses KVM, without icount.
        let (d, ic) = decide(AccelChoice::Auto, true, CostModel::None, &probe(true)).unwrap();
        assert_eq!((d.accel, ic), (Accel::Kvm, false));
    }

    #[test]
    fn asking_for_kvm_in_the_cost_lane_is_refused() {
        let err = decide(AccelChoice::Kvm, false, CostModel::Cache, &probe(true)).unwrap_err();
        assert!(err.to_string().contains("vm.cost_model: cache"), "{err}");
    }

    #[test]
    fn boots_run_side_by_side_only_under_icount() {
        use ParallelBoots::{AtMost, Auto};
        // auto: the host's cores under icount, bounded by memory; one at a
        // time in the cost lane and on the host's clock.
        assert_eq!(parallel_boots(Auto, true, false, 2, usize::MAX), Ok(2));
        assert_eq!(parallel_boots(Auto, true, false, 8, 3), Ok(3));
        assert_eq!(parallel_boots(Auto, true, false, 2, 0), Ok(1));
        assert_eq!(parallel_boots(Auto, true, true, 8, 8), Ok(1));
        assert_eq!(parallel_boots(Auto, false, false, 8, 8), Ok(1));
        // A number is taken as it is under icount (the cost lane's
        // included), and 1 anywhere.
        assert_eq!(parallel_boots(AtMost(3), true, false, 2, 1), Ok(3));
        assert_eq!(parallel_boots(AtMost(2), true, true, 2, 1), Ok(2));
        assert_eq!(parallel_boots(AtMost(1), false, false, 2, 2), Ok(1));
        let err = parallel_boots(AtMost(2), false, false, 2, 2).unwrap_err();
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
