//! The mm library ranked for a series by the reach map: for each library
//! campaign (`ci/mm/*.yaml`) the map has a workload of, the share of that
//! workload's kernel instructions per operation the series' changed
//! functions take on the base kernel; for each changed function, the
//! workload that executes it most, or why none does (init-only, not built
//! in the library's kernel, or built but run in no workload's window). A
//! static function GCC inlined everywhere has no symbol a profile could
//! name: it runs inside its callers in its file (`symbol_callers`), and is
//! counted by theirs, as an upper bound that says so.
//!
//! `library_campaigns` reads the campaign files; `rank` and `render` are
//! pure.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};

use super::cscan::{ItemKind, Scan};
use super::map::{Per, ReachMap, WorkloadReach, percent};
use super::{Place, ReachError, Touched};
use crate::config::Campaign;
use crate::results::ReachedRecord;

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
    campaigns_in(&ci_dir.join("mm"), ci_dir.parent().unwrap_or(ci_dir))
}

/// Every campaign file directly in `dir`, in name order, shown relative to
/// `root`.
pub fn campaigns_in(dir: &Path, root: &Path) -> Result<Vec<LibraryCampaign>, ReachError> {
    let files = super::campaign_files(dir)?;
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
    /// Each changed function it executes, largest share first.
    pub functions: Vec<Share>,
    pub per: Per,
}

/// A changed function's part of one workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Share {
    pub file: String,
    pub name: String,
    /// Of the workload's kernel instructions, 0 to 1.
    pub share: f64,
    /// Kernel instructions per unit.
    pub insns: f64,
    /// For a function with no symbol of its own (inlined everywhere): the
    /// callers it runs inside, whose instructions these are, so the share
    /// is an upper bound. Empty for a function the profile names.
    pub via: Vec<String>,
}

/// Where a changed function runs, or why it does not.
#[derive(Debug, Clone, PartialEq)]
pub enum FunctionReach {
    /// The campaign (index) that executes it most, its share there and its
    /// instructions per unit (`via`: as for [`Share`]).
    Most {
        campaign: usize,
        share: f64,
        insns: f64,
        per: Per,
        via: Vec<String>,
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

/// Why no workload executes `function` of `file`, as the map can tell;
/// `callers`: for a function with no symbol of its own, the callers with
/// one that it may be inlined into.
fn why_not(map: &ReachMap, file: &str, function: &str, callers: Option<&Vec<String>>) -> String {
    let callers = callers.filter(|c| !c.is_empty());
    match (map.files.get(file), callers) {
        (Some(f), Some(c)) => {
            let (object, into) = (&f.object, c.join(", "));
            if c.iter().all(|c| f.init_exit.contains(c)) {
                format!(
                    "init-only: no symbol of its own in {object}: inlined into {into}, which runs at boot or unload, and no workload's window ran it (kernel-boot's is the boot: not on its path)"
                )
            } else {
                format!(
                    "no symbol of its own in {object}: inlined into {into}, which no workload's window runs"
                )
            }
        }
        (Some(f), None) if f.init_exit.contains(function) => {
            "init-only: it runs at boot or unload, and no workload's window ran it (kernel-boot's is the boot: not on its path)".into()
        }
        (Some(f), None) if f.functions.contains(function) => format!(
            "built in {}, but no workload's window runs it (an error path, or code no library benchmark drives)",
            f.object
        ),
        (Some(f), None) => format!(
            "not built: {} has no symbol of it and no caller of it in the file has one (an #ifdef or another architecture compiles it out)",
            f.object
        ),
        (None, _) if file.starts_with("mm/") && file.ends_with(".c") => format!(
            "not built: the library's kernel has no {}",
            file.trim_end_matches(".c").to_string() + ".o"
        ),
        (None, _) => "no workload's profile names it (the map lists mm/ objects only, so whether it is built is not known)".into(),
    }
}

/// The functions of a scanned C file whose bodies call `function`
/// (`function(` outside another identifier), in file order; not itself.
pub fn callers_in(src: &[u8], scan: &Scan, function: &str) -> Vec<String> {
    let starts: Vec<usize> = std::iter::once(0)
        .chain(
            src.iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        )
        .collect();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let needle = function.as_bytes();
    let mut out = Vec::new();
    for item in &scan.items {
        let ItemKind::Function(name) = &item.kind else {
            continue;
        };
        if name == function || out.contains(name) {
            continue;
        }
        let from = starts.get(item.start - 1).copied().unwrap_or(src.len());
        let to = starts.get(item.end).copied().unwrap_or(src.len());
        let body = &src[from..to];
        let calls = body.windows(needle.len()).enumerate().any(|(i, w)| {
            w == needle
                && (i == 0 || !ident(body[i - 1]))
                && body[i + needle.len()..]
                    .iter()
                    .find(|b| !b.is_ascii_whitespace())
                    == Some(&b'(')
        });
        // The header names the function itself; only calls in the body
        // of another count, and the header line is the item's first.
        if calls {
            out.push(name.clone());
        }
    }
    out
}

/// For a function with no symbol of its own, the callers with one that it
/// runs inside: its callers in the file, and theirs, three levels up.
pub fn symbol_callers(
    src: &[u8],
    scan: &Scan,
    function: &str,
    has_symbol: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut seen: BTreeSet<String> = [function.to_string()].into();
    let mut frontier = vec![function.to_string()];
    let mut out = BTreeSet::new();
    for _ in 0..3 {
        let mut next = Vec::new();
        for f in &frontier {
            for caller in callers_in(src, scan, f) {
                if seen.insert(caller.clone()) {
                    if has_symbol(&caller) {
                        out.insert(caller);
                    } else {
                        next.push(caller);
                    }
                }
            }
        }
        frontier = next;
    }
    out.into_iter().collect()
}

/// (file, function) → the callers with a symbol it runs inside, for the
/// changed functions with no symbol of their own.
pub type Inlined = BTreeMap<(String, String), Vec<String>>;

/// Whether the map's object for `file` has no symbol for `function`
/// (neither its own nor init/exit), so it was inlined or compiled out.
pub fn has_no_symbol(map: &ReachMap, file: &str, function: &str) -> bool {
    map.files.get(file).is_some_and(|f| {
        !f.functions.contains(function)
            && !f.init_exit.contains(function)
            && !f.from_headers.contains(function)
            && !map
                .workloads
                .values()
                .any(|w| insns_of(w, function).is_some())
    })
}

/// Rank `library` by the share of each workload's kernel instructions the
/// series' changed functions (those the base defines) take; a function
/// with no symbol of its own counts as the callers in `inlined` it runs
/// inside (an upper bound, said so).
pub fn rank(
    touched: &[Touched],
    map: &ReachMap,
    library: &[LibraryCampaign],
    inlined: &Inlined,
) -> Ranking {
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
    let mut most: Vec<Option<(usize, Share, Per)>> = vec![None; changed.len()];
    for (c, campaign) in library.iter().enumerate() {
        let Some(workload) = map.workloads.get(&campaign.name) else {
            unmapped.push(c);
            continue;
        };
        let mut functions: Vec<Share> = Vec::new();
        for (k, (file, name)) in changed.iter().enumerate() {
            let (insns, via) = match insns_of(workload, name) {
                Some(insns) => (insns, Vec::new()),
                None => {
                    let key = (file.to_string(), name.to_string());
                    let ran: Vec<(String, f64)> = inlined
                        .get(&key)
                        .into_iter()
                        .flatten()
                        .filter_map(|caller| {
                            insns_of(workload, caller).map(|v| (caller.clone(), v))
                        })
                        .collect();
                    if ran.is_empty() {
                        continue;
                    }
                    (
                        ran.iter().map(|(_, v)| v).sum(),
                        ran.into_iter().map(|(c, _)| c).collect(),
                    )
                }
            };
            let share = Share {
                file: file.to_string(),
                name: name.to_string(),
                share: workload.share(insns),
                insns,
                via,
            };
            if most[k]
                .as_ref()
                .is_none_or(|(_, best, _)| share.share > best.share)
            {
                most[k] = Some((c, share.clone(), workload.per));
            }
            // The same function changed twice (two files' statics of one
            // name) counts once.
            if !functions.iter().any(|f| f.name == share.name) {
                functions.push(share);
            }
        }
        if !functions.is_empty() {
            functions.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.name.cmp(&b.name)));
            ranked.push(Ranked {
                campaign: c,
                share: functions.iter().map(|f| f.share).sum(),
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
                Some((campaign, share, per)) => FunctionReach::Most {
                    campaign,
                    share: share.share,
                    insns: share.insns,
                    per,
                    via: share.via,
                },
                None => FunctionReach::Not(why_not(
                    map,
                    file,
                    name,
                    inlined.get(&(file.to_string(), name.to_string())),
                )),
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

impl Ranking {
    /// The library campaigns `run --series` measures the series with: for
    /// each changed function, the workload that executes it most, so that
    /// every function any workload runs is measured where it weighs most;
    /// largest share first, each once.
    pub fn to_run(&self) -> Vec<usize> {
        let most: BTreeSet<usize> = self
            .functions
            .iter()
            .filter_map(|(_, _, reach)| match reach {
                FunctionReach::Most { campaign, .. } => Some(*campaign),
                FunctionReach::Not(_) => None,
            })
            .collect();
        self.ranked
            .iter()
            .map(|r| r.campaign)
            .filter(|c| most.contains(c))
            .collect()
    }

    /// Why the library campaign `campaign` runs for the series: each
    /// changed function it executes, with its share (`map_shown`: the
    /// reach map's file, named as the evidence).
    pub fn executes(&self, campaign: usize, map_shown: &str) -> Vec<ReachedRecord> {
        let Some(r) = self.ranked.iter().find(|r| r.campaign == campaign) else {
            return Vec::new();
        };
        r.functions
            .iter()
            .map(|f| ReachedRecord {
                function: f.name.clone(),
                file: f.file.clone(),
                how: vec![format!(
                    "{}{} of its kernel instructions, {:.1} insns/{} on the base kernel{} ({map_shown})",
                    if f.via.is_empty() { "" } else { "<= " },
                    percent(f.share),
                    f.insns,
                    r.per,
                    inside(&f.via)
                )],
            })
            .collect()
    }

    /// Whether some library workload executes `function` of `file`.
    pub fn runs(&self, file: &str, function: &str) -> bool {
        self.functions.iter().any(|(f, name, reach)| {
            f == file && name == function && matches!(reach, FunctionReach::Most { .. })
        })
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
        let _ = writeln!(s, "  {:>8}  {} ({})", percent(r.share), c.name, c.shown);
        for f in &r.functions {
            let _ = writeln!(
                s,
                "            {}: {} {}{}, {:.1} insns/{}{}",
                f.file,
                f.name,
                if f.via.is_empty() { "" } else { "<= " },
                percent(f.share),
                f.insns,
                r.per,
                inside(&f.via)
            );
        }
    }
    if let Some(rest) = ranking.ranked.get(SHOWN..).filter(|r| !r.is_empty()) {
        let _ = writeln!(
            s,
            "  ... and {} more, each at {} or less",
            rest.len(),
            percent(rest[0].share)
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
                via,
            } => {
                let _ = writeln!(
                    s,
                    "  {file}: {name}  {} ({}{}, {insns:.1} insns/{per}){}",
                    library[*campaign].name,
                    if via.is_empty() { "" } else { "<= " },
                    percent(*share),
                    inside(via)
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
    let run: Vec<&str> = ranking
        .to_run()
        .into_iter()
        .map(|c| library[c].name.as_str())
        .collect();
    if !run.is_empty() {
        let _ = writeln!(
            s,
            "`run --series` runs, besides the ci/seeds campaigns chosen above, the workload that runs each changed function most: {}",
            run.join(", ")
        );
    }
    s
}

/// For a function counted by the callers it is inlined into: which.
fn inside(via: &[String]) -> String {
    if via.is_empty() {
        String::new()
    } else {
        format!(
            "; no symbol of its own: inlined into {}, whose instructions these are",
            via.join(", ")
        )
    }
}

#[cfg(test)]
#[path = "library_tests.rs"]
mod tests;
