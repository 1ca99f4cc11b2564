//! `patchbench boot`: boot one kernel with the guest agent and run one
//! command in it, for debugging a kernel or timing boots. `--repeat N`
//! boots it N times and prints the median boot times. `--cost-model` boots
//! in the cost lane and prints the windows the guest marked.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use super::args::{AccelArg, load_plan_file};
use crate::build;
use crate::campaign;
use crate::cost::{self, WindowRecord};
use crate::events::{Event, Sink};
use crate::image;
use crate::vm;

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
    /// Boot in the cost lane (docs/cost-model.md): load the cost-model
    /// plugin, run under TCG single-threaded with icount and `nokaslr`
    /// (refused with --accel kvm), and print every window the
    /// guest marked: instructions, cache misses, modeled cycles and the
    /// costliest kernel symbols. `--cost-model=count` is the counting lane:
    /// each vCPU's instructions by mode and symbol, no cache model (the `=`
    /// is needed: `--cost-model KERNEL` takes no model).
    /// `-- /init marked-loop N` runs a marked loop of 2N instructions. The
    /// windows stay in the boot's directory (`cost-windows.jsonl`, see
    /// --out).
    #[arg(
        long,
        value_name = "MODEL",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "cache"
    )]
    cost_model: Option<BootModel>,
    /// The kernel's System.map, for --cost-model [default: the one at the
    /// top of the kernel's build directory, as `patchbench build` keeps it].
    #[arg(long, value_name = "FILE", requires = "cost_model")]
    system_map: Option<PathBuf>,
    /// Boot in memory layout N, as the N-th boot of each variant of a
    /// `protocol.layouts: varied` campaign does: the agent scatters the
    /// free pages by a permutation drawn from N before the command, and
    /// `patchbench.layout=N` goes on the kernel command line. Reproduces
    /// one boot of such a campaign (docs/cost-model.md, "Layout").
    #[arg(long, value_name = "N")]
    layout: Option<u32>,
}

/// `--cost-model`'s value.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum BootModel {
    /// The cache model: modeled cycles.
    Cache,
    /// Counting alone: instructions by mode and symbol, over every vCPU.
    Count,
}

impl From<BootModel> for crate::model::CostModel {
    fn from(m: BootModel) -> Self {
        match m {
            BootModel::Cache => crate::model::CostModel::Cache,
            BootModel::Count => crate::model::CostModel::Count,
        }
    }
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

/// `boot`'s checks before it boots: the kernel is a file, and the campaign
/// whose guest it takes loads.
pub(super) fn check(args: &BootArgs) -> anyhow::Result<crate::config::Plan> {
    anyhow::ensure!(
        args.kernel.is_file(),
        "the kernel {} does not exist",
        args.kernel.display()
    );
    load_plan_file(args.campaign.as_deref(), args.accel.map(Into::into))
}

pub(super) async fn boot(args: BootArgs, sink: &dyn Sink) -> anyhow::Result<()> {
    let plan = check(&args)?;
    // The campaign's lane decision, with --cost-model's lane in place of
    // the campaign's vm.cost_model.
    let mut request = plan.vm.lane_request();
    if let Some(model) = args.cost_model {
        request.cost_model = model.into();
    }
    let probe = campaign::probe_kvm(request).await;
    let decision = campaign::decide_lane(request, &probe)?;
    let lane = decision.lane;
    if lane != crate::model::Lane::Kvm {
        sink.emit(Event::Note(format!(
            "lane: {} \u{2014} {}",
            lane.label(),
            decision.reason
        )));
    }
    let plugin = match campaign::plugin_model(lane) {
        Some(model) => {
            let (plugin, system_map) = plugin_and_symbols(&args)?;
            sink.emit(Event::Note(format!(
                "{} lane: TCG single-threaded with icount, nokaslr, plugin {}, symbols {}",
                model.name(),
                plugin.display(),
                system_map.display()
            )));
            Some((plugin, system_map))
        }
        None => None,
    };
    let clock = campaign::lane_clock(lane, plan.vm.tcg_threads, plugin)?;
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
        let dir = out.join(&label);
        let job = campaign::BootJob {
            label: &label,
            kernel: &args.kernel,
            dir: &dir,
            clock: clock.clone(),
            workload: patchbench_agent::Workload::Exec(patchbench_agent::Exec {
                argv: argv.clone(),
            }),
            controls: Vec::new(),
            host_root: args.host_root,
            settings: Vec::new(),
            cmdline: Vec::new(),
            layout: args.layout,
            samples: plan.samples,
            hz: crate::build::kernel_hz(&args.kernel),
        };
        let (spec, _) = campaign::prepare_boot(&plan, job, &base_entries)?;
        sink.emit(Event::Started {
            stage: label.clone(),
            detail: format!("{} {argv:?}", args.kernel.display()),
        });
        let result = vm::boot(&spec, |_| Ok(())).await;
        let console = std::fs::read_to_string(spec.console_log()).unwrap_or_default();
        if args.repeat == 1 || result.is_err() {
            sink.emit(Event::Output(command_output(&console).to_string()));
        }
        let outcome = result?;
        if clock.plugin().is_some() {
            let path = spec.cost_windows();
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read the cost windows {}", path.display()))?;
            let windows = cost::parse_windows(&text, &path)?;
            sink.emit(Event::Output(format!(
                "{}cost windows: {}\n",
                render_windows(&windows, TOP_SYMBOLS),
                path.display()
            )));
        }
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
    sink.emit(Event::Output(format!(
        "boots: {}  lane: {}  median QEMU start → agent hello: {:.2} s  median QEMU start → exit: {:.2} s\nhello times (s): {}\n",
        args.repeat,
        lane.label(),
        secs(median(&mut hellos)),
        secs(median(&mut totals)),
        hellos
            .iter()
            .map(|d| format!("{:.2}", d.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(" ")
    )));
    Ok(())
}

/// Symbols shown per window.
const TOP_SYMBOLS: usize = 8;

/// The plugin and the kernel's symbols, with a QEMU that can load the
/// plugin.
fn plugin_and_symbols(args: &BootArgs) -> anyhow::Result<(PathBuf, PathBuf)> {
    let system_map = match &args.system_map {
        Some(map) => {
            anyhow::ensure!(
                map.is_file(),
                "the System.map {} does not exist",
                map.display()
            );
            map.clone()
        }
        None => build::system_map(&args.kernel).with_context(|| {
            format!(
                "no System.map at the top of {}'s build directory; pass --system-map",
                args.kernel.display()
            )
        })?,
    };
    let qemu = cost::api::qemu_on_path()
        .context("qemu-system-x86_64 is not on PATH: apt-get install qemu-system-x86")?;
    cost::api::check_qemu(&qemu)?;
    Ok((cost::find_plugin()?, system_map))
}

/// Each window on a few lines: its totals, then its costliest symbols.
pub fn render_windows(windows: &[WindowRecord], top: usize) -> String {
    let mut out = String::new();
    if windows.is_empty() {
        out.push_str("cost model: no window closed (did the command mark any phase?)\n");
    }
    for w in windows {
        let t = &w.total;
        out.push_str(&format!(
            "window {} {} ({}): {} insns, misses L1D {} L1I {} L2 {} LLC {} (coherence {}), {} modeled cycles\n",
            w.seq,
            w.phase,
            w.model,
            t.insns,
            t.l1d_misses,
            t.l1i_misses,
            t.l2_misses,
            t.llc_misses,
            t.coherence_misses,
            t.modeled_cycles
        ));
        for s in w.symbols.iter().take(top) {
            out.push_str(&format!(
                "  {:<32} {:>14} cycles {:>14} insns\n",
                s.symbol, s.cost.modeled_cycles, s.cost.insns
            ));
        }
        if w.symbols.len() > top {
            out.push_str(&format!("  ({} more symbols)\n", w.symbols.len() - top));
        }
    }
    out
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
    fn windows_render_with_their_costliest_symbols() {
        use crate::cost::{Cost, SymbolCost};
        let cost = |insns, modeled_cycles| Cost {
            insns,
            modeled_cycles,
            ..Cost::default()
        };
        let w = WindowRecord {
            seq: 1,
            phase: "probe".into(),
            model: "skylake-client".into(),
            total: cost(2001, 2100),
            vcpus: Vec::new(),
            symbols: vec![
                SymbolCost {
                    symbol: "user".into(),
                    cost: cost(2001, 2001),
                },
                SymbolCost {
                    symbol: "asm_sysvec_apic_timer_interrupt".into(),
                    cost: cost(0, 99),
                },
            ],
        };
        let text = render_windows(std::slice::from_ref(&w), 1);
        assert!(
            text.starts_with("window 1 probe (skylake-client): 2001 insns,"),
            "{text}"
        );
        assert!(text.contains("2100 modeled cycles"), "{text}");
        assert!(text.contains("  user "), "{text}");
        assert!(text.ends_with("  (1 more symbols)\n"), "{text}");
        assert!(render_windows(&[], 5).contains("no window closed"));
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
