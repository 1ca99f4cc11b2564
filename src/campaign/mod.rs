//! A campaign from start to end: tree → series → builds → boots → results.
//!
//! Orchestration only: each step calls its stage module and reports through
//! the event sink. `results.json` is rewritten atomically after every sample,
//! so whatever was measured survives an interruption.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use patchbench_agent::{Job, Message, PROTOCOL_VERSION, SwapSetup};

use crate::config::{Plan, Variant};
use crate::events::{Event, Sink};
use crate::image;
use crate::results::{
    self, Boot, Host, KernelRecord, PatchInfo, Protocol, Results, SeriesInfo, Timing, TreeInfo,
};
use crate::vm::{self, BootSpec, accel};

mod kernels;
pub use kernels::{
    AppliedSeries, BuildOutcome, MANIFEST, Prebuilt, PrebuiltError, apply_series, build_only,
    describe, export,
};
use kernels::{Prepared, prepare};

/// Where a run reads and writes.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Results, logs and per-boot files.
    pub out_dir: PathBuf,
    /// Imported trees and build directories, shared between runs.
    pub cache_dir: PathBuf,
    /// The guest agent binary.
    pub agent: PathBuf,
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

pub(crate) struct Stages<'a> {
    sink: &'a dyn Sink,
    timings: Vec<Timing>,
}

impl Stages<'_> {
    pub(crate) async fn time<T, F>(&mut self, stage: &str, detail: &str, f: F) -> anyhow::Result<T>
    where
        F: std::future::Future<Output = anyhow::Result<T>>,
    {
        self.sink.emit(Event::Started {
            stage: stage.into(),
            detail: detail.into(),
        });
        let started = Instant::now();
        let value = f.await?;
        let elapsed = started.elapsed();
        self.timings.push(Timing {
            stage: stage.into(),
            seconds: elapsed.as_secs_f64(),
        });
        self.sink.emit(Event::Finished {
            stage: stage.into(),
            elapsed,
            detail: String::new(),
        });
        Ok(value)
    }
}

/// Run a whole campaign.
pub async fn run(plan: &Plan, opts: &RunOptions, sink: &dyn Sink) -> anyhow::Result<Outcome> {
    let decision = accel::decide(plan.vm.accel, &accel::probe())?;
    let icount = uses_icount(plan, decision.accel);
    if plan.vm.icount && !icount {
        sink.emit(Event::Note(
            "vm.icount is a TCG mode; with KVM the guest runs in real time without it".into(),
        ));
    }
    if decision.accel == accel::Accel::Tcg {
        sink.emit(Event::Note(format!(
            "accelerator: TCG — {}",
            decision.reason
        )));
    }
    std::fs::create_dir_all(&opts.out_dir)
        .with_context(|| format!("cannot create output directory {}", opts.out_dir.display()))?;
    let started_at = jiff::Timestamp::now();
    let mut stages = Stages {
        sink,
        timings: Vec::new(),
    };

    let Prepared {
        tree,
        applied,
        a: kernel_a,
        b: kernel_b,
    } = prepare(
        &mut stages,
        plan,
        &opts.cache_dir,
        false,
        opts.kernels.as_deref(),
    )
    .await?;
    let AppliedSeries {
        series,
        base,
        base_choice,
        head,
        patches: how_applied,
    } = applied;

    let (workload, controls) = if plan.workload.needs_host_root() {
        stages
            .time("kernel-build tree", "the workload's own tree", async {
                prepare_workloads(plan, &tree.open()?, base, &opts.cache_dir, sink).await
            })
            .await?
    } else {
        prepare_workloads(plan, &tree.open()?, base, &opts.cache_dir, sink).await?
    };
    let image_spec = image::parse_spec(image::DEFAULT_SPEC)?;
    let base_entries = image::base_entries(&image_spec, &opts.agent)?;

    let mut results = Results {
        schema_version: results::SCHEMA_VERSION,
        patchbench_version: env!("CARGO_PKG_VERSION").into(),
        campaign: plan.name.clone(),
        campaign_file: plan.source.clone(),
        started_at,
        host: Host {
            cpu_model: results::cpu_model(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            accel: decision.accel,
            accel_reason: decision.reason.clone(),
            icount,
        },
        tree: TreeInfo {
            origin: tree.origin.clone(),
            base_commit: base.to_string(),
            base_choice,
        },
        series: SeriesInfo {
            source: series.source.to_string(),
            sha256: series.sha256.clone(),
            patches: series
                .patches
                .iter()
                .zip(&how_applied)
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
            head_commit: head.to_string(),
        },
        kernels: vec![
            KernelRecord {
                variant: Variant::A,
                artifact: kernel_a,
            },
            KernelRecord {
                variant: Variant::B,
                artifact: kernel_b,
            },
        ],
        workload: workload.clone(),
        // As the guest ran them (a kernel-build's prepared tree filled in).
        controls: plan
            .controls
            .iter()
            .zip(&controls)
            .map(|(control, job)| crate::controls::Control {
                workload: job.workload.clone(),
                ..control.clone()
            })
            .collect(),
        protocol: Protocol {
            boots: plan.boots.clone(),
            order_seed: plan.order_seed,
            warmups: plan.warmups,
            samples: plan.samples,
        },
        boots: Vec::new(),
        timings: Vec::new(),
        comparisons: Vec::new(),
    };
    let results_path = opts.out_dir.join("results.json");
    if results_path.exists() {
        let earlier = Results::load(&results_path)?;
        if !results.can_resume_from(&earlier) {
            return Err(ResumeError {
                path: results_path.clone(),
            }
            .into());
        }
        results.boots = Results::completed_prefix(&earlier);
        results.started_at = earlier.started_at;
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
            sink.emit(Event::Note(format!(
                "resuming {}: boot(s) {} already complete, not measured again",
                results_path.display(),
                results
                    .boots
                    .iter()
                    .map(|b| b.label.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }

    for (index, variant) in plan.boots.iter().copied().enumerate() {
        if index < results.boots.len() {
            continue;
        }
        let label = results::boot_label(&plan.boots, index);
        let boot_dir = opts
            .out_dir
            .join("boots")
            .join(format!("{index}-{}", label.replace('\'', "p")));
        let kernel = &results
            .kernels
            .iter()
            .find(|k| k.variant == variant)
            .expect("both variants are built")
            .artifact;
        let (spec, initramfs_sha256) = prepare_boot(
            plan,
            &label,
            kernel.boot_image(),
            &boot_dir,
            decision.accel,
            &base_entries,
            workload.clone(),
            controls.clone(),
            false,
        )?;
        results.boots.push(Boot {
            index,
            label: label.clone(),
            variant,
            initramfs_sha256,
            console_log: spec.console_log(),
            facts: None,
            warmups: Vec::new(),
            samples: Vec::new(),
            hello_seconds: None,
            total_seconds: None,
            complete: false,
        });
        results.save(&results_path)?;
        let stage = format!("boot {label}");
        let total = plan.warmups + plan.samples;
        let conditions = 1 + plan.controls.len() as u32;
        let outcome = stages
            .time(
                &stage,
                &format!("kernel {variant:?}, {} runs", total * conditions),
                async {
                    vm::boot(&spec, |message| {
                        record(&mut results, &results_path, message, sink, &stage, total)
                    })
                    .await
                },
            )
            .await?;
        let boot = results.boots.last_mut().expect("boot pushed above");
        boot.hello_seconds = Some(outcome.hello_after.as_secs_f64());
        boot.total_seconds = Some(outcome.total.as_secs_f64());
        boot.complete = true;
        results.timings = stages.timings.clone();
        results.save(&results_path)?;
    }
    results.timings = stages.timings.clone();
    results.save(&results_path)?;

    let spec = crate::workload::spec_for(&results.workload);
    let rows = crate::report::rows(&results, spec.as_ref());
    results.comparisons = rows
        .iter()
        .map(|r| results::MetricComparison {
            condition: r.condition.clone(),
            metric: r.metric.clone(),
            comparison: r.comparison.clone(),
        })
        .collect();
    results.save(&results_path)?;
    let markdown = crate::report::markdown_of(&results, spec.as_ref(), &rows);
    let markdown_path = opts.out_dir.join("report.md");
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

/// The main workload and the controls as the guest gets them: a
/// kernel-build's tree prepared on the host (see [`crate::kbuild`]).
async fn prepare_workloads(
    plan: &Plan,
    repo: &git2::Repository,
    base: git2::Oid,
    cache_dir: &Path,
    sink: &dyn Sink,
) -> anyhow::Result<(patchbench_agent::Workload, Vec<patchbench_agent::Control>)> {
    let workload = crate::kbuild::prepare(&plan.workload, repo, base, cache_dir, sink).await?;
    let mut controls = Vec::new();
    for control in &plan.controls {
        let mut job = control.to_job();
        job.workload = crate::kbuild::prepare(&job.workload, repo, base, cache_dir, sink).await?;
        controls.push(job);
    }
    Ok((workload, controls))
}

/// The output directory holds results of another campaign, or of other
/// kernels: resuming into it would mix two experiments.
#[derive(Debug, thiserror::Error)]
#[error("{} holds results of a different campaign, protocol or kernels; resume only with the same campaign and series, or choose another --out", path.display())]
pub struct ResumeError {
    pub path: PathBuf,
}

/// Write a boot's job into its initramfs and describe the boot: the
/// campaign's guest (memory, CPUs, swap, zswap, THP) running `workload`,
/// then `controls`, in host-root mode if `host_root` or a workload needs it.
#[allow(clippy::too_many_arguments)]
pub fn prepare_boot(
    plan: &Plan,
    label: &str,
    kernel: &Path,
    boot_dir: &Path,
    accel: accel::Accel,
    base_entries: &image::Entries,
    workload: patchbench_agent::Workload,
    controls: Vec<patchbench_agent::Control>,
    host_root: bool,
) -> anyhow::Result<(BootSpec, String)> {
    let host_root = host_root
        || workload.needs_host_root()
        || controls.iter().any(|c| c.workload.needs_host_root());
    std::fs::create_dir_all(boot_dir)
        .with_context(|| format!("cannot create {}", boot_dir.display()))?;
    let job = Job {
        protocol: PROTOCOL_VERSION,
        boot_label: label.to_string(),
        swap: SwapSetup {
            device: "/dev/vda".into(),
        },
        zswap: plan.zswap.clone(),
        thp: plan.thp,
        warmups: plan.warmups,
        samples: plan.samples,
        host_root,
        workload,
        controls,
    };
    let initrd = boot_dir.join("initramfs.cpio");
    let job_json = serde_json::to_vec(&job).expect("job serializes");
    let initramfs_sha256 = image::build(base_entries, &job_json, &initrd)?;
    let spec = BootSpec {
        label: label.to_string(),
        kernel: kernel.to_owned(),
        initrd,
        dir: boot_dir.to_owned(),
        accel,
        icount: uses_icount(plan, accel),
        memory_mib: plan.vm.memory.as_u64() >> 20,
        cpus: plan.vm.cpus,
        swap_bytes: plan.vm.swap_size.as_u64(),
        boot_timeout: plan.vm.boot_timeout,
        run_timeout: plan.vm.run_timeout,
        host_root,
    };
    Ok((spec, initramfs_sha256))
}

/// Store one agent message in the current boot and persist the document.
fn record(
    results: &mut Results,
    path: &Path,
    message: &Message,
    sink: &dyn Sink,
    stage: &str,
    total: u32,
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
            boot.facts = Some(facts.clone());
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
            if sample.warmup {
                boot.warmups.push(sample.clone());
            } else {
                boot.samples.push(sample.clone());
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
