//! The records `results.json` is made of, other than the comparisons: the
//! host, the tree and series, the variants and their kernels, the
//! workload, the protocol, and every boot with its facts and samples.
//! Each is a type of the published format's own (documented in
//! docs/results-schema.md), converted from the build's, the guest
//! protocol's and the workload's types here, at the edge.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::model::{Lane, Layouts, TcgThreads};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "HostAsStored")]
pub struct Host {
    pub cpu_model: String,
    pub cores: usize,
    /// The lane every boot ran in (`kvm`, `tcg`, `icount`, `count`,
    /// `cost`), decided once before the first build. Documents of schema
    /// 4 and older stored `accel`, `icount` and `cost_model` instead, and
    /// load with their lane (`model::Lane::of_old_document`).
    pub lane: Lane,
    /// Why this lane: "KVM is usable", why it fell back to TCG, or what
    /// forced TCG (icount, the plugin).
    pub accel_reason: String,
    /// Plain TCG's threading (`vm.tcg_threads`); absent under icount, KVM,
    /// and in documents from before it was a setting (which ran `multi`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcg_threads: Option<TcgThreads>,
    /// The cost lane's machine model (`skylake-client`), as the plugin
    /// names it in every window (docs/cost-model.md). Absent outside the
    /// cost lane.
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

/// [`Host`] as any schema stored it: schema 5's `lane`, or schema 4's
/// and older `accel`, `icount` and `cost_model` (`count` in the counting
/// lane), read in one typed pass so that a damaged document's error still
/// names its byte.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HostAsStored {
    cpu_model: String,
    cores: usize,
    #[serde(default)]
    lane: Option<Lane>,
    #[serde(default)]
    accel: Option<crate::model::Accel>,
    #[serde(default)]
    icount: Option<bool>,
    accel_reason: String,
    #[serde(default)]
    tcg_threads: Option<TcgThreads>,
    #[serde(default)]
    cost_model: Option<String>,
    #[serde(default)]
    parallel_boots: Option<u32>,
    #[serde(default)]
    noise: Option<HostNoise>,
    #[serde(default)]
    host_facts: Option<super::hostfacts::HostFactsRecord>,
}

impl TryFrom<HostAsStored> for Host {
    type Error = String;

    fn try_from(h: HostAsStored) -> Result<Host, String> {
        let lane = match (h.lane, h.accel) {
            (Some(lane), None) => lane,
            (None, Some(accel)) => {
                Lane::of_old_document(accel, h.icount.unwrap_or(false), h.cost_model.as_deref())
            }
            (Some(_), Some(_)) => {
                return Err("host has both `lane` and schema 4's `accel`".into());
            }
            (None, None) => return Err("host has no `lane`".into()),
        };
        Ok(Host {
            cpu_model: h.cpu_model,
            cores: h.cores,
            lane,
            accel_reason: h.accel_reason,
            tcg_threads: h.tcg_threads,
            // Only the cost lane's machine; schema 4 wrote `count` here.
            cost_model: h.cost_model.filter(|_| lane == Lane::Cost),
            parallel_boots: h.parallel_boots,
            noise: h.noise,
            host_facts: h.host_facts,
        })
    }
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
        if self.samples_ms.len() < 2 {
            return None;
        }
        crate::stats::Summary::of(&self.samples_ms).and_then(|s| s.cv_pct)
    }

    /// The timings' mean, in milliseconds.
    pub fn mean_ms(&self) -> f64 {
        self.samples_ms.iter().sum::<f64>() / self.samples_ms.len().max(1) as f64
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
                detectable: Vec::new(),
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
    /// Judged by boot (under KVM): what the budget's last look can detect,
    /// stated after the first round from the spread of its boots, one per
    /// primary metric of the main workload. Absent elsewhere.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub detectable: Vec<DetectableRecord>,
}

/// What a campaign judged by boot can detect by its last look, at the
/// noise of its first round (`stats::detectable_change`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DetectableRecord {
    pub metric: String,
    /// The round whose boots the spread came from.
    pub round: u32,
    /// One boot's mean's coefficient of variation, percent.
    pub boot_cv_pct: f64,
    /// The smallest fall (negative) and rise of B's mean the last look
    /// calls with 80% power, percent.
    pub fall_pct: f64,
    pub rise_pct: f64,
    /// The last look's expected interval half-width at no change, percent.
    pub half_width_pct: f64,
    /// Whether "no clear difference" (the interval inside ±`noise_pct`)
    /// can be reached within the budget.
    pub band_reachable: bool,
    /// The fewest rounds that would reach it (`None`: more than 32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds_for_band: Option<u32>,
    /// The band, percent.
    pub noise_pct: f64,
}

impl DetectableRecord {
    /// The statement, for the run's notes and its report.
    pub fn line(&self, rounds: u32) -> String {
        let band = if self.band_reachable {
            format!(
                "\"no clear difference\" within \u{b1}{}% is within reach",
                self.noise_pct
            )
        } else {
            format!(
                "\u{b1}{}% is out of reach within {rounds} rounds at this noise (the last look's interval would be \u{b1}{:.1}%{}), so the verdicts left are a change or inconclusive",
                self.noise_pct,
                self.half_width_pct,
                match self.rounds_for_band {
                    Some(r) => format!("; {r} rounds would reach it"),
                    None => "; more than 32 rounds would".into(),
                }
            )
        };
        format!(
            "{}: at round {}'s noise (a boot's mean varies by {:.1}%), the smallest change {rounds} rounds detect (80% power) is \u{2212}{:.1}% / +{:.1}%; {band}.",
            self.metric, self.round, self.boot_cv_pct, -self.fall_pct, self.rise_pct
        )
    }
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
    /// Under KVM, the host CPUs the boot's threads were pinned to: each
    /// online vCPU's own (in vCPU order), and QEMU's other threads'.
    /// Absent in the TCG lanes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<PinnedRecord>,
}

/// Where a KVM boot's threads ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedRecord {
    /// The host CPU of each online vCPU, in vCPU order.
    pub vcpus: Vec<usize>,
    /// The host CPUs of QEMU's main loop, its other threads and patchbench.
    pub rest: Vec<usize>,
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
    /// The kernel features the boot read back, each from its own file
    /// (`thp`, `ksm`, `hugetlb`...: workloads/agent/src/feature.rs); absent
    /// in documents from before they were read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<String>,
    /// Whether the kernel runs `rcu_barrier()` on request
    /// (`rcutree.do_rcu_barrier`), as the mm library's windows do at both
    /// edges; absent in documents from before they did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcu_barrier: Option<bool>,
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
    /// The cost lane only, beside `profile`: where each symbol's modeled
    /// cycles went (instructions, the cost table's classes, misses),
    /// phase → symbol → split. Absent in the counting lane and in older
    /// documents.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub split: BTreeMap<String, crate::model::profile::SplitProfile>,
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
