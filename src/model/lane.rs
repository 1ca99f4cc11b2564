//! The lane a campaign measures in, decided once ([`decide`]) from what it
//! asks for and whether KVM ran a guest on this host, then stored in
//! results.json as `host.lane` and read by every stage after: the boots'
//! QEMU arguments, the protocol, shards, merge, the hunt, the judge and
//! the renderers. What a lane implies (deterministic, side by side,
//! shardable, its label) is answered here and nowhere else.
//!
//! A new lane is a variant here, its QEMU arguments in `vm` (from
//! `campaign::lane`'s clock), and the metrics that are its own in
//! `judge::lane`: three files (ARCHITECTURE.md, "The lane").

use std::fmt;

use serde::{Deserialize, Serialize};

use super::accel::Accel;

/// What a campaign measures in: how its guest runs and what its clock
/// counts. Serialized by [`Lane::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    /// KVM: the host's CPU, in real time.
    Kvm,
    /// Plain TCG: software emulation on the host's time.
    Tcg,
    /// TCG with `-icount shift=0,sleep=off`: guest time counts
    /// instructions, one clock for every vCPU.
    Icount,
    /// The counting lane: icount with the plugin counting each vCPU's own
    /// instructions.
    #[serde(rename = "count")]
    Counting,
    /// The cost lane: icount with the plugin's cache model pricing every
    /// instruction and access.
    Cost,
}

impl Lane {
    /// Every lane, in the order reports list them.
    pub const ALL: [Lane; 5] = [
        Lane::Kvm,
        Lane::Tcg,
        Lane::Icount,
        Lane::Counting,
        Lane::Cost,
    ];

    /// The accelerator its boots run under.
    pub fn accel(self) -> Accel {
        match self {
            Lane::Kvm => Accel::Kvm,
            Lane::Tcg | Lane::Icount | Lane::Counting | Lane::Cost => Accel::Tcg,
        }
    }

    /// Whether TCG runs with icount: the guest's clock counts instructions.
    pub fn icount(self) -> bool {
        matches!(self, Lane::Icount | Lane::Counting | Lane::Cost)
    }

    /// Whether a boot repeats whatever the host does, so that boots on
    /// different machines, in shards or in a hunt's steps, compare: the
    /// icount lanes.
    pub fn deterministic(self) -> bool {
        self.icount()
    }

    /// Whether boots may run side by side when the campaign asks
    /// (`vm.parallel_boots: N`): only where sharing the host's cores
    /// changes how long a boot takes, not what it measures.
    pub fn side_by_side(self) -> bool {
        self.deterministic()
    }

    /// Whether `vm.parallel_boots: auto` runs boots side by side: the
    /// icount lanes but the cost lane, whose promise is that a boot
    /// repeats to 0.05%, and which is slow enough to be one at a time.
    pub fn side_by_side_by_default(self) -> bool {
        self.side_by_side() && self != Lane::Cost
    }

    /// Whether its boots, rather than its samples, are the observations
    /// the judge compares: under KVM each boot lands on the host anew
    /// (its memory, its placement, the host's state), so samples within
    /// one boot are not independent (docs/statistics.md, "Under KVM").
    pub fn judged_by_boot(self) -> bool {
        self == Lane::Kvm
    }

    /// Whether its boots load the plugin (`campaign::lane::plugin_model`
    /// says which model).
    pub fn loads_plugin(self) -> bool {
        matches!(self, Lane::Counting | Lane::Cost)
    }

    /// Whether the guest runs on the host's clock, where its times are the
    /// host's and boots measure each other: KVM and plain TCG.
    pub fn host_time(self) -> bool {
        !self.deterministic()
    }

    /// The lane as the reports name it.
    pub fn label(self) -> &'static str {
        match self {
            Lane::Kvm => "KVM",
            Lane::Tcg => "plain TCG",
            Lane::Icount => "TCG with icount",
            Lane::Cost => "the cost model",
            Lane::Counting => "the counting lane",
        }
    }

    /// The guest's clock, as progress lines name it.
    pub fn clock(self) -> &'static str {
        match self {
            Lane::Kvm | Lane::Tcg => "the host's clock",
            Lane::Icount => "icount",
            Lane::Counting => "the counting lane",
            Lane::Cost => "the cost lane",
        }
    }

    /// The lane in a word or two, for places with room for no more (the
    /// pages' index, the plan's matrix): `KVM`, `TCG`, `icount`,
    /// `counting`, `cost model`.
    pub fn short(self) -> &'static str {
        match self {
            Lane::Kvm => "KVM",
            Lane::Tcg => "TCG",
            Lane::Icount => "icount",
            Lane::Counting => "counting",
            Lane::Cost => "cost model",
        }
    }

    /// The lane on a page's index, beside the accelerator: `TCG · icount`;
    /// plain TCG says `TCG · one thread` when `single_thread`.
    pub fn index_label(self, single_thread: bool) -> String {
        match self {
            Lane::Kvm => "KVM".into(),
            Lane::Tcg if single_thread => "TCG · one thread".into(),
            Lane::Tcg => "TCG".into(),
            Lane::Icount | Lane::Counting | Lane::Cost => format!("TCG · {}", self.short()),
        }
    }

    /// What a hunt's report says of its steps in this lane.
    pub fn hunt_words(self) -> String {
        match self {
            Lane::Cost | Lane::Counting => {
                format!("Steps ran in {} (TCG with icount).", self.label())
            }
            Lane::Icount => "Steps ran under TCG with icount: a guest's times count its instructions, so boots of different steps are comparable.".into(),
            Lane::Tcg | Lane::Kvm => format!(
                "Steps ran under {}: each step's verdict is from its own boots; boots of different steps are not compared.",
                self.label()
            ),
        }
    }

    /// The banner of a plugin lane's report, before its reason (`model`:
    /// the cost lane's machine), or `None` elsewhere.
    pub fn plugin_banner(self, model: Option<&str>) -> Option<String> {
        match self {
            Lane::Counting => Some("Counting lane: each vCPU's own instructions, by mode and symbol, counted on that vCPU (docs/cost-model.md); no cache model, and times are icount times.".into()),
            Lane::Cost => Some(format!(
                "Cost lane: modeled cost on the {} model (docs/cost-model.md): instructions and simulated cache misses, not time.",
                model.unwrap_or("cache")
            )),
            Lane::Kvm | Lane::Tcg | Lane::Icount => None,
        }
    }

    /// Why a guest time is context rather than a measurement in this lane
    /// whatever the workload (the plugin lanes, whose own figures are
    /// counts), or `None` where times can be the lane's own.
    pub fn times_are_context(self) -> Option<&'static str> {
        match self {
            Lane::Cost => Some(
                "an icount time in the cost lane: it counts instructions, blind to the caches this lane models; its own figures are the modeled cycles",
            ),
            Lane::Counting => Some(
                "an icount time in the counting lane: one instruction clock serves every vCPU; this lane's own figures are each vCPU's instructions, counted on it",
            ),
            Lane::Kvm | Lane::Tcg | Lane::Icount => None,
        }
    }

    /// `protocol.sequential: auto` in this lane, for `samples` per boot:
    /// rounds where boots repeat (icount, the plugin lanes) and under KVM
    /// (judged by boot); the fixed protocol under plain TCG.
    pub fn auto_sequential(self, samples: u32) -> Option<super::sequential::Sequential> {
        match self {
            Lane::Kvm => Some(super::sequential::kvm_auto(samples)),
            Lane::Icount | Lane::Counting | Lane::Cost => super::sequential::auto(samples),
            Lane::Tcg => None,
        }
    }

    /// The name results.json, `plan --matrix` and the workflows use.
    pub fn name(self) -> &'static str {
        match self {
            Lane::Kvm => "kvm",
            Lane::Tcg => "tcg",
            Lane::Icount => "icount",
            Lane::Counting => "count",
            Lane::Cost => "cost",
        }
    }

    /// The lane of a document written before the lane was stored
    /// (results schema 4 and older, hunt schema 1): from its accelerator,
    /// its icount flag and its plugin's model name (`count` for the
    /// counting lane, a machine's name for the cost lane). The only place
    /// a lane is read back from those fields.
    pub fn of_old_document(accel: Accel, icount: bool, cost_model: Option<&str>) -> Lane {
        match (accel, icount, cost_model) {
            (_, _, Some("count")) => Lane::Counting,
            (_, _, Some(_)) => Lane::Cost,
            (Accel::Kvm, _, None) => Lane::Kvm,
            (Accel::Tcg, true, None) => Lane::Icount,
            (Accel::Tcg, false, None) => Lane::Tcg,
        }
    }
}

impl fmt::Display for Lane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `vm.accel`: the accelerator a campaign asks for.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum AccelChoice {
    /// KVM where it really works, TCG otherwise (and said so in the results).
    #[default]
    Auto,
    Kvm,
    Tcg,
}

/// `vm.cost_model`: whether the campaign measures in the cost lane or the
/// counting lane.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum CostModel {
    /// The accelerator's own clock (or icount): times, no modeled cost.
    #[default]
    None,
    /// The cost-model plugin's cache model (Skylake client).
    Cache,
    /// The plugin counting each vCPU's own instructions, by mode and
    /// symbol, with no cache model: the counting lane.
    Count,
}

/// What a campaign asks for: `vm.accel`, `vm.icount` and `vm.cost_model`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneRequest {
    pub accel: AccelChoice,
    pub icount: bool,
    pub cost_model: CostModel,
}

impl LaneRequest {
    /// The lane asked for whatever the host, when the request names one
    /// (icount or a plugin): `None` for a lane on the host's clock, which
    /// KVM decides.
    pub fn fixed(self) -> Option<Lane> {
        match (self.cost_model, self.icount) {
            (CostModel::Cache, _) => Some(Lane::Cost),
            (CostModel::Count, _) => Some(Lane::Counting),
            (CostModel::None, true) => Some(Lane::Icount),
            (CostModel::None, false) => None,
        }
    }

    /// The lane this request runs in on a host where KVM runs a guest
    /// (a workflow's runner once its udev rule opened /dev/kvm): what
    /// `plan` promises and the workflow checks.
    pub fn lane_where_kvm_runs(self) -> Result<Lane, LaneRefused> {
        match decide::<std::convert::Infallible>(self, Ok(())) {
            Ok(d) => Ok(d.lane),
            Err(LaneError::Refused(refused)) => Err(refused),
            Err(LaneError::KvmUnusable(never)) => match never {},
        }
    }
}

/// A lane a campaign asks for that cannot be: a usage error, before any
/// build. A lane is honoured or refused, never changed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum LaneRefused {
    #[error(
        "vm.icount: true is a TCG clock, but KVM was requested (vm.accel: kvm or --accel kvm); remove one: accel auto or tcg keeps icount, icount false measures in real time under KVM"
    )]
    IcountUnderKvm,
    #[error(
        "vm.cost_model: {0} runs only under TCG (single-threaded, with icount), but KVM was requested (vm.accel: kvm or --accel kvm); use accel auto or tcg"
    )]
    PluginUnderKvm(&'static str),
}

/// Why a decision failed: a request that cannot be, or KVM asked for on a
/// host where it did not run a guest (`E`, the trial's cause).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaneError<E> {
    Refused(LaneRefused),
    KvmUnusable(E),
}

/// The lane chosen and why, in words the reports and the workflows read
/// (a TCG fallback's reason starts "fell back to TCG").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub lane: Lane,
    pub reason: String,
}

/// The lane of a campaign: `request` against `kvm`, whether a guest ran
/// under KVM on this host (`Err`: why not). A lane the request names
/// (icount, the counting or the cost lane) is kept on every host, KVM or
/// not; with KVM asked for, it is refused. Otherwise KVM where it ran a
/// guest, and TCG where it did not (an error when KVM was asked for).
pub fn decide<E: fmt::Display>(
    request: LaneRequest,
    kvm: Result<(), E>,
) -> Result<Decision, LaneError<E>> {
    if let Some(lane) = request.fixed() {
        if request.accel == AccelChoice::Kvm {
            return Err(LaneError::Refused(match lane {
                Lane::Cost => LaneRefused::PluginUnderKvm("cache"),
                Lane::Counting => LaneRefused::PluginUnderKvm("count"),
                _ => LaneRefused::IcountUnderKvm,
            }));
        }
        let host = match (request.accel, &kvm) {
            (AccelChoice::Tcg, _) => "TCG was requested".to_string(),
            (_, Ok(())) => "KVM is usable on this host, and not used".to_string(),
            (_, Err(why)) => format!("KVM is not usable here anyway: {why}"),
        };
        let (what, counts) = match lane {
            Lane::Cost => ("cost model", "modeled counts"),
            Lane::Counting => ("counting lane", "counts"),
            _ => ("icount (vm.icount: true)", "guest's times"),
        };
        return Ok(Decision {
            lane,
            reason: format!(
                "{what}: TCG forced (single-threaded, -icount shift=0,sleep=off, so that the {counts} repeat); {host}"
            ),
        });
    }
    match (request.accel, kvm) {
        (AccelChoice::Tcg, _) => Ok(Decision {
            lane: Lane::Tcg,
            reason: "TCG was requested".into(),
        }),
        (AccelChoice::Kvm | AccelChoice::Auto, Ok(())) => Ok(Decision {
            lane: Lane::Kvm,
            reason: "KVM is usable: a guest ran under it before the first build".into(),
        }),
        (AccelChoice::Kvm, Err(cause)) => Err(LaneError::KvmUnusable(cause)),
        // The reason's first words are read by the workflows' accelerator
        // checks (.github/workflows/*.yml): keep them.
        (AccelChoice::Auto, Err(cause)) => Ok(Decision {
            lane: Lane::Tcg,
            reason: format!("fell back to TCG (software emulation): {cause}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(accel: AccelChoice, icount: bool, cost_model: CostModel) -> LaneRequest {
        LaneRequest {
            accel,
            icount,
            cost_model,
        }
    }

    /// Every request on a host where KVM runs and where it does not: a
    /// lane the request names is kept on both, KVM with it is refused, and
    /// only a host-clock request follows the host.
    #[test]
    fn a_named_lane_is_kept_or_refused_and_only_the_host_clock_follows_kvm() {
        use AccelChoice::*;
        use CostModel::{Cache, Count};
        let runs: Result<(), &str> = Ok(());
        let fails: Result<(), &str> = Err("no /dev/kvm");
        let lane = |r, kvm| decide(r, kvm).map(|d| d.lane);
        for kvm in [runs, fails] {
            assert_eq!(
                lane(request(Auto, true, CostModel::None), kvm),
                Ok(Lane::Icount)
            );
            assert_eq!(
                lane(request(Tcg, true, CostModel::None), kvm),
                Ok(Lane::Icount)
            );
            assert_eq!(lane(request(Auto, false, Cache), kvm), Ok(Lane::Cost));
            assert_eq!(lane(request(Auto, true, Count), kvm), Ok(Lane::Counting));
            assert_eq!(
                lane(request(Tcg, false, CostModel::None), kvm),
                Ok(Lane::Tcg)
            );
            assert_eq!(
                lane(request(Kvm, true, CostModel::None), kvm),
                Err(LaneError::Refused(LaneRefused::IcountUnderKvm))
            );
            assert_eq!(
                lane(request(Kvm, false, Count), kvm),
                Err(LaneError::Refused(LaneRefused::PluginUnderKvm("count")))
            );
        }
        assert_eq!(
            lane(request(Auto, false, CostModel::None), runs),
            Ok(Lane::Kvm)
        );
        assert_eq!(
            lane(request(Kvm, false, CostModel::None), runs),
            Ok(Lane::Kvm)
        );
        assert_eq!(
            lane(request(Auto, false, CostModel::None), fails),
            Ok(Lane::Tcg)
        );
        assert_eq!(
            lane(request(Kvm, false, CostModel::None), fails),
            Err(LaneError::KvmUnusable("no /dev/kvm"))
        );
        let fell = decide(request(Auto, false, CostModel::None), fails).unwrap();
        assert!(
            fell.reason.starts_with("fell back to TCG"),
            "{}",
            fell.reason
        );
        let kept = decide(request(Auto, true, CostModel::None), runs).unwrap();
        assert!(
            kept.reason
                .contains("KVM is usable on this host, and not used"),
            "{}",
            kept.reason
        );
    }

    #[test]
    fn the_lane_where_kvm_runs_is_what_plan_promises() {
        let r =
            |accel, icount, cost_model| request(accel, icount, cost_model).lane_where_kvm_runs();
        assert_eq!(r(AccelChoice::Auto, false, CostModel::None), Ok(Lane::Kvm));
        assert_eq!(
            r(AccelChoice::Auto, true, CostModel::None),
            Ok(Lane::Icount)
        );
        assert_eq!(
            r(AccelChoice::Kvm, true, CostModel::None),
            Err(LaneRefused::IcountUnderKvm)
        );
        assert_eq!(r(AccelChoice::Tcg, false, CostModel::None), Ok(Lane::Tcg));
        assert_eq!(
            r(AccelChoice::Auto, false, CostModel::Count),
            Ok(Lane::Counting)
        );
    }

    /// The stored names are schema 4's judgement names, so documents
    /// judged before the lane was stored keep reading.
    #[test]
    fn names_round_trip_and_old_documents_map_to_their_lane() {
        for lane in Lane::ALL {
            let json = serde_json::to_string(&lane).unwrap();
            assert_eq!(json, format!("\"{}\"", lane.name()));
            assert_eq!(serde_json::from_str::<Lane>(&json).unwrap(), lane);
            assert_eq!(lane.icount(), lane.deterministic());
            assert_eq!(
                lane.loads_plugin(),
                matches!(lane, Lane::Counting | Lane::Cost)
            );
        }
        let old = Lane::of_old_document;
        assert_eq!(old(Accel::Tcg, true, Some("count")), Lane::Counting);
        assert_eq!(old(Accel::Tcg, true, Some("skylake-client")), Lane::Cost);
        assert_eq!(old(Accel::Tcg, true, None), Lane::Icount);
        assert_eq!(old(Accel::Tcg, false, None), Lane::Tcg);
        assert_eq!(old(Accel::Kvm, false, None), Lane::Kvm);
        assert!(!Lane::Cost.side_by_side_by_default() && Lane::Cost.side_by_side());
        assert!(Lane::Counting.side_by_side_by_default());
        assert!(!Lane::Kvm.side_by_side() && Lane::Kvm.host_time());
    }
}
