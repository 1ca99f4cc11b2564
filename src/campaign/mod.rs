//! A campaign from start to end: tree → series → builds → boots → results.
//!
//! Orchestration only: each step calls its stage module and reports through
//! the event sink. `results.json` is rewritten atomically after every sample,
//! so whatever was measured survives an interruption.

use std::path::{Path, PathBuf};

use anyhow::Context;
use patchbench_agent::{Job, Message, PROTOCOL_VERSION, SwapSetup};

use crate::build::KernelArtifact;
use crate::config::Plan;
use crate::controls::Control;
use crate::cost;
use crate::events::{Event, Sink};
use crate::image;
use crate::results::{
    self, Boot, ComparisonRecord, ControlRecord, Host, PatchInfo, Results, SampleRecord,
    SeriesInfo, TreeInfo, VariantRecord, WorkloadRecord,
};
use crate::variants::Variant;
use crate::vm::{self, BootSpec, accel};
use crate::workload::{Planned, Prepared};

mod kernels;
mod lane;
mod stages;
pub use kernels::{
    AppliedSeries, BuildOutcome, KernelManifest, MANIFEST, Prebuilt, PrebuiltError, apply_series,
    build_only, describe, export,
};
use kernels::{Kernels, prepare};
use lane::Lane;
pub use lane::{CostLaneWantsTcg, decide as decide_lane};
use stages::Stages;

/// Where a run reads and writes.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Results, logs and per-boot files.
    pub out_dir: PathBuf,
    /// Imported trees and build directories, shared between runs.
    pub cache_dir: PathBuf,
    /// The guest agent binary.
    pub agent: PathBuf,
    /// The build cache's size budget (see `build::cache`).
    pub cache_max: bytesize::ByteSize,
    /// Boot these kernels (`patchbench build --out DIR`) instead of building.
    pub kernels: Option<PathBuf>,
}

/// What a finished campaign produced.
#[derive(Debug)]
pub struct Outcome {
    pub results: Results,
    pub results_path: PathBuf,
    pub markdown: String,
    pub markdown_path: PathBuf,
    /// Every metric's comparison, as the report and `comparisons` hold it.
    pub rows: Vec<crate::report::Row>,
}

/// Run a whole campaign: choose the accelerator, build the kernels,
/// prepare the workloads, start (or resume) the results, boot every
/// variant in the protocol's order, and judge.
pub async fn run(plan: &Plan, opts: &RunOptions, sink: &dyn Sink) -> anyhow::Result<Outcome> {
    let lane = lane::choose(plan, sink)?;
    std::fs::create_dir_all(&opts.out_dir)
        .with_context(|| format!("cannot create output directory {}", opts.out_dir.display()))?;
    let started_at = jiff::Timestamp::now();
    // An earlier results.json is read before anything is built or booted:
    // a truncated or hand-edited one stops the run here, naming the file
    // and the byte, and is never overwritten.
    let results_path = opts.out_dir.join("results.json");
    let earlier = if results_path.exists() {
        Some(Results::load(&results_path)?)
    } else {
        None
    };
    let mut stages = Stages {
        sink,
        timings: Vec::new(),
    };
    let kernels = prepare(
        &mut stages,
        plan,
        &opts.cache_dir,
        false,
        opts.cache_max,
        opts.kernels.as_deref(),
    )
    .await?;
    let workloads = prepare_workloads(&mut stages, plan, &kernels, &opts.cache_dir).await?;
    let base_entries = image::base_entries(&image::parse_spec(image::DEFAULT_SPEC)?, &opts.agent)?;
    let mut results = new_results(plan, &lane, &kernels, &workloads, started_at);
    if let Some(earlier) = earlier {
        resume(&mut results, earlier, &results_path, &mut stages)?;
    }
    let boots = Boots {
        plan,
        lane: &lane,
        variants: &kernels.variants,
        kernels: &kernels.kernels,
        workloads: &workloads,
        base_entries: &base_entries,
        out_dir: &opts.out_dir,
        results_path: &results_path,
    };
    boots.run_all(&mut results, &mut stages).await?;
    finish(results, results_path, &opts.out_dir)
}

/// The main workload and each control, ready to run.
struct Workloads {
    main: Prepared,
    controls: Vec<(Control, Prepared)>,
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

/// Make every workload ready: a kernel build's tree is prepared on the
/// host (see [`crate::kbuild`]), timed as its own stage.
async fn prepare_workloads(
    stages: &mut Stages<'_>,
    plan: &Plan,
    kernels: &Kernels,
    cache_dir: &Path,
) -> anyhow::Result<Workloads> {
    let repo = kernels.tree.open()?;
    let base = kernels.applied.base;
    let sink = stages.sink;
    let all = async {
        let main = ready(&plan.workload, &repo, base, cache_dir, sink).await?;
        let mut controls = Vec::new();
        for control in &plan.controls {
            let prepared = ready(&control.workload, &repo, base, cache_dir, sink).await?;
            controls.push((control.clone(), prepared));
        }
        Ok(Workloads { main, controls })
    };
    if plan.workload.needs_host_root() {
        stages
            .time("kernel-build tree", "the workload's own tree", all)
            .await
    } else {
        all.await
    }
}

/// One workload, ready to run.
async fn ready(
    planned: &Planned,
    repo: &git2::Repository,
    base: git2::Oid,
    cache_dir: &Path,
    sink: &dyn Sink,
) -> anyhow::Result<Prepared> {
    Ok(match planned {
        Planned::Ready(prepared) => prepared.clone(),
        Planned::KernelBuild(plan) => {
            let tree = crate::kbuild::prepare(plan, repo, base, cache_dir, sink).await?;
            plan.prepared(&tree.src, &tree.build)
        }
    })
}

/// The results document before the first boot: everything but samples.
fn new_results(
    plan: &Plan,
    lane: &Lane,
    kernels: &Kernels,
    workloads: &Workloads,
    started_at: jiff::Timestamp,
) -> Results {
    let applied = &kernels.applied;
    let record = |w: &Prepared| WorkloadRecord {
        kind: w.kind().to_string(),
        params: w.params(),
    };
    Results {
        schema_version: results::SCHEMA_VERSION,
        patchbench_version: env!("CARGO_PKG_VERSION").into(),
        campaign: plan.name.clone(),
        campaign_file: plan.source.clone(),
        started_at,
        host: Host {
            cpu_model: results::cpu_model(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            accel: lane.decision.accel.into(),
            accel_reason: lane.decision.reason.clone(),
            icount: lane.icount,
            tcg_threads: (lane.decision.accel == accel::Accel::Tcg && !lane.icount)
                .then_some(plan.vm.tcg_threads),
            cost_model: lane.cost.as_ref().map(|c| c.model.to_string()),
            noise: None,
        },
        tree: TreeInfo {
            origin: kernels.tree.origin.clone(),
            base_commit: applied.base.to_string(),
            base_choice: applied.base_choice.clone(),
        },
        series: SeriesInfo {
            source: applied.series.source.to_string(),
            sha256: applied.series.sha256.clone(),
            patches: applied
                .series
                .patches
                .iter()
                .zip(&applied.patches)
                .map(|(p, how)| PatchInfo {
                    subject: p.mail.subject.clone(),
                    author: format!("{} <{}>", p.mail.author_name, p.mail.author_email),
                    origin: p.origin.clone(),
                    message_id: p.mail.message_id.clone(),
                    commit: how.commit.to_string(),
                    applied: how.describe(),
                    fuzz: how.has_fuzz(),
                })
                .collect(),
            head_commit: applied.head.to_string(),
        },
        variants: kernels
            .variants
            .iter()
            .zip(&kernels.kernels)
            .map(|(v, kernel)| VariantRecord {
                name: v.name.to_string(),
                description: v.description.clone(),
                patches: v.patches,
                fragments: v
                    .fragments
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect(),
                cmdline: v.cmdline.clone(),
                settings: v
                    .settings
                    .iter()
                    .map(|s| (s.path.clone(), s.value.clone()))
                    .collect(),
                kernel: kernel.into(),
            })
            .collect(),
        workload: record(&workloads.main),
        controls: workloads
            .controls
            .iter()
            .map(|(c, w)| ControlRecord {
                name: c.name.clone(),
                set: c.set.clone(),
                workload: record(w),
            })
            .collect(),
        protocol: results::Protocol {
            boots: plan
                .order
                .boots(kernels.variants.len())
                .into_iter()
                .map(|v| kernels.variants[v].name.to_string())
                .collect(),
            order_seed: plan.order.seed(),
            warmups: plan.warmups,
            samples: plan.samples,
        },
        boots: Vec::new(),
        timings: Vec::new(),
        comparisons: Vec::new(),
    }
}

/// Keep the complete boots of an interrupted run in the same directory,
/// if it was this campaign on these kernels; refuse to mix experiments.
fn resume(
    results: &mut Results,
    earlier: Results,
    path: &Path,
    stages: &mut Stages<'_>,
) -> anyhow::Result<()> {
    if !results.can_resume_from(&earlier) {
        return Err(ResumeError {
            path: path.to_owned(),
        }
        .into());
    }
    results.boots = Results::completed_prefix(&earlier);
    results.started_at = earlier.started_at;
    results.host.noise = earlier.host.noise;
    // This run's import and build times, then the kept boots' times.
    let kept: Vec<String> = results
        .boots
        .iter()
        .map(|b| format!("boot {}", b.label))
        .collect();
    stages.timings.extend(
        earlier
            .timings
            .into_iter()
            .filter(|t| kept.contains(&t.stage)),
    );
    if !results.boots.is_empty() {
        stages.sink.emit(Event::Note(format!(
            "resuming {}: boot(s) {} already complete, not measured again",
            path.display(),
            results
                .boots
                .iter()
                .map(|b| b.label.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(())
}

/// Everything the boot loop reads.
struct Boots<'a> {
    plan: &'a Plan,
    lane: &'a Lane,
    /// Every variant, the baseline first.
    variants: &'a [Variant],
    /// Each variant's kernel, by variant index.
    kernels: &'a [KernelArtifact],
    workloads: &'a Workloads,
    base_entries: &'a image::Entries,
    out_dir: &'a Path,
    results_path: &'a Path,
}

impl Boots<'_> {
    /// Every boot of the protocol not already complete, in order; the
    /// document is saved after each sample and each boot.
    async fn run_all(&self, results: &mut Results, stages: &mut Stages<'_>) -> anyhow::Result<()> {
        let order = self.plan.order.boots(self.variants.len());
        let names: Vec<&str> = order
            .iter()
            .map(|&v| self.variants[v].name.as_str())
            .collect();
        for (index, variant) in order.into_iter().enumerate() {
            if index < results.boots.len() {
                continue;
            }
            if index == 0 {
                host_noise(results).await;
            }
            let label = crate::model::boot_label(&names, index);
            self.one(results, stages, index, variant, &label).await?;
            host_noise(results).await;
        }
        results.timings = stages.timings.clone();
        results.save(self.results_path)?;
        Ok(())
    }

    /// Boot number `index` (variant index `variant`), labelled `label`.
    async fn one(
        &self,
        results: &mut Results,
        stages: &mut Stages<'_>,
        index: usize,
        variant: usize,
        label: &str,
    ) -> anyhow::Result<()> {
        let plan = self.plan;
        let boot_dir = self
            .out_dir
            .join("boots")
            .join(format!("{index}-{}", label.replace('\'', "p")));
        let this = &self.variants[variant];
        // Before the boot is recorded: a kernel without its System.map
        // cannot run in the cost lane.
        let cost_lane = self.lane.cost_lane(&self.kernels[variant].bzimage)?;
        let job = BootJob {
            label,
            kernel: self.kernels[variant].boot_image(),
            dir: &boot_dir,
            accel: self.lane.decision.accel,
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
        };
        let (spec, initramfs_sha256) = prepare_boot(plan, job, self.base_entries)?;
        results.boots.push(Boot {
            index,
            label: label.to_string(),
            variant: this.name.to_string(),
            initramfs_sha256,
            console_log: spec.console_log(),
            facts: None,
            warmups: Vec::new(),
            samples: Vec::new(),
            hello_seconds: None,
            total_seconds: None,
            complete: false,
        });
        results.save(self.results_path)?;
        let stage = format!("boot {label}");
        let total = plan.warmups + plan.samples;
        let conditions = 1 + plan.controls.len() as u32;
        let sink = stages.sink;
        let path = self.results_path;
        let mut windows = self.lane.cost.as_ref().map(|c| CostWindows {
            reader: cost::WindowReader::new(&spec.cost_windows()),
            model: c.model,
        });
        let outcome = stages
            .time(
                &stage,
                &format!("variant {}, {} runs", this.name, total * conditions),
                async {
                    let on_message = |message: &Message| {
                        record(
                            results,
                            path,
                            message,
                            sink,
                            &stage,
                            total,
                            windows.as_mut(),
                        )
                    };
                    Ok(match &cost_lane {
                        Some(lane) => vm::boot_cost(&spec, lane, on_message).await?,
                        None => vm::boot(&spec, on_message).await?,
                    })
                },
            )
            .await?;
        let boot = results.boots.last_mut().expect("boot pushed above");
        boot.hello_seconds = Some(outcome.hello_after.as_secs_f64());
        boot.total_seconds = Some(outcome.total.as_secs_f64());
        boot.complete = true;
        results.timings = stages.timings.clone();
        results.save(self.results_path)?;
        Ok(())
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

/// Judge every metric, record the comparisons, and write report.md.
fn finish(mut results: Results, results_path: PathBuf, out_dir: &Path) -> anyhow::Result<Outcome> {
    let spec = crate::workload::spec_for_kind(&results.workload.kind);
    let rows = crate::report::rows(&results, spec.as_ref());
    let steps = crate::report::steps(&results, spec.as_ref());
    results.comparisons = rows
        .iter()
        .chain(&steps)
        .map(|r| {
            ComparisonRecord::new(
                r.condition.as_deref(),
                &r.metric,
                &r.baseline,
                &r.variant,
                &r.comparison,
            )
        })
        .collect();
    results.save(&results_path)?;
    let markdown = crate::report::markdown_of(&results, spec.as_ref(), &rows);
    let markdown_path = out_dir.join("report.md");
    crate::fsutil::write_atomic(&markdown_path, markdown.as_bytes())
        .with_context(|| format!("cannot write {}", markdown_path.display()))?;
    Ok(Outcome {
        results,
        results_path,
        markdown,
        markdown_path,
        rows,
    })
}

/// `vm.icount` asks for TCG's instruction-count clock; under KVM the guest
/// runs in real time and the setting does not apply (campaign files stay
/// portable between TCG and KVM hosts).
fn uses_icount(plan: &Plan, accel: accel::Accel) -> bool {
    plan.vm.icount && accel == accel::Accel::Tcg
}

/// The output directory holds results of another campaign, or of other
/// kernels: resuming into it would mix two experiments.
#[derive(Debug, thiserror::Error)]
#[error("{} holds results of a different campaign, protocol or kernels; resume only with the same campaign and series, or choose another --out", path.display())]
pub struct ResumeError {
    pub path: PathBuf,
}

/// What one boot runs: which kernel, where its files go, and what the
/// guest is asked to do.
pub struct BootJob<'a> {
    /// `A`, `B`, `A'`...
    pub label: &'a str,
    pub kernel: &'a Path,
    /// Where the job's initramfs, the console log and QEMU's stderr go.
    pub dir: &'a Path,
    pub accel: accel::Accel,
    pub workload: patchbench_agent::Workload,
    pub controls: Vec<patchbench_agent::Control>,
    /// Export the host's `/` even if no workload needs it.
    pub host_root: bool,
    /// The variant's runtime settings, written by the guest.
    pub settings: Vec<patchbench_agent::Setting>,
    /// Words added to the kernel command line.
    pub cmdline: Vec<String>,
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
        samples: plan.samples,
        host_root,
        workload: job.workload,
        controls: job.controls,
        settings: job.settings,
    };
    let initrd = job.dir.join("initramfs.cpio");
    let job_json = serde_json::to_vec(&wire).expect("job serializes");
    let initramfs_sha256 = image::build(base_entries, &job_json, &initrd)?;
    let spec = BootSpec {
        label: job.label.to_string(),
        kernel: job.kernel.to_owned(),
        initrd,
        dir: job.dir.to_owned(),
        accel: job.accel,
        icount: uses_icount(plan, job.accel),
        tcg_threads: plan.vm.tcg_threads,
        memory_mib: plan.vm.memory.as_u64() >> 20,
        cpus: plan.vm.cpus,
        swap_bytes: plan.vm.swap_size.as_u64(),
        boot_timeout: plan.vm.boot_timeout,
        run_timeout: plan.vm.run_timeout,
        host_root,
        extra_cmdline: [plan.cmdline.clone(), job.cmdline].concat(),
    };
    Ok((spec, initramfs_sha256))
}

/// A cost-lane boot's window file, read as it grows, and the model its
/// windows must name.
struct CostWindows {
    reader: cost::WindowReader,
    model: &'static str,
}

impl CostWindows {
    /// The windows that closed since the previous sample, as metrics merged
    /// into `sample`'s, and (for a measured sample) its symbol profile.
    fn add_to(&mut self, sample: &mut SampleRecord, warmup: bool) -> anyhow::Result<()> {
        let path = self.reader.path().to_owned();
        let context = || format!("the cost windows of this sample ({})", path.display());
        let windows = self.reader.read_new().with_context(context)?;
        if let Some(w) = windows.iter().find(|w| w.model != self.model) {
            anyhow::bail!(
                "{}: window {} was modeled on {}, the campaign's model is {}",
                path.display(),
                w.seq,
                w.model,
                self.model
            );
        }
        for (name, value) in cost::sample_metrics(&windows).with_context(context)? {
            if sample.metrics.insert(name.clone(), value).is_some() {
                anyhow::bail!("the agent already reports the metric {name} the cost model makes");
            }
        }
        if !warmup {
            sample.profile = cost::sample_profiles(&windows);
        }
        Ok(())
    }
}

/// Store one agent message in the current boot and persist the document;
/// in the cost lane, with the sample's modeled cost from `windows`.
fn record(
    results: &mut Results,
    path: &Path,
    message: &Message,
    sink: &dyn Sink,
    stage: &str,
    total: u32,
    windows: Option<&mut CostWindows>,
) -> anyhow::Result<()> {
    let boot = results.boots.last_mut().expect("a boot is running");
    match message {
        Message::Facts(facts) => {
            sink.emit(Event::Progress {
                stage: stage.into(),
                detail: format!(
                    "guest {} up: CPUs possible {} online {}, zswap enabled={}",
                    facts.kernel_release,
                    facts.possible_cpus,
                    facts.online_cpus,
                    facts.zswap.get("enabled").map_or("?", String::as_str)
                ),
            });
            boot.facts = Some(facts.into());
        }
        Message::Sample(sample) => {
            sink.emit(Event::Progress {
                stage: stage.into(),
                detail: format!(
                    "{} {}/{}{}",
                    if sample.warmup { "warm-up" } else { "sample" },
                    sample.index + 1,
                    total,
                    sample
                        .condition
                        .as_ref()
                        .map_or(String::new(), |c| format!(" (control {c})"))
                ),
            });
            let mut stored = SampleRecord::from(sample);
            if let Some(windows) = windows {
                windows.add_to(&mut stored, sample.warmup)?;
            }
            if sample.warmup {
                boot.warmups.push(stored);
            } else {
                boot.samples.push(stored);
            }
            // Warm-ups and samples of every condition, for the progress bar.
            let runs = total * (1 + results.controls.len() as u32);
            let boot = results.boots.last().expect("a boot is running");
            sink.emit(Event::Count {
                stage: stage.into(),
                done: (boot.warmups.len() + boot.samples.len()) as u64,
                total: Some(runs.into()),
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
            model: "skylake-client",
        };
        std::fs::write(&path, window(1, "pageout", "skylake-client", 100)).unwrap();
        let mut warm = sample(true);
        windows.add_to(&mut warm, true).unwrap();
        assert_eq!(warm.metrics["pageout_modeled_cycles"], 100);
        assert!(warm.profile.is_empty(), "warm-ups keep no profile");
        // The next sample sees only the windows written since.
        let text = [
            window(1, "pageout", "skylake-client", 100),
            window(2, "pageout", "skylake-client", 300),
        ]
        .concat();
        std::fs::write(&path, &text).unwrap();
        let mut measured = sample(false);
        windows.add_to(&mut measured, false).unwrap();
        assert_eq!(measured.metrics["pageout_modeled_cycles"], 300);
        assert_eq!(measured.metrics["pageout_insns"], 150);
        assert_eq!(measured.metrics["pageout_cpu_ns"], 5);
        assert_eq!(measured.profile["pageout"]["do_flush_stats"], 300);
        // A sample without windows, and a window of another model, fail.
        let err = windows.add_to(&mut sample(false), false).unwrap_err();
        assert!(format!("{err:#}").contains("no cost windows"), "{err:#}");
        std::fs::write(&path, [text, window(3, "verify", "other", 1)].concat()).unwrap();
        let err = windows.add_to(&mut sample(false), false).unwrap_err();
        assert!(err.to_string().contains("modeled on other"), "{err}");
    }
}
