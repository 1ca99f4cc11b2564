//! A regression hunt for a series (`per_patch: bisect`, `patchbench run
//! --bisect`): about log2(n) kernel pairs instead of the waterfall's n + 1
//! kernels, to name the first patch that makes the change the whole series
//! shows, with its own interval.
//!
//! Every step is an ordinary two-variant campaign run by
//! [`crate::campaign::run`] in `OUT/bisect/<step>/`, with the campaign's
//! protocol, so an interrupted step resumes as any run does and every step
//! is inspectable. The first step measures the base against the whole
//! series: the primary metrics it calls a regression (else an improvement,
//! else changed) are what the hunt looks for ([`judge::hunted`]). Each next
//! step measures the base against the prefix halfway between the last
//! prefix known without the change and the first known with it
//! ([`judge::Bisection`]); a step with the change moves the upper end, one
//! with no clear difference in every hunted metric the lower end, and any
//! other verdict stops the hunt, naming it, rather than guess
//! ([`judge::classify`]).
//!
//! The patch found, k, then gets its own interval, prefix k against prefix
//! k − 1, both measured during the hunt: for k = 1 in its step's boots;
//! in a deterministic lane (icount) across the two steps, once the base,
//! booted in both, agrees with itself between them; elsewhere (plain TCG,
//! KVM: the host's clock drifts between boots) in a step of its own, the
//! two prefixes in the same boots, whose kernels are built already.
//!
//! `OUT/bisect.json` ([`crate::results::hunt`]) records the steps, their
//! kernels and verdicts, and the conclusion, rewritten atomically after
//! every step with `OUT/report.md` beside it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::campaign::{self, RunOptions};
use crate::config::{ConfigError, Plan};
use crate::events::{Event, Sink};
use crate::results::hunt::{
    HUNT_FILE, HUNT_SCHEMA_VERSION, Hunt, HuntPatch, HuntSeries, HuntState, HuntStep, Hunted,
    OwnInterval, OwnMethod, StepKernel, StepOutcome, StepRole,
};
use crate::results::{ComparisonRecord, Results, VerdictRecord};
use crate::variants::{VariantSet, prefix_name};
use crate::workload::WorkloadSpec;

pub mod judge;

use judge::Bisection;

/// What a finished hunt produced.
#[derive(Debug)]
pub struct HuntOutcome {
    pub hunt: Hunt,
    pub hunt_path: PathBuf,
    pub markdown_path: PathBuf,
    /// The metrics the whole series regressed, in any condition, labelled
    /// as a run's are: the hunt's exit code is that run's.
    pub regressed: Vec<String>,
}

/// Run a hunt: the whole series' step, then bisection steps until one
/// patch is left or a step is undecided, then the patch's own interval.
/// Refuses prebuilt kernels and shards (the prefixes are chosen as the
/// hunt goes) and an empty series.
pub async fn run(plan: &Plan, opts: &RunOptions, sink: &dyn Sink) -> anyhow::Result<HuntOutcome> {
    let origin = plan
        .source
        .clone()
        .unwrap_or_else(|| PathBuf::from("(built-in smoke campaign)"));
    let invalid = |message: String| ConfigError::Invalid {
        path: origin.clone(),
        message,
    };
    if opts.kernels.is_some() {
        return Err(invalid("per_patch: bisect (or --bisect) builds the prefixes the hunt chooses as it goes; it cannot boot prebuilt kernels (--kernels)".into()).into());
    }
    if opts.shard.is_some() {
        return Err(invalid("per_patch: bisect (or --bisect) decides each step from the one before; its boots cannot be sharded (--shard)".into()).into());
    }
    std::fs::create_dir_all(&opts.out_dir)
        .with_context(|| format!("cannot create output directory {}", opts.out_dir.display()))?;
    let hunt_path = opts.out_dir.join(HUNT_FILE);
    let earlier = if hunt_path.exists() {
        Some(Hunt::load(&hunt_path)?)
    } else {
        None
    };
    let mut hunt = start(plan, opts, sink).await?;
    let n = hunt.series.patches.len();
    if n == 0 {
        return Err(invalid(format!(
            "per_patch: bisect needs a series of at least one patch; {} has none",
            plan.series
        ))
        .into());
    }
    if let Some(earlier) = earlier {
        hunt.check_resumable(&earlier, &hunt_path)?;
        hunt.started_at = earlier.started_at;
        if !earlier.steps.is_empty() {
            sink.emit(Event::Note(format!(
                "resuming the hunt in {}: its {} step(s) so far are read back, not measured again",
                hunt_path.display(),
                earlier.steps.len()
            )));
        }
    }
    let spec = crate::workload::spec_for_kind(&hunt.workload);
    let mut hunter = Hunter {
        plan,
        opts,
        sink,
        spec: spec.as_ref(),
        hunt,
        hunt_path,
        measured: BTreeMap::new(),
    };
    hunter.save()?;
    let regressed = hunter.hunt().await?;
    let markdown_path = hunter.save()?;
    Ok(HuntOutcome {
        hunt: hunter.hunt,
        hunt_path: hunter.hunt_path,
        markdown_path,
        regressed,
    })
}

/// The hunt before its first step: the series applied once, to know its
/// patches and their commits.
async fn start(plan: &Plan, opts: &RunOptions, sink: &dyn Sink) -> anyhow::Result<Hunt> {
    let tree = crate::tree::obtain(&plan.tree, &opts.cache_dir).await?;
    let repo = tree.open()?;
    let applied = campaign::apply_plan_series(&repo, &tree, plan, sink).await?;
    sink.emit(Event::Note(format!("bisect: {}", applied.summary())));
    let n = applied.series.patches.len();
    Ok(Hunt {
        hunt_schema_version: HUNT_SCHEMA_VERSION,
        patchbench_version: env!("CARGO_PKG_VERSION").into(),
        campaign: plan.name.clone(),
        campaign_file: plan.source.clone(),
        started_at: jiff::Timestamp::now(),
        workload: plan.workload.kind().to_string(),
        base_commit: applied.base.to_string(),
        series: HuntSeries {
            source: applied.series.source.to_string(),
            sha256: applied.series.sha256.clone(),
            patches: applied
                .series
                .patches
                .iter()
                .zip(&applied.patches)
                .enumerate()
                .map(|(i, (p, how))| HuntPatch {
                    number: i + 1,
                    subject: p.subject().to_string(),
                    commit: how.commit.to_string(),
                })
                .collect(),
        },
        lane: None,
        hunted: None,
        steps: Vec::new(),
        state: HuntState::Running { lo: 0, hi: n },
    })
}

/// A hunt under way.
struct Hunter<'a> {
    plan: &'a Plan,
    opts: &'a RunOptions,
    sink: &'a dyn Sink,
    spec: Option<&'a WorkloadSpec>,
    hunt: Hunt,
    hunt_path: PathBuf,
    /// Each measured prefix's step (base against it), by prefix.
    measured: BTreeMap<usize, Results>,
}

impl Hunter<'_> {
    /// Write bisect.json and report.md, atomically; returns the report's
    /// path.
    fn save(&self) -> anyhow::Result<PathBuf> {
        self.hunt
            .save(&self.hunt_path)
            .with_context(|| format!("cannot write {}", self.hunt_path.display()))?;
        let path = self.opts.out_dir.join("report.md");
        let markdown = crate::report::hunt::markdown(&self.hunt, self.spec);
        crate::fsutil::write_atomic(&path, markdown.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path)
    }

    /// Every step; returns the metrics the whole series regressed.
    async fn hunt(&mut self) -> anyhow::Result<Vec<String>> {
        let n = self.hunt.series.patches.len();
        let (whole, rows) = self.step(0, n, StepRole::Whole).await?;
        let regressed = whole
            .judgement
            .as_ref()
            .map(|j| j.regressed.clone())
            .unwrap_or_default();
        self.hunt.lane = Some(whole.host.lane);
        let Some(hunted) = judge::hunted(&rows, self.spec) else {
            let undecided: Vec<String> = judge::verdicts(&rows, self.spec, None)
                .iter()
                .filter(|v| v.verdict == VerdictRecord::Inconclusive)
                .map(|v| {
                    crate::results::hunt::MetricKey {
                        condition: v.condition.clone(),
                        metric: v.metric.clone(),
                    }
                    .label()
                })
                .collect();
            let reason = format!(
                "no primary metric changed between base and {} (the whole series), so there is nothing to hunt{}",
                prefix_name(n),
                if undecided.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; inconclusive: {} (more samples decide them)",
                        undecided.join(", ")
                    )
                }
            );
            self.finish_step(0, n, StepRole::Whole, &whole, &rows, None, reason.clone());
            self.hunt.state = HuntState::NothingToHunt { reason };
            self.sink
                .emit(Event::Note(format!("bisect: {}", self.state_line())));
            return Ok(regressed);
        };
        self.hunt.hunted = Some(hunted.clone());
        let (_, why) = judge::classify(&rows, &hunted);
        self.finish_step(
            0,
            n,
            StepRole::Whole,
            &whole,
            &rows,
            Some(StepOutcome::Changed),
            why,
        );
        self.measured.insert(n, whole);
        let mut bounds = Bisection::new(n);
        self.hunt.state = HuntState::Running { lo: 0, hi: n };
        self.save()?;
        while let Some(k) = bounds.next() {
            let (results, rows) = match self.step(0, k, StepRole::Midpoint).await {
                Ok(measured) => measured,
                Err(e) => match does_not_build(&e) {
                    Some(error) => {
                        self.skip_step(k, error);
                        bounds = bounds.skip(k);
                        self.save()?;
                        continue;
                    }
                    None => return Err(e),
                },
            };
            let (outcome, why) = judge::classify(&rows, &hunted);
            self.finish_step(
                0,
                k,
                StepRole::Midpoint,
                &results,
                &rows,
                Some(outcome),
                why.clone(),
            );
            self.measured.insert(k, results);
            if outcome == StepOutcome::Undecided {
                self.hunt.state = HuntState::Stopped {
                    lo: bounds.lo,
                    hi: bounds.hi,
                    reason: format!(
                        "{} is undecided ({why}), so the first patch is somewhere in {}: the hunt does not guess; more samples (protocol.samples) or a quieter lane (vm.icount) decide such a step, and `--per-patch` measures every prefix",
                        prefix_name(k),
                        crate::report::hunt::patch_range(bounds.lo, bounds.hi)
                    ),
                };
                self.sink
                    .emit(Event::Note(format!("bisect: {}", self.state_line())));
                return Ok(regressed);
            }
            bounds = bounds.after(k, outcome);
            self.hunt.state = HuntState::Running {
                lo: bounds.lo,
                hi: bounds.hi,
            };
            self.save()?;
        }
        if bounds.only_skipped_left() {
            let skipped: Vec<String> = (bounds.lo + 1..bounds.hi)
                .map(|k| prefix_name(k).to_string())
                .collect();
            self.hunt.state = HuntState::Stopped {
                lo: bounds.lo,
                hi: bounds.hi,
                reason: format!(
                    "the first patch is somewhere in {}, and {} do(es) not build, so no measurement can tell which (as `git bisect skip` ends)",
                    crate::report::hunt::patch_range(bounds.lo, bounds.hi),
                    skipped.join(", ")
                ),
            };
            self.sink
                .emit(Event::Note(format!("bisect: {}", self.state_line())));
            return Ok(regressed);
        }
        let own = self.own_interval(bounds.hi, &hunted).await?;
        self.hunt.state = HuntState::Found {
            patch: bounds.hi,
            own,
        };
        self.sink
            .emit(Event::Note(format!("bisect: {}", self.state_line())));
        Ok(regressed)
    }

    /// One line on where the hunt ended.
    fn state_line(&self) -> String {
        crate::report::hunt::conclusion(&self.hunt)
    }

    /// Measure one step: the first `baseline` patches against the first
    /// `patches`, as an ordinary campaign in the step's directory
    /// (resuming what an interrupted hunt measured there).
    async fn step(
        &self,
        baseline: usize,
        patches: usize,
        role: StepRole,
    ) -> anyhow::Result<(Results, Vec<ComparisonRecord>)> {
        let dir = step_dir(baseline, patches, role);
        let mut plan = self.plan.clone();
        plan.variants = VariantSet::prefixes(baseline, patches);
        let opts = RunOptions {
            out_dir: self.opts.out_dir.join(&dir),
            ..self.opts.clone()
        };
        let number = self.hunt.steps.len() + 1;
        let n = self.hunt.series.patches.len();
        self.sink.emit(Event::Note(format!(
            "bisect step {number} (of at most {}): {} against {} ({}), in {}",
            Bisection::most_steps(n) + usize::from(role == StepRole::Own),
            prefix_name(patches),
            prefix_name(baseline),
            what(patches, n),
            opts.out_dir.display()
        )));
        let outcome = campaign::run(&plan, &opts, self.sink)
            .await
            .with_context(|| {
                format!(
                    "bisect step {number}, {} against {} ({})",
                    prefix_name(patches),
                    prefix_name(baseline),
                    opts.out_dir.display()
                )
            })?;
        let rows = outcome
            .judgement()
            .map(|j| j.rows.clone())
            .unwrap_or_default();
        Ok((outcome.results, rows))
    }

    /// Record a prefix that does not build: a step with no kernels and no
    /// verdicts, skipped as `git bisect skip` does.
    fn skip_step(&mut self, patches: usize, error: String) {
        let step = HuntStep {
            role: StepRole::Midpoint,
            baseline_patches: 0,
            patches,
            dir: step_dir(0, patches, StepRole::Midpoint),
            kernels: Vec::new(),
            verdicts: Vec::new(),
            outcome: Some(StepOutcome::Skipped),
            reason: format!(
                "{} does not build ({error}): skipped, as `git bisect skip` does",
                prefix_name(patches)
            ),
            boots_wall_seconds: None,
        };
        self.sink.emit(Event::Note(format!(
            "bisect step {}: {}",
            self.hunt.steps.len() + 1,
            crate::report::hunt::step_line(&self.hunt, &step)
        )));
        self.hunt.steps.push(step);
    }

    /// Record a measured step and say what it showed.
    #[allow(clippy::too_many_arguments)]
    fn finish_step(
        &mut self,
        baseline: usize,
        patches: usize,
        role: StepRole,
        results: &Results,
        rows: &[ComparisonRecord],
        outcome: Option<StepOutcome>,
        reason: String,
    ) {
        let step = HuntStep {
            role,
            baseline_patches: baseline,
            patches,
            dir: step_dir(baseline, patches, role),
            kernels: results
                .variants
                .iter()
                .map(|v| StepKernel {
                    variant: v.name.clone(),
                    commit: v.kernel.commit.clone(),
                    bzimage_sha256: v.kernel.bzimage_sha256.clone(),
                })
                .collect(),
            verdicts: judge::verdicts(rows, self.spec, self.hunt.hunted.as_ref()),
            outcome,
            reason,
            boots_wall_seconds: results.boots_wall_seconds,
        };
        self.sink.emit(Event::Note(format!(
            "bisect step {}: {}",
            self.hunt.steps.len() + 1,
            crate::report::hunt::step_line(&self.hunt, &step)
        )));
        self.hunt.steps.push(step);
    }

    /// Patch `k`'s own interval: prefix k against prefix k − 1.
    async fn own_interval(&mut self, k: usize, hunted: &Hunted) -> anyhow::Result<OwnInterval> {
        let before = prefix_name(k - 1).to_string();
        let this = prefix_name(k).to_string();
        let spec = self.spec;
        let primary = |rows: &[ComparisonRecord], a: &str, b: &str| -> Vec<ComparisonRecord> {
            let keep = judge::verdicts(rows, spec, Some(hunted));
            rows.iter()
                .filter(|r| {
                    keep.iter()
                        .any(|v| v.metric == r.metric && v.condition == r.condition)
                })
                .cloned()
                .map(|mut r| {
                    r.baseline = a.to_string();
                    r.variant = b.to_string();
                    r
                })
                .collect()
        };
        let step = self
            .measured
            .get(&k)
            .expect("the patch's prefix was measured");
        if k == 1 {
            let rows = crate::judge::judge(step).rows;
            return Ok(OwnInterval {
                method: OwnMethod::InStep,
                note: format!(
                    "patch 1 against the base: {this} against base in the boots of its own step"
                ),
                witness: Vec::new(),
                comparisons: primary(&rows, "base", &this),
            });
        }
        let earlier = self
            .measured
            .get(&(k - 1))
            .expect("the prefix before the patch was measured");
        let lane = self.hunt.lane.expect("the first step set the lane");
        let mut witness = Vec::new();
        let why_not = if lane.deterministic() {
            let (a_name, b_name) = (format!("base@{before}"), format!("base@{this}"));
            let doc = judge::across(earlier, "base", &a_name, step, "base", &b_name);
            let rows = crate::judge::judge(&doc).rows;
            witness = primary(&rows, &a_name, &b_name);
            let moved: Vec<String> = hunted
                .metrics
                .iter()
                .filter_map(|m| {
                    let r = rows
                        .iter()
                        .find(|r| r.condition == m.condition && r.metric == m.metric);
                    match r.map(ComparisonRecord::kind) {
                        Some(v) if v.is_unchanged() => None,
                        Some(v) => Some(format!("{}: {}", m.label(), v.label())),
                        None => Some(format!("{}: not compared", m.label())),
                    }
                })
                .collect();
            if moved.is_empty() {
                let doc = judge::across(earlier, &before, &before, step, &this, &this);
                let rows = crate::judge::judge(&doc).rows;
                return Ok(OwnInterval {
                    method: OwnMethod::AcrossSteps,
                    note: format!(
                        "{this}'s boots from its step against {before}'s from its own: under icount a guest's times count its instructions, so boots of different steps are comparable, and the base, booted in both steps, shows no clear difference between them in every hunted metric (the witness below); judged by the fixed protocol's rules"
                    ),
                    witness,
                    comparisons: primary(&rows, &before, &this),
                });
            }
            format!(
                "the base moved between the steps of {before} and {this} ({}), so their boots are not compared across steps",
                moved.join("; ")
            )
        } else {
            format!(
                "boots of different steps are not comparable on the host's clock ({}: it drifts between boots, docs/tcg-noise.md)",
                lane.label()
            )
        };
        self.sink.emit(Event::Note(format!(
            "bisect: {why_not}; measuring {this} against {before} in the same boots (both kernels are built)"
        )));
        let (results, rows) = self.step(k - 1, k, StepRole::Own).await?;
        let comparisons = primary(&rows, &before, &this);
        self.finish_step(
            k - 1,
            k,
            StepRole::Own,
            &results,
            &rows,
            None,
            format!("{this} against {before} in the same boots"),
        );
        Ok(OwnInterval {
            method: OwnMethod::OwnStep,
            note: format!(
                "{this} against {before} in a step of its own, in the same boots: {why_not}"
            ),
            witness,
            comparisons,
        })
    }
}

/// A step's directory, relative to the hunt's: `bisect/p<K>` for the base
/// against prefix K, `bisect/p<J>-p<K>` for a patch's own step.
fn step_dir(baseline: usize, patches: usize, role: StepRole) -> PathBuf {
    let name = match role {
        StepRole::Own => format!("{}-{}", prefix_name(baseline), prefix_name(patches)),
        StepRole::Whole | StepRole::Midpoint => prefix_name(patches).to_string(),
    };
    Path::new("bisect").join(name)
}

/// "the whole series", "patches 1-3 of 7", "patch 1 of 7".
fn what(patches: usize, n: usize) -> String {
    match patches {
        p if p == n => "the whole series".to_string(),
        1 => format!("patch 1 of {n}"),
        p => format!("patches 1-{p} of {n}"),
    }
}

/// The hunt's hunted verdict, for the exit code: a regression hunt found
/// or stopped still means the series regressed.
pub fn hunts_regression(hunt: &Hunt) -> bool {
    hunt.hunted
        .as_ref()
        .is_some_and(|h| h.verdict == VerdictRecord::Regression)
}

/// The compiler's error, when `e` is a kernel that does not build (make
/// failed at a compile error), not a host that cannot build (a missing
/// tool, a full disk, a killed make).
fn does_not_build(e: &anyhow::Error) -> Option<String> {
    e.chain()
        .find_map(|c| match c.downcast_ref::<crate::build::BuildError>() {
            Some(crate::build::BuildError::Make {
                first_error: Some(first),
                ..
            }) => Some(first.clone()),
            _ => None,
        })
}
