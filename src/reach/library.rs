//! The mm library ranked for a series by the reach map: for each library
//! campaign (`ci/mm/*.yaml`) the map has a workload of, the share of that
//! workload's kernel instructions per operation the series' changed
//! functions take on the base kernel; for each changed function, the
//! workload that executes it most, or why none does (init-only, not built
//! in the library's kernel, or built but run in no workload's window).
//!
//! `library_campaigns` reads the campaign files; `rank` and `render` are
//! pure.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use super::map::{Per, ReachMap, WorkloadReach};
use super::{Place, ReachError, Touched};
use crate::config::Campaign;

/// A library campaign: its name (the map's workload key) and file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryCampaign {
    pub name: String,
    pub file: PathBuf,
    /// Its file relative to the checkout (`ci/mm/ksm-merge.yaml`).
    pub shown: String,
}

/// Every campaign file directly in `ci_dir/mm`, in name order.
pub fn library_campaigns(ci_dir: &Path) -> Result<Vec<LibraryCampaign>, ReachError> {
    let dir = ci_dir.join("mm");
    let list = |source| ReachError::List {
        dir: dir.clone(),
        source,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(list)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(list)?;
    files.retain(|p| p.is_file() && p.extension().is_some_and(|e| e == "yaml"));
    files.sort();
    let root = ci_dir.parent().unwrap_or(ci_dir);
    files
        .into_iter()
        .map(|file| {
            let campaign = Campaign::load(&file)?;
            Ok(LibraryCampaign {
                name: campaign.name,
                shown: super::shown(root, &file),
                file,
            })
        })
        .collect()
}

/// One campaign's share of what the series changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    /// Index into the library campaigns.
    pub campaign: usize,
    /// The changed functions' share of its kernel instructions, 0 to 1.
    pub share: f64,
    /// Each changed function it executes: (file, name, share, insns per unit).
    pub functions: Vec<(String, String, f64, f64)>,
    pub per: Per,
}

/// Where a changed function runs, or why it does not.
#[derive(Debug, Clone, PartialEq)]
pub enum FunctionReach {
    /// The campaign (index) that executes it most, its share there and its
    /// instructions per unit.
    Most {
        campaign: usize,
        share: f64,
        insns: f64,
        per: Per,
    },
    /// No workload of the map executes it, and why.
    Not(String),
}

/// The library ranked for one series.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranking {
    /// Campaigns that execute a changed function, largest share first.
    pub ranked: Vec<Ranked>,
    /// Each changed function of the base: (file, name, where it runs).
    pub functions: Vec<(String, String, FunctionReach)>,
    /// Library campaigns the map has no workload of (no kept run).
    pub unmapped: Vec<usize>,
}

/// A changed function's instructions per unit in a workload: its own, or
/// for a system call `sys_x` (as `cscan` names `SYSCALL_DEFINE`) its entry
/// points' together.
pub fn insns_of(workload: &WorkloadReach, function: &str) -> Option<f64> {
    if let Some(v) = workload.functions.get(function) {
        return Some(*v);
    }
    let call = function.strip_prefix("sys_")?;
    let parts: Vec<f64> = ["__x64_sys_", "__do_sys_", "__se_sys_"]
        .iter()
        .filter_map(|p| workload.functions.get(&format!("{p}{call}")).copied())
        .collect();
    (!parts.is_empty()).then(|| parts.iter().sum())
}

/// Why no workload executes `function` of `file`, as the map can tell.
fn why_not(map: &ReachMap, file: &str, function: &str) -> String {
    match map.files.get(file) {
        Some(f) if f.init_exit.contains(function) => {
            "init-only: it runs at boot or unload, in no workload's window".into()
        }
        Some(f) if f.functions.contains(function) => format!(
            "built in {}, but no workload's window runs it (an error path, or code no library benchmark drives)",
            f.object
        ),
        Some(f) => format!(
            "not built: {} does not define it in the library's configuration (an #ifdef, another architecture, or inlined everywhere)",
            f.object
        ),
        None if file.starts_with("mm/") && file.ends_with(".c") => format!(
            "not built: the library's kernel has no {}",
            file.trim_end_matches(".c").to_string() + ".o"
        ),
        None => "no workload's profile names it (the map lists mm/ objects only, so whether it is built is not known)".into(),
    }
}

/// Rank `library` by the share of each workload's kernel instructions the
/// series' changed functions (those the base defines) take.
pub fn rank(touched: &[Touched], map: &ReachMap, library: &[LibraryCampaign]) -> Ranking {
    let changed: Vec<(&str, &str)> = touched
        .iter()
        .filter_map(|t| match &t.place {
            Place::Function {
                name,
                in_base: true,
            } => Some((t.file.as_str(), name.as_str())),
            _ => None,
        })
        .collect();
    let mut ranked = Vec::new();
    let mut unmapped = Vec::new();
    let mut most: Vec<Option<(usize, f64, f64, Per)>> = vec![None; changed.len()];
    for (c, campaign) in library.iter().enumerate() {
        let Some(workload) = map.workloads.get(&campaign.name) else {
            unmapped.push(c);
            continue;
        };
        let mut functions = Vec::new();
        for (k, (file, name)) in changed.iter().enumerate() {
            let Some(insns) = insns_of(workload, name) else {
                continue;
            };
            let share = workload.share(insns);
            // The same function changed twice (two files' statics of one
            // name) counts once.
            if !functions.iter().any(|(_, n, _, _)| n == name) {
                functions.push((file.to_string(), name.to_string(), share, insns));
            }
            if most[k].is_none_or(|(_, s, _, _)| share > s) {
                most[k] = Some((c, share, insns, workload.per));
            }
        }
        if !functions.is_empty() {
            functions.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.1.cmp(&b.1)));
            ranked.push(Ranked {
                campaign: c,
                share: functions.iter().map(|f| f.2).sum(),
                functions,
                per: workload.per,
            });
        }
    }
    ranked.sort_by(|a, b| {
        b.share
            .total_cmp(&a.share)
            .then(a.campaign.cmp(&b.campaign))
    });
    let functions = changed
        .iter()
        .zip(most)
        .map(|((file, name), most)| {
            let reach = match most {
                Some((campaign, share, insns, per)) => FunctionReach::Most {
                    campaign,
                    share,
                    insns,
                    per,
                },
                None => FunctionReach::Not(why_not(map, file, name)),
            };
            (file.to_string(), name.to_string(), reach)
        })
        .collect();
    Ranking {
        ranked,
        functions,
        unmapped,
    }
}

/// The ranking for people: the campaigns, largest share first, with the
/// functions each executes; each changed function with the workload that
/// runs it most, or why none does.
pub fn render(ranking: &Ranking, library: &[LibraryCampaign], map_shown: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nthe mm library by the reach map ({map_shown}): the share of each workload's kernel instructions the changed functions take on the base kernel"
    );
    if ranking.ranked.is_empty() {
        let _ = writeln!(
            s,
            "  none of the library's {} workloads executes a function this series changes",
            library.len() - ranking.unmapped.len()
        );
    }
    // The top few say where to measure; a function every workload runs
    // would list them all.
    const SHOWN: usize = 8;
    for r in ranking.ranked.iter().take(SHOWN) {
        let c = &library[r.campaign];
        let _ = writeln!(
            s,
            "  {:>8}  {} ({})",
            format!("{:.3}%", 100.0 * r.share),
            c.name,
            c.shown
        );
        for (file, name, share, insns) in &r.functions {
            let _ = writeln!(
                s,
                "            {file}: {name} {:.3}%, {insns:.1} insns/{}",
                100.0 * share,
                r.per
            );
        }
    }
    if let Some(rest) = ranking.ranked.get(SHOWN..).filter(|r| !r.is_empty()) {
        let _ = writeln!(
            s,
            "  ... and {} more, each at {:.3}% or less",
            rest.len(),
            100.0 * rest[0].share
        );
    }
    if !ranking.functions.is_empty() {
        let _ = writeln!(
            s,
            "each changed function, and the workload that runs it most:"
        );
    }
    for (file, name, reach) in &ranking.functions {
        match reach {
            FunctionReach::Most {
                campaign,
                share,
                insns,
                per,
            } => {
                let _ = writeln!(
                    s,
                    "  {file}: {name}  {} ({:.3}%, {insns:.1} insns/{per})",
                    library[*campaign].name,
                    100.0 * share
                );
            }
            FunctionReach::Not(why) => {
                let _ = writeln!(s, "  {file}: {name}  not executed: {why}");
            }
        }
    }
    if !ranking.unmapped.is_empty() {
        let _ = writeln!(
            s,
            "not in the reach map (no kept run of theirs when it was built): {}",
            ranking
                .unmapped
                .iter()
                .map(|&c| library[c].name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let _ = writeln!(
        s,
        "`run --series` runs the ci/seeds campaigns chosen above; to measure the series with a library workload, pass its campaign file: patchbench run ci/mm/<name>.yaml --series ..."
    );
    s
}

#[cfg(test)]
#[path = "library_tests.rs"]
mod tests;
