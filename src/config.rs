//! The campaign file: typed, strict configuration, validated once into a [`Plan`].
//!
//! A campaign file is YAML. Unknown keys are errors, sizes are byte sizes
//! (`64 MiB`), durations are durations (`90s`), and exclusive choices are
//! enums. Relative paths are relative to the campaign file's directory.
//! Everything after this module works on the validated [`Plan`] only.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytesize::ByteSize;
use patchbench_agent::{Limit, ThpMode, ZswapSetup};

use crate::series::SeriesSource;
use crate::workload::WorkloadConfig;
use serde::Deserialize;

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
    /// The series that makes variant B; A is the untouched base. A path (a
    /// directory of patches, an mbox, one patch) or `lore:<message-id>`.
    pub series: String,
    /// The public-inbox archive `lore:` series are fetched from.
    #[serde(default = "default_lore_url")]
    pub lore_url: String,
    pub kernel: KernelConfig,
    pub vm: VmConfig,
    #[serde(default = "default_zswap")]
    pub zswap: ZswapSetup,
    #[serde(default = "default_thp")]
    pub thp: ThpMode,
    pub workload: WorkloadConfig,
    /// Control conditions run in the same boots, after the main workload:
    /// `{name, set: {param: value}}` overriding `workload:` parameters.
    #[serde(default)]
    pub controls: Vec<crate::controls::ControlConfig>,
    pub protocol: ProtocolConfig,
    /// The `workload:` section as written, which controls override.
    #[serde(skip)]
    pub workload_yaml: yaml_serde::Value,
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelConfig {
    /// The starting `.config`: `tinyconfig`, `defconfig`, or `{file: PATH}`.
    #[serde(with = "yaml_serde::with::singleton_map")]
    pub base: BaseConfig,
    /// Fragments merged in order onto the base; later ones win.
    pub fragments: Vec<PathBuf>,
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

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum AccelChoice {
    /// KVM where it really works, TCG otherwise (and said so in the results).
    #[default]
    Auto,
    Kvm,
    Tcg,
}

#[derive(Debug, Deserialize)]
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
    #[serde(with = "humantime_serde")]
    pub boot_timeout: Duration,
    #[serde(with = "humantime_serde")]
    pub run_timeout: Duration,
    /// Size of the sparse file attached as the guest's swap disk.
    pub swap_size: ByteSize,
}

/// QEMU `-smp possible` with the kernel's `maxcpus=online`.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CpuShape {
    pub possible: u32,
    pub online: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtocolConfig {
    /// `ABA` (default), `ABAB` (alternating), or `random` (shuffled with
    /// `seed`, recorded in the results).
    #[serde(default)]
    pub order: BootOrder,
    /// Boots of each variant for `ABAB` and `random` [default: 2].
    #[serde(default)]
    pub boots_per_variant: Option<u32>,
    /// The shuffle's seed for `random` [default: a fixed seed].
    #[serde(default)]
    pub seed: Option<u64>,
    /// Samples discarded at the start of every boot.
    pub warmups: u32,
    /// Samples measured per boot.
    pub samples: u32,
}

/// The order of fresh boots.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
pub enum BootOrder {
    /// Base, patched, base again: the return to A measures drift.
    #[default]
    #[serde(rename = "ABA")]
    Aba,
    /// A, B, A, B, ...: `boots_per_variant` of each, interleaved.
    #[serde(rename = "ABAB")]
    Alternate,
    /// `boots_per_variant` of each in a seeded random order, so that no
    /// slow drift of the host lines up with the variants.
    #[serde(rename = "random")]
    Random,
}

/// The seed of a `random` boot order when the campaign gives none.
pub const DEFAULT_ORDER_SEED: u64 = 2026;

impl BootOrder {
    /// The boots, in order. `per_variant` is ignored by `ABA`.
    pub fn boots(self, per_variant: u32, seed: u64) -> Vec<Variant> {
        let alternate = || {
            (0..per_variant)
                .flat_map(|_| [Variant::A, Variant::B])
                .collect::<Vec<_>>()
        };
        match self {
            BootOrder::Aba => vec![Variant::A, Variant::B, Variant::A],
            BootOrder::Alternate => alternate(),
            BootOrder::Random => {
                use rand_core::SeedableRng;
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
                let mut boots = alternate();
                // Fisher-Yates with an unbiased bounded draw.
                for i in (1..boots.len()).rev() {
                    let j = crate::stats::bootstrap::uniform_below(&mut rng, i as u64 + 1) as usize;
                    boots.swap(i, j);
                }
                boots
            }
        }
    }
}

/// Which kernel a boot runs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Variant {
    /// The untouched base.
    A,
    /// The base plus the series.
    B,
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

pub fn parse_limit(text: &str) -> Result<Limit, String> {
    if text.trim() == "max" {
        return Ok(Limit::Max);
    }
    text.parse::<ByteSize>()
        .map(|b| Limit::Bytes(b.as_u64()))
        .map_err(|e| format!("`{text}` is neither `max` nor a byte size such as `64 MiB`: {e}"))
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
}

/// What the command line may override in a campaign.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub tree: Option<TreeSource>,
    /// A path (relative to the current directory) or `lore:<message-id>`.
    pub series: Option<String>,
    pub accel: Option<AccelChoice>,
    pub lore_url: Option<String>,
}

/// A validated campaign with absolute paths.
#[derive(Debug)]
pub struct Plan {
    pub name: String,
    /// The campaign file, or `None` for the built-in default.
    pub source: Option<PathBuf>,
    pub tree: TreeSource,
    pub series: SeriesSource,
    pub lore_url: String,
    pub base_config: BaseConfig,
    pub fragments: Vec<PathBuf>,
    pub vm: VmConfig,
    pub zswap: ZswapSetup,
    pub thp: ThpMode,
    pub workload: patchbench_agent::Workload,
    /// Control conditions, run in every boot after the main workload.
    pub controls: Vec<crate::controls::Control>,
    pub boots: Vec<Variant>,
    /// The seed that shuffled `boots`, for a random order.
    pub order_seed: Option<u64>,
    pub warmups: u32,
    pub samples: u32,
}

impl Campaign {
    /// Parse campaign text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<Campaign, ConfigError> {
        let error = |e: yaml_serde::Error| ConfigError::Parse {
            path: origin.to_owned(),
            message: e.to_string(),
        };
        let mut campaign: Campaign = yaml_serde::from_str(text).map_err(error)?;
        let document: yaml_serde::Value = yaml_serde::from_str(text).map_err(error)?;
        campaign.workload_yaml = document.get("workload").cloned().unwrap_or_default();
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
        let fragments: Vec<PathBuf> = self.kernel.fragments.iter().map(|p| resolve(p)).collect();
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
        let cpus = vm.cpus;
        if cpus.online == 0 || cpus.online > cpus.possible {
            return Err(invalid(format!(
                "vm.cpus: online ({}) must be between 1 and possible ({})",
                cpus.online, cpus.possible
            )));
        }
        if self.protocol.samples == 0 {
            return Err(invalid("protocol.samples must be at least 1".into()));
        }
        match (self.protocol.order, self.protocol.boots_per_variant) {
            (BootOrder::Aba, Some(_)) => {
                return Err(invalid(
                    "protocol.boots_per_variant needs order ABAB or random (ABA is always A, B, A)"
                        .into(),
                ));
            }
            (_, Some(0)) => {
                return Err(invalid(
                    "protocol.boots_per_variant must be at least 1".into(),
                ));
            }
            _ => {}
        }
        if self.protocol.seed.is_some() && self.protocol.order != BootOrder::Random {
            return Err(invalid(
                "protocol.seed applies only to order: random".into(),
            ));
        }
        let workload = self
            .workload
            .into_workload(&vm)
            .map_err(|e| invalid(e.to_string()))?;
        let controls = crate::controls::resolve(self.controls, &self.workload_yaml, &workload, &vm)
            .map_err(invalid)?;
        Ok(Plan {
            name: self.name,
            source: Some(origin.to_owned()).filter(|p| p.exists()),
            tree,
            series,
            lore_url: overrides.lore_url.unwrap_or(self.lore_url),
            base_config,
            fragments,
            vm,
            zswap: self.zswap,
            thp: self.thp,
            workload,
            controls,
            boots: self.protocol.order.boots(
                self.protocol.boots_per_variant.unwrap_or(2),
                self.protocol.seed.unwrap_or(DEFAULT_ORDER_SEED),
            ),
            order_seed: (self.protocol.order == BootOrder::Random)
                .then(|| self.protocol.seed.unwrap_or(DEFAULT_ORDER_SEED)),
            warmups: self.protocol.warmups,
            samples: self.protocol.samples,
        })
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn boot_orders_alternate_or_shuffle_reproducibly() {
        use Variant::{A, B};
        assert_eq!(BootOrder::Aba.boots(5, 1), [A, B, A]);
        assert_eq!(BootOrder::Alternate.boots(3, 1), [A, B, A, B, A, B]);
        let shuffled = BootOrder::Random.boots(4, 7);
        assert_eq!(
            shuffled,
            BootOrder::Random.boots(4, 7),
            "same seed, same order"
        );
        assert_eq!(shuffled.iter().filter(|v| **v == A).count(), 4);
        assert_eq!(shuffled.len(), 8);
        // Some seed among a few gives an order other than plain alternation.
        assert!(
            (0..8).any(|seed| BootOrder::Random.boots(4, seed) != BootOrder::Alternate.boots(4, 0))
        );
    }
    use super::*;

    fn smoke() -> Campaign {
        Campaign::parse(DEFAULT_CAMPAIGN, Path::new("smoke.yaml")).unwrap()
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
        assert_eq!(plan.boots, vec![Variant::A, Variant::B, Variant::A]);
        assert!(plan.fragments.iter().all(|p| p.is_absolute()));
        assert!(matches!(
            plan.workload,
            patchbench_agent::Workload::ZswapPageout {
                zswap_max: Limit::Bytes(67_108_864),
                ..
            }
        ));
    }

    #[test]
    fn unknown_keys_are_rejected_with_their_name() {
        let text = DEFAULT_CAMPAIGN.replace("protocol:", "protocl:");
        let err = Campaign::parse(&text, Path::new("x.yaml")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("x.yaml") && msg.contains("protocl"), "{msg}");
    }

    #[test]
    fn limits_take_sizes_or_max() {
        assert_eq!(parse_limit("max"), Ok(Limit::Max));
        assert_eq!(parse_limit("64 MiB"), Ok(Limit::Bytes(64 << 20)));
        assert_eq!(parse_limit("64M"), Ok(Limit::Bytes(64_000_000)));
        assert!(parse_limit("lots").unwrap_err().contains("`lots`"));
    }

    #[test]
    fn more_workers_than_online_cpus_is_an_error_before_boot() {
        let text = DEFAULT_CAMPAIGN.replace("workers: 1", "workers: 9");
        let err = Campaign::parse(&text, Path::new("x.yaml"))
            .unwrap()
            .into_plan(
                Path::new("x.yaml"),
                &default_campaign_dir(),
                Overrides::default(),
            )
            .unwrap_err();
        assert!(err.to_string().contains("workload.workers (9)"), "{err}");
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
