//! The robot's report of a change point, in Markdown: what stepped, where,
//! the commit that did it with its own interval, and the one command that
//! measures that commit again. Untrusted text (subjects, author names) is
//! set in code spans (`report::code_span`). Pure.

use std::fmt::Write;
use std::path::Path;

use crate::model::Unit;
use crate::report::{code_span, format_value, short, signed_pct};
use crate::results::history::{ChangePoint, CommitInfo, History};

fn unit(cp: &ChangePoint) -> Option<Unit> {
    serde_json::from_value(serde_json::Value::String(cp.unit.clone())).ok()
}

/// The commit the step is laid on: the hunt's, or the only one.
pub fn culprit(cp: &ChangePoint) -> Option<&CommitInfo> {
    match &cp.hunt {
        Some(h) => h.found.as_ref(),
        None if cp.commits.len() == 1 => cp.commits.first(),
        None => None,
    }
}

/// One line: the metric, its step and where.
pub fn headline(cp: &ChangePoint) -> String {
    let at = match culprit(cp) {
        Some(c) => format!("commit {} {}", short(&c.commit), code_span(&c.subject)),
        None => format!(
            "one of {} commits {}..{}",
            cp.commits.len(),
            short(&cp.before),
            short(&cp.after)
        ),
    };
    format!(
        "change point: {} {} {} [{}, {}] ({}) at night {}, {at}",
        cp.campaign,
        cp.metric,
        signed_pct(Some(cp.change_pct)),
        signed_pct(Some(cp.ci_low_pct)),
        signed_pct(Some(cp.ci_high_pct)),
        cp.verdict,
        cp.night,
    )
}

/// The report of `cp`, the history it was found in, the campaign file
/// that measured it, and the tree as the user named it.
pub fn markdown(history: &History, cp: &ChangePoint, campaign_file: &Path, tree: &Path) -> String {
    let mut out = String::new();
    let u = unit(cp);
    let _ = writeln!(out, "# patchbench: {}\n", headline(cp));
    let _ = writeln!(
        out,
        "Branch {} of {}, measured night by night by `patchbench watch` (campaign {}).\n",
        code_span(&history.branch),
        code_span(&history.tree),
        code_span(&cp.campaign),
    );
    if let Some(c) = culprit(cp) {
        let _ = writeln!(
            out,
            "- commit: {} {}",
            code_span(&c.commit),
            code_span(&c.subject)
        );
        let _ = writeln!(out, "- author: {}", code_span(&c.author));
    }
    let first_after = history
        .nights
        .get(cp.night)
        .map(|n| n.started_at.to_string())
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "- the step: night {} ({}) against the nights before it; heads {} → {}\n",
        cp.night,
        first_after,
        short(&cp.before),
        short(&cp.after)
    );
    let _ = writeln!(
        out,
        "| metric | nights before | nights after | change | 95% CI | p | verdict |\n|---|---:|---:|---:|---|---:|---|"
    );
    let _ = writeln!(
        out,
        "| {} | {} | {} | **{}** | [{}, {}] | {:.4} | {} |\n",
        cp.metric,
        format_value(cp.before_mean, u),
        format_value(cp.after_mean, u),
        signed_pct(Some(cp.change_pct)),
        signed_pct(Some(cp.ci_low_pct)),
        signed_pct(Some(cp.ci_high_pct)),
        cp.p,
        cp.verdict
    );
    let _ = writeln!(
        out,
        "The nights' means, before and after, compared with the nights as observations (binary segmentation with a permutation test and the ±2% band, docs/statistics.md, \"Change points\").\n"
    );
    match &cp.hunt {
        Some(h) => {
            if h.pairs == 0 {
                let _ = writeln!(out, "## The commit\n");
            } else {
                let _ = writeln!(out, "## The hunt across {} commits\n", cp.commits.len());
            }
            let _ = writeln!(out, "{}.\n", h.state);
            if let (Some(c), Some(pct)) = (&h.found, h.change_pct) {
                let _ = writeln!(
                    out,
                    "Its own interval, commit {} against its parent: **{}** [{}, {}] in {} (`{}`).\n",
                    short(&c.commit),
                    signed_pct(Some(pct)),
                    signed_pct(h.ci_low_pct),
                    signed_pct(h.ci_high_pct),
                    cp.metric,
                    h.dir
                        .join(if h.pairs == 0 {
                            "results.json"
                        } else {
                            "bisect.json"
                        })
                        .display()
                );
            }
        }
        None => {
            let _ = writeln!(out, "Not hunted: `watch --no-hunt`.\n");
        }
    }
    let _ = writeln!(out, "## Commits between the two heads\n");
    for c in &cp.commits {
        let _ = writeln!(
            out,
            "- {} {} ({})",
            short(&c.commit),
            code_span(&c.subject),
            code_span(&c.author)
        );
    }
    let _ = writeln!(out, "\n## Reproduce\n");
    let (rev, series) = match (culprit(cp), &cp.hunt) {
        (Some(c), Some(h)) if h.pairs > 0 => {
            // The hunt's series has one patch per commit, named by its
            // number and the commit (`watch::commits::write_series`).
            let k = cp
                .commits
                .iter()
                .position(|x| x.commit == c.commit)
                .unwrap_or(0)
                + 1;
            (
                format!("{}^", short(&c.commit)),
                h.dir
                    .join("series")
                    .join(format!("{k:04}-{}.patch", short(&c.commit)))
                    .display()
                    .to_string(),
            )
        }
        _ => (
            short(&cp.before).to_string(),
            format!("nights/{:03}-{}/series", cp.night, short(&cp.after)),
        ),
    };
    let _ = writeln!(
        out,
        "From the history directory, with the tree at {}:\n\n```sh\npatchbench run {} --tree {} --rev {rev} --series {series}\n```",
        code_span(&tree.display().to_string()),
        campaign_file.display(),
        history.tree,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::history::CommitHunt;

    fn commit(n: u8, subject: &str) -> CommitInfo {
        CommitInfo {
            commit: format!("{n:02x}").repeat(20),
            subject: subject.into(),
            author: "A <a@example.invalid>".into(),
        }
    }

    fn cp() -> ChangePoint {
        ChangePoint {
            campaign: "smoke".into(),
            metric: "pageout_cpu_ns".into(),
            unit: "ns".into(),
            night: 6,
            before: "aa".repeat(20),
            after: "bb".repeat(20),
            commits: vec![
                commit(1, "one"),
                commit(2, "mm: `flush` <b>every</b> page"),
                commit(3, "three"),
            ],
            before_mean: 151e6,
            after_mean: 184e6,
            change_pct: 21.9,
            ci_low_pct: 21.5,
            ci_high_pct: 22.3,
            p: 0.001,
            verdict: "regression".into(),
            hunt: Some(CommitHunt {
                dir: "hunts/smoke-n006".into(),
                pairs: 3,
                found: Some(commit(2, "mm: `flush` <b>every</b> page")),
                change_pct: Some(22.0),
                ci_low_pct: Some(21.8),
                ci_high_pct: Some(22.2),
                state: "found in 3 kernel pair(s)".into(),
            }),
            report: None,
        }
    }

    #[test]
    fn the_report_names_the_commit_its_own_interval_and_one_command() {
        let history = History::new("/src/linux", "mm-unstable");
        let text = markdown(
            &history,
            &cp(),
            Path::new("ci/smoke.yaml"),
            Path::new("/src/linux"),
        );
        assert!(
            text.contains("at night 6, commit 020202020202 `mm: 'flush' <b>every</b> page`"),
            "{text}"
        );
        assert!(
            text.contains("commit 020202020202 against its parent: **+22.00%** [+21.80%, +22.20%]"),
            "{text}"
        );
        assert!(text.contains("patchbench run ci/smoke.yaml --tree /src/linux --rev 020202020202^ --series hunts/smoke-n006/series/0002-020202020202.patch\n"), "{text}");
        assert!(
            text.contains(
                "| pageout_cpu_ns | 151.000 ms | 184.000 ms | **+21.90%** | [+21.50%, +22.30%]"
            ),
            "{text}"
        );
        // Untrusted text only inside code spans: outside them, no markup.
        assert!(
            text.split('`')
                .step_by(2)
                .all(|outside| !outside.contains("<b>")),
            "{text}"
        );
    }

    #[test]
    fn an_unhunted_step_names_its_commits_not_one() {
        let mut c = cp();
        c.hunt = None;
        assert!(
            headline(&c).contains("one of 3 commits aaaaaaaaaaaa..bbbbbbbbbbbb"),
            "{}",
            headline(&c)
        );
        c.commits.truncate(1);
        assert!(
            headline(&c).contains("commit 010101010101 `one`"),
            "{}",
            headline(&c)
        );
    }
}
