//! A hunt's report (`run --bisect`): the steps, what each said of the
//! hunted change, the patch found and its own interval, as Markdown
//! (OUT/report.md) and as terminal text. Pure functions of the hunt
//! document (`bisect.json`) and the workload's spec (for units).

use std::fmt::Write;

use super::format::{code_span, scale, short, show, signed_pct};
use crate::model::{Unit, Verdict};
use crate::results::ComparisonRecord;
use crate::results::comparison::ChangeRecord;
use crate::results::hunt::{
    Hunt, HuntState, HuntStep, OwnInterval, OwnMethod, StepOutcome, StepRole, StepVerdict,
};
use crate::workload::WorkloadSpec;

/// "patches 4-7", "patch 4": where the first patch with the change is,
/// between prefix `lo` (without it) and prefix `hi` (with it).
pub fn patch_range(lo: usize, hi: usize) -> String {
    if hi == lo + 1 {
        format!("patch {hi}")
    } else {
        format!("patches {}-{hi}", lo + 1)
    }
}

fn prefix(patches: usize) -> String {
    match patches {
        0 => "base".to_string(),
        k => format!("p{k}"),
    }
}

/// "+18.10% [+18.01%, +18.19%]", or the change alone, or n/a.
fn change_text(change: Option<&ChangeRecord>) -> String {
    match change {
        None => "n/a".into(),
        Some(c) => match c.ci {
            Some(ci) => format!(
                "{} [{}, {}]",
                signed_pct(Some(c.pct)),
                signed_pct(Some(ci.lo)),
                signed_pct(Some(ci.hi))
            ),
            None => signed_pct(Some(c.pct)),
        },
    }
}

fn verdict_text(v: &StepVerdict) -> String {
    let label = match &v.condition {
        Some(c) => format!("{} (control {c})", v.metric),
        None => v.metric.clone(),
    };
    format!(
        "{label} {} {}",
        change_text(v.change.as_ref()),
        Verdict::from(v.verdict).marked()
    )
}

/// "4/7 `subject` (commit 0123456789ab)", the subject made inert by
/// `quote`.
fn patch_text(hunt: &Hunt, k: usize, quote: fn(&str) -> String) -> String {
    let n = hunt.series.patches.len();
    match hunt.patch(k) {
        Some(p) => format!(
            "{k}/{n} {} (commit {})",
            quote(&p.subject),
            short(&p.commit)
        ),
        None => format!("{k}/{n}"),
    }
}

/// Plain text for a terminal: the subject in quotes, control characters
/// made spaces.
fn plain(text: &str) -> String {
    let inner: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    format!("\"{inner}\"")
}

/// "the regression", "the improvement", "the change".
fn hunted_noun(hunt: &Hunt) -> String {
    match hunt.hunted.as_ref().map(|h| Verdict::from(h.verdict)) {
        Some(Verdict::Regression) => "the regression".into(),
        Some(Verdict::Improvement) => "the improvement".into(),
        _ => "the change".into(),
    }
}

/// One line on a step: what it compared and what it said.
pub fn step_line(hunt: &Hunt, step: &HuntStep) -> String {
    let said = match step.outcome {
        Some(StepOutcome::Changed) => "has the change",
        Some(StepOutcome::Unchanged) => "has not",
        Some(StepOutcome::Undecided) => "undecided",
        Some(StepOutcome::Skipped) => "does not build: skipped",
        None => "measured",
    };
    let hunted: Vec<String> = step
        .verdicts
        .iter()
        .filter(|v| v.hunted || hunt.hunted.is_none())
        .map(verdict_text)
        .collect();
    format!(
        "{} against {}: {said} ({}){}",
        prefix(step.patches),
        prefix(step.baseline_patches),
        step.reason,
        if hunted.is_empty() {
            String::new()
        } else {
            format!("; {}", hunted.join(", "))
        }
    )
}

/// One line on where the hunt is or ended.
pub fn conclusion(hunt: &Hunt) -> String {
    conclusion_with(hunt, plain)
}

fn conclusion_with(hunt: &Hunt, quote: fn(&str) -> String) -> String {
    let n = hunt.series.patches.len();
    match &hunt.state {
        HuntState::Running { lo, hi } => format!(
            "under way: the first patch with {} is in {}",
            hunted_noun(hunt),
            patch_range(*lo, *hi)
        ),
        HuntState::NothingToHunt { reason } => reason.clone(),
        HuntState::Stopped { reason, .. } => format!("stopped: {reason}"),
        HuntState::Found { patch, .. } => format!(
            "the first patch with {} is {}, found in {} kernel pair(s) for {n} patch(es) (every prefix, --per-patch, boots {} kernels)",
            hunted_noun(hunt),
            patch_text(hunt, *patch, quote),
            hunt.kernel_pairs(),
            n + 1
        ),
    }
}

fn unit_of(spec: Option<&WorkloadSpec>, metric: &str) -> Option<Unit> {
    spec.and_then(|s| s.metrics.iter().find(|m| m.name == metric))
        .map(|m| m.unit)
}

/// The lane, for both renderings.
fn lane_line(hunt: &Hunt) -> Option<String> {
    Some(hunt.lane?.hunt_words())
}

fn what_step(hunt: &Hunt, step: &HuntStep) -> String {
    let n = hunt.series.patches.len();
    match step.role {
        StepRole::Whole => format!("{} vs base (the whole series)", prefix(step.patches)),
        StepRole::Midpoint => format!(
            "{} vs base (patches 1-{} of {n})",
            prefix(step.patches),
            step.patches
        ),
        StepRole::Own => format!(
            "{} vs {} (patch {} alone on the prefix before)",
            prefix(step.patches),
            prefix(step.baseline_patches),
            step.patches
        ),
    }
}

fn said(step: &HuntStep) -> &'static str {
    match step.outcome {
        Some(StepOutcome::Changed) => "has the change",
        Some(StepOutcome::Unchanged) => "has not",
        Some(StepOutcome::Undecided) => "undecided: the hunt stops",
        Some(StepOutcome::Skipped) => "does not build: skipped, as `git bisect skip` does",
        None => "",
    }
}

/// The hunt as Markdown.
pub fn markdown(hunt: &Hunt, spec: Option<&WorkloadSpec>) -> String {
    let mut out = String::new();
    let n = hunt.series.patches.len();
    let _ = writeln!(
        out,
        "### Bisection: {}, {n} patch(es)\n",
        code_span(&hunt.campaign)
    );
    if let Some(line) = lane_line(hunt) {
        let _ = writeln!(out, "> {line}\n");
    }
    match &hunt.hunted {
        Some(h) => {
            let names: Vec<String> = h.metrics.iter().map(|m| code_span(&m.label())).collect();
            let _ = writeln!(
                out,
                "Hunting {} that p{n} (the whole series) against base shows in its primary metrics: {}. \
                 Each step is a campaign of its own in the campaign's protocol, base against one prefix, \
                 with its report in its directory. A step whose verdict on any hunted metric is the same \
                 {} has the change; one with no clear difference in every hunted metric has not; any other \
                 verdict stops the hunt.\n",
                hunted_noun(hunt),
                names.join(", "),
                Verdict::from(h.verdict).label(),
            );
        }
        None if hunt.steps.is_empty() => {
            let _ = writeln!(out, "The whole series is being measured first.\n");
        }
        None => {}
    }
    if !hunt.steps.is_empty() {
        let _ = writeln!(
            out,
            "| step | compared | kernels | hunted metrics | other primary metrics | says |\n|---:|---|---|---|---|---|"
        );
        for (i, step) in hunt.steps.iter().enumerate() {
            let kernels: Vec<String> = step
                .kernels
                .iter()
                .map(|k| format!("{} `{}`", k.variant, short(&k.commit)))
                .collect();
            let cells = |hunted: bool| {
                let v: Vec<String> = step
                    .verdicts
                    .iter()
                    .filter(|v| v.hunted == hunted)
                    .map(verdict_text)
                    .collect();
                if v.is_empty() {
                    "\u{2014}".to_string()
                } else {
                    v.join("<br>")
                }
            };
            let _ = writeln!(
                out,
                "| {} | {} (`{}`) | {} | {} | {} | {} |",
                i + 1,
                what_step(hunt, step),
                step.dir.display(),
                kernels.join("<br>"),
                cells(true),
                cells(false),
                said(step)
            );
        }
        out.push('\n');
    }
    let _ = writeln!(out, "**{}**\n", conclusion_with(hunt, code_span));
    if let HuntState::Found { patch, own } = &hunt.state {
        own_markdown(&mut out, *patch, own, spec);
    }
    out
}

fn own_markdown(out: &mut String, k: usize, own: &OwnInterval, spec: Option<&WorkloadSpec>) {
    let (before, this) = (prefix(k - 1), prefix(k));
    let _ = writeln!(
        out,
        "#### Patch {k}'s own interval: {this} against {before}\n\n{}.\n",
        own.note
    );
    comparison_table_markdown(out, &own.comparisons, spec);
    if !own.witness.is_empty() {
        let title = match own.method {
            OwnMethod::AcrossSteps => "The witness: the base in the two steps",
            _ => "The base in the two steps, which moved",
        };
        let _ = writeln!(out, "\n{title}:\n");
        comparison_table_markdown(out, &own.witness, spec);
    }
}

fn comparison_table_markdown(
    out: &mut String,
    records: &[ComparisonRecord],
    spec: Option<&WorkloadSpec>,
) {
    let Some(first) = records.first() else {
        let _ = writeln!(out, "No primary metric was compared.");
        return;
    };
    let (a, b) = (&first.baseline, &first.variant);
    let _ = writeln!(
        out,
        "| metric | unit | {a} mean | {b} mean | {b} vs {a} [95% CI] | verdict |\n|---|---|---:|---:|---:|---|"
    );
    for c in records {
        let unit = c.unit.or_else(|| unit_of(spec, &c.metric));
        let s = scale(unit, c.a.mean.abs().max(c.b.mean.abs()));
        let label = match &c.condition {
            Some(cond) => format!("{} (control {cond})", c.metric),
            None => c.metric.clone(),
        };
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} | {} | {} |",
            s.label,
            show(c.a.mean, s),
            show(c.b.mean, s),
            change_text(c.mean_change.as_ref()),
            Verdict::from(c.verdict).marked()
        );
    }
    let called: Vec<String> = records
        .iter()
        .filter(|c| !Verdict::from(c.verdict).is_unchanged())
        .map(|c| {
            format!(
                "- {}: {} \u{2014} {}",
                c.metric,
                Verdict::from(c.verdict).marked(),
                c.reason
            )
        })
        .collect();
    if !called.is_empty() {
        let _ = writeln!(out, "\n{}", called.join("\n"));
    }
}

/// Rows as aligned text, the first `left` columns and the last
/// left-aligned.
fn aligned(rows: &[Vec<String>], left: usize) -> String {
    let columns = rows.first().map_or(0, Vec::len);
    super::terminal::aligned(rows, |c| c < left || c + 1 == columns)
}

/// The hunt as terminal text.
pub fn terminal(hunt: &Hunt, spec: Option<&WorkloadSpec>) -> String {
    let mut out = String::new();
    let n = hunt.series.patches.len();
    let _ = writeln!(out, "bisection of {}: {n} patch(es)", hunt.campaign);
    if let Some(line) = lane_line(hunt) {
        let _ = writeln!(out, "{line}");
    }
    if let Some(h) = &hunt.hunted {
        let names: Vec<String> = h.metrics.iter().map(|m| m.label()).collect();
        let _ = writeln!(
            out,
            "hunting {} that p{n} (the whole series) against base shows in {}",
            hunted_noun(hunt),
            names.join(", ")
        );
    }
    if !hunt.steps.is_empty() {
        let mut rows = vec![vec![
            "step".to_string(),
            "compared".into(),
            "kernels".into(),
            "hunted metrics".into(),
            "says".into(),
        ]];
        for (i, step) in hunt.steps.iter().enumerate() {
            let kernels: Vec<String> = step
                .kernels
                .iter()
                .map(|k| format!("{} {}", k.variant, short(&k.commit)))
                .collect();
            let verdicts: Vec<String> = step
                .verdicts
                .iter()
                .filter(|v| v.hunted || hunt.hunted.is_none())
                .map(verdict_text)
                .collect();
            let lines = verdicts.len().max(1);
            for line in 0..lines {
                rows.push(vec![
                    if line == 0 {
                        (i + 1).to_string()
                    } else {
                        String::new()
                    },
                    if line == 0 {
                        what_step(hunt, step)
                    } else {
                        String::new()
                    },
                    if line == 0 {
                        kernels.join(", ")
                    } else {
                        String::new()
                    },
                    verdicts.get(line).cloned().unwrap_or_default(),
                    if line == 0 {
                        said(step).to_string()
                    } else {
                        String::new()
                    },
                ]);
            }
        }
        out.push('\n');
        out.push_str(&aligned(&rows, 4));
    }
    let _ = writeln!(out, "\n{}", conclusion(hunt));
    if let HuntState::Found { patch, own } = &hunt.state {
        let (before, this) = (prefix(patch - 1), prefix(*patch));
        let _ = writeln!(
            out,
            "\npatch {patch}'s own interval, {this} against {before}: {}.",
            own.note
        );
        out.push_str(&comparison_table_text(&own.comparisons, spec));
        if !own.witness.is_empty() {
            let _ = writeln!(out, "\nthe base in the two steps:");
            out.push_str(&comparison_table_text(&own.witness, spec));
        }
    }
    out
}

fn comparison_table_text(records: &[ComparisonRecord], spec: Option<&WorkloadSpec>) -> String {
    let Some(first) = records.first() else {
        return "no primary metric was compared\n".into();
    };
    let (a, b) = (&first.baseline, &first.variant);
    let mut rows = vec![vec![
        "metric".to_string(),
        "unit".into(),
        format!("{a} mean"),
        format!("{b} mean"),
        format!("{b} vs {a} [95% CI]"),
        "verdict".into(),
    ]];
    for c in records {
        let unit = c.unit.or_else(|| unit_of(spec, &c.metric));
        let s = scale(unit, c.a.mean.abs().max(c.b.mean.abs()));
        rows.push(vec![
            match &c.condition {
                Some(cond) => format!("{} (control {cond})", c.metric),
                None => c.metric.clone(),
            },
            s.label.to_string(),
            show(c.a.mean, s),
            show(c.b.mean, s),
            change_text(c.mean_change.as_ref()),
            Verdict::from(c.verdict).marked().to_string(),
        ]);
    }
    aligned(&rows, 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::VerdictRecord;
    use crate::results::hunt::{
        HUNT_SCHEMA_VERSION, HuntPatch, HuntSeries, Hunted, MetricKey, StepKernel,
    };

    /// The README's smoke run, B against A, as comparison records named
    /// `before` and `after`.
    fn records(before: &str, after: &str) -> Vec<ComparisonRecord> {
        let results = crate::results::Results::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results/smoke/results.json"),
        )
        .unwrap();
        crate::judge::judge(&results)
            .rows
            .into_iter()
            .filter(|r| ["pageout_cpu_ns", "pageout_flushes"].contains(&r.metric.as_str()))
            .map(|mut r| {
                r.baseline = before.to_string();
                r.variant = after.to_string();
                r
            })
            .collect()
    }

    fn step(
        role: StepRole,
        patches: usize,
        outcome: StepOutcome,
        verdict: VerdictRecord,
    ) -> HuntStep {
        HuntStep {
            role,
            baseline_patches: 0,
            patches,
            dir: format!("bisect/p{patches}").into(),
            kernels: vec![
                StepKernel {
                    variant: "base".into(),
                    commit: "a".repeat(40),
                    bzimage_sha256: "0".repeat(64),
                },
                StepKernel {
                    variant: format!("p{patches}"),
                    commit: format!("{patches}").repeat(40),
                    bzimage_sha256: "1".repeat(64),
                },
            ],
            verdicts: vec![
                StepVerdict {
                    condition: None,
                    metric: "pageout_cpu_ns".into(),
                    hunted: true,
                    verdict,
                    change: Some(ChangeRecord {
                        pct: 18.0,
                        ci: None,
                    }),
                },
                StepVerdict {
                    condition: None,
                    metric: "verify_cpu_ns".into(),
                    hunted: false,
                    verdict: VerdictRecord::NoClearDifference,
                    change: None,
                },
            ],
            outcome: Some(outcome),
            reason: "why".into(),
            boots_wall_seconds: Some(60.0),
        }
    }

    fn found() -> Hunt {
        let changed = |k| {
            step(
                StepRole::Midpoint,
                k,
                StepOutcome::Changed,
                VerdictRecord::Regression,
            )
        };
        Hunt {
            hunt_schema_version: HUNT_SCHEMA_VERSION,
            patchbench_version: "0".into(),
            campaign: "smoke-bisect".into(),
            campaign_file: None,
            started_at: "2026-12-01T00:00:00Z".parse().unwrap(),
            workload: "zswap-pageout".into(),
            base_commit: "a".repeat(40),
            series: HuntSeries {
                source: "series".into(),
                sha256: "b".repeat(64),
                patches: (1..=7)
                    .map(|k| HuntPatch {
                        number: k,
                        subject: if k == 4 {
                            "mm: `bad` <b>".into()
                        } else {
                            format!("mm: {k}")
                        },
                        commit: format!("{k}").repeat(40),
                    })
                    .collect(),
            },
            lane: Some(crate::model::Lane::Icount),
            hunted: Some(Hunted {
                verdict: VerdictRecord::Regression,
                metrics: vec![MetricKey {
                    condition: None,
                    metric: "pageout_cpu_ns".into(),
                }],
            }),
            steps: vec![
                step(
                    StepRole::Whole,
                    7,
                    StepOutcome::Changed,
                    VerdictRecord::Regression,
                ),
                step(
                    StepRole::Midpoint,
                    3,
                    StepOutcome::Unchanged,
                    VerdictRecord::NoClearDifference,
                ),
                changed(5),
                changed(4),
            ],
            state: HuntState::Found {
                patch: 4,
                own: OwnInterval {
                    method: OwnMethod::AcrossSteps,
                    note: "across the steps".into(),
                    witness: records("base@p3", "base@p4"),
                    comparisons: records("p3", "p4"),
                },
            },
        }
    }

    #[test]
    fn a_found_patch_is_named_with_its_own_interval_and_the_witness() {
        let hunt = found();
        let spec = crate::workload::spec_for_kind(&hunt.workload);
        let md = markdown(&hunt, spec.as_ref());
        assert!(
            md.contains("### Bisection: `smoke-bisect`, 7 patch(es)"),
            "{md}"
        );
        assert!(md.contains("Steps ran under TCG with icount"), "{md}");
        assert!(
            md.contains("**the first patch with the regression is 4/7 `mm: 'bad' <b>` (commit 444444444444), found in 4 kernel pair(s) for 7 patch(es) (every prefix, --per-patch, boots 8 kernels)**"),
            "{md}"
        );
        assert!(
            md.contains("| 2 | p3 vs base (patches 1-3 of 7) (`bisect/p3`) |"),
            "{md}"
        );
        assert!(md.contains("| has not |"), "{md}");
        assert!(
            md.contains("#### Patch 4's own interval: p4 against p3\n\nacross the steps."),
            "{md}"
        );
        assert!(
            md.contains("| metric | unit | p3 mean | p4 mean | p4 vs p3 [95% CI] | verdict |"),
            "{md}"
        );
        assert!(
            md.contains("The witness: the base in the two steps:"),
            "{md}"
        );
        assert!(
            md.contains("| metric | unit | base@p3 mean | base@p4 mean |"),
            "{md}"
        );
        let text = terminal(&hunt, spec.as_ref());
        assert!(
            text.contains("bisection of smoke-bisect: 7 patch(es)"),
            "{text}"
        );
        assert!(
            text.contains("the first patch with the regression is 4/7 \"mm: `bad` <b>\""),
            "{text}"
        );
        assert!(
            text.contains("patch 4's own interval, p4 against p3: across the steps."),
            "{text}"
        );
        assert!(text.contains("pageout_cpu_ns +18.00% regression"), "{text}");
        assert_eq!(
            text.matches("\n1 ").count() + text.matches("\n4 ").count(),
            2,
            "{text}"
        );
    }

    #[test]
    fn a_stopped_or_empty_hunt_says_why_and_names_no_patch() {
        let mut hunt = found();
        hunt.steps.truncate(2);
        hunt.steps[1].outcome = Some(StepOutcome::Undecided);
        hunt.state = HuntState::Stopped {
            lo: 0,
            hi: 7,
            reason: "p3 is undecided".into(),
        };
        let md = markdown(&hunt, None);
        assert!(md.contains("**stopped: p3 is undecided**"), "{md}");
        assert!(md.contains("undecided: the hunt stops"), "{md}");
        assert!(!md.contains("own interval"), "{md}");
        hunt.hunted = None;
        hunt.steps.truncate(1);
        hunt.state = HuntState::NothingToHunt {
            reason: "no primary metric changed".into(),
        };
        assert_eq!(conclusion(&hunt), "no primary metric changed");
        let md = markdown(&hunt, None);
        assert!(!md.contains("Hunting"), "{md}");
        assert_eq!(patch_range(3, 4), "patch 4");
        assert_eq!(patch_range(0, 7), "patches 1-7");
    }
}
