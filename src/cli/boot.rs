//! `patchbench boot`: boot one kernel with the guest agent and run one
//! command in it, for debugging a kernel or timing boots. `--repeat N`
//! boots it N times and prints the median boot times.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use super::{AccelArg, load_plan_file};
use crate::campaign;
use crate::events::{Event, Sink};
use crate::vm::{self, accel};
use crate::{image, ui};

#[derive(clap::Args)]
pub struct BootArgs {
    /// The kernel to boot: an x86-64 bzImage, or a `vmlinux` built with
    /// CONFIG_PVH (kconfigs/base.config), which QEMU starts directly and
    /// which boots faster under TCG (no decompression).
    kernel: PathBuf,
    /// The command to run in the guest, without a shell (busybox applets
    /// such as `cat` or `sh` work by name) [default: `uname -a`].
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
    /// The campaign whose guest to boot (memory, CPUs, swap, zswap, THP,
    /// timeouts) [default: the built-in smoke campaign].
    #[arg(long, value_name = "FILE")]
    campaign: Option<PathBuf>,
    /// The accelerator: `auto` uses KVM only where it really works.
    #[arg(long, value_enum)]
    accel: Option<AccelArg>,
    /// Run the command in the host's own root file system, exported
    /// read-only over 9p under a tmpfs overlay (writes stay in the guest),
    /// so host programs such as gcc or make work: `-- gcc --version`.
    #[arg(long)]
    host_root: bool,
    /// Boot this many times and report the median times.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Where console logs go [default: a temporary directory, removed after].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// The median of some durations (the mean of the middle two for an even count).
pub fn median(values: &mut [Duration]) -> Option<Duration> {
    values.sort();
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2),
    }
}

pub(super) async fn boot(args: BootArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.kernel.is_file(),
        "the kernel {} does not exist",
        args.kernel.display()
    );
    let plan = load_plan_file(args.campaign.as_deref(), args.accel.map(Into::into))?;
    let decision = accel::decide(plan.vm.accel, &accel::probe())?;
    let sink = ui::Ui::new();
    if decision.accel == accel::Accel::Tcg {
        sink.emit(Event::Note(format!(
            "accelerator: TCG — {}",
            decision.reason
        )));
    }
    let argv = if args.command.is_empty() {
        vec!["uname".to_string(), "-a".to_string()]
    } else {
        args.command.clone()
    };
    let temp;
    let out = match &args.out {
        Some(dir) => dir.clone(),
        None => {
            temp = tempfile::TempDir::with_prefix("patchbench-boot-")
                .context("cannot create a temporary directory")?;
            temp.path().to_owned()
        }
    };
    let agent = crate::find_agent()?;
    let base_entries = image::base_entries(&image::parse_spec(image::DEFAULT_SPEC)?, &agent)?;
    let (mut hellos, mut totals) = (Vec::new(), Vec::new());
    for i in 0..args.repeat {
        let label = format!("boot{}", i + 1);
        let (spec, _) = campaign::prepare_boot(
            &plan,
            &label,
            &args.kernel,
            &out.join(&label),
            decision.accel,
            &base_entries,
            patchbench_agent::Workload::Exec { argv: argv.clone() },
            Vec::new(),
            args.host_root,
        )?;
        sink.emit(Event::Started {
            stage: label.clone(),
            detail: format!("{} {argv:?}", args.kernel.display()),
        });
        let result = vm::boot(&spec, |_| Ok(())).await;
        let console = std::fs::read_to_string(spec.console_log()).unwrap_or_default();
        if args.repeat == 1 || result.is_err() {
            print!("{}", command_output(&console));
        }
        let outcome = result?;
        sink.emit(Event::Finished {
            stage: label,
            elapsed: outcome.total,
            detail: format!(
                "agent hello after {:.2}s",
                outcome.hello_after.as_secs_f64()
            ),
        });
        hellos.push(outcome.hello_after);
        totals.push(outcome.total);
    }
    let secs = |d: Option<Duration>| d.map_or(0.0, |d| d.as_secs_f64());
    println!(
        "boots: {}  accelerator: {:?}  median QEMU start → agent hello: {:.2} s  median QEMU start → exit: {:.2} s",
        args.repeat,
        decision.accel,
        secs(median(&mut hellos)),
        secs(median(&mut totals)),
    );
    println!(
        "hello times (s): {}",
        hellos
            .iter()
            .map(|d| format!("{:.2}", d.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(" ")
    );
    Ok(())
}

/// The console from the agent's `exec:` line on: the command's output.
fn command_output(console: &str) -> &str {
    console
        .find("patchbench-agent: exec: [")
        .map_or(console, |at| &console[at..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_and_even_counts() {
        let s = Duration::from_secs;
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [s(3), s(1), s(2)]), Some(s(2)));
        assert_eq!(median(&mut [s(4), s(1), s(2), s(3)]), Some(s(2) + s(1) / 2));
    }

    #[test]
    fn the_commands_output_starts_at_the_exec_line() {
        let console = "[    0.1] Linux version 6.12\npatchbench-agent: exec: [\"uname\"]\nLinux (none) 6.12\n";
        assert_eq!(
            command_output(console),
            "patchbench-agent: exec: [\"uname\"]\nLinux (none) 6.12\n"
        );
    }
}
