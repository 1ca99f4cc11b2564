//! The `stress-ng` workload's run (`patchbench_agent::kinds::stress_ng`):
//! the host's stress-ng, staged with its libraries into the boot's
//! initramfs, run chrooted into that root once per sample.
//!
//! Once per boot, untimed: the guest's `/proc`, `/sys` and `/dev` are
//! bound into the staged root (stress-ng reads the CPUs and memory from
//! them). Per sample: the previous sample's output is removed; timed, in
//! the `ops` window: `stress-ng --<stressor> N --<stressor>-ops OPS
//! [options] --no-rand-seed --metrics --yaml FILE` from spawn to exit
//! ([`crate::program`]), chrooted by [`sys::spawn_in`]. Then its YAML gives the bogo operations, the
//! robot's `ops_per_sec` and stress-ng's own clock of the stressor's run.

use std::path::{Path, PathBuf};

use patchbench_agent::kinds::stress_ng::{STRESS_NG, StressNg, stressor_args, yaml_figures};
use patchbench_agent::marker::Phase;
use patchbench_agent::staged::staged_root;

use crate::console;
use crate::error::{Context, Result, bail};
use crate::files;
use crate::hostio;
use crate::hostroot;
use crate::pageout::emit;
use crate::program;
use crate::report::Fields;
use crate::run::{Boot, Run};
use crate::sys;

/// Where each sample's YAML and log go, inside the staged root.
const YAML: &str = "/tmp/patchbench-stress-ng.yaml";
const LOG: &str = "/tmp/patchbench-stress-ng.log";

impl Run for StressNg {
    fn run(&self, boot: Boot<'_>) -> Result<()> {
        let root = PathBuf::from(staged_root(&self.archive));
        if !hostroot::under(&root.display().to_string(), STRESS_NG).is_file() {
            bail!(
                "the initramfs holds no staged stress-ng under {}: the host appends {} to every boot of this workload",
                root.display(),
                self.archive
            );
        }
        hostroot::bind_guest_dirs(&root)
            .context("binding /proc, /sys and /dev into stress-ng's root")?;
        let tmp = root.join("tmp");
        std::fs::create_dir_all(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        let disks = hostio::Watch::disks()?;
        console::say(format!(
            "stress-ng {} in {}: {}",
            self.version,
            root.display(),
            args(self).join(" ")
        ));
        let total = boot.warmups + boot.samples;
        for index in 0..total {
            let metrics = sample(self, &root, &disks).with_context(|| format!("sample {index}"))?;
            emit(boot.port, index, boot.warmups, total, metrics)?;
        }
        Ok(())
    }
}

/// Every argument of a sample's stress-ng.
fn args(run: &StressNg) -> Vec<String> {
    let mut args = stressor_args(&run.stressor, run.instances, run.ops, &run.options);
    args.extend(["--metrics".into(), "--yaml".into(), YAML.into()]);
    args
}

fn sample(run: &StressNg, root: &Path, disks: &hostio::Watch) -> Result<Fields> {
    let root_text = root.display().to_string();
    let yaml = hostroot::under(&root_text, YAML);
    let log = hostroot::under(&root_text, LOG);
    match std::fs::remove_file(&yaml) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("removing {}", yaml.display())),
    }
    let log_file =
        std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let argv: Vec<String> = std::iter::once(STRESS_NG.to_string())
        .chain(args(run))
        .collect();
    let env = [
        format!("PATH={}", patchbench_agent::HOST_PATH),
        "HOME=/root".to_string(),
        "LC_ALL=C".to_string(),
    ];
    let start = || {
        sys::spawn_in(Some(root), Path::new("/tmp"), &argv, &env, &log_file).and_then(sys::wait_for)
    };
    let (exit, mut metrics) = program::run(start, Phase::Ops, disks, "stress-ng")?;
    program::check_exit(exit, &log, "stress-ng")?;
    let text = files::read(&yaml)?;
    let figures = yaml_figures(&text, &run.stressor)
        .map_err(|e| crate::error::Error::msg(format!("stress-ng's {YAML}: {e}")))?;
    if figures.bogo_ops == 0 {
        bail!(
            "stress-ng's {} stressor did no bogo operation",
            run.stressor
        );
    }
    let stressor_ns = (figures.wall_s * 1e9).round() as u64;
    metrics.insert("ops".into(), figures.bogo_ops);
    metrics.insert("ops_per_sec".into(), figures.ops_per_sec.round() as u64);
    metrics.insert("stressor_ns".into(), stressor_ns);
    metrics.insert("ns_per_op".into(), stressor_ns / figures.bogo_ops);
    Ok(metrics)
}
