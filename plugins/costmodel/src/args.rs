//! The plugin's arguments: built by patchbench, parsed by the plugin, one
//! type for both so that the two cannot drift apart.
//!
//! QEMU hands a plugin its options as `key=value` strings:
//! `-plugin libpatchbench_cost_plugin.so,out=W,system_map=M,icount=on`.

use std::path::PathBuf;

/// What the plugin does with what it counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelChoice {
    /// Every access and fetch through the cache model: modeled cycles
    /// (`vm.cost_model: cache`).
    Cache,
    /// Instructions only, by mode and symbol over every vCPU: no memory
    /// callback at all, and blocks counted by code QEMU generates
    /// (`vm.cost_model: count`), the counting lane.
    Count,
}

impl ModelChoice {
    /// Its name, as `model=` and the campaign write it.
    pub fn name(self) -> &'static str {
        match self {
            ModelChoice::Cache => "cache",
            ModelChoice::Count => "count",
        }
    }

    /// The machine it models, whose name every window it closes carries.
    pub fn machine(self) -> &'static crate::machine::Model {
        match self {
            ModelChoice::Cache => &crate::machine::SKYLAKE_CLIENT,
            ModelChoice::Count => &crate::machine::COUNTING,
        }
    }
}

/// What the plugin needs to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginArgs {
    /// The file the window records are appended to.
    pub out: PathBuf,
    /// The booted kernel's `System.map` (the kernel runs with `nokaslr`).
    pub system_map: PathBuf,
    /// The caller's promise that QEMU runs TCG single-threaded with
    /// `-icount shift=0,sleep=off`: the plugin refuses to run without it,
    /// since its counts are repeatable only there.
    pub icount: bool,
    /// The cache model, or counting alone.
    pub model: ModelChoice,
    /// Count from the first instruction the guest runs, in a `boot`
    /// window the agent ends as PID 1 (the kernel-boot workload), instead
    /// of watching only for markers until the agent's model-on marker.
    /// Optional, `off` when left out.
    pub boot: bool,
}

impl PluginArgs {
    /// The `key=value` strings, in a fixed order; `boot` only when on,
    /// so that every other boot's command line stays as it was.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            format!("out={}", self.out.display()),
            format!("system_map={}", self.system_map.display()),
            format!("icount={}", if self.icount { "on" } else { "off" }),
            format!("model={}", self.model.name()),
        ];
        if self.boot {
            args.push("boot=on".into());
        }
        args
    }

    /// Parses QEMU's `key=value` strings; every key but `boot` is
    /// required, and none may come twice.
    pub fn parse(args: &[String]) -> Result<PluginArgs, String> {
        let (mut out, mut system_map, mut icount, mut model) = (None, None, None, None);
        let mut boot = None;
        for arg in args {
            let (key, value) = arg
                .split_once('=')
                .ok_or_else(|| format!("argument {arg:?} is not key=value"))?;
            let slot = match key {
                "out" => &mut out,
                "system_map" => &mut system_map,
                "icount" => &mut icount,
                "model" => &mut model,
                "boot" => &mut boot,
                _ => {
                    return Err(format!(
                        "unknown argument {key:?} (known: out, system_map, icount, model, boot)"
                    ));
                }
            };
            if slot.replace(value.to_string()).is_some() {
                return Err(format!("argument {key:?} given twice"));
            }
        }
        let required = |v: Option<String>, key: &str| {
            v.filter(|v| !v.is_empty())
                .ok_or_else(|| format!("argument {key}= is required"))
        };
        let icount = switch("icount", &required(icount, "icount")?)?;
        let boot = match boot {
            Some(value) => switch("boot", &value)?,
            None => false,
        };
        let model = match required(model, "model")?.as_str() {
            "cache" => ModelChoice::Cache,
            "count" => ModelChoice::Count,
            other => return Err(format!("model={other:?}: expected cache or count")),
        };
        Ok(PluginArgs {
            out: required(out, "out")?.into(),
            system_map: required(system_map, "system_map")?.into(),
            icount,
            model,
            boot,
        })
    }
}

/// An on/off argument's value.
fn switch(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "on" | "true" | "yes" => Ok(true),
        "off" | "false" | "no" => Ok(false),
        other => Err(format!("{key}={other:?}: expected on or off")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn what_the_host_builds_the_plugin_parses() {
        let args = PluginArgs {
            out: "/b/cost,1.jsonl".into(),
            system_map: "/k/System.map".into(),
            icount: true,
            model: ModelChoice::Count,
            boot: true,
        };
        assert_eq!(
            args.to_args(),
            [
                "out=/b/cost,1.jsonl",
                "system_map=/k/System.map",
                "icount=on",
                "model=count",
                "boot=on"
            ]
        );
        assert_eq!(PluginArgs::parse(&args.to_args()), Ok(args.clone()));
        // `boot` off is left out, and parses back off.
        let off = PluginArgs {
            boot: false,
            ..args
        };
        assert_eq!(off.to_args().len(), 4);
        assert_eq!(PluginArgs::parse(&off.to_args()), Ok(off));
    }

    #[test]
    fn bad_arguments_are_named() {
        for (words, want) in [
            (
                &["out=/o", "system_map=/m", "model=cache"][..],
                "icount= is required",
            ),
            (
                &["out=/o", "system_map=/m", "icount=maybe", "model=cache"],
                "expected on or off",
            ),
            (
                &["out=/o", "system_map=/m", "icount=on"],
                "model= is required",
            ),
            (
                &["out=/o", "system_map=/m", "icount=on", "model=tlb"],
                "expected cache or count",
            ),
            (&["out=/o", "out=/p"], "given twice"),
            (
                &[
                    "out=/o",
                    "system_map=/m",
                    "icount=on",
                    "model=count",
                    "boot=soon",
                ],
                "boot=\"soon\": expected on or off",
            ),
            (&["verbose"], "not key=value"),
            (&["colour=red"], "unknown argument \"colour\""),
            (
                &["out=", "system_map=/m", "icount=on", "model=cache"],
                "out= is required",
            ),
        ] {
            let err = PluginArgs::parse(&strings(words)).unwrap_err();
            assert!(err.contains(want), "{words:?}: {err}");
        }
        let off = PluginArgs::parse(&strings(&[
            "out=/o",
            "system_map=/m",
            "icount=off",
            "model=cache",
        ]));
        assert!(!off.unwrap().icount);
    }
}
