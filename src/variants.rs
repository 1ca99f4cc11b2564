//! The variants of a campaign: what each kernel-and-settings combination
//! is, validated from the campaign's `variants:` (or made by `per_patch`,
//! or today's A/B when neither is given), then resolved against the loaded
//! series into the list the campaign boots, the baseline first. A hunt
//! (`per_patch: bisect`) has no fixed variants: each of its steps is an
//! A/B of two prefixes ([`VariantSet::prefixes`]).
//!
//! A variant is the base plus any of: a prefix of the series (`patches:
//! none | all | N`), extra kconfig fragments, extra kernel command-line
//! words, and runtime settings the guest agent writes under `/sys` or
//! `/proc/sys` before the workload, reads back and reports. Variants that
//! differ only at run time share a kernel.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::model::VariantName;
use crate::model::variant::MAX_NAME_LEN;

/// How much of the series a variant applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Patches {
    /// The base alone.
    #[default]
    None,
    /// The whole series.
    All,
    /// The first N patches.
    First(usize),
}

impl<'de> Deserialize<'de> for Patches {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Count(usize),
            Word(String),
        }
        match Raw::deserialize(d) {
            Ok(Raw::Count(0)) => Ok(Patches::None),
            Ok(Raw::Count(n)) => Ok(Patches::First(n)),
            Ok(Raw::Word(w)) if w == "none" => Ok(Patches::None),
            Ok(Raw::Word(w)) if w == "all" => Ok(Patches::All),
            _ => Err(serde::de::Error::custom(
                "patches: expected `none`, `all` or how many of the series' first patches",
            )),
        }
    }
}

/// `per_patch:` in a campaign: what the campaign does with the series'
/// prefixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PerPatch {
    /// `false` (the default): the variants the campaign lists, or A/B.
    #[default]
    Off,
    /// `true`: the base and every prefix of the series, with a waterfall.
    Every,
    /// `bisect`: base against the whole series, then a hunt by bisection
    /// for the first patch that makes the change (`crate::bisect`).
    Bisect,
}

impl<'de> Deserialize<'de> for PerPatch {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Flag(bool),
            Word(String),
        }
        match Raw::deserialize(d) {
            Ok(Raw::Flag(false)) => Ok(PerPatch::Off),
            Ok(Raw::Flag(true)) => Ok(PerPatch::Every),
            Ok(Raw::Word(w)) if w == "bisect" => Ok(PerPatch::Bisect),
            _ => Err(serde::de::Error::custom(
                "per_patch: expected `true` (every prefix, a waterfall), `false` or `bisect` (hunt the first patch that makes the change)",
            )),
        }
    }
}

/// A variant as the campaign file writes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantConfig {
    /// Letters, digits, `-` and `_`; unique in the campaign.
    pub name: String,
    #[serde(default)]
    pub patches: Patches,
    /// Kconfig fragments merged after the campaign's, relative to the
    /// campaign file.
    #[serde(default)]
    pub fragments: Vec<PathBuf>,
    /// Words added to the kernel command line (`zswap.enabled=0`).
    #[serde(default)]
    pub cmdline: Vec<String>,
    /// `/sys/...` or `/proc/sys/...` path → value, written by the guest
    /// before the workload, in order, and read back.
    #[serde(default)]
    pub settings: yaml_serde::Mapping,
}

/// A runtime setting: a file under `/sys` or `/proc/sys` and the text to
/// write to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    pub path: String,
    pub value: String,
}

/// A validated variant, before the series is known.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantPlan {
    pub name: VariantName,
    pub patches: Patches,
    /// Absolute paths.
    pub fragments: Vec<PathBuf>,
    pub cmdline: Vec<String>,
    pub settings: Vec<Setting>,
}

/// The campaign's variants before the series is loaded.
#[derive(Debug, Clone, PartialEq)]
pub enum VariantSet {
    /// Given (or the default A/B), the baseline first.
    Listed(Vec<VariantPlan>),
    /// `per_patch`: the base, then the base plus each prefix of the series.
    PerPatch,
    /// `per_patch: bisect`: no fixed variants; the hunt runs one A/B of
    /// two prefixes per step ([`VariantSet::prefixes`]).
    Bisect,
}

/// A variant resolved against the series: what the campaign builds and
/// boots.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    pub name: VariantName,
    /// What it is, for people.
    pub description: String,
    /// How many of the series' first patches it applies.
    pub patches: usize,
    /// Absolute paths, merged after the campaign's fragments.
    pub fragments: Vec<PathBuf>,
    pub cmdline: Vec<String>,
    pub settings: Vec<Setting>,
}

impl Variant {
    /// Variants with the same key boot the same kernel.
    pub fn kernel_key(&self) -> (usize, &[PathBuf]) {
        (self.patches, &self.fragments)
    }
}

/// A variant set the campaign cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VariantError {
    #[error(
        "variants[{index}].name {name:?}: must be 1 to {MAX_NAME_LEN} ASCII letters, digits, `-` or `_`"
    )]
    Name { index: usize, name: String },
    #[error("variants[{index}] ({name}): another variant has this name")]
    Duplicate { index: usize, name: String },
    #[error("variants: {count} given; a campaign compares at least 2")]
    TooFew { count: usize },
    #[error("baseline: {name:?} is not one of the variants ({known})")]
    Baseline { name: String, known: String },
    #[error("baseline: {name:?} given without variants:")]
    BaselineWithoutVariants { name: String },
    #[error(
        "per_patch makes its own variants (the base, then each prefix of the series); remove `variants:`"
    )]
    PerPatchWithVariants,
    #[error("per_patch needs a series of at least one patch; this one has none")]
    PerPatchEmpty,
    #[error(
        "per_patch: bisect chooses its prefixes as the hunt goes: only `patchbench run` runs it, one A/B of two prefixes per step"
    )]
    BisectHasNoFixedVariants,
    #[error("{at}.settings: {path:?} {problem}")]
    SettingPath {
        at: String,
        path: String,
        problem: &'static str,
    },
    #[error("{at}.settings: the value for {path} {problem}")]
    SettingValue {
        at: String,
        path: String,
        problem: &'static str,
    },
    #[error("{at}.cmdline: {word:?} {problem}")]
    Cmdline {
        at: String,
        word: String,
        problem: String,
    },
    #[error("{at}.fragments: {} does not exist", path.display())]
    Fragment { at: String, path: PathBuf },
    #[error("variant {name}: patches: {asked}, but the series has {have} patch(es)")]
    Prefix {
        name: String,
        asked: usize,
        have: usize,
    },
}

/// The kernel command-line keys patchbench sets itself (`vm::args`); a
/// variant may not change them.
const OWN_CMDLINE_KEYS: [&str; 5] = ["console", "panic", "oops", "maxcpus", "rdinit"];

/// Checks one command-line word: `key` or `key=value`, of characters that
/// need no quoting, and not one of the keys patchbench sets.
pub fn check_cmdline_word(at: &str, word: &str) -> Result<(), VariantError> {
    let bad = |problem: String| VariantError::Cmdline {
        at: at.to_string(),
        word: word.to_string(),
        problem,
    };
    if word.is_empty()
        || !word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.,:=/+@".contains(c))
    {
        return Err(bad(
            "must be one word of letters, digits and `_-.,:=/+@` (no spaces or quotes)".into(),
        ));
    }
    let key = word.split('=').next().unwrap_or(word);
    if OWN_CMDLINE_KEYS.contains(&key) {
        return Err(bad(format!(
            "sets `{key}`, which patchbench sets itself (see `vm` in the campaign)"
        )));
    }
    Ok(())
}

/// Checks a setting's path: absolute, under `/sys/` or `/proc/sys/`, with
/// no `.` or `..` component and only characters sysfs and procfs names use.
fn check_setting_path(at: &str, path: &str) -> Result<(), VariantError> {
    let bad = |problem| VariantError::SettingPath {
        at: at.to_string(),
        path: path.to_string(),
        problem,
    };
    let rest = path
        .strip_prefix("/sys/")
        .or_else(|| path.strip_prefix("/proc/sys/"))
        .ok_or_else(|| bad("is not under /sys/ or /proc/sys/"))?;
    for part in rest.split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return Err(bad("has an empty, `.` or `..` component"));
        }
        if !part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.:,+@".contains(c))
        {
            return Err(bad("has characters no sysfs or procfs name uses"));
        }
    }
    Ok(())
}

/// A YAML scalar as the text to write.
fn scalar_text(value: &yaml_serde::Value) -> Option<String> {
    use yaml_serde::Value;
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(if *b { "1" } else { "0" }.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn check_settings(at: &str, settings: yaml_serde::Mapping) -> Result<Vec<Setting>, VariantError> {
    let mut out = Vec::new();
    for (key, value) in settings {
        let path = key.as_str().map(str::to_string).unwrap_or_default();
        check_setting_path(at, &path)?;
        let bad = |problem| VariantError::SettingValue {
            at: at.to_string(),
            path: path.clone(),
            problem,
        };
        let value = scalar_text(&value).ok_or_else(|| bad("must be text, a number or a bool"))?;
        if value.contains(['\n', '\0']) || value.len() > 4096 {
            return Err(bad("must be one line of at most 4096 bytes"));
        }
        out.push(Setting { path, value });
    }
    Ok(out)
}

/// Validates the campaign's `variants:`, `baseline:` and `per_patch`
/// (paths resolved against `base_dir`). Without `variants:` and
/// `per_patch`, the campaign is today's A/B: A the base, B the series.
pub fn plan(
    variants: Option<Vec<VariantConfig>>,
    baseline: Option<String>,
    per_patch: PerPatch,
    base_dir: &Path,
) -> Result<VariantSet, VariantError> {
    if per_patch != PerPatch::Off && variants.is_some() {
        return Err(VariantError::PerPatchWithVariants);
    }
    if per_patch != PerPatch::Off
        && let Some(name) = baseline
    {
        return Err(VariantError::BaselineWithoutVariants { name });
    }
    let configs = match (variants, per_patch) {
        (_, PerPatch::Every) => return Ok(VariantSet::PerPatch),
        (_, PerPatch::Bisect) => return Ok(VariantSet::Bisect),
        (None, PerPatch::Off) => {
            if let Some(name) = baseline {
                return Err(VariantError::BaselineWithoutVariants { name });
            }
            return Ok(VariantSet::Listed(vec![
                VariantPlan {
                    name: VariantName::a(),
                    patches: Patches::None,
                    fragments: Vec::new(),
                    cmdline: Vec::new(),
                    settings: Vec::new(),
                },
                VariantPlan {
                    name: VariantName::b(),
                    patches: Patches::All,
                    fragments: Vec::new(),
                    cmdline: Vec::new(),
                    settings: Vec::new(),
                },
            ]));
        }
        (Some(configs), PerPatch::Off) => configs,
    };
    if configs.len() < 2 {
        return Err(VariantError::TooFew {
            count: configs.len(),
        });
    }
    let mut out: Vec<VariantPlan> = Vec::with_capacity(configs.len());
    for (index, config) in configs.into_iter().enumerate() {
        let name = VariantName::new(config.name.clone()).map_err(|e| VariantError::Name {
            index,
            name: e.name,
        })?;
        if out.iter().any(|v| v.name == name) {
            return Err(VariantError::Duplicate {
                index,
                name: config.name,
            });
        }
        let at = format!("variants[{index}] ({name})");
        for word in &config.cmdline {
            check_cmdline_word(&at, word)?;
        }
        let fragments: Vec<PathBuf> = config.fragments.iter().map(|p| base_dir.join(p)).collect();
        if let Some(missing) = fragments.iter().find(|p| !p.is_file()) {
            return Err(VariantError::Fragment {
                at,
                path: missing.clone(),
            });
        }
        out.push(VariantPlan {
            settings: check_settings(&at, config.settings)?,
            name,
            patches: config.patches,
            fragments,
            cmdline: config.cmdline,
        });
    }
    if let Some(name) = baseline {
        let at = out
            .iter()
            .position(|v| v.name.as_str() == name)
            .ok_or_else(|| VariantError::Baseline {
                name: name.clone(),
                known: out
                    .iter()
                    .map(|v| v.name.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        let baseline = out.remove(at);
        out.insert(0, baseline);
    }
    Ok(VariantSet::Listed(out))
}

impl VariantSet {
    /// The boot order as people read it (`A/B/A`), or how it will be made
    /// for per-patch variants, whose number the series decides.
    pub fn describe_boots(&self, order: crate::model::BootOrder) -> String {
        match self {
            VariantSet::Listed(plans) => order
                .boots(plans.len())
                .into_iter()
                .map(|i| plans[i].name.as_str())
                .collect::<Vec<_>>()
                .join("/"),
            VariantSet::PerPatch => "base, p1 ... pN (one variant per prefix of the series)".into(),
            VariantSet::Bisect => format!(
                "base/pN, then base/pK for each bisection step (about log2(N) steps), each {}",
                order
                    .boots(2)
                    .into_iter()
                    .map(|i| ["base", "pK"][i])
                    .collect::<Vec<_>>()
                    .join("/")
            ),
        }
    }

    /// One step of a hunt: the base plus the first `baseline` patches
    /// against the base plus the first `variant` (`variant > baseline`),
    /// named `base` or `p<K>`.
    pub fn prefixes(baseline: usize, variant: usize) -> VariantSet {
        let plan = |patches: usize| VariantPlan {
            name: prefix_name(patches),
            patches: match patches {
                0 => Patches::None,
                k => Patches::First(k),
            },
            fragments: Vec::new(),
            cmdline: Vec::new(),
            settings: Vec::new(),
        };
        VariantSet::Listed(vec![plan(baseline), plan(variant)])
    }

    /// The variants of a series of `patches` patches (each prefix checked
    /// against it), the baseline first. `subjects` names the patches for
    /// per-patch variants' descriptions.
    pub fn resolve(&self, subjects: &[String]) -> Result<Vec<Variant>, VariantError> {
        let have = subjects.len();
        match self {
            VariantSet::PerPatch => {
                if have == 0 {
                    return Err(VariantError::PerPatchEmpty);
                }
                Ok((0..=have)
                    .map(|k| Variant {
                        name: prefix_name(k),
                        description: match k {
                            0 => "the base".to_string(),
                            k => format!("+ patch {k}/{have}: {}", subjects[k - 1]),
                        },
                        patches: k,
                        fragments: Vec::new(),
                        cmdline: Vec::new(),
                        settings: Vec::new(),
                    })
                    .collect())
            }
            VariantSet::Bisect => Err(VariantError::BisectHasNoFixedVariants),
            VariantSet::Listed(plans) => plans
                .iter()
                .map(|v| {
                    let patches = match v.patches {
                        Patches::None => 0,
                        Patches::All => have,
                        Patches::First(n) if n <= have => n,
                        Patches::First(n) => {
                            return Err(VariantError::Prefix {
                                name: v.name.to_string(),
                                asked: n,
                                have,
                            });
                        }
                    };
                    Ok(Variant {
                        description: describe(v, patches, have),
                        name: v.name.clone(),
                        patches,
                        fragments: v.fragments.clone(),
                        cmdline: v.cmdline.clone(),
                        settings: v.settings.clone(),
                    })
                })
                .collect(),
        }
    }
}

/// The name of the variant with the first `patches` patches: `base`, `p1`,
/// `p2`...
pub fn prefix_name(patches: usize) -> VariantName {
    VariantName::new(match patches {
        0 => "base".to_string(),
        k => format!("p{k}"),
    })
    .expect("base and pN are valid names")
}

/// "the base + the series", "the base + patches 1-2 of 3; kconfig x.config;
/// cmdline a=b; /sys/...=Y".
fn describe(v: &VariantPlan, patches: usize, have: usize) -> String {
    let mut text = match (patches, have) {
        (0, 0) if v.patches == Patches::All => "the base (the series is empty)".to_string(),
        (0, _) => "the base".to_string(),
        (p, h) if p == h => "the base + the series".to_string(),
        (1, h) => format!("the base + patch 1 of {h}"),
        (p, h) => format!("the base + patches 1-{p} of {h}"),
    };
    let mut extras: Vec<String> = Vec::new();
    if !v.fragments.is_empty() {
        extras.push(format!(
            "kconfig {}",
            v.fragments
                .iter()
                .map(|f| f
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !v.cmdline.is_empty() {
        extras.push(format!("cmdline {}", v.cmdline.join(" ")));
    }
    extras.extend(v.settings.iter().map(|s| format!("{}={}", s.path, s.value)));
    if !extras.is_empty() {
        text.push_str("; ");
        text.push_str(&extras.join("; "));
    }
    text
}

pub use patchbench_agent::reads_back;

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<VariantSet, VariantError> {
        let configs: Vec<VariantConfig> = yaml_serde::from_str(yaml).unwrap();
        plan(Some(configs), None, PerPatch::Off, Path::new("/"))
    }

    fn names(set: &VariantSet, subjects: usize) -> Vec<(String, usize)> {
        let subjects: Vec<String> = (1..=subjects).map(|i| format!("s{i}")).collect();
        set.resolve(&subjects)
            .unwrap()
            .into_iter()
            .map(|v| (v.name.to_string(), v.patches))
            .collect()
    }

    #[test]
    fn without_variants_a_campaign_is_a_and_b() {
        let set = plan(None, None, PerPatch::Off, Path::new("/")).unwrap();
        assert_eq!(names(&set, 3), [("A".into(), 0), ("B".into(), 3)]);
        let resolved = set.resolve(&["x".into()]).unwrap();
        assert_eq!(resolved[0].description, "the base");
        assert_eq!(resolved[1].description, "the base + the series");
        let empty = set.resolve(&[]).unwrap();
        assert_eq!(empty[1].description, "the base (the series is empty)");
    }

    #[test]
    fn per_patch_makes_the_base_and_every_prefix() {
        let set = plan(None, None, PerPatch::Every, Path::new("/")).unwrap();
        assert_eq!(
            names(&set, 3),
            [
                ("base".into(), 0),
                ("p1".into(), 1),
                ("p2".into(), 2),
                ("p3".into(), 3)
            ]
        );
        assert_eq!(set.resolve(&[]), Err(VariantError::PerPatchEmpty));
    }

    #[test]
    fn a_hunt_has_no_fixed_variants_and_each_step_is_two_prefixes() {
        let set = plan(None, None, PerPatch::Bisect, Path::new("/")).unwrap();
        assert_eq!(set, VariantSet::Bisect);
        let err = set.resolve(&["x".into()]).unwrap_err().to_string();
        assert!(err.contains("only `patchbench run` runs it"), "{err}");
        assert_eq!(
            set.describe_boots(crate::model::BootOrder::Aba),
            "base/pN, then base/pK for each bisection step (about log2(N) steps), each base/pK/base"
        );
        let step = VariantSet::prefixes(0, 3);
        assert_eq!(names(&step, 7), [("base".into(), 0), ("p3".into(), 3)]);
        let own = VariantSet::prefixes(3, 4);
        assert_eq!(names(&own, 7), [("p3".into(), 3), ("p4".into(), 4)]);
        assert!(
            own.resolve(&["1".into(), "2".into()]).is_err(),
            "p4 of 2 patches"
        );
        // A hunt makes its own variants, as per_patch does.
        assert_eq!(
            plan(Some(vec![]), None, PerPatch::Bisect, Path::new("/")),
            Err(VariantError::PerPatchWithVariants)
        );
    }

    #[test]
    fn per_patch_is_true_false_or_bisect() {
        let p = |y: &str| yaml_serde::from_str::<PerPatch>(y).map_err(|e| e.to_string());
        assert_eq!(p("true"), Ok(PerPatch::Every));
        assert_eq!(p("false"), Ok(PerPatch::Off));
        assert_eq!(p("bisect"), Ok(PerPatch::Bisect));
        assert!(p("halves").unwrap_err().contains("`bisect`"));
    }

    #[test]
    fn knob_variants_share_a_kernel_and_the_baseline_comes_first() {
        let configs: Vec<VariantConfig> = yaml_serde::from_str(
            "- {name: on, settings: {/sys/module/zswap/parameters/shrinker_enabled: Y}}\n\
             - {name: off, settings: {/sys/module/zswap/parameters/shrinker_enabled: N}}",
        )
        .unwrap();
        let set = plan(
            Some(configs),
            Some("off".into()),
            PerPatch::Off,
            Path::new("/"),
        )
        .unwrap();
        let resolved = set.resolve(&[]).unwrap();
        assert_eq!(resolved[0].name.as_str(), "off");
        assert_eq!(resolved[0].kernel_key(), resolved[1].kernel_key());
        assert_eq!(
            resolved[1].settings,
            [Setting {
                path: "/sys/module/zswap/parameters/shrinker_enabled".into(),
                value: "Y".into()
            }]
        );
        assert!(resolved[1].description.ends_with("shrinker_enabled=Y"));
    }

    #[test]
    fn bad_variants_are_refused_before_any_build() {
        for (yaml, want) in [
            (
                "- {name: a, settings: {/etc/passwd: x}}\n- {name: b}",
                "is not under /sys/ or /proc/sys/",
            ),
            (
                "- {name: a, settings: {/sys/../etc/x: 1}}\n- {name: b}",
                "`.` or `..` component",
            ),
            (
                "- {name: a, settings: {/proc/sys/vm/a b: 1}}\n- {name: b}",
                "characters",
            ),
            ("- {name: a}\n- {name: a}", "another variant has this name"),
            ("- {name: a}", "a campaign compares at least 2"),
            ("- {name: 'a b'}\n- {name: b}", "variants[0].name"),
            ("- {name: a, cmdline: ['x y']}\n- {name: b}", "one word"),
            (
                "- {name: a, cmdline: [maxcpus=4]}\n- {name: b}",
                "sets `maxcpus`",
            ),
            (
                "- {name: a, fragments: [no/such.config]}\n- {name: b}",
                "no/such.config does not exist",
            ),
        ] {
            let err = parse(yaml).unwrap_err().to_string();
            assert!(err.contains(want), "{yaml}: {err}");
        }
        let too_long = parse("- {name: a}\n- {name: b, patches: 4}")
            .unwrap()
            .resolve(&["1".into(), "2".into()])
            .unwrap_err();
        assert_eq!(
            too_long.to_string(),
            "variant b: patches: 4, but the series has 2 patch(es)"
        );
        assert!(
            plan(None, None, PerPatch::Every, Path::new("/")).is_ok()
                && plan(Some(vec![]), None, PerPatch::Every, Path::new("/"))
                    == Err(VariantError::PerPatchWithVariants)
        );
        let unknown = plan(
            Some(yaml_serde::from_str("- {name: a}\n- {name: b}").unwrap()),
            Some("c".into()),
            PerPatch::Off,
            Path::new("/"),
        )
        .unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "baseline: \"c\" is not one of the variants (a, b)"
        );
    }

    #[test]
    fn patches_take_none_all_or_a_count() {
        let p = |y: &str| yaml_serde::from_str::<Patches>(y).map_err(|e| e.to_string());
        assert_eq!(p("none"), Ok(Patches::None));
        assert_eq!(p("all"), Ok(Patches::All));
        assert_eq!(p("2"), Ok(Patches::First(2)));
        assert_eq!(p("0"), Ok(Patches::None));
        assert!(p("some").unwrap_err().contains("expected `none`, `all`"));
    }

    #[test]
    fn values_read_back_as_sysfs_shows_them() {
        assert!(reads_back("Y", "Y"));
        assert!(reads_back("1", "Y"));
        assert!(reads_back("true", "Y\n"));
        assert!(reads_back("always", "[always] inherit madvise never"));
        assert!(!reads_back("always", "always [inherit] madvise never"));
        assert!(!reads_back("Y", "N"));
        assert!(!reads_back("lz4", "lzo"));
    }
}
