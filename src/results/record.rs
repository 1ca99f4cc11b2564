//! The records `results.json` is made of, other than the comparisons: the
//! host, the tree and series, the variants and their kernels, the
//! workload, the protocol, and every boot with its facts and samples.
//! Each is a type of the published format's own (documented in
//! docs/results-schema.md), converted from the build's, the guest
//! protocol's and the workload's types here, at the edge.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::build::KernelArtifact;
use crate::model::{Layouts, TcgThreads};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    pub cpu_model: String,
    pub cores: usize,
    pub accel: Accel,
    /// Why this accelerator: "KVM is usable", or why it fell back to TCG.
    pub accel_reason: String,
    /// TCG ran with `-icount` (a deterministic guest clock).
    #[serde(default)]
    pub icount: bool,
    /// Plain TCG's threading (`vm.tcg_threads`); absent under icount, KVM,
    /// and in documents from before it was a setting (which ran `multi`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcg_threads: Option<TcgThreads>,
    /// The cost lane's machine model (`skylake-client`): every boot ran
    /// under TCG with the cost-model plugin (docs/cost-model.md). Absent
    /// outside the cost lane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_model: Option<String>,
    /// How many boots ran at once (icount lanes only, `vm.parallel_boots`);
    /// absent when they ran one at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_boots: Option<u32>,
    /// The host's own noise floor in this run; absent in documents from
    /// before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<HostNoise>,
    /// The host's clocksource, QEMU, kernel, THP, KSM and governor;
    /// absent in documents from before they were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_facts: Option<crate::results::hostfacts::HostFactsRecord>,
}

/// A fixed CPU-bound loop timed on the host before, between and after the
/// boots (`hostnoise`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostNoise {
    /// What the loop is: `xorshift64, 150000000 steps`.
    pub method: String,
    /// Every timing, in milliseconds, in the order taken.
    pub samples_ms: Vec<f64>,
}

impl HostNoise {
    /// The timings' coefficient of variation, in percent.
    pub fn cv_pct(&self) -> Option<f64> {
        crate::hostnoise::cv_pct(&self.samples_ms)
    }

    /// The timings' mean, in milliseconds.
    pub fn mean_ms(&self) -> f64 {
        self.samples_ms.iter().sum::<f64>() / self.samples_ms.len().max(1) as f64
    }
}

/// The accelerator every boot used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    Kvm,
    Tcg,
}

impl std::fmt::Display for Accel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        })
    }
}

impl From<crate::model::Accel> for Accel {
    fn from(a: crate::model::Accel) -> Self {
        match a {
            crate::model::Accel::Kvm => Accel::Kvm,
            crate::model::Accel::Tcg => Accel::Tcg,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeInfo {
    pub origin: String,
    pub base_commit: String,
    /// How the base was chosen: the campaign's ref, the series'
    /// `base-commit:` trailer, or the tree's HEAD (and why).
    pub base_choice: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeriesInfo {
    /// A path or `lore:<message-id>`.
    pub source: String,
    pub sha256: String,
    pub patches: Vec<PatchInfo>,
    /// The commit with the whole series applied.
    pub head_commit: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatchInfo {
    pub subject: String,
    pub author: String,
    /// The patch's file, or its place in an mbox or a lore thread.
    pub origin: String,
    pub message_id: Option<String>,
    /// The commit this patch became.
    pub commit: String,
    /// `exact`, `3-way merge ...`, `at an offset (...)`, or `fuzzy (...)`
    /// with offsets and fuzz (only when the campaign asked for fuzz).
    pub applied: String,
    /// Context lines were ignored to apply it: the report warns.
    pub fuzz: bool,
}

/// A variant: a name, what it is, and the kernel it boots. The first
/// variant of a document is the baseline the others are compared with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantRecord {
    /// `A`, `B`, or the campaign's name for it.
    pub name: String,
    /// What it is, for people: "the base", "the base + the series".
    pub description: String,
    /// How many of the series' first patches it applies.
    #[serde(default)]
    pub patches: usize,
    /// Kconfig fragments merged after the campaign's; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fragments: Vec<String>,
    /// Words added to its kernel command line; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cmdline: Vec<String>,
    /// Runtime settings written by the guest (path → value); absent when
    /// none. What each read back is in the boots' `facts.settings`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, String>,
    pub kernel: KernelRecord,
}

/// How a variant's kernel was built (the build cache's manifest, as the
/// results file publishes it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelRecord {
    pub commit: String,
    /// The build's cache entry.
    pub build_dir: PathBuf,
    pub bzimage: PathBuf,
    pub bzimage_sha256: String,
    pub config_sha256: String,
    pub compiler: String,
    /// The build cache key.
    pub key: String,
    /// The hash of the series applied on the base (absent for the base).
    pub series_sha256: Option<String>,
    /// Seconds spent in `make` (0 for a reused build).
    pub build_seconds: f64,
    /// Started from another build's objects rather than from nothing.
    pub incremental: bool,
    /// The cache key of the build it started from.
    pub started_from: Option<String>,
    /// Reused as it was, with no `make` run.
    pub reused: bool,
    /// Object files written by this build.
    pub objects_rebuilt: usize,
    /// For an incremental build, every object written and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rebuilt: Vec<RebuiltRecord>,
}

/// One object an incremental build wrote, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RebuiltRecord {
    pub object: String,
    /// `series`, `link` or `unexpected`.
    pub reason: String,
}

impl From<&KernelArtifact> for KernelRecord {
    fn from(k: &KernelArtifact) -> Self {
        use crate::build::objects::Reason;
        KernelRecord {
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
                .map(|r| RebuiltRecord {
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

/// A workload as it ran: its kind and every parameter, as text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadRecord {
    /// `zswap-pageout`, `rstat-flush`, `reclaim-refault`, `kernel-build`...
    pub kind: String,
    /// Parameter → value, as people write them (`64 MiB`, `max`, `1ms`).
    pub params: BTreeMap<String, String>,
}

/// A control condition: its name, its overrides as the campaign wrote
/// them, and the workload it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlRecord {
    pub name: String,
    /// Parameter → value as the campaign wrote it.
    pub set: BTreeMap<String, String>,
    pub workload: WorkloadRecord,
}

impl ControlRecord {
    /// `zswap_max: max, workers: 2`: what the control changes.
    pub fn describe_set(&self) -> String {
        self.set
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Protocol {
    /// The variant of each boot, in boot order.
    pub boots: Vec<String>,
    /// The seed that shuffled `boots` (order `random`), else absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_seed: Option<u64>,
    pub warmups: u32,
    pub samples: u32,
    /// `varied` when each boot of a variant ran in a memory layout of its
    /// own (each boot's `layout`); absent for `fixed`.
    #[serde(default, skip_serializing_if = "Layouts::is_fixed")]
    pub layouts: Layouts,
    /// A sequential campaign's budget and looks; absent for the fixed
    /// protocol (whose `samples` are per boot, as a round's are here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<SequentialRecord>,
}

impl Protocol {
    /// Whether a run of this protocol may keep `earlier`'s boots: the same
    /// protocol, or, for a sequential one, the same budget whose boots so
    /// far are this one's first round repeated (and whatever its looks).
    pub fn resumable_from(&self, earlier: &Protocol) -> bool {
        let bare = |p: &Protocol| Protocol {
            boots: Vec::new(),
            sequential: p.sequential.clone().map(|s| SequentialRecord {
                looks: Vec::new(),
                ..s
            }),
            ..p.clone()
        };
        if bare(self) != bare(earlier) {
            return false;
        }
        match &self.sequential {
            None => self.boots == earlier.boots,
            Some(_) => {
                !self.boots.is_empty()
                    && earlier.boots.len() % self.boots.len() == 0
                    && earlier
                        .boots
                        .chunks(self.boots.len())
                        .all(|round| round == self.boots.as_slice())
            }
        }
    }
}

/// A sequential campaign (docs/statistics.md, "Sequential campaigns"):
/// rounds of the boot order, a look after each, stopped when every primary
/// metric was decided or the budget was spent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequentialRecord {
    /// The budget in rounds: look k of `rounds` has information fraction
    /// k / rounds.
    pub rounds: u32,
    /// Boots per round: the protocol's order, once.
    pub round_boots: usize,
    /// The time budget, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_seconds: Option<f64>,
    pub spending: crate::model::Spending,
    /// One per round run, in order.
    pub looks: Vec<LookRecord>,
}

/// What a look after a round found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LookRecord {
    /// 1 for the first round.
    pub round: u32,
    /// Seconds of boots so far, this round's included.
    pub boot_seconds: f64,
    /// The primary metrics still undecided (with their control's name),
    /// empty when the look decided them all.
    pub undecided: Vec<String>,
}

/// Why a sequential campaign stopped where it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequentialStop {
    /// Every primary metric was decided.
    Decided,
    /// The last round of the budget ran.
    Rounds,
    /// The time budget was spent.
    Time,
    /// The campaign has not finished its looks (interrupted, or running).
    Running,
}

impl SequentialRecord {
    /// Rounds whose every boot is in `boots` (complete or not).
    pub fn rounds_run(&self, boots: usize) -> u32 {
        (boots / self.round_boots.max(1)) as u32
    }

    /// Why the looks ended.
    pub fn stop(&self) -> SequentialStop {
        let Some(last) = self.looks.last() else {
            return SequentialStop::Running;
        };
        if last.undecided.is_empty() {
            SequentialStop::Decided
        } else if last.round >= self.rounds {
            SequentialStop::Rounds
        } else if self
            .time_seconds
            .is_some_and(|budget| last.boot_seconds >= budget)
        {
            SequentialStop::Time
        } else {
            SequentialStop::Running
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Boot {
    /// Position in the boot order, from 0.
    pub index: usize,
    /// `A`, `B`, `A'`...
    pub label: String,
    /// The variant's name.
    pub variant: String,
    /// The boot's memory layout under `protocol.layouts: varied` (the k-th
    /// boot of each variant runs layout k); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<u32>,
    pub initramfs_sha256: String,
    pub console_log: PathBuf,
    pub facts: Option<Facts>,
    /// Warm-up samples, kept for inspection; statistics ignore them.
    pub warmups: Vec<SampleRecord>,
    pub samples: Vec<SampleRecord>,
    /// Seconds from QEMU's start to the agent's hello.
    pub hello_seconds: Option<f64>,
    /// Seconds from QEMU's start to its exit.
    pub total_seconds: Option<f64>,
    pub complete: bool,
    /// Why the guest stopped this boot before its last sample (a kernel
    /// panic, an OOM kill, a workload error), as the run reported it; the
    /// samples before it stay, out of the statistics like every incomplete
    /// boot's. Absent for a boot that ran to its end or has not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<BootFailure>,
    /// Replayed from the cache: in a deterministic lane, a boot with
    /// exactly these inputs (QEMU, firmware, arguments, kernel and
    /// initramfs bytes) ran before, and this record is that boot's.
    /// Absent for a boot that ran in this run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
}

/// A guest failure that stopped a boot (`Boot::failure`). Both fields are
/// the guest's own text: untrusted, escaped wherever they are shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BootFailure {
    /// What went wrong, in a few words (`OOM kill (the workload failed: ...)`).
    pub what: String,
    /// The console lines around it.
    pub excerpt: String,
}

impl Boot {
    /// The measured samples of one condition (`None`: the main workload).
    pub fn samples_of(&self, condition: Option<&str>) -> Vec<&SampleRecord> {
        self.samples
            .iter()
            .filter(|s| s.condition.as_deref() == condition)
            .collect()
    }
}

/// What the guest looked like, read back after its setup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Facts {
    pub kernel_release: String,
    pub kernel_version: String,
    pub possible_cpus: String,
    pub online_cpus: String,
    pub mem_total_kib: u64,
    pub zswap: BTreeMap<String, String>,
    pub thp: String,
    pub swaps: Vec<String>,
    /// The kernel function the function profiler counted, if any.
    #[serde(default)]
    pub profiled_symbol: Option<String>,
    /// The variant's runtime settings as read back, by path; absent when
    /// none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, String>,
    /// How the kernel split CPU time, from its own `/proc/config.gz`;
    /// absent in documents from before it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cputime: Option<Cputime>,
    /// The guest's clocksource (`tsc`, `kvm-clock`); absent when the
    /// kernel did not say, and in documents from before it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clocksource: Option<String>,
}

/// How a boot's kernel split CPU time between user and system mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cputime {
    pub accounting: CputimeAccounting,
    /// `CONFIG_HZ`: under precise accounting, a task's user/system split is
    /// exact to 1/HZ per mode; under ticks, the tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hz: Option<u32>,
    /// Interrupt time is kept apart (`CONFIG_IRQ_TIME_ACCOUNTING`).
    pub irq_time: bool,
    /// What precise accounting needs that the kernel lacks (`CONFIG_X=y`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// Steal time kept out of task CPU time under KVM
    /// (`CONFIG_PARAVIRT_TIME_ACCOUNTING`); absent when unknown, and in
    /// documents from before it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paravirt_steal: Option<bool>,
}

/// [`Cputime::accounting`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CputimeAccounting {
    /// Charged at every kernel entry and exit, on every CPU.
    Precise,
    /// Split by timer ticks.
    Tick,
    /// The kernel published no configuration.
    Unknown,
}

impl Cputime {
    /// Exact user and system times, interrupts apart.
    pub fn is_precise(&self) -> bool {
        self.accounting == CputimeAccounting::Precise && self.irq_time
    }
}

impl From<&patchbench_agent::cputime::CputimeFacts> for Cputime {
    fn from(f: &patchbench_agent::cputime::CputimeFacts) -> Self {
        use patchbench_agent::cputime::Accounting;
        Cputime {
            accounting: match f.accounting {
                Accounting::Precise => CputimeAccounting::Precise,
                Accounting::Tick => CputimeAccounting::Tick,
                Accounting::Unknown => CputimeAccounting::Unknown,
            },
            hz: f.hz,
            irq_time: f.irq_time,
            missing: f.missing.clone(),
            paravirt_steal: f.paravirt_steal,
        }
    }
}

impl From<&patchbench_agent::GuestFacts> for Facts {
    fn from(f: &patchbench_agent::GuestFacts) -> Self {
        Facts {
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
            cputime: f.cputime.as_ref().map(Cputime::from),
            clocksource: f.clocksource.clone(),
        }
    }
}

/// One sample: its place in its condition and its metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SampleRecord {
    /// 0-based within its condition, warm-ups first.
    pub index: u32,
    /// The control's name; absent for the main workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// Metric name → value (nanoseconds for times; see the spec).
    pub metrics: BTreeMap<String, u64>,
    /// The cost lane only (absent elsewhere, and for warm-ups): modeled
    /// cycles per kernel symbol (`user` for user space) in each marked
    /// phase of the sample, phase → symbol → cycles.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub profile: BTreeMap<String, BTreeMap<String, u64>>,
}

impl From<&patchbench_agent::Sample> for SampleRecord {
    fn from(s: &patchbench_agent::Sample) -> Self {
        SampleRecord {
            index: s.index,
            condition: s.condition.clone(),
            metrics: s.metrics.clone(),
            profile: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timing {
    pub stage: String,
    pub seconds: f64,
}

/// Why `run --series` without a campaign file ran this campaign for its
/// series (absent when a campaign file was given).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReachRecord {
    /// The functions the series changes that this campaign executes, each
    /// with how that is known. Empty: no shipped campaign executes any,
    /// and this run is a sanity check that says nothing about the series.
    pub executes: Vec<ReachedRecord>,
    /// Functions the series changes that no shipped campaign executes
    /// (`file: function`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreached: Vec<String>,
}

impl ReachRecord {
    /// What must stand wherever a run of a series that no shipped campaign
    /// reaches is reported.
    pub const NOTHING_REACHED: &str = "no shipped workload executes the code this series changes, so this run is a sanity check of the tool only: its \"no clear difference\" says nothing about the series";

    /// The report's lines about why the campaign ran: the functions of the
    /// series it executes and how that is known, or the warning that it
    /// executes none; then what no campaign executes.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.executes.is_empty() {
            out.push(format!("WARNING: {}.", Self::NOTHING_REACHED));
        } else {
            for r in &self.executes {
                out.push(format!(
                    "Chosen for the series: it executes {} ({}); {}.",
                    r.function,
                    r.file,
                    r.how.join("; ")
                ));
            }
        }
        if !self.unreached.is_empty() {
            out.push(format!(
                "No shipped workload executes {}: this run says nothing about them.",
                self.unreached.join(", ")
            ));
        }
        out
    }
}

/// One function of the series a chosen campaign executes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReachedRecord {
    pub function: String,
    pub file: String,
    /// `declared in ci/seeds/x.yaml: why`, `seen ... (results/.../results.json)`.
    pub how: Vec<String>,
}
