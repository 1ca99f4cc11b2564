//! The campaign file: typed, strict configuration, validated once into a [`Plan`].
//!
//! A campaign file is YAML. Unknown keys are errors, sizes are byte sizes
//! (`64 MiB`), durations are durations (`90s`), and exclusive choices are
//! enums. Relative paths are relative to the campaign file's directory.
//! Everything after this module works on the validated [`Plan`] only.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytesize::ByteSize;
use patchbench_agent::{ThpMode, ZswapSetup};
use serde::Deserialize;

use crate::controls::{Control, ControlError};
pub use crate::model::CpuShape;
use crate::model::layout::MIN_LAYOUT_BOOTS;
use crate::model::order::{DEFAULT_BOOTS_PER_VARIANT, DEFAULT_ORDER_SEED};
use crate::model::{BootOrder, GuestShape, Layouts, ParallelBoots, TcgThreads};
use crate::series::SeriesSource;
use crate::variants::{VariantError, VariantSet};
use crate::workload::{Planned, WorkloadConfig, WorkloadError};

pub mod reaches;

/// The campaign `patchbench run` uses when given no file: the CI smoke run.
pub const DEFAULT_CAMPAIGN: &str = include_str!("../ci/smoke.yaml");

/// Where [`DEFAULT_CAMPAIGN`]'s relative paths point: the source checkout's
/// `ci/` folder, which ships `patches/` and `kconfigs/` beside it.
pub fn default_campaign_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ci")
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Campaign {
    pub name: String,
    /// Written as a one-key map: `tarball: PATH` or `git: {path: ..., rev: ...}`.
    #[serde(with = "yaml_serde::with::singleton_map")]
    pub tree: TreeSource,
    /// The series: a path (a directory of patches, an mbox, one patch),
    /// `lore:<message-id>`, or `none` (the default). Without `variants:`
    /// it makes variant B, and A is the untouched base.
    #[serde(default = "no_series")]
    pub series: String,
    /// How many context lines at each end of a hunk may differ from the
    /// tree (patch(1)'s fuzz). 0, the default, is `git am`'s rule: a hunk
    /// applies exactly, 3-way, or whole at another line, or not at all.
    #[serde(default)]
    pub fuzz: u32,
    /// The variants, each the base plus a prefix of the series, kconfig
    /// fragments, command-line words or runtime settings. Absent: A (the
    /// base) and B (the base + the series).
    #[serde(default)]
    pub variants: Option<Vec<crate::variants::VariantConfig>>,
    /// The variant the others are compared with [default: the first].
    #[serde(default)]
    pub baseline: Option<String>,
    /// `true`: one variant per prefix of the series (the base, + patch 1,
    /// ..., + the whole series), to see what each patch does. `bisect`:
    /// base against the whole series, then a hunt by bisection for the
    /// first patch that makes the change.
    #[serde(default)]
    pub per_patch: crate::variants::PerPatch,
    /// The public-inbox archive `lore:` series are fetched from.
    #[serde(default = "default_lore_url")]
    pub lore_url: String,
    pub kernel: KernelConfig,
    pub vm: VmConfig,
    #[serde(default = "default_zswap")]
    pub zswap: ZswapSetup,
    #[serde(default = "default_thp")]
    pub thp: ThpMode,
    /// The `workload:` section as written: validated into the plan's
    /// workload, and the base that controls override.
    pub workload: yaml_serde::Mapping,
    /// Control conditions run in the same boots, after the main workload:
    /// `{name, set: {param: value}}` overriding `workload:` parameters.
    #[serde(default)]
    pub controls: Vec<crate::controls::ControlConfig>,
    pub protocol: Protocol,
    /// The kernel code the workload executes (`reaches::Reaches`): what
    /// makes the campaign one that `run --series` may choose. Not used by
    /// the run itself.
    #[serde(default)]
    pub reaches: Option<reaches::Reaches>,
}

/// Where the base kernel tree comes from.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum TreeSource {
    /// A kernel source tarball (Debian's `linux-source-*.tar.xz` or a
    /// kernel.org tarball), imported once into a cached git repository.
    Tarball(PathBuf),
    /// A local git repository; `rev` defaults to its HEAD.
    Git {
        path: PathBuf,
        #[serde(default)]
        rev: Option<String>,
    },
    /// A remote repository (https or git), fetched shallow (depth 1) into
    /// the cache; `rev` is a branch, tag or commit, default the remote HEAD.
    Url {
        url: String,
        #[serde(default)]
        rev: Option<String>,
    },
}

impl std::fmt::Display for TreeSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TreeSource::Tarball(p) => write!(f, "tarball {}", p.display()),
            TreeSource::Git { path, rev } => {
                write!(
                    f,
                    "git {} at {}",
                    path.display(),
                    rev.as_deref().unwrap_or("HEAD")
                )
            }
            TreeSource::Url { url, rev } => {
                write!(f, "git {url} at {}", rev.as_deref().unwrap_or("HEAD"))
            }
        }
    }
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KernelConfig {
    /// The starting `.config`: `tinyconfig`, `defconfig`, or `{file: PATH}`.
    #[serde(with = "yaml_serde::with::singleton_map")]
    pub base: BaseConfig,
    /// Fragments merged in order onto the base; later ones win.
    pub fragments: Vec<PathBuf>,
    /// Words added to every variant's kernel command line
    /// (`zswap.enabled=0`); patchbench's own (console, panic, maxcpus...)
    /// cannot be changed.
    #[serde(default)]
    pub cmdline: Vec<String>,
    /// How the kernels split CPU time between user and system mode:
    /// `precise` (the default) merges [`cputime_fragment`] after the
    /// fragments, and every boot must show it; `tick` leaves the kernel's
    /// own choice (tinyconfig's: timer ticks).
    #[serde(default)]
    pub cputime: CputimeChoice,
}

/// `kernel.cputime`: whether the measured kernels charge CPU time at every
/// kernel entry and exit (kconfigs/cputime.config).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum CputimeChoice {
    /// Every workload reports user and system time, and the seeds argue in
    /// system time: exact where the kernel can make it so.
    #[default]
    Precise,
    /// The kernel's own accounting; user and system times are then what
    /// it gives (with tinyconfig, samples of timer ticks), and reports say
    /// so.
    Tick,
}

/// The fragment `kernel.cputime: precise` merges: precise CPU time
/// accounting, with the reasons and the price in its comments.
pub fn cputime_fragment() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("kconfigs/cputime.config")
}

/// The fragment a campaign that runs under KVM merges into both kernels:
/// paravirtual steal accounting, so that a task's CPU time leaves out what
/// the host stole.
pub fn kvm_guest_fragment() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("kconfigs/kvm-guest.config")
}

/// What the fragments are merged onto.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BaseConfig {
    /// `make tinyconfig`: the smallest kernel; the fragments add the rest.
    Tinyconfig,
    /// `make defconfig`: the architecture's default configuration.
    Defconfig,
    /// A full `.config` of your own (relative to the campaign file), such as
    /// a distribution's; `olddefconfig` fills in what it lacks.
    File(PathBuf),
}

impl BaseConfig {
    /// The make target that produces the base, or `None` for a file.
    pub fn make_target(&self) -> Option<&'static str> {
        match self {
            BaseConfig::Tinyconfig => Some("tinyconfig"),
            BaseConfig::Defconfig => Some("defconfig"),
            BaseConfig::File(_) => None,
        }
    }
}

impl std::fmt::Display for BaseConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BaseConfig::File(path) => write!(f, "{}", path.display()),
            other => f.write_str(other.make_target().unwrap_or_default()),
        }
    }
}

pub use crate::model::{AccelChoice, CostModel};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmConfig {
    pub memory: ByteSize,
    pub cpus: CpuShape,
    #[serde(default)]
    pub accel: AccelChoice,
    /// TCG only: `-icount shift=0,sleep=off`, a deterministic guest clock.
    /// Nearly noise-free (guest CPU times repeat to 0.01% here). Ignored,
    /// with a note, when the accelerator is KVM.
    #[serde(default)]
    pub icount: bool,
    /// Plain TCG (no icount): `multi` runs one host thread per vCPU
    /// (MTTCG), `single` runs every vCPU on one. Which is quieter was
    /// measured, with the host's own noise beside it: docs/tcg-noise.md.
    #[serde(default)]
    pub tcg_threads: TcgThreads,
    /// `cache`: measure in the cost lane (docs/cost-model.md): every boot
    /// under TCG, single-threaded, with icount, the cost-model plugin
    /// loaded, and modeled-cost metrics per marked phase. `none` (the
    /// default): the accelerator and clock above.
    #[serde(default)]
    pub cost_model: CostModel,
    /// How many boots run at once: `auto` (the default) boots side by
    /// side under icount, up to the host's cores and memory, and one at a
    /// time in the cost lane, in plain TCG and under KVM. A number above 1
    /// is taken under icount and in the cost lane, and refused on the
    /// host's clock.
    #[serde(default)]
    pub parallel_boots: ParallelBoots,
    #[serde(with = "humantime_serde")]
    pub boot_timeout: Duration,
    #[serde(with = "humantime_serde")]
    pub run_timeout: Duration,
    /// Size of the sparse file attached as the guest's swap disk.
    pub swap_size: ByteSize,
}

/// How boots are ordered and how many samples each takes, validated as it
/// is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "ProtocolConfig")]
pub struct Protocol {
    pub order: BootOrder,
    /// Samples discarded at the start of every boot.
    pub warmups: u32,
    /// Samples measured per boot, at least 1.
    pub samples: u32,
    /// Whether each boot of a variant runs in a memory layout of its own.
    pub layouts: Layouts,
    /// Whether the campaign samples in rounds until it is decided.
    pub sequential: SequentialChoice,
}

/// `protocol.sequential`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SequentialChoice {
    /// In the lanes whose boots repeat (icount, the cost lane), `samples`
    /// becomes a budget of rounds ([`crate::model::sequential::auto`]);
    /// under KVM, rounds of boots judged by boot
    /// ([`crate::model::sequential::kvm_auto`]); under plain TCG the fixed
    /// protocol.
    #[default]
    Auto,
    /// The fixed protocol: every boot takes `samples` samples.
    Off,
    /// Rounds as given, in any lane; `samples` is per boot and round.
    Rounds(crate::model::Sequential),
}

impl SequentialChoice {
    /// The schedule the campaign runs in `lane`: `samples` per boot (per
    /// round when sequential).
    pub fn resolve(
        self,
        samples: u32,
        lane: crate::model::Lane,
    ) -> Option<crate::model::Sequential> {
        match self {
            SequentialChoice::Off => None,
            SequentialChoice::Rounds(s) => Some(s),
            SequentialChoice::Auto => lane.auto_sequential(samples),
        }
    }
}

/// `protocol.sequential` as written: `auto`, `off`, or the rounds.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum SequentialConfig {
    Word(SequentialWord),
    Rounds(RoundsConfig),
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum SequentialWord {
    Auto,
    Off,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RoundsConfig {
    /// At most this many rounds of the boot order (the budget).
    rounds: u32,
    /// Stop after the round during which this much time has passed.
    #[serde(default, with = "humantime_serde")]
    time: Option<Duration>,
    #[serde(default)]
    spending: crate::model::Spending,
}

/// `protocol:` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProtocolConfig {
    /// `ABA` (default), `ABAB` (alternating), or `random` (shuffled with
    /// `seed`, recorded in the results).
    #[serde(default)]
    order: OrderName,
    /// Boots of each variant for `ABAB` and `random` [default: 2].
    #[serde(default)]
    boots_per_variant: Option<u32>,
    /// The shuffle's seed for `random` [default: a fixed seed].
    #[serde(default)]
    seed: Option<u64>,
    warmups: u32,
    samples: u32,
    /// `fixed` (default) or `varied`: the k-th boot of every variant in
    /// memory layout k, judged by its boots (docs/cost-model.md, "Layout").
    #[serde(default)]
    layouts: Layouts,
    /// `auto` (default), `off`, or `{rounds: N, time: 60m, spending:
    /// pocock}`: sample in rounds of the boot order until every primary
    /// metric is decided (docs/statistics.md, "Sequential campaigns").
    #[serde(default)]
    sequential: Option<SequentialConfig>,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
enum OrderName {
    #[default]
    #[serde(rename = "ABA")]
    Aba,
    #[serde(rename = "ABAB")]
    Abab,
    #[serde(rename = "random")]
    Random,
}

impl TryFrom<ProtocolConfig> for Protocol {
    type Error = String;
    fn try_from(raw: ProtocolConfig) -> Result<Protocol, String> {
        if raw.samples == 0 {
            return Err("protocol.samples must be at least 1".into());
        }
        if raw.boots_per_variant == Some(0) {
            return Err("protocol.boots_per_variant must be at least 1".into());
        }
        let boots = raw.boots_per_variant.unwrap_or(DEFAULT_BOOTS_PER_VARIANT);
        let order = match (raw.order, raw.boots_per_variant, raw.seed) {
            (OrderName::Aba, Some(_), _) => {
                return Err(
                    "protocol.boots_per_variant needs order ABAB or random (ABA is always A, B, A)"
                        .into(),
                );
            }
            (OrderName::Random, _, seed) => BootOrder::Random {
                boots,
                seed: seed.unwrap_or(DEFAULT_ORDER_SEED),
            },
            (_, _, Some(_)) => return Err("protocol.seed applies only to order: random".into()),
            (OrderName::Aba, None, None) => BootOrder::Aba,
            (OrderName::Abab, _, None) => BootOrder::Abab { boots },
        };
        if raw.layouts == Layouts::Varied && (order == BootOrder::Aba || boots < MIN_LAYOUT_BOOTS) {
            return Err(format!(
                "protocol.layouts: varied judges a variant by its boots, one per layout, and a verdict needs at least {MIN_LAYOUT_BOOTS} of them: set order: ABAB (or random) and boots_per_variant: {MIN_LAYOUT_BOOTS} or more"
            ));
        }
        let sequential = match raw.sequential {
            None | Some(SequentialConfig::Word(SequentialWord::Auto)) => SequentialChoice::Auto,
            Some(SequentialConfig::Word(SequentialWord::Off)) => SequentialChoice::Off,
            Some(SequentialConfig::Rounds(r)) => {
                if r.rounds < 2 {
                    return Err(format!(
                        "protocol.sequential.rounds is {}: a sequential campaign needs at least 2 rounds to stop early (write `sequential: off` for the fixed protocol)",
                        r.rounds
                    ));
                }
                if raw.samples < 3 {
                    return Err(format!(
                        "protocol.samples is {} a round: a look needs at least 3 samples of B, so a round's boot takes 3 or more",
                        raw.samples
                    ));
                }
                SequentialChoice::Rounds(crate::model::Sequential {
                    rounds: r.rounds,
                    samples: raw.samples,
                    time: r.time,
                    spending: r.spending,
                })
            }
        };
        Ok(Protocol {
            order,
            warmups: raw.warmups,
            samples: raw.samples,
            layouts: raw.layouts,
            sequential,
        })
    }
}

fn no_series() -> String {
    "none".into()
}

fn default_lore_url() -> String {
    crate::series::lore::DEFAULT_BASE_URL.to_string()
}

fn default_thp() -> ThpMode {
    ThpMode::Never
}

fn default_zswap() -> ZswapSetup {
    ZswapSetup {
        enabled: true,
        compressor: "lzo".into(),
        zpool: "zsmalloc".into(),
        max_pool_percent: 20,
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read campaign file {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("campaign file {}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("campaign file {}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
    #[error("campaign file {}", path.display())]
    Workload {
        path: PathBuf,
        #[source]
        source: WorkloadError,
    },
    #[error("campaign file {}", path.display())]
    Control {
        path: PathBuf,
        #[source]
        source: ControlError,
    },
    #[error("campaign file {}", path.display())]
    Variant {
        path: PathBuf,
        #[source]
        source: VariantError,
    },
}

impl ConfigError {
    /// The message and every cause, as the top level prints them.
    pub fn chain(&self) -> String {
        let mut text = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(c) = cause {
            text.push_str(": ");
            text.push_str(&c.to_string());
            cause = c.source();
        }
        text
    }
}

/// What the command line may override in a campaign.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub tree: Option<TreeSource>,
    /// A path (relative to the current directory) or `lore:<message-id>`.
    pub series: Option<String>,
    pub accel: Option<AccelChoice>,
    pub lore_url: Option<String>,
    /// `--per-patch`: one variant per prefix of the series.
    pub per_patch: bool,
    /// `--bisect`: hunt the first patch that makes the change.
    pub bisect: bool,
    /// `--fuzz N`.
    pub fuzz: Option<u32>,
    /// `run --online N`: the guest's online CPUs (`vm.cpus.online`).
    pub online: Option<u32>,
}

/// A validated campaign with absolute paths. Cloned by a hunt, whose
/// every step is the campaign with two prefixes as its variants.
#[derive(Debug, Clone)]
pub struct Plan {
    pub name: String,
    /// The campaign file, or `None` for the built-in default.
    pub source: Option<PathBuf>,
    pub tree: TreeSource,
    pub series: SeriesSource,
    /// The fuzz a hunk may apply with ([`Campaign::fuzz`]).
    pub fuzz: u32,
    pub lore_url: String,
    pub base_config: BaseConfig,
    pub fragments: Vec<PathBuf>,
    /// Words added to every variant's kernel command line.
    pub cmdline: Vec<String>,
    /// Whether every boot must show precise CPU time accounting; with
    /// `Precise`, [`cputime_fragment`] is among [`Plan::fragments`] (last,
    /// unless the campaign lists it itself).
    pub cputime: CputimeChoice,
    pub vm: VmConfig,
    pub zswap: ZswapSetup,
    pub thp: ThpMode,
    pub workload: Planned,
    /// Control conditions, run in every boot after the main workload.
    pub controls: Vec<Control>,
    /// The variants, the baseline first; resolved against the series once
    /// it is loaded.
    pub variants: VariantSet,
    pub order: BootOrder,
    pub warmups: u32,
    pub samples: u32,
    pub layouts: Layouts,
    pub sequential: SequentialChoice,
}

impl Plan {
    /// What the workload can count on in the guest.
    pub fn guest(&self) -> GuestShape {
        self.vm.guest()
    }
}

impl VmConfig {
    /// The lane this section asks for: `accel`, `icount`, `cost_model`
    /// (`model::lane::decide` turns it into a lane).
    pub fn lane_request(&self) -> crate::model::LaneRequest {
        crate::model::LaneRequest {
            accel: self.accel,
            icount: self.icount,
            cost_model: self.cost_model,
        }
    }

    /// The guest's memory and CPUs.
    pub fn guest(&self) -> GuestShape {
        GuestShape {
            memory: self.memory,
            cpus: self.cpus,
        }
    }
}

impl Campaign {
    /// Parse campaign text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<Campaign, ConfigError> {
        let campaign: Campaign = yaml_serde::from_str(text).map_err(|e| ConfigError::Parse {
            path: origin.to_owned(),
            message: e.to_string(),
        })?;
        if let Some(reaches) = &campaign.reaches {
            reaches.check().map_err(|message| ConfigError::Invalid {
                path: origin.to_owned(),
                message,
            })?;
        }
        Ok(campaign)
    }

    /// Read and parse a campaign file.
    pub fn load(path: &Path) -> Result<Campaign, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Campaign::parse(&text, path)
    }

    /// Apply overrides, resolve paths against `base_dir`, and check every
    /// value that can be checked before anything runs.
    pub fn into_plan(
        self,
        origin: &Path,
        base_dir: &Path,
        overrides: Overrides,
    ) -> Result<Plan, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: origin.to_owned(),
            message,
        };
        let resolve = |p: &Path| base_dir.join(p);
        let tree = match overrides.tree.unwrap_or(self.tree) {
            TreeSource::Tarball(p) => TreeSource::Tarball(resolve(&p)),
            TreeSource::Git { path, rev } => TreeSource::Git {
                path: resolve(&path),
                rev,
            },
            url @ TreeSource::Url { .. } => url,
        };
        let series = match overrides.series {
            Some(text) => SeriesSource::parse(&text, Path::new("")),
            None => SeriesSource::parse(&self.series, base_dir),
        };
        if let SeriesSource::Path(path) = &series
            && !path.exists()
        {
            return Err(invalid(format!("series {} does not exist", path.display())));
        }
        let mut fragments: Vec<PathBuf> =
            self.kernel.fragments.iter().map(|p| resolve(p)).collect();
        // Merged last, so a campaign's fragment cannot undo it by accident
        // (a variant's own fragments, merged after, still can on purpose).
        let cputime = cputime_fragment();
        if self.kernel.cputime == CputimeChoice::Precise
            && !fragments
                .iter()
                .any(|f| f.canonicalize().ok() == cputime.canonicalize().ok())
        {
            fragments.push(cputime);
        }
        let base_config = match self.kernel.base {
            BaseConfig::File(p) => {
                let path = resolve(&p);
                if !path.is_file() {
                    return Err(invalid(format!(
                        "kernel.base: the config file {} does not exist",
                        path.display()
                    )));
                }
                BaseConfig::File(path)
            }
            other => other,
        };
        if let Some(missing) = fragments.iter().find(|p| !p.is_file()) {
            return Err(invalid(format!(
                "kconfig fragment {} does not exist",
                missing.display()
            )));
        }
        let mut vm = self.vm;
        if let Some(accel) = overrides.accel {
            vm.accel = accel;
        }
        if let Some(online) = overrides.online {
            vm.cpus = CpuShape::new(vm.cpus.possible(), online)
                .map_err(|e| invalid(format!("--online {online}: {e}")))?;
        }
        // Under KVM (where it runs a guest), steal accounting in both
        // kernels; a lane the campaign cannot have is refused later, with
        // the decision's own error.
        if vm.lane_request().lane_where_kvm_runs() == Ok(crate::model::Lane::Kvm) {
            fragments.push(kvm_guest_fragment());
        }
        let guest = vm.guest();
        let config: WorkloadConfig =
            yaml_serde::from_value(yaml_serde::Value::Mapping(self.workload.clone()))
                .map_err(|e| invalid(format!("workload: {e}")))?;
        let workload = config
            .into_workload(&guest)
            .map_err(|source| ConfigError::Workload {
                path: origin.to_owned(),
                source,
            })?;
        check_needs(&workload, &base_config, &fragments).map_err(invalid)?;
        check_once_per_boot(&workload, &self.protocol, !self.controls.is_empty())
            .map_err(invalid)?;
        let controls = crate::controls::resolve(self.controls, &self.workload, &workload, &guest)
            .map_err(|source| ConfigError::Control {
            path: origin.to_owned(),
            source,
        })?;
        let variant_error = |source| ConfigError::Variant {
            path: origin.to_owned(),
            source,
        };
        for word in &self.kernel.cmdline {
            crate::variants::check_cmdline_word("kernel", word).map_err(variant_error)?;
        }
        let per_patch = if overrides.bisect {
            crate::variants::PerPatch::Bisect
        } else if overrides.per_patch {
            crate::variants::PerPatch::Every
        } else {
            self.per_patch
        };
        let variants = crate::variants::plan(self.variants, self.baseline, per_patch, base_dir)
            .map_err(variant_error)?;
        Ok(Plan {
            name: self.name,
            source: Some(origin.to_owned()).filter(|p| p.exists()),
            tree,
            series,
            fuzz: overrides.fuzz.unwrap_or(self.fuzz),
            lore_url: overrides.lore_url.unwrap_or(self.lore_url),
            base_config,
            fragments,
            cmdline: self.kernel.cmdline,
            cputime: self.kernel.cputime,
            vm,
            zswap: self.zswap,
            thp: self.thp,
            workload,
            controls,
            variants,
            order: self.protocol.order,
            warmups: self.protocol.warmups,
            samples: self.protocol.samples,
            layouts: self.protocol.layouts,
            sequential: self.protocol.sequential,
        })
    }
}

/// Refuses a protocol that a workload measured once per boot cannot run
/// (kernel-boot: its window is the boot itself): one sample a boot, no
/// warm-up, no control conditions.
fn check_once_per_boot(
    workload: &crate::workload::Planned,
    protocol: &Protocol,
    controls: bool,
) -> Result<(), String> {
    let crate::workload::Planned::Ready(prepared) = workload else {
        return Ok(());
    };
    if !prepared.wire().counts_boot() {
        return Ok(());
    }
    let kind = prepared.kind();
    if protocol.samples != 1 || protocol.warmups != 0 {
        return Err(format!(
            "workload {kind} measures the boot, once per boot: write protocol.samples: 1 and protocol.warmups: 0 (not {} and {}), and more boots for more samples",
            protocol.samples, protocol.warmups
        ));
    }
    if controls {
        return Err(format!(
            "workload {kind} measures the boot, which control conditions cannot share: leave out controls:"
        ));
    }
    Ok(())
}

/// Refuses a workload whose spec needs a kernel feature the campaign's
/// configuration does not build (`workload::needs`), before anything is
/// built: the base (a file of its own, or tinyconfig's nothing) and every
/// fragment, merged in order. Over defconfig, whose values this does not
/// read, only a fragment that turns a feature off is refused here; the
/// boot reads every feature back.
fn check_needs(workload: &Planned, base: &BaseConfig, fragments: &[PathBuf]) -> Result<(), String> {
    let Some(spec) = crate::workload::spec_for_kind(workload.kind()) else {
        return Ok(());
    };
    if spec.needs.is_empty() {
        return Ok(());
    }
    let read =
        |path: &Path| std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()));
    let mut values = crate::kconfig::Values::new();
    let complete = match base {
        BaseConfig::File(path) => {
            values.extend(crate::kconfig::parse(&read(path)?));
            true
        }
        BaseConfig::Tinyconfig => true,
        BaseConfig::Defconfig => false,
    };
    for fragment in fragments {
        values.extend(crate::kconfig::parse(&read(fragment)?));
    }
    let unmet = crate::workload::needs::unmet_in_config(&spec.needs, &values, complete);
    if unmet.is_empty() {
        return Ok(());
    }
    Err(format!(
        "workload {} needs {}, which the campaign's kernel configuration does not build; add a fragment that sets it, such as kconfigs/mm-all.config",
        workload.kind(),
        crate::workload::needs::names(&unmet)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn smoke() -> Campaign {
        Campaign::parse(DEFAULT_CAMPAIGN, Path::new("smoke.yaml")).unwrap()
    }

    fn plan_of(text: &str) -> Result<Plan, ConfigError> {
        Campaign::parse(text, Path::new("x.yaml"))?.into_plan(
            Path::new("x.yaml"),
            &default_campaign_dir(),
            Overrides::default(),
        )
    }

    #[test]
    fn a_workload_needing_a_feature_the_configuration_lacks_is_refused_by_name() {
        let campaign = |fragments: &str| {
            DEFAULT_CAMPAIGN
                .replace("    - ../kconfigs/mm.config\n", "")
                .replace(
                    "    - ../kconfigs/profile.config\n",
                    &format!("    - ../kconfigs/profile.config\n{fragments}"),
                )
                .replace(
                    "  kind: zswap-pageout\n  workers: 1\n  mib_per_worker: 32\n  zswap_max: 64 MiB\n  count_flushes: true\n",
                    "  kind: page-fault-anon\n",
                )
        };
        let plan = |text: String| {
            Campaign::parse(&text, Path::new("ci/smoke.yaml"))?.into_plan(
                Path::new("ci/smoke.yaml"),
                &default_campaign_dir(),
                Overrides::default(),
            )
        };
        let err = plan(campaign("")).unwrap_err().chain();
        assert!(
            err.contains("workload page-fault-anon needs memcg (CONFIG_MEMCG)"),
            "{err}"
        );
        plan(campaign("    - ../kconfigs/mm.config\n")).unwrap();
    }

    #[test]
    fn the_default_campaign_parses_and_validates() {
        let plan = smoke()
            .into_plan(
                Path::new("ci/smoke.yaml"),
                &default_campaign_dir(),
                Overrides::default(),
            )
            .unwrap();
        assert_eq!(plan.order.boots(2), [0, 1, 0]);
        let VariantSet::Listed(variants) = &plan.variants else {
            panic!("{:?}", plan.variants)
        };
        let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["A", "B"]);
        assert!(plan.fragments.iter().all(|p| p.is_absolute()));
        let Planned::Ready(workload) = &plan.workload else {
            panic!("{:?}", plan.workload)
        };
        assert_eq!(workload.kind(), "zswap-pageout");
        let wire = serde_json::to_value(workload.wire()).unwrap();
        assert_eq!(wire["zswap_max"], serde_json::json!({"bytes": 67_108_864}));
    }

    #[test]
    fn the_cost_lane_is_a_vm_option_off_by_default() {
        assert_eq!(smoke().vm.cost_model, CostModel::None);
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/workloads");
        let path = dir.join("counter-cost.yaml");
        let cost = Campaign::load(&path).unwrap();
        assert_eq!(cost.vm.cost_model, CostModel::Cache);
        // The counter campaign in every other respect.
        let plain = Campaign::load(&dir.join("../seeds/000-counter.yaml")).unwrap();
        assert_eq!(plain.vm.cost_model, CostModel::None);
        let text = DEFAULT_CAMPAIGN.replace("vm:\n", "vm:\n  cost_model: cash\n");
        let err = Campaign::parse(&text, Path::new("x.yaml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("cost_model") || err.contains("cash"), "{err}");
    }

    #[test]
    fn unknown_keys_are_rejected_with_their_name() {
        let text = replaced("protocol:", "protocl:");
        let err = Campaign::parse(&text, Path::new("x.yaml")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("x.yaml") && msg.contains("protocl"), "{msg}");
    }

    #[test]
    fn protocol_orders_carry_their_data_and_refuse_what_does_not_apply() {
        let with = |protocol: &str| {
            let start = DEFAULT_CAMPAIGN.find("protocol:").unwrap();
            plan_of(&format!(
                "{}protocol:\n{protocol}",
                &DEFAULT_CAMPAIGN[..start]
            ))
        };
        let order = |protocol: &str| with(protocol).map(|p| p.order).map_err(|e| e.chain());
        assert_eq!(
            order("  order: ABAB\n  boots_per_variant: 3\n  warmups: 0\n  samples: 1"),
            Ok(BootOrder::Abab { boots: 3 })
        );
        let varied = with(
            "  order: ABAB\n  boots_per_variant: 3\n  layouts: varied\n  warmups: 0\n  samples: 1",
        )
        .unwrap();
        assert_eq!(varied.layouts, Layouts::Varied);
        assert_eq!(varied.order, BootOrder::Abab { boots: 3 });
        assert_eq!(
            with("  warmups: 0\n  samples: 1").unwrap().layouts,
            Layouts::Fixed
        );
        assert_eq!(
            order("  order: random\n  warmups: 0\n  samples: 1"),
            Ok(BootOrder::Random {
                boots: 2,
                seed: DEFAULT_ORDER_SEED
            })
        );
        for (protocol, want) in [
            (
                "  boots_per_variant: 2\n  warmups: 0\n  samples: 1",
                "boots_per_variant needs order ABAB or random",
            ),
            (
                "  order: ABAB\n  seed: 3\n  warmups: 0\n  samples: 1",
                "seed applies only to order: random",
            ),
            ("  warmups: 0\n  samples: 0", "samples must be at least 1"),
            (
                "  order: ABAB\n  boots_per_variant: 0\n  warmups: 0\n  samples: 1",
                "boots_per_variant must be at least 1",
            ),
            (
                "  layouts: varied\n  warmups: 0\n  samples: 1",
                "protocol.layouts: varied judges a variant by its boots",
            ),
            (
                "  order: ABAB\n  layouts: varied\n  warmups: 0\n  samples: 1",
                "boots_per_variant: 3 or more",
            ),
            (
                "  order: ABAB\n  layouts: sometimes\n  warmups: 0\n  samples: 1",
                "unknown variant `sometimes`",
            ),
        ] {
            let err = order(protocol).unwrap_err();
            assert!(err.contains(want), "{protocol}: {err}");
        }
    }

    #[test]
    fn online_cpus_must_fit_the_possible_ones() {
        let text = replaced("{possible: 20, online: 2}", "{possible: 20, online: 21}");
        let err = plan_of(&text).unwrap_err().chain();
        assert!(
            err.contains("online (21) must be between 1 and possible (20)"),
            "{err}"
        );
    }

    #[test]
    fn online_on_the_command_line_replaces_the_campaigns_within_its_possible() {
        let plan = |online| {
            Campaign::parse(DEFAULT_CAMPAIGN, Path::new("x.yaml"))
                .unwrap()
                .into_plan(
                    Path::new("x.yaml"),
                    &default_campaign_dir(),
                    Overrides {
                        online,
                        ..Overrides::default()
                    },
                )
        };
        assert!(DEFAULT_CAMPAIGN.contains("{possible: 20, online: 2}"));
        assert_eq!(plan(None).unwrap().vm.cpus.online(), 2);
        assert_eq!(plan(Some(1)).unwrap().vm.cpus.online(), 1);
        let err = plan(Some(21)).unwrap_err().to_string();
        assert!(
            err.contains("--online 21: online (21) must be between 1 and possible (20)"),
            "{err}"
        );
    }

    /// The smoke campaign with `from` replaced, which must be in it.
    fn replaced(from: &str, to: &str) -> String {
        assert!(
            DEFAULT_CAMPAIGN.contains(from),
            "the smoke campaign has no {from:?}"
        );
        DEFAULT_CAMPAIGN.replace(from, to)
    }

    #[test]
    fn plain_tcg_threading_is_a_choice_of_two() {
        let threads = |line: &str| {
            plan_of(&replaced("  icount: true\n", line))
                .map(|p| p.vm.tcg_threads)
                .map_err(|e| e.chain())
        };
        assert_eq!(threads(""), Ok(TcgThreads::default()));
        assert_eq!(threads("  tcg_threads: single\n"), Ok(TcgThreads::Single));
        assert_eq!(threads("  tcg_threads: multi\n"), Ok(TcgThreads::Multi));
        let err = threads("  tcg_threads: two\n").unwrap_err();
        assert!(
            err.contains("tcg_threads") || err.contains("unknown variant `two`"),
            "{err}"
        );
    }

    #[test]
    fn parallel_boots_is_auto_or_a_count_of_one_or_more() {
        let parallel = |line: &str| {
            plan_of(&replaced("  icount: true\n", line))
                .map(|p| p.vm.parallel_boots)
                .map_err(|e| e.chain())
        };
        assert_eq!(parallel(""), Ok(ParallelBoots::Auto));
        assert_eq!(
            parallel("  parallel_boots: auto\n"),
            Ok(ParallelBoots::Auto)
        );
        assert_eq!(
            parallel("  parallel_boots: 3\n"),
            Ok(ParallelBoots::AtMost(3))
        );
        for bad in ["0", "two"] {
            let err = parallel(&format!("  parallel_boots: {bad}\n")).unwrap_err();
            assert!(err.contains("vm.parallel_boots"), "{bad}: {err}");
        }
    }

    #[test]
    fn more_workers_than_online_cpus_is_an_error_before_boot() {
        let text = replaced("workers: 1", "workers: 9");
        let err = plan_of(&text).unwrap_err().chain();
        assert!(err.contains("workload.workers (9)"), "{err}");
    }

    #[test]
    fn fuzz_is_none_unless_the_campaign_or_the_command_line_asks() {
        let plan = |text: &str, fuzz| {
            Campaign::parse(text, Path::new("x.yaml"))
                .unwrap()
                .into_plan(
                    Path::new("x.yaml"),
                    &default_campaign_dir(),
                    Overrides {
                        fuzz,
                        ..Overrides::default()
                    },
                )
                .unwrap()
                .fuzz
        };
        assert_eq!(plan(DEFAULT_CAMPAIGN, None), 0);
        let fuzzy = format!("fuzz: 2\n{DEFAULT_CAMPAIGN}");
        assert_eq!(plan(&fuzzy, None), 2);
        assert_eq!(plan(&fuzzy, Some(0)), 0);
        assert_eq!(plan(DEFAULT_CAMPAIGN, Some(1)), 1);
    }

    #[test]
    fn a_hunt_is_asked_by_the_campaign_or_by_the_command_line() {
        let plan = |text: &str, overrides: Overrides| {
            Campaign::parse(text, Path::new("x.yaml"))
                .unwrap()
                .into_plan(Path::new("x.yaml"), &default_campaign_dir(), overrides)
                .map(|p| p.variants)
                .map_err(|e| e.chain())
        };
        let hunt = format!("per_patch: bisect\n{DEFAULT_CAMPAIGN}");
        assert_eq!(plan(&hunt, Overrides::default()), Ok(VariantSet::Bisect));
        let bisect = Overrides {
            bisect: true,
            ..Overrides::default()
        };
        assert_eq!(
            plan(DEFAULT_CAMPAIGN, bisect.clone()),
            Ok(VariantSet::Bisect)
        );
        // The command line wins over the campaign's every-prefix waterfall.
        let waterfall = format!("per_patch: true\n{DEFAULT_CAMPAIGN}");
        assert_eq!(plan(&waterfall, bisect), Ok(VariantSet::Bisect));
        let with_variants =
            format!("per_patch: bisect\nvariants: [{{name: a}}, {{name: b}}]\n{DEFAULT_CAMPAIGN}");
        let err = plan(&with_variants, Overrides::default()).unwrap_err();
        assert!(err.contains("remove `variants:`"), "{err}");
    }

    #[test]
    fn a_missing_series_is_named() {
        let err = smoke()
            .into_plan(
                Path::new("x.yaml"),
                &default_campaign_dir(),
                Overrides {
                    series: Some("/no/such/series".into()),
                    ..Overrides::default()
                },
            )
            .unwrap_err();
        assert!(err.to_string().contains("/no/such/series"), "{err}");
    }
}
