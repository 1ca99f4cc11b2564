//! `stress-ng`'s campaign section: its parameters, checked against the
//! guest and against the host's own stress-ng (the one the guest runs)
//! before any kernel is built, into a plan whose program the host stages
//! (`crate::staged`), and as the results document records them.

use std::collections::BTreeMap;
use std::time::Duration;

use patchbench_agent::kinds::stress_ng::{RESERVED_OPTIONS, STRESS_NG, StressNg, stressor_args};
use serde::Deserialize;

use crate::process::{self, Cmd, ProcessError};
use crate::workload::param::*;
use crate::workload::planned::{Params, Planned, StagedPlan, StressNgPlan};

/// The most instances: one process each, inside one guest.
pub const MAX_INSTANCES: u32 = 64;
/// The most bogo operations of a run.
pub const MAX_OPS: u64 = 1_000_000_000;
/// How long stress-ng may take to list its stressors or parse a command
/// line (`--dry-run` starts nothing): milliseconds on any host.
const QUERY_DEADLINE: Duration = Duration::from_secs(10);

named! {
    ,
    stressor: String = String::deserialize;
    instances: u32 = u32::deserialize;
    ops: u64 = u64::deserialize;
    options: BTreeMap<String, OptionValue> = BTreeMap::<String, OptionValue>::deserialize;
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(deserialize_with = "stressor", default = "mmap")]
    pub stressor: String,
    #[serde(deserialize_with = "instances", default = "one")]
    pub instances: u32,
    #[serde(deserialize_with = "ops", default = "four")]
    pub ops: u64,
    #[serde(deserialize_with = "options", default = "mmap_bytes")]
    pub options: BTreeMap<String, OptionValue>,
}

/// An option's value as a campaign writes it: `8M`, `3`, or `true` for a
/// flag that takes none.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum OptionValue {
    Flag(bool),
    Number(u64),
    Text(String),
}

impl HostKind for Config {
    fn plan(self, _guest: &Guest) -> Result<Planned, WorkloadError> {
        let Config {
            stressor,
            instances,
            ops,
            options,
        } = self;
        if instances == 0 || instances > MAX_INSTANCES {
            return Err(WorkloadError {
                param: "instances",
                value: instances.to_string(),
                problem: format!("must be between 1 and {MAX_INSTANCES}"),
            });
        }
        if ops < u64::from(instances) || ops > MAX_OPS {
            return Err(WorkloadError {
                param: "ops",
                value: ops.to_string(),
                problem: format!(
                    "must be between instances ({instances}: stress-ng gives every instance at least one) and {MAX_OPS}"
                ),
            });
        }
        if !is_option_name(&stressor) {
            return Err(WorkloadError {
                param: "stressor",
                value: stressor,
                problem: "must be a stressor's name, such as mmap or vm".into(),
            });
        }
        let options = option_words(&stressor, options)?;
        check_with_stress_ng(&stressor, instances, ops, &options)?;
        Ok(Planned::Staged(StagedPlan::StressNg(StressNgPlan {
            stressor,
            instances,
            ops,
            options,
        })))
    }
}

/// Whether `name` can be a stress-ng option's or stressor's name.
fn is_option_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// The options as the wire carries them (an empty value: a flag), each
/// name checked: an option's, and not one the kind sets itself.
fn option_words(
    stressor: &str,
    options: BTreeMap<String, OptionValue>,
) -> Result<BTreeMap<String, String>, WorkloadError> {
    let mut words = BTreeMap::new();
    for (name, value) in options {
        let own = [stressor.to_string(), format!("{stressor}-ops")];
        if !is_option_name(&name)
            || RESERVED_OPTIONS.contains(&name.as_str())
            || own.contains(&name)
        {
            return Err(WorkloadError {
                param: "options",
                value: name,
                problem: format!(
                    "must be a stress-ng option's name without its `--`, other than the stressor, its -ops and {}",
                    RESERVED_OPTIONS.join(", ")
                ),
            });
        }
        let word = match value {
            OptionValue::Flag(true) => String::new(),
            OptionValue::Flag(false) => {
                return Err(WorkloadError {
                    param: "options",
                    value: format!("{name}: false"),
                    problem: "leave a flag out rather than set it to false".into(),
                });
            }
            OptionValue::Number(n) => n.to_string(),
            OptionValue::Text(t) if t.is_empty() || t.starts_with('-') => {
                return Err(WorkloadError {
                    param: "options",
                    value: format!("{name}: {t:?}"),
                    problem:
                        "a value must be a word that does not start with `-` (true for a flag)"
                            .into(),
                });
            }
            OptionValue::Text(t) => t,
        };
        words.insert(name, word);
    }
    Ok(words)
}

/// Asks the host's stress-ng, the one the guest will run: the stressor
/// must be one it lists (`--stressors`), and the whole command line one
/// it accepts (`--dry-run` parses it and starts nothing).
fn check_with_stress_ng(
    stressor: &str,
    instances: u32,
    ops: u64,
    options: &BTreeMap<String, String>,
) -> Result<(), WorkloadError> {
    let missing = |e: ProcessError| WorkloadError {
        param: "stressor",
        value: stressor.to_string(),
        problem: format!("cannot ask the host's stress-ng, which the guest runs: {e}"),
    };
    let listed = process::run_blocking(&Cmd::new(STRESS_NG, QUERY_DEADLINE).arg("--stressors"))
        .map_err(missing)?;
    let known: Vec<&str> = listed.stdout.split_whitespace().collect();
    if !known.contains(&stressor) {
        let near: Vec<&str> = known
            .iter()
            .copied()
            .filter(|k| k.starts_with(&stressor[..1]))
            .collect();
        return Err(WorkloadError {
            param: "stressor",
            value: stressor.to_string(),
            problem: format!(
                "the host's stress-ng has no such stressor (`stress-ng --stressors` lists {} of them; those starting with {:?}: {})",
                known.len(),
                &stressor[..1],
                near.join(" ")
            ),
        });
    }
    let args = stressor_args(stressor, instances, ops, options);
    process::run_blocking(
        &Cmd::new(STRESS_NG, QUERY_DEADLINE)
            .arg("--dry-run")
            .args(&args),
    )
    .map(drop)
    .map_err(|e| {
        let said = match &e {
            ProcessError::Failed { tail, .. } => tail
                .iter()
                .filter(|l| !l.contains("info:"))
                .cloned()
                .collect::<Vec<_>>()
                .join("; "),
            other => other.to_string(),
        };
        WorkloadError {
            param: "options",
            value: options_text(options),
            problem: format!(
                "`stress-ng --dry-run {}` refuses them: {said}",
                args.join(" ")
            ),
        }
    })
}

/// The options as people write them: `name=value`, a flag by its name.
fn options_text(options: &BTreeMap<String, String>) -> String {
    options
        .iter()
        .map(|(k, v)| {
            if v.is_empty() {
                k.clone()
            } else {
                format!("{k}={v}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl Params for StressNg {
    fn params(&self) -> Vec<(&'static str, String)> {
        let StressNg {
            stressor,
            instances,
            ops,
            options,
            version,
            archive,
        } = self;
        vec![
            ("stressor", stressor.clone()),
            ("instances", instances.to_string()),
            ("ops", ops.to_string()),
            ("options", options_text(options)),
            ("version", version.clone()),
            ("archive", archive.clone()),
        ]
    }
}

fn mmap() -> String {
    "mmap".into()
}

fn one() -> u32 {
    1
}

fn four() -> u64 {
    4
}

/// The default stressor's mapping: 4 MiB per instance, what the robot's
/// runs give each of their instances (stress-ng's default 256 MiB over 64
/// CPUs).
fn mmap_bytes() -> BTreeMap<String, OptionValue> {
    BTreeMap::from([("mmap-bytes".into(), OptionValue::Text("4M".into()))])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_names_are_options_and_not_the_kinds_own() {
        let words = option_words(
            "mmap",
            BTreeMap::from([
                ("mmap-bytes".into(), OptionValue::Text("8M".into())),
                ("mmap-mprotect".into(), OptionValue::Flag(true)),
                ("taskset".into(), OptionValue::Number(1)),
            ]),
        )
        .unwrap();
        assert_eq!(words["mmap-bytes"], "8M");
        assert_eq!(words["mmap-mprotect"], "");
        assert_eq!(words["taskset"], "1");
        assert_eq!(
            options_text(&words),
            "mmap-bytes=8M mmap-mprotect taskset=1"
        );
        for bad in [
            "mmap-ops",
            "timeout",
            "--mmap-bytes",
            "Mmap",
            "mmap",
            "yaml",
        ] {
            let err = option_words(
                "mmap",
                BTreeMap::from([(bad.to_string(), OptionValue::Number(1))]),
            )
            .unwrap_err();
            assert_eq!(err.param, "options", "{bad}");
            assert_eq!(err.value, bad);
        }
        let err = option_words(
            "mmap",
            BTreeMap::from([("mmap-bytes".into(), OptionValue::Text("-1".into()))]),
        )
        .unwrap_err();
        assert!(err.problem.contains("start with `-`"), "{err:?}");
    }
}
