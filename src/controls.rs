//! Control conditions: named variants of the campaign's main workload that
//! run in the same boots, after it (`controls:` in a campaign file).
//!
//! Each control is `{name, set}`: `set` overrides some of the main
//! `workload:` parameters. The merged workload goes through the same
//! validation as the main one ([`WorkloadConfig::into_workload`]), and errors
//! name the control (`controls[0] (unlimited).zswap_max (...) ...`). A
//! control keeps the main workload's kind, and what the agent sets up once
//! per boot (the swap device, the function profiler) must suit it as it is.

use std::collections::BTreeMap;

use patchbench_agent::SwapBackend;
use serde::Deserialize;

use crate::model::variant::MAX_NAME_LEN;
use crate::model::{GuestShape, valid_name};
use crate::workload::{Planned, WorkloadConfig, WorkloadError};

/// A control as the campaign file writes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlConfig {
    /// A short name: letters, digits, `-` and `_`, unique in the campaign.
    pub name: String,
    /// Main-workload parameters and their values for this control.
    pub set: yaml_serde::Mapping,
}

/// A validated control: its name, its overrides as written, and the
/// workload the guest runs for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Control {
    pub name: String,
    /// Parameter → value as the campaign wrote it (YAML scalars as text).
    pub set: BTreeMap<String, String>,
    pub workload: Planned,
}

impl Control {
    /// `zswap_max: max, workers: 2`: what the control changes.
    pub fn describe_set(&self) -> String {
        self.set
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A control the campaign cannot run. `at` names it: `controls[0] (unlimited)`.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error(
        "controls[{index}].name {name:?}: must be 1 to {MAX_NAME_LEN} ASCII letters, digits, `-` or `_`"
    )]
    Name { index: usize, name: String },
    #[error("{at}.name: another control has this name")]
    Duplicate { at: String },
    #[error("{at}.set: empty; a control changes at least one workload parameter")]
    EmptySet { at: String },
    #[error("{at}.set: parameter names are text, not {key}")]
    KeyNotText { at: String, key: String },
    #[error("{at}.kind: a control runs the main workload's kind; set only its parameters")]
    Kind { at: String },
    #[error("{at}: {message}")]
    Parse { at: String, message: String },
    #[error("{at}.{} ({}) {}", .source.param, .source.value, .source.problem)]
    Param {
        at: String,
        #[source]
        source: WorkloadError,
    },
    #[error(
        "{at}.swap: must be the main workload's ({main:?}): the swap device is set up once per boot"
    )]
    Swap { at: String, main: SwapBackend },
    #[error(
        "{at}.count_flushes: must be the main workload's: the function profiler is set up once per boot"
    )]
    Profiler { at: String },
}

/// Validates `controls` against the main workload, whose `workload:`
/// section is `main_raw` (as YAML) and `main` (validated).
pub fn resolve(
    controls: Vec<ControlConfig>,
    main_raw: &yaml_serde::Mapping,
    main: &Planned,
    guest: &GuestShape,
) -> Result<Vec<Control>, ControlError> {
    let mut out: Vec<Control> = Vec::with_capacity(controls.len());
    for (index, control) in controls.into_iter().enumerate() {
        let at = format!("controls[{index}] ({})", control.name);
        if !valid_name(&control.name) {
            return Err(ControlError::Name {
                index,
                name: control.name,
            });
        }
        if out.iter().any(|c| c.name == control.name) {
            return Err(ControlError::Duplicate { at });
        }
        if control.set.is_empty() {
            return Err(ControlError::EmptySet { at });
        }
        let mut merged = main_raw.clone();
        let mut set = BTreeMap::new();
        for (key, value) in control.set {
            let Some(key_text) = key.as_str().map(str::to_string) else {
                return Err(ControlError::KeyNotText {
                    at,
                    key: format!("{key:?}"),
                });
            };
            if key_text == "kind" {
                return Err(ControlError::Kind { at });
            }
            set.insert(key_text, scalar_text(&value));
            merged.insert(key, value);
        }
        let config: WorkloadConfig = yaml_serde::from_value(yaml_serde::Value::Mapping(merged))
            .map_err(|e| ControlError::Parse {
                at: at.clone(),
                message: e.to_string(),
            })?;
        let workload = config
            .into_workload(guest)
            .map_err(|source| ControlError::Param {
                at: at.clone(),
                source,
            })?;
        if workload.swap_backend() != main.swap_backend() {
            return Err(ControlError::Swap {
                at,
                main: main.swap_backend(),
            });
        }
        if workload.profile_candidates() != main.profile_candidates() {
            return Err(ControlError::Profiler { at });
        }
        out.push(Control {
            name: control.name,
            set,
            workload,
        });
    }
    Ok(out)
}

/// A YAML value as the campaign wrote it: scalars plainly, others as YAML.
pub(crate) fn scalar_text(value: &yaml_serde::Value) -> String {
    use yaml_serde::Value;
    match value {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Null => "null".into(),
        other => yaml_serde::to_string(other)
            .map(|s| s.trim().replace('\n', " "))
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::{Campaign, DEFAULT_CAMPAIGN, Overrides, Plan, default_campaign_dir};
    use crate::model::Limit;
    use crate::workload::Planned;

    fn plan_with(controls: &str) -> Result<Plan, String> {
        let text = DEFAULT_CAMPAIGN.replace("protocol:", &format!("{controls}\nprotocol:"));
        Campaign::parse(&text, Path::new("x.yaml"))
            .and_then(|c| {
                c.into_plan(
                    Path::new("x.yaml"),
                    &default_campaign_dir(),
                    Overrides::default(),
                )
            })
            .map_err(|e| e.chain())
    }

    #[test]
    fn a_control_overrides_the_main_parameters() {
        let plan = plan_with("controls:\n  - {name: unlimited, set: {zswap_max: max}}").unwrap();
        assert_eq!(plan.controls.len(), 1);
        let control = &plan.controls[0];
        assert_eq!(control.name, "unlimited");
        assert_eq!(control.describe_set(), "zswap_max: max");
        let (Planned::Ready(main), Planned::Ready(ctl)) = (&plan.workload, &control.workload)
        else {
            panic!("{:?}", plan.workload);
        };
        assert_eq!(main.params()["zswap_max"], "64 MiB");
        assert_eq!(ctl.params()["zswap_max"], Limit::Max.to_string());
        assert_eq!(
            main.params()["mib_per_worker"],
            ctl.params()["mib_per_worker"]
        );
        assert!(plan_with("").unwrap().controls.is_empty());
    }

    #[test]
    fn a_bad_control_is_named_in_the_error() {
        for (controls, want) in [
            (
                "controls:\n  - {name: unlimited, set: {zswap_max: lots}}",
                "controls[0] (unlimited): workload.zswap_max: `lots`",
            ),
            (
                "controls:\n  - {name: ok, set: {zswap_max: max}}\n  - {name: big, set: {mib_per_worker: 4096}}",
                "controls[1] (big).mib_per_worker (4096)",
            ),
            (
                "controls:\n  - {name: typo, set: {zswap_mx: max}}",
                "controls[0] (typo): unknown field `zswap_mx`",
            ),
            (
                "controls:\n  - {name: other, set: {kind: rstat-flush}}",
                "controls[0] (other).kind",
            ),
            (
                "controls:\n  - {name: quiet, set: {count_flushes: false}}",
                "controls[0] (quiet).count_flushes",
            ),
            (
                "controls:\n  - {name: a, set: {zswap_max: max}}\n  - {name: a, set: {workers: 2}}",
                "controls[1] (a).name: another control has this name",
            ),
            (
                "controls:\n  - {name: '', set: {zswap_max: max}}",
                "controls[0].name",
            ),
            (
                "controls:\n  - {name: 'x/../y', set: {zswap_max: max}}",
                "controls[0].name \"x/../y\"",
            ),
            (
                "controls:\n  - {name: same, set: {}}",
                "controls[0] (same).set: empty",
            ),
            ("controls:\n  - {name: x, sett: {}}", "unknown field `sett`"),
        ] {
            let err = plan_with(controls).unwrap_err();
            assert!(err.contains(want), "{controls}\n{err}");
        }
    }
}
