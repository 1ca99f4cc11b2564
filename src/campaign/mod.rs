//! A campaign from start to end: tree → series → builds → boots → results.
//!
//! Orchestration only: each step calls its stage module and reports through
//! the event sink. `results.json` is rewritten atomically after every sample,
//! so whatever was measured survives an interruption.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::config::Plan;
use crate::events::{Event, Sink};
use crate::image;
use crate::results::{
    self, ControlRecord, Host, PatchInfo, Results, SeriesInfo, TreeInfo, VariantRecord,
    WorkloadRecord,
};

use crate::workload::{Planned, Prepared};

mod boots;
mod cputime;
mod hostfacts;
mod kernels;
mod lane;
mod record;
mod replay;
mod stages;
pub use boots::{BootJob, prepare_boot};
use boots::{Boots, Workloads};
pub use cputime::CputimeRefused;
pub use kernels::{
    AppliedSeries, BuildOutcome, KernelManifest, MANIFEST, Prebuilt, PrebuiltError,
    apply_plan_series, apply_series, build_only, describe, export,
};
use kernels::{Kernels, Sources};
use lane::LaneSetup;
pub use lane::{clock as lane_clock, decide as decide_lane, plugin_model, probe as probe_kvm};
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
    /// Run only this shard's boots (`run --shard`), for `patchbench merge`.
    pub shard: Option<crate::model::Shard>,
    /// Why `run --series` chose this campaign for the series (recorded in
    /// the results, shown by the report); `None` when a file was given.
    pub reach: Option<crate::results::ReachRecord>,
    /// In a deterministic lane, replay a boot whose exact inputs ran before
    /// from the cache instead of booting it (`replay`); `run
    /// --fresh-boots` sets it false.
    pub replay: bool,
}

/// What a finished campaign produced.
#[derive(Debug)]
pub struct Outcome {
    pub results: Results,
    pub results_path: PathBuf,
    pub markdown: String,
    pub markdown_path: PathBuf,
}

impl Outcome {
    /// The stored judgement (a shard has none).
    pub fn judgement(&self) -> Option<&crate::results::JudgementRecord> {
        self.results.judgement.as_ref()
    }

    /// The metrics that regressed, by label: the exit code's.
    pub fn regressed(&self) -> Vec<String> {
        self.judgement()
            .map(|j| j.regressed.clone())
            .unwrap_or_default()
    }
}

/// Run a whole campaign: choose the accelerator, import the tree and
/// apply the series, prepare the workloads, build the kernels, start (or
/// resume) the results, boot every variant in the protocol's order, and
/// judge.
pub async fn run(plan: &Plan, opts: &RunOptions, sink: &dyn Sink) -> anyhow::Result<Outcome> {
    // A lane the campaign cannot have is refused before the KVM trial.
    plan.vm.lane_request().lane_where_kvm_runs()?;
    let probe = lane::probe(plan.vm.lane_request()).await;
    let mut lane = lane::choose(plan, &probe, sink)?;
    if let Some(shard) = opts.shard {
        check_shard(&lane, shard)?;
    }
    std::fs::create_dir_all(&opts.out_dir)
        .with_context(|| format!("cannot create output directory {}", opts.out_dir.display()))?;
    let started_at = jiff::Timestamp::now();
    // An earlier results.json is read before anything is built or booted:
    // a truncated or hand-edited one stops the run here, naming the file
    // and the byte, and is never overwritten.
    let results_path = opts.out_dir.join("results.json");
    let earlier = if results_path.exists() {
        let earlier = Results::load(&results_path)?;
        same_cpus_online(plan, &earlier, &results_path)?;
        Some(earlier)
    } else {
        None
    };
    let mut stages = Stages {
        sink,
        timings: Vec::new(),
    };
    let sources =
        kernels::obtain(&mut stages, plan, &opts.cache_dir, opts.kernels.as_deref()).await?;
    let host_facts = hostfacts::gather().await;
    check_smp_bringup(
        plan,
        lane.lane,
        host_facts.qemu_version.as_deref(),
        &sources,
    )?;
    // The workloads are made ready before any kernel is built: what a
    // kind prepares from the tree (a selftest that does not build there)
    // fails at once, not after the builds.
    let workloads = prepare_workloads(&mut stages, plan, &sources, &opts.cache_dir).await?;
    let kernels = kernels::build(
        &mut stages,
        plan,
        &opts.cache_dir,
        false,
        opts.cache_max,
        sources,
    )
    .await?;
    let round = plan.order.boots(kernels.variants.len());
    let parallel = lane.parallel;
    lane.widen_for_rounds(plan, round.len());
    if lane.parallel > parallel {
        sink.emit(Event::Note(format!(
            "boots: a round's {} boots at once (sequential under icount)",
            lane.parallel
        )));
    }
    let base_entries = image::base_entries(&image::parse_spec(image::DEFAULT_SPEC)?, &opts.agent)?;
    let mut results = new_results(plan, &lane, &kernels, &workloads, started_at, host_facts);
    results.portable_paths(Some(&opts.cache_dir), Some(&opts.out_dir));
    results.reach = opts.reach.clone();
    if let Some(earlier) = earlier {
        resume(&mut results, earlier, &results_path, &mut stages)?;
    }
    // Under icount a boot repeats exactly: one whose inputs ran before is
    // replayed from the cache (`replay`). Not for a boot of the host's
    // files over 9p, which a campaign never makes.
    let replays = if opts.replay && lane.lane.deterministic() {
        Some(replay::Replays::open(&opts.cache_dir)?)
    } else {
        None
    };
    let mut boots = Boots {
        plan,
        replays: replays.as_ref(),
        lane: &lane,
        variants: &kernels.variants,
        kernels: &kernels.kernels,
        workloads: &workloads,
        base_entries: &base_entries,
        out_dir: &opts.out_dir,
        results_path: &results_path,
        order: round.clone(),
        only: None,
    };
    let outcome = match (opts.shard, lane.sequential) {
        (Some(shard), _) => {
            let only = shard.boots(round.len());
            if only.is_empty() {
                return Err(crate::model::shard::ShardError::Empty {
                    shard: shard.to_string(),
                    boots: round.len(),
                }
                .into());
            }
            boots.order = round.repeat(shard.round as usize);
            boots.only = Some(only);
            results.shard = Some(shard);
            results.protocol.boots = boots
                .order
                .iter()
                .map(|&v| boots.variants[v].name.to_string())
                .collect();
            boots.run_all(&mut results, &mut stages).await
        }
        (None, None) => boots.run_all(&mut results, &mut stages).await,
        (None, Some(s)) => sequential(&mut boots, &round, s, &mut results, &mut stages).await,
    };
    if let Err(e) = outcome {
        report_stopped(&results, &e, &opts.out_dir, sink);
        return Err(e);
    }
    finish(results, results_path, &opts.out_dir)
}

/// Whether `shard` can run in `lane`: only where the figures do not depend
/// on the host, and only in a round the protocol has.
fn check_shard(lane: &LaneSetup, shard: crate::model::Shard) -> anyhow::Result<()> {
    use crate::model::shard::ShardError;
    if !lane.lane.deterministic() {
        return Err(ShardError::TimingLane {
            lane: lane.lane.clock().to_string(),
        }
        .into());
    }
    let rounds = lane.sequential.map_or(1, |s| s.rounds);
    if shard.round > rounds {
        return Err(ShardError::NoSuchRound {
            round: shard.round,
            rounds,
        }
        .into());
    }
    Ok(())
}

/// A sequential campaign's rounds: the protocol's boot order again each
/// round, then a look at every primary metric of every condition; it stops
/// when the look decides them all, or when the rounds or the time of the
/// budget are spent. A resumed run continues the round it was in, and
/// keeps the looks of the rounds before.
async fn sequential(
    boots: &mut Boots<'_>,
    round: &[usize],
    budget: crate::model::Sequential,
    results: &mut Results,
    stages: &mut Stages<'_>,
) -> anyhow::Result<()> {
    let per_round = round.len();
    let mut k = results.boots.len().div_ceil(per_round).max(1) as u32;
    loop {
        boots.order = round.repeat(k as usize);
        results.protocol.boots = boots
            .order
            .iter()
            .map(|&v| boots.variants[v].name.to_string())
            .collect();
        boots.run_all(results, stages).await?;
        crate::judge::judge_into(results);
        let undecided = results
            .judgement
            .as_ref()
            .map(|j| j.undecided.clone())
            .unwrap_or_default();
        let boot_seconds = results.boots_wall_seconds.unwrap_or_default();
        let record = results
            .protocol
            .sequential
            .as_mut()
            .expect("a sequential lane records its budget");
        record.looks.retain(|l| l.round < k);
        record.looks.push(results::LookRecord {
            round: k,
            boot_seconds,
            undecided: undecided.clone(),
        });
        let stop = record.stop();
        // Judged by boot: what the budget can detect, stated once, at the
        // first round's noise, before the rounds that follow.
        let state = record.detectable.is_empty()
            && stop == results::SequentialStop::Running
            && results.host.lane.judged_by_boot();
        if state {
            let detectable = crate::judge::detectable(results);
            for d in &detectable {
                stages.sink.emit(Event::Note(format!(
                    "detectable: {}",
                    d.line(budget.rounds)
                )));
            }
            if let Some(record) = results.protocol.sequential.as_mut() {
                record.detectable = detectable;
            }
        }
        results.save(boots.results_path)?;
        let said = match stop {
            results::SequentialStop::Decided => "every primary metric decided".to_string(),
            results::SequentialStop::Rounds => format!(
                "the budget's {} round(s) spent; undecided: {}",
                budget.rounds,
                undecided.join(", ")
            ),
            results::SequentialStop::Time => format!(
                "the time budget spent ({:.0} s of boots); undecided: {}",
                boot_seconds,
                undecided.join(", ")
            ),
            results::SequentialStop::Running => {
                format!("undecided: {}; another round", undecided.join(", "))
            }
        };
        stages.sink.emit(Event::Note(format!(
            "look {k} of {}: {said}",
            budget.rounds
        )));
        if stop != results::SequentialStop::Running {
            return Ok(());
        }
        k += 1;
    }
}

/// A guest failure stopped the run: report.md still shows what was
/// measured, and names the boot that stopped and why, as `patchbench
/// compare` would. Any other failure is the host's, and says nothing of
/// the kernels. A report that cannot be written is a warning: the error
/// the user sees is the guest's.
fn report_stopped(results: &Results, error: &anyhow::Error, out_dir: &Path, sink: &dyn Sink) {
    if crate::exit::code_for(error) != crate::exit::GUEST {
        return;
    }
    let mut judged = results.clone();
    crate::judge::judge_into(&mut judged);
    match write_markdown(&judged, out_dir) {
        Ok((_, path)) => sink.emit(Event::Note(format!(
            "what was measured before the failure: {}",
            path.display()
        ))),
        Err(e) => sink.emit(Event::Note(format!("warning: {e:#}"))),
    }
}

/// Write report.md into `out_dir`: the Markdown and where it went.
fn write_markdown(results: &Results, out_dir: &Path) -> anyhow::Result<(String, PathBuf)> {
    let markdown = crate::report::markdown(results);
    let path = out_dir.join("report.md");
    crate::fsutil::write_atomic(&path, markdown.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok((markdown, path))
}

/// Make every workload ready: a kernel build's tree is prepared on the
/// host (see [`crate::kbuild`]), timed as its own stage.
async fn prepare_workloads(
    stages: &mut Stages<'_>,
    plan: &Plan,
    sources: &Sources,
    cache_dir: &Path,
) -> anyhow::Result<Workloads> {
    let repo = sources.tree.open()?;
    let base = sources.applied.base;
    let sink = stages.sink;
    for planned in std::iter::once(&plan.workload).chain(plan.controls.iter().map(|c| &c.workload))
    {
        check_source_needs(planned, &repo, base)?;
    }
    let all = async {
        let main = ready(&plan.workload, &repo, base, cache_dir, sink).await?;
        let mut controls = Vec::new();
        for control in &plan.controls {
            let prepared = ready(&control.workload, &repo, base, cache_dir, sink).await?;
            controls.push((control.clone(), prepared));
        }
        Ok(Workloads { main, controls })
    };
    match &plan.workload {
        Planned::KernelBuild(_) => {
            stages
                .time("kernel-build tree", "the workload's own tree", all)
                .await
        }
        Planned::Staged(staged) => stages.time("staged program", staged.kind(), all).await,
        Planned::Ready(_) => all.await,
    }
}

/// A file of `tree` as text, or `None` when the tree has no such file.
fn tree_text(repo: &git2::Repository, tree: &git2::Tree, file: &str) -> Option<String> {
    let object = tree.get_path(Path::new(file)).ok()?.to_object(repo).ok()?;
    let blob = object.peel_to_blob().ok()?;
    Some(String::from_utf8_lossy(blob.content()).into_owned())
}

/// Refuse, before any build, a campaign whose second CPU would never come
/// up in this lane on this QEMU (`vm::smp_icount`), by the base tree's
/// source.
fn check_smp_bringup(
    plan: &Plan,
    lane: crate::model::Lane,
    qemu_version: Option<&str>,
    sources: &Sources,
) -> anyhow::Result<()> {
    let repo = sources.tree.open()?;
    let tree = repo.find_commit(sources.applied.base)?.tree()?;
    let smpboot = tree_text(&repo, &tree, crate::vm::smp_icount::SMPBOOT);
    crate::vm::smp_icount::check(
        lane.icount(),
        plan.vm.cpus.online(),
        qemu_version,
        smpboot.as_deref(),
    )?;
    Ok(())
}

/// Refuse a workload whose spec `requires:` an interface the base tree's
/// source does not have (`workload::needs::unmet_in_tree`).
fn check_source_needs(
    planned: &Planned,
    repo: &git2::Repository,
    base: git2::Oid,
) -> anyhow::Result<()> {
    let Some(spec) = crate::workload::spec_for_kind(planned.kind()) else {
        return Ok(());
    };
    if spec.requires.is_empty() {
        return Ok(());
    }
    // Only a kind ready as planned has its parameters yet; the others'
    // needs apply whatever their parameters.
    let mut params = match planned {
        Planned::Ready(p) => p.params(),
        Planned::KernelBuild(_) | Planned::Staged(_) => Default::default(),
    };
    // A parameter at its default may be left out of the record.
    for p in &spec.params {
        params
            .entry(p.name.clone())
            .or_insert_with(|| crate::controls::scalar_text(&p.default));
    }
    let tree = repo.find_commit(base)?.tree()?;
    let read = |file: &str| tree_text(repo, &tree, file);
    let unmet = crate::workload::needs::unmet_in_tree(&spec.requires, &params, read);
    if unmet.is_empty() {
        return Ok(());
    }
    let set: std::collections::BTreeSet<String> = spec
        .requires
        .iter()
        .filter(|n| n.applies(&params))
        .flat_map(|n| n.when.iter().map(|(k, v)| format!("{k}: {v}")))
        .collect();
    Err(crate::workload::needs::Unsupported {
        kind: planned.kind().to_string(),
        set: set.into_iter().collect::<Vec<_>>().join(", "),
        unmet,
    }
    .into())
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
        Planned::Staged(plan) => {
            let staged = crate::staged::prepare(plan, repo, base, cache_dir, sink).await?;
            plan.prepared(&staged)
        }
    })
}

/// The results document before the first boot: everything but samples.
fn new_results(
    plan: &Plan,
    lane: &LaneSetup,
    kernels: &Kernels,
    workloads: &Workloads,
    started_at: jiff::Timestamp,
    host_facts: results::HostFactsRecord,
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
            lane: lane.lane,
            accel_reason: lane.reason.clone(),
            tcg_threads: (lane.lane == crate::model::Lane::Tcg).then_some(plan.vm.tcg_threads),
            cost_model: (lane.lane == crate::model::Lane::Cost).then(|| {
                patchbench_costmodel::machine::SKYLAKE_CLIENT
                    .name
                    .to_string()
            }),
            parallel_boots: (lane.parallel > 1).then_some(lane.parallel as u32),
            noise: None,
            host_facts: Some(host_facts),
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
            samples: lane.samples_per_boot(plan),
            layouts: plan.layouts,
            sequential: lane.sequential.map(|s| results::SequentialRecord {
                rounds: s.rounds,
                round_boots: plan.order.boots(kernels.variants.len()).len(),
                time_seconds: s.time.map(|t| t.as_secs_f64()),
                spending: s.spending,
                looks: Vec::new(),
                detectable: Vec::new(),
            }),
        },
        boots: Vec::new(),
        timings: Vec::new(),
        judgement: None,
        reach: None,
        boots_wall_seconds: None,
        shard: None,
    }
}

/// Refuse to resume into results whose complete boots brought up another
/// set of CPUs than this run's guest will.
fn same_cpus_online(
    plan: &Plan,
    earlier: &Results,
    path: &Path,
) -> Result<(), crate::results::ResultsError> {
    let now = plan.vm.cpus.online_list();
    let other = earlier
        .boots
        .iter()
        .filter(|b| b.complete)
        .filter_map(|b| b.facts.as_ref())
        .find(|f| f.online_cpus != now);
    match other {
        Some(facts) => Err(crate::results::ResultsError::OtherCpus {
            path: path.to_owned(),
            earlier: facts.online_cpus.clone(),
            now,
        }),
        None => Ok(()),
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
        return Err(crate::results::ResultsError::Foreign {
            path: path.to_owned(),
        }
        .into());
    }
    results.boots = Results::completed_prefix(&earlier);
    results.started_at = earlier.started_at;
    // A sequential run's looks of the rounds it finished.
    if let (Some(now), Some(then)) = (
        results.protocol.sequential.as_mut(),
        earlier.protocol.sequential,
    ) {
        now.looks = then.looks;
    }
    results.host.noise = earlier.host.noise;
    results.boots_wall_seconds = earlier.boots_wall_seconds;
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

/// Judge the merged results of a campaign's shards (`patchbench merge`):
/// a sequential campaign's looks are taken again, one per round the
/// shards ran (`round_walls`: each round's wall time), then every metric
/// is compared and results.json and report.md are written into `out_dir`.
pub fn judge_merged(
    mut results: Results,
    round_walls: &[f64],
    out_dir: &Path,
) -> anyhow::Result<Outcome> {
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("cannot create output directory {}", out_dir.display()))?;
    if let Some(s) = results.protocol.sequential.clone() {
        let mut looks = Vec::new();
        let mut wall = 0.0;
        for (k, round_wall) in round_walls.iter().enumerate() {
            wall += round_wall;
            let round = k as u32 + 1;
            let mut upto = results.clone();
            upto.boots
                .retain(|b| b.index < s.round_boots * round as usize);
            looks.push(results::LookRecord {
                round,
                boot_seconds: wall,
                undecided: crate::judge::judge(&upto).undecided,
            });
        }
        results
            .protocol
            .sequential
            .as_mut()
            .expect("cloned above")
            .looks = looks;
    }
    let path = out_dir.join("results.json");
    finish(results, path, out_dir)
}

/// Judge every metric, store the judgement, and write report.md. A
/// shard judges nothing: its boots are a part of the campaign, which
/// `patchbench merge` judges whole.
fn finish(mut results: Results, results_path: PathBuf, out_dir: &Path) -> anyhow::Result<Outcome> {
    if results.shard.is_some() {
        results.judgement = None;
        results.save(&results_path)?;
        return Ok(Outcome {
            results,
            markdown_path: out_dir.join("report.md"),
            results_path,
            markdown: String::new(),
        });
    }
    crate::judge::judge_into(&mut results);
    results.save(&results_path)?;
    let (markdown, markdown_path) = write_markdown(&results, out_dir)?;
    Ok(Outcome {
        results,
        results_path,
        markdown,
        markdown_path,
    })
}
