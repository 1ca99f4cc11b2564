//! Control conditions: named variants of the campaign's main workload that
//! run in the same boots, after it (`controls:` in a campaign file).
//!
//! Each control is `{name, set}`: `set` overrides some of the main
//! `workload:` parameters. The merged workload goes through the same
//! validation as the main one ([`WorkloadConfig::into_workload`]), and errors
//! name the control (`controls[0] (unlimited).zswap_max: ...`). A control
//! keeps the main workload's kind, and what the agent sets up once per boot
//! (the swap device, the function profiler) must suit it as it is.

use std::collections::BTreeMap;

use patchbench_agent::Workload;
use serde::{Deserialize, Serialize};

use crate::config::VmConfig;
use crate::workload::WorkloadConfig;

/// The longest control name.
pub const MAX_NAME_LEN: usize = 32;

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
/// workload the guest runs for it. Recorded as such in `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Control {
    pub name: String,
    /// Parameter → value as the campaign wrote it (YAML scalars as text).
    pub set: BTreeMap<String, String>,
    pub workload: Workload,
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

    /// For the guest's job.
    pub fn to_job(&self) -> patchbench_agent::Control {
        patchbench_agent::Control {
            name: self.name.clone(),
            workload: self.workload.clone(),
        }
    }
}

/// Whether `name` may name a control: non-empty, at most
/// [`MAX_NAME_LEN`] characters, only ASCII letters, digits, `-` and `_`
/// (it goes into reports, HTML anchors and file names).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Validates `controls` against the main workload, whose `workload:`
/// section is `main_raw` (as YAML) and `main` (validated). The error is
/// one line naming the control.
pub fn resolve(
    controls: Vec<ControlConfig>,
    main_raw: &yaml_serde::Value,
    main: &Workload,
    vm: &VmConfig,
) -> Result<Vec<Control>, String> {
    let main_map = main_raw
        .as_mapping()
        .ok_or("workload: expected a mapping")?;
    let mut out: Vec<Control> = Vec::with_capacity(controls.len());
    for (i, control) in controls.into_iter().enumerate() {
        let at = format!("controls[{i}] ({})", control.name);
        if !valid_name(&control.name) {
            return Err(format!(
                "controls[{i}].name {:?}: must be 1 to {MAX_NAME_LEN} ASCII letters, digits, `-` or `_`",
                control.name
            ));
        }
        if out.iter().any(|c| c.name == control.name) {
            return Err(format!("{at}.name: another control has this name"));
        }
        if control.set.is_empty() {
            return Err(format!(
                "{at}.set: empty; a control changes at least one workload parameter"
            ));
        }
        let mut merged = main_map.clone();
        let mut set = BTreeMap::new();
        for (key, value) in control.set {
            let key_text = key
                .as_str()
                .ok_or_else(|| format!("{at}.set: parameter names are text, not {key:?}"))?
                .to_string();
            if key_text == "kind" {
                return Err(format!(
                    "{at}.kind: a control runs the main workload's kind; set only its parameters"
                ));
            }
            set.insert(key_text, scalar_text(&value));
            merged.insert(key, value);
        }
        let config: WorkloadConfig = yaml_serde::from_value(yaml_serde::Value::Mapping(merged))
            .map_err(|e| name_control(&at, &e.to_string()))?;
        let workload = config
            .into_workload(vm)
            .map_err(|e| name_control(&at, &e.to_string()))?;
        if workload.swap_backend() != main.swap_backend() {
            return Err(format!(
                "{at}.swap: must be the main workload's ({:?}): the swap device is set up once per boot",
                main.swap_backend()
            ));
        }
        if workload.profile_candidates() != main.profile_candidates() {
            return Err(format!(
                "{at}.count_flushes: must be the main workload's: the function profiler is set up once per boot"
            ));
        }
        out.push(Control {
            name: control.name,
            set,
            workload,
        });
    }
    Ok(out)
}

/// A workload error with the control named where the message names the
/// main workload (`workload.zswap_max: ...` → `controls[0] (x).zswap_max: ...`).
fn name_control(at: &str, message: &str) -> String {
    match message.find("workload.") {
        Some(pos) => format!(
            "{}{at}.{}",
            &message[..pos],
            &message[pos + "workload.".len()..]
        ),
        None => format!("{at}: {message}"),
    }
}

/// A YAML value as the campaign wrote it: scalars plainly, others as YAML.
fn scalar_text(value: &yaml_serde::Value) -> String {
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

    use patchbench_agent::Limit;

    use crate::config::{Campaign, DEFAULT_CAMPAIGN, Overrides, Plan, default_campaign_dir};

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
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_control_overrides_the_main_parameters() {
        let plan = plan_with("controls:\n  - {name: unlimited, set: {zswap_max: max}}").unwrap();
        assert_eq!(plan.controls.len(), 1);
        let control = &plan.controls[0];
        assert_eq!(control.name, "unlimited");
        assert_eq!(control.describe_set(), "zswap_max: max");
        match (&plan.workload, &control.workload) {
            (
                patchbench_agent::Workload::ZswapPageout {
                    zswap_max: Limit::Bytes(_),
                    mib_per_worker: main_mib,
                    ..
                },
                patchbench_agent::Workload::ZswapPageout {
                    zswap_max: Limit::Max,
                    mib_per_worker,
                    ..
                },
            ) => assert_eq!(main_mib, mib_per_worker),
            other => panic!("{other:?}"),
        }
        assert!(plan_with("").unwrap().controls.is_empty());
    }

    #[test]
    fn a_bad_control_is_named_in_the_error() {
        for (controls, want) in [
            (
                "controls:\n  - {name: unlimited, set: {zswap_max: lots}}",
                "controls[0] (unlimited).zswap_max: `lots`",
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

    #[test]
    fn names_are_short_and_safe() {
        assert!(super::valid_name("unlimited"));
        assert!(super::valid_name("zswap-max_2"));
        for bad in ["", "a b", "<b>", "é", &"x".repeat(33)] {
            assert!(!super::valid_name(bad), "{bad:?}");
        }
    }
}
