//! The stored judgement's rows (`results.json`'s `judgement`), by
//! condition, and the lines the reports say about them. Nothing here
//! judges: `judge` did, and the rows are rendered as stored.

use crate::model::Verdict;
use crate::results::{ComparisonRecord, ControlRecord, JudgementRecord, Results};

/// The rows of a document's judgement, or none when it has no judgement
/// (a shard, a run still going, a document of an older schema).
pub fn rows(results: &Results) -> &[ComparisonRecord] {
    results
        .judgement
        .as_ref()
        .map_or(&[][..], |j| j.rows.as_slice())
}

/// The judgement, when the document has one.
pub fn judgement(results: &Results) -> Option<&JudgementRecord> {
    results.judgement.as_ref()
}

/// One line when a document has samples but no judgement: what to run.
pub fn unjudged(results: &Results) -> Option<String> {
    (results.judgement.is_none() && results.shard.is_none() && !results.boots.is_empty()).then(
        || {
            "Not judged: this document holds samples but no judgement (a run cut short, or a schema before 4); `patchbench judge RESULTS.json` judges it under today's rule.".to_string()
        },
    )
}

/// The rows of each condition, in the document's order: the main
/// workload's first (`None`), then each control's. Nothing at all when
/// there are no rows: nothing was compared (a variant has no complete
/// boot, and the reports say so), so no table is drawn empty.
pub fn by_condition<'r>(
    results: &'r Results,
    rows: &'r [ComparisonRecord],
) -> Vec<(Option<&'r ControlRecord>, Vec<&'r ComparisonRecord>)> {
    if rows.is_empty() {
        return Vec::new();
    }
    results
        .conditions()
        .into_iter()
        .map(|c| {
            let name = c.map(|c| c.name.as_str());
            let of = rows
                .iter()
                .filter(|r| r.condition.as_deref() == name)
                .collect();
            (c, of)
        })
        .collect()
}

/// Whether the rows were judged by boot (`options.by_boot`).
pub fn judged_by_boot(rows: &[ComparisonRecord]) -> bool {
    rows.iter().any(|r| r.options.by_boot)
}

/// One line for the metrics whose samples a repeated boot left out of the
/// pool ([`ComparisonRecord::repeat_note`]), so that a deterministic lane,
/// where every metric repeats, says it once; `None` when no metric did.
pub fn repeats_line(rows: &[&ComparisonRecord]) -> Option<String> {
    let repeated: Vec<&&ComparisonRecord> = rows
        .iter()
        .filter(|r| r.a_repeated + r.b_repeated > 0)
        .collect();
    let first = repeated.first()?;
    let names: Vec<String> = repeated.iter().map(|r| r.label()).collect();
    let sides: Vec<&str> = [
        (first.a_repeated > 0).then_some(first.baseline.as_str()),
        (first.b_repeated > 0).then_some(first.variant.as_str()),
    ]
    .into_iter()
    .flatten()
    .collect();
    let (which, list) = if repeated.len() == rows.len() {
        (format!("all {} metrics", rows.len()), String::new())
    } else {
        (
            format!("{} of {} metrics", repeated.len(), rows.len()),
            format!(": {}", names.join(", ")),
        )
    };
    Some(format!(
        "{} boots that repeat an earlier boot of the same variant value for value (a deterministic lane) count once, so for {which} the statistics stand on one boot's samples{list}. Those samples share one memory layout, so the interval does not cover the layout: in the cost lane a change of a few percent can move with it (docs/cost-model.md, \"Layout\").",
        sides.join(" and "),
    ))
}

/// One line when the comparisons were judged by boot (`options.by_boot`):
/// the interval then covers the memory layouts' spread, which the samples
/// of one boot all share. `None` otherwise.
pub fn layouts_line(lane: crate::model::Lane, rows: &[&ComparisonRecord]) -> Option<String> {
    let first = rows.iter().find(|r| r.options.by_boot)?;
    if lane.judged_by_boot() {
        return Some(format!(
            "Judged by boot: under {} each boot lands on the host anew (its cores, its memory, the host's state), so its samples are not independent; each boot's mean is one observation ({} {} boots, {} {} boots) and the intervals are Welch's t over those means (docs/statistics.md, \"Under KVM\").",
            lane.label(),
            first.a.n,
            first.baseline,
            first.b.n,
            first.variant
        ));
    }
    Some(format!(
        "Judged by boot: each boot ran in a memory layout of its own (protocol.layouts: varied), so each boot's mean is one observation ({} {} boots, {} {} boots) and the intervals are Welch's t over those means: they cover the spread between layouts, which every sample of one boot shares (docs/cost-model.md, \"Layout\").",
        first.a.n, first.baseline, first.b.n, first.variant
    ))
}

/// Why a context row is context: its stored reason without the words
/// every such reason opens with.
pub fn context_why(row: &ComparisonRecord) -> &str {
    row.reason
        .strip_prefix("context, not this lane's measurement: ")
        .unwrap_or(&row.reason)
}

/// The context rows, grouped by why they are context: one line per
/// reason, naming its metrics. `None` when there are none.
pub fn context_lines(rows: &[&ComparisonRecord]) -> Vec<String> {
    let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
    for r in rows.iter().filter(|r| r.kind() == Verdict::Context) {
        let why = context_why(r);
        match groups.iter_mut().find(|(w, _)| *w == why) {
            Some((_, names)) => names.push(r.metric.clone()),
            None => groups.push((why, vec![r.metric.clone()])),
        }
    }
    groups
        .into_iter()
        .map(|(why, names)| format!("Context, no verdict: {}: {why}.", names.join(", ")))
        .collect()
}

/// An inconclusive row's bounds and what would decide it, as one clause
/// to append to its reason (nothing for other rows).
pub fn undecided_note(row: &ComparisonRecord) -> String {
    let mut out = String::new();
    if let Some(bounds) = &row.ruled_out {
        out.push_str(&format!("; {bounds}"));
    }
    if row.kind() == Verdict::Inconclusive
        && let Some(to) = &row.to_decide
    {
        out.push_str(&format!("; {to}"));
    }
    out
}
