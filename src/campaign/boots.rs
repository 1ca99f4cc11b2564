//! The boot loop: every boot of the protocol not already complete, each
//! message of the guest stored as it arrives, and the results document
//! saved after each sample and each boot.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use patchbench_agent::{Job, Message, PROTOCOL_VERSION, SwapBackend, SwapSetup};

use super::lane::LaneSetup;
use super::stages::Stages;
use crate::build::KernelArtifact;
use crate::config::Plan;
use crate::controls::Control;
use crate::cost;
use crate::events::{Event, Sink};
use crate::image;
use crate::model::layout;
use crate::results::{self, Boot, Results, SampleRecord, Timing};
use crate::variants::Variant;
use crate::vm::{self, BootSpec};
use crate::workload::Prepared;

/// The main workload and each control, ready to run.
pub(super) struct Workloads {
    pub(super) main: Prepared,
    pub(super) controls: Vec<(Control, Prepared)>,
}

impl Workloads {
    /// The controls as the guest's job lists them.
    fn jobs(&self) -> Vec<patchbench_agent::Control> {
        self.controls
            .iter()
            .map(|(c, w)| patchbench_agent::Control {
                name: c.name.clone(),
                workload: w.wire().clone(),
            })
            .collect()
    }
}

/// What one boot runs: which kernel, where its files go, and what the
/// guest is asked to do.
pub struct BootJob<'a> {
    /// `A`, `B`, `A'`...
    pub label: &'a str,
    pub kernel: &'a Path,
    /// Where the job's initramfs, the console log and QEMU's stderr go.
    pub dir: &'a Path,
    /// The lane, as the campaign's [`LaneSetup`] decided it for this kernel.
    pub clock: vm::Clock,
    pub workload: patchbench_agent::Workload,
    pub controls: Vec<patchbench_agent::Control>,
    /// Export the host's `/` even if no workload needs it.
    pub host_root: bool,
    /// The variant's runtime settings, written by the guest.
    pub settings: Vec<patchbench_agent::Setting>,
    /// Words added to the kernel command line.
    pub cmdline: Vec<String>,
    /// The boot's memory layout, `None` for the one its inputs give: the
    /// agent scatters the free pages by it, and the kernel command line
    /// names it ([`crate::model::layout`]).
    pub layout: Option<u32>,
    /// Samples per condition (a round's, in a sequential campaign).
    pub samples: u32,
    /// The kernel's CONFIG_HZ, where its build manifest or build directory
    /// says (`vm::BootSpec::hz`).
    pub hz: Option<u32>,
}

/// Write a boot's job into its initramfs and describe the boot: the
/// campaign's guest (memory, CPUs, swap, zswap, THP) running the job's
/// workload, then its controls, in host-root mode if asked or if a
/// workload needs it.
pub fn prepare_boot(
    plan: &Plan,
    job: BootJob<'_>,
    base_entries: &image::Entries,
) -> anyhow::Result<(BootSpec, String)> {
    let host_root = job.host_root
        || job.workload.needs_host_root()
        || job.controls.iter().any(|c| c.workload.needs_host_root());
    std::fs::create_dir_all(job.dir)
        .with_context(|| format!("cannot create {}", job.dir.display()))?;
    let wire = Job {
        protocol: PROTOCOL_VERSION,
        boot_label: job.label.to_string(),
        swap: SwapSetup {
            device: "/dev/vda".into(),
        },
        zswap: plan.zswap.clone(),
        thp: plan.thp,
        warmups: plan.warmups,
        samples: job.samples,
        host_root,
        workload: job.workload,
        controls: job.controls,
        settings: job.settings,
        layout: job.layout,
    };
    // Workloads that all swap in guest memory (zram, a RAM disk) need no
    // disk, and have no host-timed disk completions.
    let backends: Vec<SwapBackend> = wire
        .conditions()
        .iter()
        .map(|(_, w)| w.swap_backend())
        .collect();
    let no_disk = backends.iter().all(|b| *b != SwapBackend::Disk);
    let ram_swap = if backends.contains(&SwapBackend::Ram) {
        patchbench_agent::ram_swap_cmdline(plan.vm.swap_size.as_u64())
    } else {
        Vec::new()
    };
    // What a kind needs in the initramfs, such as a kernel build's staged
    // root, so that the guest reads no file of the build from the host
    // (src/kbuild/stage.rs).
    let mut staged: Vec<PathBuf> = Vec::new();
    for (_, workload) in wire.conditions() {
        for archive in workload.initramfs_archives() {
            let archive = PathBuf::from(archive);
            if !staged.contains(&archive) {
                staged.push(archive);
            }
        }
    }
    let initrd = job.dir.join("initramfs.cpio");
    let job_json = serde_json::to_vec(&wire).expect("job serializes");
    let initramfs_sha256 = image::build(base_entries, &job_json, &staged, &initrd)?;
    let spec = BootSpec {
        label: job.label.to_string(),
        kernel: job.kernel.to_owned(),
        initrd,
        dir: job.dir.to_owned(),
        clock: job.clock,
        memory_mib: plan.vm.memory.as_u64() >> 20,
        cpus: plan.vm.cpus,
        swap_bytes: if no_disk {
            0
        } else {
            plan.vm.swap_size.as_u64()
        },
        boot_timeout: plan.vm.boot_timeout,
        run_timeout: plan.vm.run_timeout,
        host_root,
        extra_cmdline: [
            plan.cmdline.clone(),
            job.cmdline,
            job.layout.map(layout::cmdline_word).into_iter().collect(),
            ram_swap,
        ]
        .concat(),
        hz: job.hz,
    };
    Ok((spec, initramfs_sha256))
}

/// Everything the boot loop reads.
pub(super) struct Boots<'a> {
    pub(super) plan: &'a Plan,
    /// Where a deterministic lane's boots are replayed from, if they are.
    pub(super) replays: Option<&'a super::replay::Replays>,
    pub(super) lane: &'a LaneSetup,
    /// Every variant, the baseline first.
    pub(super) variants: &'a [Variant],
    /// Each variant's kernel, by variant index.
    pub(super) kernels: &'a [KernelArtifact],
    pub(super) workloads: &'a Workloads,
    pub(super) base_entries: &'a image::Entries,
    pub(super) out_dir: &'a Path,
    pub(super) results_path: &'a Path,
    /// The boots to run, in order, as indexes into `variants`: the
    /// protocol's order, once per round run so far.
    pub(super) order: Vec<usize>,
    /// A shard's places in `order`: only those boots run. `None`: all.
    pub(super) only: Option<Vec<usize>>,
}

/// A boot whose job is written and whose entry is in the results: what
/// running it needs.
struct Ready {
    /// Its place in `results.boots` (the protocol's boot index, but in a
    /// shard, which holds only its own boots).
    pos: usize,
    initramfs_sha256: String,
    label: String,
    variant: String,
    spec: BootSpec,
    windows: Option<CostWindows>,
}

/// What the boots running side by side report as: one stage, the runs of
/// all of them counted together.
struct Wave {
    stage: String,
    /// The boots' places in `results.boots`.
    positions: Vec<usize>,
    /// Warm-ups and samples of every condition, per boot.
    runs: u64,
    /// Warm-ups and samples of one condition, per boot.
    per_condition: u32,
    /// What every boot's CPU time accounting must be.
    cputime: crate::config::CputimeChoice,
}

impl Boots<'_> {
    /// Every boot of the protocol not already complete, in order, up to
    /// the lane's `parallel` at a time; the document is saved after each
    /// sample and each boot. Outside icount the host's noise is timed
    /// before the first boot and after each wave of boots.
    pub(super) async fn run_all(
        &self,
        results: &mut Results,
        stages: &mut Stages<'_>,
    ) -> anyhow::Result<()> {
        let order = self.order.clone();
        let layouts = self.plan.layouts.of_boots(&order);
        let names: Vec<&str> = order
            .iter()
            .map(|&v| self.variants[v].name.as_str())
            .collect();
        // A shard runs its own boots only; results.boots then holds those,
        // each at its place in the whole order (`Boot::index`).
        let pending: Vec<(usize, usize)> = match &self.only {
            None => order
                .into_iter()
                .enumerate()
                .skip(results.boots.len())
                .collect(),
            Some(only) => order
                .into_iter()
                .enumerate()
                .filter(|(i, _)| only.contains(i) && !results.boots.iter().any(|b| b.index == *i))
                .collect(),
        };
        // Under icount (the cost and counting lanes with it) a guest's
        // figures do not depend on the host's speed, so the host's noise
        // is not timed there: it would only cost seconds a wave.
        let noise = self.lane.lane.host_time();
        for wave in pending.chunks(self.lane.parallel.max(1)) {
            if noise && results.host.noise.is_none() {
                host_noise(results).await;
            }
            let mut ready = Vec::new();
            for &(index, variant) in wave {
                let label = crate::model::boot_label(&names, index);
                ready.push(self.prepare(results, index, variant, &label, layouts[index])?);
            }
            let started = Instant::now();
            let outcome = self.run_wave(results, stages, ready).await;
            *results.boots_wall_seconds.get_or_insert(0.0) += started.elapsed().as_secs_f64();
            outcome?;
            if noise {
                host_noise(results).await;
            }
        }
        results.timings = stages.timings.clone();
        results.save(self.results_path)?;
        Ok(())
    }

    /// Write the job of boot number `index` (variant index `variant`),
    /// labelled `label`, in memory layout `layout`, and add its entry to
    /// the results.
    fn prepare(
        &self,
        results: &mut Results,
        index: usize,
        variant: usize,
        label: &str,
        layout: Option<u32>,
    ) -> anyhow::Result<Ready> {
        let boot_dir = self
            .out_dir
            .join("boots")
            .join(format!("{index}-{}", label.replace('\'', "p")));
        let this = &self.variants[variant];
        // Before the boot is recorded: a kernel without its System.map
        // cannot run with the plugin.
        let mut clock = self.lane.clock_for(&self.kernels[variant].bzimage)?;
        if let vm::Clock::Plugin(lane) = &mut clock {
            lane.boot = self.workloads.main.wire().counts_boot();
        }
        let job = BootJob {
            label,
            kernel: self.kernels[variant].boot_image(),
            hz: self.kernels[variant].hz,
            dir: &boot_dir,
            clock,
            workload: self.workloads.main.wire().clone(),
            controls: self.workloads.jobs(),
            host_root: false,
            settings: this
                .settings
                .iter()
                .map(|s| patchbench_agent::Setting {
                    path: s.path.clone(),
                    value: s.value.clone(),
                })
                .collect(),
            cmdline: this.cmdline.clone(),
            layout,
            samples: self.lane.samples_per_boot(self.plan),
        };
        let (spec, initramfs_sha256) = prepare_boot(self.plan, job, self.base_entries)?;
        let pos = results.boots.len();
        results.boots.push(Boot {
            index,
            label: label.to_string(),
            variant: this.name.to_string(),
            layout,
            initramfs_sha256,
            // Relative to the run's directory: a kept run names no path of
            // one machine.
            console_log: crate::fsutil::portable(&spec.console_log(), Some(self.out_dir), "boots"),
            facts: None,
            warmups: Vec::new(),
            samples: Vec::new(),
            hello_seconds: None,
            total_seconds: None,
            complete: false,
            failure: None,
            replayed: false,
            pinned: None,
        });
        results.save(self.results_path)?;
        let windows = super::lane::plugin_model(self.lane.lane).map(|model| CostWindows {
            reader: cost::WindowReader::new(&spec.cost_windows()),
            model,
            per_call: self.workloads.main.wire().per_call_cost(),
        });
        Ok(Ready {
            pos,
            initramfs_sha256: results.boots[pos].initramfs_sha256.clone(),
            label: label.to_string(),
            variant: this.name.to_string(),
            spec,
            windows,
        })
    }

    /// Run `ready`'s boots side by side, as one stage. Each boot is marked
    /// complete, with its own time, as it ends. A boot that fails does not
    /// stop the others: they finish, and the first failure is returned.
    async fn run_wave(
        &self,
        results: &mut Results,
        stages: &mut Stages<'_>,
        ready: Vec<Ready>,
    ) -> anyhow::Result<()> {
        let plan = self.plan;
        let per_condition = plan.warmups + self.lane.samples_per_boot(plan);
        let conditions = 1 + plan.controls.len() as u32;
        let labels: Vec<&str> = ready.iter().map(|r| r.label.as_str()).collect();
        let (stage, detail) = match &ready[..] {
            [one] => (
                format!("boot {}", one.label),
                format!(
                    "variant {}, {} runs",
                    one.variant,
                    per_condition * conditions
                ),
            ),
            _ => (
                format!("boots {}", labels.join(", ")),
                format!(
                    "side by side under {}, {} runs each",
                    self.lane.lane.clock(),
                    per_condition * conditions
                ),
            ),
        };
        let wave = Wave {
            stage: stage.clone(),
            positions: ready.iter().map(|r| r.pos).collect(),
            runs: u64::from(per_condition * conditions),
            per_condition,
            cputime: plan.cputime,
        };
        let sink = stages.sink;
        sink.emit(Event::Started {
            stage: stage.clone(),
            detail,
        });
        let started = Instant::now();
        results.timings = stages.timings.clone();
        let shared = RefCell::new(results);
        let ended = futures::future::join_all(
            ready
                .into_iter()
                .map(|r| self.run_one(&shared, &wave, sink, r)),
        )
        .await;
        let results = shared.into_inner();
        let mut failure = None;
        for outcome in ended {
            match outcome {
                Ok(timing) => stages.timings.push(timing),
                Err(e) if failure.is_none() => failure = Some(e),
                Err(e) => sink.emit(Event::Note(format!("warning: {e:#}"))),
            }
        }
        if let Some(e) = failure {
            return Err(e);
        }
        sink.emit(Event::Finished {
            stage,
            elapsed: started.elapsed(),
            detail: String::new(),
        });
        results.timings = stages.timings.clone();
        results.save(self.results_path)?;
        Ok(())
    }

    /// One boot of a wave, from QEMU's start to its entry marked complete
    /// and saved; its stage time.
    async fn run_one(
        &self,
        shared: &RefCell<&mut Results>,
        wave: &Wave,
        sink: &dyn Sink,
        mut ready: Ready,
    ) -> anyhow::Result<Timing> {
        let path = self.results_path;
        let started = Instant::now();
        let key = match self.replays {
            Some(replays) => Some(replays.key(&ready.spec, &ready.initramfs_sha256)?),
            None => None,
        };
        if let (Some(replays), Some(key)) = (self.replays, &key)
            && let Some(earlier) = replays.load(key, &ready.spec.console_log())
        {
            sink.emit(Event::Note(format!(
                "boot {}: replayed from the cache: under icount a boot with these exact inputs ran before and repeats instruction for instruction (--fresh-boots boots it)",
                ready.label
            )));
            let mut results = shared.borrow_mut();
            let boot = &mut results.boots[ready.pos];
            boot.facts = earlier.facts;
            boot.warmups = earlier.warmups;
            boot.samples = earlier.samples;
            boot.hello_seconds = earlier.hello_seconds;
            boot.total_seconds = earlier.total_seconds;
            boot.complete = true;
            boot.replayed = true;
            let timing = Timing {
                stage: format!("boot {} (replayed)", ready.label),
                seconds: started.elapsed().as_secs_f64(),
            };
            results.timings.push(timing.clone());
            results
                .save(path)
                .with_context(|| format!("cannot write {}", path.display()))?;
            return Ok(timing);
        }
        let on_message = |message: &Message| {
            // The boots of a wave are polled on one task, one at a time,
            // and none holds the document across an await.
            let mut results = shared.borrow_mut();
            record(
                &mut results,
                path,
                message,
                sink,
                wave,
                ready.pos,
                ready.windows.as_mut(),
            )
        };
        let outcome = vm::boot(&ready.spec, on_message).await;
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(e) => {
                record_failure(&mut shared.borrow_mut(), path, ready.pos, &e, sink);
                return Err(e.into());
            }
        };
        let timing = Timing {
            stage: format!("boot {}", ready.label),
            seconds: started.elapsed().as_secs_f64(),
        };
        let mut results = shared.borrow_mut();
        let boot = &mut results.boots[ready.pos];
        boot.hello_seconds = Some(outcome.hello_after.as_secs_f64());
        boot.total_seconds = Some(outcome.total.as_secs_f64());
        boot.pinned = outcome.pinned.as_ref().map(|p| results::PinnedRecord {
            vcpus: p.vcpus.clone(),
            rest: p.rest.clone(),
        });
        boot.complete = true;
        if let (Some(replays), Some(key)) = (self.replays, &key) {
            // A boot that cannot be kept is only booted again next time.
            if let Err(e) = replays.store(key, boot, &ready.spec.console_log()) {
                sink.emit(Event::Note(format!(
                    "warning: boot {} not kept for replay: {e:#}",
                    ready.label
                )));
            }
        }
        results.timings.push(timing.clone());
        results
            .save(path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(timing)
    }
}

/// Keep a guest failure with its boot in results.json, so that the report
/// of what was measured (`patchbench compare`) says which boot stopped and
/// why. Other errors are the host's, and say nothing about the kernel. A
/// failure to save is a warning: the error the user sees is the guest's.
fn record_failure(
    results: &mut Results,
    path: &Path,
    pos: usize,
    error: &vm::VmError,
    sink: &dyn Sink,
) {
    let vm::VmError::Guest { what, excerpt, .. } = error else {
        return;
    };
    results.boots[pos].failure = Some(results::BootFailure {
        what: what.clone(),
        excerpt: excerpt.clone(),
    });
    if let Err(e) = results.save(path) {
        sink.emit(Event::Note(format!(
            "warning: cannot record the failure in {}: {e:#}",
            path.display()
        )));
    }
}

/// Time the host's fixed CPU loop a few times (off the async threads) and
/// add the timings to the results: before the first boot and after each.
async fn host_noise(results: &mut Results) {
    let ms = tokio::task::spawn_blocking(|| {
        crate::hostnoise::sample(crate::hostnoise::PER_POINT, crate::hostnoise::STEPS)
    })
    .await
    .unwrap_or_default();
    results
        .host
        .noise
        .get_or_insert_with(|| results::HostNoise {
            method: format!("xorshift64, {} steps", crate::hostnoise::STEPS),
            samples_ms: Vec::new(),
        })
        .samples_ms
        .extend(ms);
}

/// A cost-lane boot's window file, read as it grows, and the model its
/// windows must name.
struct CostWindows {
    reader: cost::WindowReader,
    model: cost::PluginModel,
    /// The workload's metric per call of its profiled function.
    per_call: Option<patchbench_agent::PerCallCost>,
}

impl CostWindows {
    /// The windows that closed since the previous sample, as metrics merged
    /// into `sample`'s (with the per-call metric of `profiled`, the
    /// function the guest's profiler counted), and (for a measured sample)
    /// its symbol profile.
    fn add_to(
        &mut self,
        sample: &mut SampleRecord,
        warmup: bool,
        profiled: Option<&str>,
    ) -> anyhow::Result<()> {
        let path = self.reader.path().to_owned();
        let context = || format!("the cost windows of this sample ({})", path.display());
        let windows = self.reader.read_new().with_context(context)?;
        let machine = self.model.machine().name;
        if let Some(w) = windows.iter().find(|w| w.model != machine) {
            anyhow::bail!(
                "{}: window {} was modeled on {}, the campaign's model is {machine}",
                path.display(),
                w.seq,
                w.model,
            );
        }
        for (name, value) in cost::sample_metrics(&windows, self.model).with_context(context)? {
            if sample.metrics.insert(name.clone(), value).is_some() {
                anyhow::bail!("the agent already reports the metric {name} the cost model makes");
            }
        }
        if let Some((name, value)) = cost::kernel_insns_per_op(&sample.metrics) {
            sample.metrics.insert(name.to_string(), value);
        }
        if let (Some(per_call), Some(symbol)) = (self.per_call, profiled)
            && let Some(&calls) = sample.metrics.get(per_call.calls)
            && let Some(cycles) = cost::per_call_cycles(&windows, per_call.phase, symbol, calls)
        {
            sample.metrics.insert(per_call.metric.to_string(), cycles);
        }
        if !warmup {
            sample.profile = cost::sample_profiles(&windows);
            if self.model == cost::PluginModel::Cache {
                sample.split = cost::sample_splits(&windows);
            }
        }
        Ok(())
    }
}

/// Refuses a boot whose kernel does not read back a feature the workload
/// needs (its spec's `needs:`), naming it and the option that builds it.
fn lacks_a_feature(
    kind: &str,
    label: &str,
    present: &[patchbench_agent::feature::Feature],
) -> Result<(), crate::workload::needs::Missing> {
    let needs = crate::workload::spec_for_kind(kind).map_or_else(Vec::new, |s| s.needs);
    let missing = crate::workload::needs::missing_at_boot(&needs, present);
    if missing.is_empty() {
        return Ok(());
    }
    Err(crate::workload::needs::Missing {
        boot: label.to_string(),
        kind: kind.to_string(),
        missing,
    })
}

/// Store one agent message in boot `pos` (one of `wave`'s) and persist
/// the document; in the cost lane, with the sample's modeled cost from
/// `windows`.
fn record(
    results: &mut Results,
    path: &Path,
    message: &Message,
    sink: &dyn Sink,
    wave: &Wave,
    pos: usize,
    windows: Option<&mut CostWindows>,
) -> anyhow::Result<()> {
    let boot = &mut results.boots[pos];
    // Boots side by side say which one a line is about.
    let who = if wave.positions.len() > 1 {
        format!("{}: ", boot.label)
    } else {
        String::new()
    };
    match message {
        Message::Facts(facts) => {
            sink.emit(Event::Progress {
                stage: wave.stage.clone(),
                detail: format!(
                    "{who}guest {} up: CPUs possible {} online {}, zswap enabled={}",
                    facts.kernel_release,
                    facts.possible_cpus,
                    facts.online_cpus,
                    facts.zswap.get("enabled").map_or("?", String::as_str)
                ),
            });
            boot.facts = Some(facts.as_ref().into());
            // Before the first sample: kept in the document, then refused.
            let refused = super::cputime::check(wave.cputime, &boot.label, facts.cputime.as_ref())
                .map_err(anyhow::Error::from)
                .and_then(|()| {
                    lacks_a_feature(&results.workload.kind, &boot.label, &facts.features)
                        .map_err(anyhow::Error::from)
                });
            if let Err(refused) = refused {
                results
                    .save(path)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                return Err(refused);
            }
        }
        Message::Sample(sample) => {
            sink.emit(Event::Progress {
                stage: wave.stage.clone(),
                detail: format!(
                    "{who}{} {}/{}{}",
                    if sample.warmup { "warm-up" } else { "sample" },
                    sample.index + 1,
                    wave.per_condition,
                    sample
                        .condition
                        .as_ref()
                        .map_or(String::new(), |c| format!(" (control {c})"))
                ),
            });
            // Under KVM the host may steal from the vCPUs; a sample that
            // lost a noticeable share of its time is said (docs/statistics.md).
            if !sample.warmup
                && let Some(flag) = crate::workload::spec_for_kind(&results.workload.kind)
                    .and_then(|spec| spec.steal_flag(&sample.metrics))
            {
                sink.emit(Event::Note(format!(
                    "warning: boot {} sample {}: {flag}",
                    boot.label,
                    sample.index + 1
                )));
            }
            let mut stored = SampleRecord::from(sample);
            if let Some(windows) = windows {
                let profiled = boot
                    .facts
                    .as_ref()
                    .and_then(|f| f.profiled_symbol.as_deref());
                windows.add_to(&mut stored, sample.warmup, profiled)?;
            }
            if sample.warmup {
                boot.warmups.push(stored);
            } else {
                boot.samples.push(stored);
            }
            // Warm-ups and samples of every condition and boot, for the
            // progress bar.
            let done = wave
                .positions
                .iter()
                .map(|&p| (results.boots[p].warmups.len() + results.boots[p].samples.len()) as u64)
                .sum();
            sink.emit(Event::Count {
                stage: wave.stage.clone(),
                done,
                total: Some(wave.runs * wave.positions.len() as u64),
                unit: "runs",
            });
        }
        Message::Hello { .. } | Message::Done | Message::Error { .. } => return Ok(()),
    }
    results
        .save(path)
        .with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use patchbench_costmodel::record::{Cost, Line, SymbolCost, WindowRecord};

    /// The built-in smoke campaign's plan.
    fn smoke_plan() -> Plan {
        use crate::config::{Campaign, DEFAULT_CAMPAIGN, Overrides, default_campaign_dir};
        Campaign::parse(DEFAULT_CAMPAIGN, Path::new("smoke.yaml"))
            .unwrap()
            .into_plan(
                Path::new("ci/smoke.yaml"),
                &default_campaign_dir(),
                Overrides::default(),
            )
            .unwrap()
    }

    /// Boot A of `workload` under icount, writing into `dir`.
    fn boot_job(dir: &Path, workload: patchbench_agent::Workload) -> BootJob<'_> {
        BootJob {
            label: "A",
            kernel: Path::new("/k"),
            dir,
            clock: vm::Clock::Icount,
            workload,
            controls: Vec::new(),
            host_root: false,
            settings: Vec::new(),
            cmdline: Vec::new(),
            layout: None,
            samples: 3,
            hz: None,
        }
    }

    #[test]
    fn a_boot_in_a_layout_names_it_on_the_command_line_and_in_its_job() {
        let plan = smoke_plan();
        let dir = tempfile::tempdir().unwrap();
        let job = |layout| BootJob {
            cmdline: vec!["mitigations=off".into()],
            layout,
            ..boot_job(
                dir.path(),
                patchbench_agent::Workload::Exec(patchbench_agent::Exec {
                    argv: vec!["true".into()],
                }),
            )
        };
        let read_job = || {
            let cpio = std::fs::read(dir.path().join("initramfs.cpio")).unwrap();
            let text = String::from_utf8_lossy(&cpio).into_owned();
            text.contains(r#""layout":2"#)
        };
        let entries = image::Entries::new();
        let (spec, with_layout) = prepare_boot(&plan, job(Some(2)), &entries).unwrap();
        assert!(spec.extra_cmdline.ends_with(&[
            "mitigations=off".to_string(),
            "patchbench.layout=2".to_string()
        ]));
        assert!(read_job(), "the job carries the layout");
        let (spec, without) = prepare_boot(&plan, job(None), &entries).unwrap();
        assert!(
            !spec
                .extra_cmdline
                .iter()
                .any(|w| w.starts_with("patchbench.layout"))
        );
        assert!(!read_job());
        assert_ne!(with_layout, without);
    }

    #[test]
    fn a_workload_on_a_ram_disk_boots_with_brd_and_no_swap_disk() {
        use patchbench_agent::Workload;
        let plan = smoke_plan();
        let dir = tempfile::tempdir().unwrap();
        let job = |swap| {
            boot_job(
                dir.path(),
                serde_json::from_value::<Workload>(serde_json::json!({
                    "kind": "zswap-pageout", "workers": 1, "mib_per_worker": 32,
                    "zswap_max": "max", "memory_max": "max", "swap_max": "max",
                    "swap": swap,
                }))
                .unwrap(),
            )
        };
        let entries = image::Entries::new();
        let swap_size = plan.vm.swap_size.as_u64();
        let brd = |spec: &vm::BootSpec| {
            spec.extra_cmdline
                .iter()
                .filter(|w| w.starts_with("brd."))
                .cloned()
                .collect::<Vec<_>>()
        };
        let (ram, _) = prepare_boot(&plan, job(SwapBackend::Ram), &entries).unwrap();
        assert_eq!(ram.swap_bytes, 0, "no virtio swap disk");
        assert_eq!(
            brd(&ram),
            [
                "brd.rd_nr=1".to_string(),
                format!("brd.rd_size={}", swap_size >> 10)
            ]
        );
        let (disk, _) = prepare_boot(&plan, job(SwapBackend::Disk), &entries).unwrap();
        assert_eq!(disk.swap_bytes, swap_size);
        assert!(brd(&disk).is_empty());
        let (zram, _) = prepare_boot(&plan, job(SwapBackend::Zram), &entries).unwrap();
        assert_eq!(zram.swap_bytes, 0);
        assert!(brd(&zram).is_empty());
    }

    fn window(seq: u64, phase: &str, model: &str, cycles: u64) -> String {
        let cost = Cost {
            insns: cycles / 2,
            modeled_cycles: cycles,
            ..Cost::default()
        };
        Line::Window(WindowRecord {
            seq,
            phase: phase.into(),
            model: model.into(),
            total: cost,
            vcpus: Vec::new(),
            symbols: vec![SymbolCost {
                symbol: "do_flush_stats".into(),
                cost,
            }],
        })
        .to_json_line()
    }

    fn sample(warmup: bool) -> SampleRecord {
        SampleRecord::from(&patchbench_agent::Sample {
            index: 0,
            warmup,
            condition: None,
            metrics: [("pageout_cpu_ns".to_string(), 5)].into(),
        })
    }

    #[test]
    fn a_cost_lane_sample_gets_its_windows_metrics_and_profile() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(cost::WINDOWS_FILE);
        let mut windows = CostWindows {
            reader: cost::WindowReader::new(&path),
            model: cost::PluginModel::Cache,
            per_call: Some(patchbench_agent::PerCallCost {
                phase: "pageout",
                calls: "pageout_flushes",
                metric: "flush_modeled_cycles",
            }),
        };
        std::fs::write(&path, window(1, "pageout", "skylake-client", 100)).unwrap();
        let mut warm = sample(true);
        windows
            .add_to(&mut warm, true, Some("do_flush_stats"))
            .unwrap();
        assert_eq!(warm.metrics["pageout_modeled_cycles"], 100);
        assert!(warm.profile.is_empty(), "warm-ups keep no profile");
        // No calls counted: no per-call figure.
        assert!(!warm.metrics.contains_key("flush_modeled_cycles"));
        // The next sample sees only the windows written since.
        let text = [
            window(1, "pageout", "skylake-client", 100),
            window(2, "pageout", "skylake-client", 300),
        ]
        .concat();
        std::fs::write(&path, &text).unwrap();
        let mut measured = sample(false);
        measured.metrics.insert("pageout_flushes".into(), 3);
        windows
            .add_to(&mut measured, false, Some("do_flush_stats"))
            .unwrap();
        assert_eq!(measured.metrics["pageout_modeled_cycles"], 300);
        assert_eq!(measured.metrics["flush_modeled_cycles"], 100);
        assert_eq!(measured.metrics["pageout_insns"], 150);
        assert_eq!(measured.metrics["pageout_cpu_ns"], 5);
        assert_eq!(measured.profile["pageout"]["do_flush_stats"], 300);
        // Where its cycles went: 150 instructions, the rest misses.
        let split = measured.split["pageout"]["do_flush_stats"];
        assert_eq!((split.insns, split.class_cycles), (150, 0));
        assert_eq!(split.miss_cycles(300), 150);
        assert!(warm.split.is_empty());
        // A sample without windows, and a window of another model, fail.
        let err = windows.add_to(&mut sample(false), false, None).unwrap_err();
        assert!(format!("{err:#}").contains("no cost windows"), "{err:#}");
        std::fs::write(&path, [text, window(3, "verify", "other", 1)].concat()).unwrap();
        let err = windows.add_to(&mut sample(false), false, None).unwrap_err();
        assert!(err.to_string().contains("modeled on other"), "{err}");
    }

    #[test]
    fn a_counting_lane_sample_keeps_no_split() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(cost::WINDOWS_FILE);
        let mut windows = CostWindows {
            reader: cost::WindowReader::new(&path),
            model: cost::PluginModel::Count,
            per_call: None,
        };
        std::fs::write(&path, window(1, "pageout", "count", 100)).unwrap();
        let mut measured = sample(false);
        windows.add_to(&mut measured, false, None).unwrap();
        assert_eq!(measured.metrics["pageout_insns"], 50);
        assert_eq!(measured.profile["pageout"]["do_flush_stats"], 100);
        assert!(measured.split.is_empty(), "{:?}", measured.split);
    }

    #[test]
    fn a_boot_without_a_needed_feature_is_refused_by_name() {
        use patchbench_agent::feature::Feature;
        let err = lacks_a_feature("page-fault-anon", "A", &[Feature::Thp]).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("boot A: workload page-fault-anon needs memcg (CONFIG_MEMCG)"),
            "{text}"
        );
        assert_eq!(
            crate::exit::code_for(&anyhow::Error::from(err)),
            crate::exit::USAGE
        );
        lacks_a_feature("page-fault-anon", "A", &[Feature::Memcg]).unwrap();
        lacks_a_feature("rstat-flush", "A", &[]).unwrap();
    }

    /// A precise campaign's boot whose kernel splits by ticks stops at its
    /// facts, before any sample: the facts are kept in the document, the
    /// error names the missing option, and a tick campaign takes it.
    #[test]
    fn a_tick_kernel_in_a_precise_campaign_stops_before_its_first_sample() {
        use patchbench_agent::GuestFacts;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.json");
        let mut results = crate::results::tests::fixture();
        results.boots.truncate(1);
        results.boots[0].samples.clear();
        results.boots[0].warmups.clear();
        results.boots[0].facts = None;
        let facts = GuestFacts {
            kernel_release: "6.12.118".into(),
            kernel_version: "#1".into(),
            possible_cpus: "0-1".into(),
            online_cpus: "0-1".into(),
            mem_total_kib: 1,
            zswap: Default::default(),
            thp: "never".into(),
            swaps: Vec::new(),
            profiled_symbol: None,
            settings: Default::default(),
            cputime: Some(patchbench_agent::cputime::from_kconfig(
                "CONFIG_HZ=250\nCONFIG_TICK_CPU_ACCOUNTING=y\n",
            )),
            clocksource: Some("tsc".into()),
            features: Vec::new(),
            rcu_barrier: None,
        };
        let message = Message::Facts(Box::new(facts));
        let wave = |cputime| Wave {
            stage: "boot A".into(),
            positions: vec![0],
            runs: 4,
            per_condition: 4,
            cputime,
        };
        let sink = crate::events::Recorder::default();
        let precise = wave(crate::config::CputimeChoice::Precise);
        let err = record(&mut results, &path, &message, &sink, &precise, 0, None).unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("boot A") && text.contains("CONFIG_VIRT_CPU_ACCOUNTING_GEN=y"),
            "{text}"
        );
        let saved = Results::load(&path).unwrap();
        let cputime = saved.boots[0]
            .facts
            .as_ref()
            .unwrap()
            .cputime
            .as_ref()
            .unwrap();
        assert_eq!(cputime.accounting, results::CputimeAccounting::Tick);
        assert!(saved.boots[0].samples.is_empty());
        let tick = wave(crate::config::CputimeChoice::Tick);
        record(&mut results, &path, &message, &sink, &tick, 0, None).unwrap();
    }

    /// A sample whose guest lost more than 1% of its wall-clock time to
    /// the host is said, and kept; a warm-up's steal is not.
    #[test]
    fn a_sample_the_host_stole_from_is_flagged_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.json");
        let mut results = crate::results::tests::fixture();
        assert_eq!(results.workload.kind, "zswap-pageout");
        results.boots.truncate(1);
        results.boots[0].samples.clear();
        results.boots[0].warmups.clear();
        let wave = Wave {
            stage: "boot A".into(),
            positions: vec![0],
            runs: 4,
            per_condition: 4,
            cputime: crate::config::CputimeChoice::Tick,
        };
        let sample = |index, warmup, steal_ns: u64| {
            Message::Sample(patchbench_agent::Sample {
                index,
                warmup,
                // elapsed_ns is zswap-pageout's wall-clock metric.
                metrics: std::collections::BTreeMap::from([
                    ("elapsed_ns".to_string(), 1_000_000_000),
                    ("guest_steal_ns".to_string(), steal_ns),
                ]),
                condition: None,
            })
        };
        let sink = crate::events::Recorder::default();
        for message in [
            sample(0, true, 50_000_000),
            sample(1, false, 10_000_000),
            sample(2, false, 30_000_000),
        ] {
            record(&mut results, &path, &message, &sink, &wave, 0, None).unwrap();
        }
        let notes: Vec<String> = sink
            .0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                Event::Note(text) => Some(text.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(
            notes,
            [
                "warning: boot A sample 3: the host stole 30.0 ms from the guest, 3.0% of the \
              sample's 1000.0 ms (above 1%): something else ran on its vCPUs' cores"
            ]
        );
        assert_eq!(Results::load(&path).unwrap().boots[0].samples.len(), 2);
    }
}
