//! `stress-ng`: one stressor of Debian's stress-ng with a fixed number of
//! bogo operations (`--<stressor>-ops`), the way the 0-day robot runs it
//! (`stress-ng --timeout 60s --<stressor> <nr_threads>`, reporting
//! `stress-ng.<stressor>.ops_per_sec`) but a fixed amount of work instead
//! of a fixed time. The host stages its `stress-ng` and every library it
//! loads into the boot's initramfs ([`crate::staged`]); each sample runs
//! it chrooted there, in one window from spawn to exit (the `ops` phase),
//! and reads its bogo-op count and rates from its `--yaml` output. Spec:
//! `workloads/stress-ng.yaml`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::kind::Kind;
use crate::memory::SwapBackend;

/// Where stress-ng is, on the host and in its staged root.
pub const STRESS_NG: &str = "/usr/bin/stress-ng";

/// One stressor with a fixed number of bogo operations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StressNg {
    /// The stressor (`mmap`, `vm`, `mremap`...), as `stress-ng
    /// --stressors` lists it.
    pub stressor: String,
    /// Its instances (`--<stressor> N`): processes running it at once.
    pub instances: u32,
    /// Bogo operations of the whole run (`--<stressor>-ops N`), which
    /// stress-ng splits among the instances.
    pub ops: u64,
    /// More options, each `--<name> <value>` (a flag when the value is
    /// empty), such as `mmap-bytes: 8M`.
    pub options: BTreeMap<String, String>,
    /// The staged stress-ng's version (`stress-ng --version`): a bogo
    /// operation is what that version's stressor counts.
    pub version: String,
    /// The staged root's archive (a host path), appended to every boot's
    /// initramfs.
    pub archive: String,
}

impl Kind for StressNg {
    /// A stressor a user names may swap (stress-ng's `vm` and `swap`
    /// stressors do); none of the shipped campaigns' does.
    fn swap_backend(&self) -> SwapBackend {
        SwapBackend::Disk
    }

    fn initramfs_archives(&self) -> Vec<String> {
        vec![self.archive.clone()]
    }

    fn describe(&self) -> String {
        format!(
            "{} (stress-ng {}, staged from {})",
            stressor_args(&self.stressor, self.instances, self.ops, &self.options).join(" "),
            self.version,
            self.archive
        )
    }
}

/// The arguments that choose the stressor and its work, as both the
/// host's `--dry-run` check and the guest's samples pass them:
/// `--<stressor> <instances> --<stressor>-ops <ops>`, the options in name
/// order, and `--no-rand-seed` (stress-ng seeds its random numbers from
/// the clock otherwise, so each sample's mapping order would differ).
pub fn stressor_args(
    stressor: &str,
    instances: u32,
    ops: u64,
    options: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut args = vec![
        format!("--{stressor}"),
        instances.to_string(),
        format!("--{stressor}-ops"),
        ops.to_string(),
    ];
    for (name, value) in options {
        args.push(format!("--{name}"));
        if !value.is_empty() {
            args.push(value.clone());
        }
    }
    args.push("--no-rand-seed".into());
    args
}

/// The options a campaign may not give: those the kind sets itself, and
/// those that choose other stressors, change the stop condition or move
/// the output.
pub const RESERVED_OPTIONS: &[&str] = &[
    "all",
    "class",
    "dry-run",
    "exclude",
    "log-file",
    "metrics",
    "metrics-brief",
    "no-rand-seed",
    "random",
    "seed",
    "sequential",
    "timeout",
    "with",
    "yaml",
];

/// One stressor's figures in stress-ng's `--yaml` output (its `metrics:`
/// entry).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    /// `bogo-ops`: every instance's operations.
    pub bogo_ops: u64,
    /// `bogo-ops-per-second-real-time`: the robot's `ops_per_sec`.
    pub ops_per_sec: f64,
    /// `wall-clock-time`, seconds: the instances' run by stress-ng's clock.
    pub wall_s: f64,
}

/// `stressor`'s figures in stress-ng's `--yaml` output.
pub fn yaml_figures(yaml: &str, stressor: &str) -> Result<Figures, String> {
    let mut fields: Option<BTreeMap<&str, &str>> = None;
    for line in yaml.lines() {
        let item = line.trim_start();
        if let Some(entry) = item.strip_prefix("- ") {
            if fields.is_some() {
                break;
            }
            if entry.trim() == format!("stressor: {stressor}") {
                fields = Some(BTreeMap::new());
            }
            continue;
        }
        if let Some(fields) = fields.as_mut() {
            if !line.starts_with(' ') {
                break;
            }
            if let Some((key, value)) = item.split_once(':') {
                fields.insert(key.trim(), value.trim());
            }
        }
    }
    let fields = fields.ok_or_else(|| format!("no metrics entry for stressor {stressor}"))?;
    let get = |key: &str| -> Result<f64, String> {
        let text = fields
            .get(key)
            .ok_or_else(|| format!("the {stressor} entry has no {key}"))?;
        text.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("{key} is {text:?}, not a number"))
    };
    let bogo_ops = fields
        .get("bogo-ops")
        .ok_or_else(|| format!("the {stressor} entry has no bogo-ops"))?;
    Ok(Figures {
        bogo_ops: bogo_ops
            .parse()
            .map_err(|_| format!("bogo-ops is {bogo_ops:?}, not a count"))?,
        ops_per_sec: get("bogo-ops-per-second-real-time")?,
        wall_s: get("wall-clock-time")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// stress-ng 0.15.06's `--yaml` output (Debian 12), trimmed.
    const YAML: &str = "---
system-info:
      stress-ng-version: 0.15.06
      pagesize: 4096
      cpus-online: 2

metrics:
    - stressor: vm
      bogo-ops: 7
      wall-clock-time: 1.0
    - stressor: mmap
      bogo-ops: 40
      bogo-ops-per-second-usr-sys-time: 20.953335
      bogo-ops-per-second-real-time: 13.108669
      wall-clock-time: 3.051416
      user-time: 0.321909
      system-time: 1.587095
      max-rss: 10272

...
";

    #[test]
    fn the_yaml_gives_the_stressors_own_entry() {
        let f = yaml_figures(YAML, "mmap").unwrap();
        assert_eq!(f.bogo_ops, 40);
        assert!((f.ops_per_sec - 13.108669).abs() < 1e-9);
        assert!((f.wall_s - 3.051416).abs() < 1e-9);
        let err = yaml_figures(YAML, "vm").unwrap_err();
        assert!(err.contains("bogo-ops-per-second-real-time"), "{err}");
        let err = yaml_figures(YAML, "mremap").unwrap_err();
        assert!(
            err.contains("no metrics entry for stressor mremap"),
            "{err}"
        );
    }

    #[test]
    fn the_stressor_and_its_options_come_first_and_the_seed_is_fixed() {
        let options = BTreeMap::from([
            ("mmap-bytes".to_string(), "8M".to_string()),
            ("mmap-mprotect".to_string(), String::new()),
        ]);
        assert_eq!(
            stressor_args("mmap", 2, 8, &options),
            [
                "--mmap",
                "2",
                "--mmap-ops",
                "8",
                "--mmap-bytes",
                "8M",
                "--mmap-mprotect",
                "--no-rand-seed"
            ]
        );
    }
}
