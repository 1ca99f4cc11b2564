//! Campaigns chosen by the series: what a series changes (`touched`: the
//! functions whose lines it changes, found in the trees' C by `cscan`),
//! against what each shipped campaign executes (its `reaches:` block,
//! `config::reaches`, and the committed runs it names, `evidence`). A
//! campaign is chosen when it executes a function the series changes,
//! declared or seen on the base kernel by one of its runs; the choice says
//! which and how for each. A series that changes nothing any campaign
//! reaches is told so: a run of it says nothing about the series.
//!
//! The candidates are the campaign files of `ci/seeds/` with a `reaches:`
//! block. `choose` and `render` are pure.

pub mod coverage;
pub mod cscan;
pub mod evidence;
pub mod library;
pub mod map;
pub mod touched;

use std::fmt::Write;
use std::path::{Path, PathBuf};

use crate::config::reaches::Reaches;
use crate::config::{Campaign, ConfigError, TreeSource};
use crate::results::{ReachRecord, ReachedRecord};
use crate::variants::Patches;
pub use evidence::{EvidenceFile, Seen};
pub use touched::{Place, Touched};

/// A campaign that may be chosen.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub name: String,
    /// Its file, as found (under the `ci/` directory given).
    pub file: PathBuf,
    /// Its file relative to the source checkout, for people
    /// (`ci/seeds/002-dfl-rstat.yaml`).
    pub shown: String,
    pub workload: String,
    pub tree: TreeSource,
    pub reaches: Reaches,
    pub evidence: Vec<EvidenceFile>,
}

/// Why the candidates cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReachError {
    #[error("cannot list the campaigns in {}", dir.display())]
    List {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Campaign(#[from] ConfigError),
    #[error("campaign file {}: it has `reaches:`, but no variant applies the whole series, so a series run through it would not be measured", file.display())]
    NoSeriesVariant { file: PathBuf },
    #[error("campaign file {}: reaches.same_as {}: {message}", file.display(), other.display())]
    SameAs {
        file: PathBuf,
        other: PathBuf,
        message: String,
    },
    #[error(transparent)]
    Evidence(#[from] evidence::EvidenceError),
}

impl ReachError {
    /// Whether a campaign file is at fault (a usage error), not the host
    /// (a directory it cannot list) or the evidence read beside it.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            ReachError::Campaign(_)
                | ReachError::NoSeriesVariant { .. }
                | ReachError::SameAs { .. }
        )
    }
}

/// The campaign files (`*.yaml`, not hidden) directly in `dir`, in name
/// order.
pub(crate) fn campaign_files(dir: &Path) -> Result<Vec<PathBuf>, ReachError> {
    let list = |source| ReachError::List {
        dir: dir.to_path_buf(),
        source,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(list)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(list)?;
    // A hidden file is a copy made to run (ci/mm-library.sh --online) or
    // an editor's, not a shipped campaign.
    files.retain(|p| {
        p.is_file()
            && p.extension().is_some_and(|e| e == "yaml")
            && !p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
    });
    files.sort();
    Ok(files)
}

/// Every campaign file directly in `ci_dir/seeds` that has a `reaches:`
/// block, in name order (the cost lane's after the others), with its
/// evidence read.
pub fn candidates(ci_dir: &Path) -> Result<Vec<Candidate>, ReachError> {
    let files = campaign_files(&ci_dir.join("seeds"))?;
    let root = ci_dir.parent().unwrap_or(ci_dir);
    let mut out = Vec::new();
    for file in files {
        let campaign = Campaign::load(&file)?;
        let Some(reaches) = campaign.reaches.clone() else {
            continue;
        };
        let measures_series = match &campaign.variants {
            None => true,
            Some(variants) => variants.iter().any(|v| v.patches == Patches::All),
        };
        if !measures_series && campaign.per_patch == crate::variants::PerPatch::Off {
            return Err(ReachError::NoSeriesVariant { file });
        }
        let mut here = file.parent().unwrap_or(Path::new(".")).to_path_buf();
        // The campaign whose runs the evidence must be.
        let mut evidence_of = campaign.name.clone();
        let reaches = match &reaches.same_as {
            None => reaches,
            Some(other) => {
                let other_file = here.join(other);
                let wrong = |message: &str| ReachError::SameAs {
                    file: file.clone(),
                    other: other.clone(),
                    message: message.to_string(),
                };
                let theirs = Campaign::load(&other_file)?;
                let Some(block) = theirs.reaches.filter(|r| r.same_as.is_none()) else {
                    return Err(wrong("that campaign has no `reaches:` block of its own"));
                };
                if theirs.workload != campaign.workload
                    || theirs.kernel != campaign.kernel
                    || theirs.tree != campaign.tree
                {
                    return Err(wrong(
                        "that campaign runs another workload, kernel or tree, so what it executes says nothing of this one",
                    ));
                }
                here = other_file.parent().unwrap_or(Path::new(".")).to_path_buf();
                evidence_of = theirs.name;
                block
            }
        };
        let evidence = reaches
            .evidence
            .iter()
            .map(|e| evidence::read(&evidence_of, &here.join(&e.results), e.calls.as_deref()))
            .collect::<Result<Vec<_>, _>>()?;
        let workload = campaign
            .workload
            .get("kind")
            .and_then(|k| k.as_str())
            .unwrap_or("?")
            .to_string();
        let cost_lane = campaign.vm.cost_model != crate::config::CostModel::None;
        out.push((
            cost_lane,
            Candidate {
                name: campaign.name,
                shown: shown(root, &file),
                file,
                workload,
                tree: campaign.tree,
                reaches,
                evidence,
            },
        ));
    }
    // The cost lane takes ten times as long as icount: a series that
    // chooses both gets its first verdict from the quicker one.
    out.sort_by_key(|(cost_lane, _)| *cost_lane);
    Ok(out.into_iter().map(|(_, c)| c).collect())
}

/// Drop each declared function the base tree does not define in the file
/// named (a tree other than the one the map was written for, a renamed
/// function), and say which: an entry that names nothing cannot choose.
pub fn drop_undefined(
    repo: &git2::Repository,
    base: git2::Oid,
    candidates: &mut [Candidate],
) -> Result<Vec<String>, git2::Error> {
    let tree = repo.find_commit(base)?.tree()?;
    let mut scans: std::collections::BTreeMap<PathBuf, Option<cscan::Scan>> = Default::default();
    let mut notes = Vec::new();
    for c in candidates.iter_mut() {
        let mut kept = Vec::new();
        for f in std::mem::take(&mut c.reaches.functions) {
            if !scans.contains_key(&f.file) {
                let scan = match tree.get_path(&f.file) {
                    Ok(entry) => Some(cscan::scan(repo.find_blob(entry.id())?.content())),
                    Err(e) if e.code() == git2::ErrorCode::NotFound => None,
                    Err(e) => return Err(e),
                };
                scans.insert(f.file.clone(), scan);
            }
            let defined = scans[&f.file]
                .as_ref()
                .is_some_and(|s| s.function_names().any(|n| n == f.name));
            if defined {
                kept.push(f);
            } else {
                notes.push(format!(
                    "{} declares {} in {}, which the base tree does not define there; that entry is left out",
                    c.shown,
                    f.name,
                    f.file.display()
                ));
            }
        }
        c.reaches.functions = kept;
    }
    Ok(notes)
}

/// `path` relative to `root` when it is inside it.
pub fn shown(root: &Path, path: &Path) -> String {
    let clean = normalize(path);
    clean
        .strip_prefix(normalize(root))
        .unwrap_or(&clean)
        .display()
        .to_string()
}

/// `a/b/../c` → `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir if out.file_name().is_some() => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// One touched function a chosen campaign executes, and how that is known.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub file: String,
    pub function: String,
    /// The `why` of the campaign's declaration, if it declares it.
    pub declared: Option<String>,
    /// Why no profile can show it (the declaration's `unprofiled`).
    pub unprofiled: Option<String>,
    /// The runs that saw it on the base kernel (their files, shown).
    pub seen: Vec<(String, Seen)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    /// Index into the candidates.
    pub candidate: usize,
    pub hits: Vec<Hit>,
}

/// The choice for one series.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub touched: Vec<Touched>,
    pub chosen: Vec<Chosen>,
    /// The touched functions of the base that no candidate executes
    /// (indices into `touched`); a function the series adds runs where its
    /// callers do, and is not counted here.
    pub unreached: Vec<usize>,
}

/// Choose, among `candidates`, the campaigns that execute a function the
/// series changes: declared in their `reaches:` (by file and name), or
/// seen on the base kernel by one of their runs (by symbol; only for a
/// function the base has).
pub fn choose(touched: &[Touched], candidates: &[Candidate], root: &Path) -> Choice {
    let mut chosen = Vec::new();
    let mut reached = vec![false; touched.len()];
    for (c, candidate) in candidates.iter().enumerate() {
        let mut hits = Vec::new();
        for (t, place) in touched.iter().enumerate() {
            let Place::Function { name, in_base } = &place.place else {
                continue;
            };
            let declaration = candidate
                .reaches
                .functions
                .iter()
                .find(|f| f.name == *name && Path::new(&place.file) == f.file);
            let declared = declaration.map(|f| f.why.clone());
            let unprofiled = declaration.and_then(|f| f.unprofiled.clone());
            let seen: Vec<(String, Seen)> = if *in_base {
                candidate
                    .evidence
                    .iter()
                    .filter_map(|e| e.saw(name).map(|s| (shown(root, &e.path), s.clone())))
                    .collect()
            } else {
                Vec::new()
            };
            if declared.is_some() || !seen.is_empty() {
                reached[t] = true;
                hits.push(Hit {
                    file: place.file.clone(),
                    function: name.clone(),
                    declared,
                    unprofiled,
                    seen,
                });
            }
        }
        if !hits.is_empty() {
            chosen.push(Chosen { candidate: c, hits });
        }
    }
    let unreached = touched
        .iter()
        .enumerate()
        .filter(|(t, place)| {
            matches!(place.place, Place::Function { in_base: true, .. }) && !reached[*t]
        })
        .map(|(t, _)| t)
        .collect();
    Choice {
        touched: touched.to_vec(),
        chosen,
        unreached,
    }
}

/// The line that must stand wherever a run of a series no campaign
/// reaches is reported.
pub const NOTHING_REACHED: &str = ReachRecord::NOTHING_REACHED;

impl Choice {
    /// The changed functions no chosen campaign executes, as results.json
    /// lists them (`file: function`), leaving out those `reached_elsewhere`
    /// says another kind of campaign runs.
    pub fn unreached_but(&self, reached_elsewhere: impl Fn(&Touched) -> bool) -> Vec<String> {
        self.unreached
            .iter()
            .map(|&t| &self.touched[t])
            .filter(|t| !reached_elsewhere(t))
            .map(|t| format!("{}: {}", t.file, t.function().unwrap_or("?")))
            .collect()
    }

    /// What each chosen campaign's results record about why it ran; for
    /// the sanity run when none is chosen, `None` as the index.
    pub fn record(&self, chosen: Option<usize>, candidate_file: &str) -> ReachRecord {
        let unreached = self.unreached_but(|_| false);
        let executes = chosen
            .and_then(|i| self.chosen.get(i))
            .map(|c| {
                c.hits
                    .iter()
                    .map(|h| ReachedRecord {
                        function: h.function.clone(),
                        file: h.file.clone(),
                        how: how(h, candidate_file),
                    })
                    .collect()
            })
            .unwrap_or_default();
        ReachRecord {
            executes,
            unreached,
        }
    }
}

/// How a hit is known, one phrase per source.
fn how(hit: &Hit, campaign_file: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(why) = &hit.declared {
        out.push(format!("declared in {campaign_file}: {why}"));
    }
    if let Some(reason) = &hit.unprofiled {
        out.push(format!("no profile can show it: {reason}"));
    }
    for (file, seen) in &hit.seen {
        out.push(format!("seen {seen} ({file})"));
    }
    out
}

/// The choice for people: what the series changes, each chosen campaign
/// with the functions it executes and how that is known, and what no
/// campaign executes. `library_runs`: how many workloads of the mm library
/// run besides (listed after this by `library::render`).
pub fn render(choice: &Choice, candidates: &[Candidate], library_runs: usize) -> String {
    let mut s = String::new();
    let functions: Vec<&Touched> = choice
        .touched
        .iter()
        .filter(|t| t.function().is_some())
        .collect();
    let _ = writeln!(s, "the series changes {} function(s):", functions.len());
    for t in &functions {
        let Place::Function { name, in_base } = &t.place else {
            continue;
        };
        let _ = writeln!(
            s,
            "  {}: {name}{}  (patch {})",
            t.file,
            if *in_base {
                ""
            } else {
                " (added by the series: it runs where its callers run)"
            },
            join(&t.patches)
        );
    }
    let outside: Vec<&Touched> = choice
        .touched
        .iter()
        .filter(|t| t.function().is_none())
        .collect();
    if !outside.is_empty() {
        let _ = writeln!(s, "and, outside any function (not used to choose):");
        // A new header or a table adds dozens of such lines; a file shows
        // its first few and how many more.
        const SHOWN_PER_FILE: usize = 4;
        let mut files: Vec<&str> = Vec::new();
        for t in &outside {
            if !files.contains(&t.file.as_str()) {
                files.push(&t.file);
            }
        }
        for file in files {
            let here: Vec<&&Touched> = outside.iter().filter(|t| t.file == file).collect();
            let cut = if here.len() > SHOWN_PER_FILE + 1 {
                SHOWN_PER_FILE
            } else {
                here.len()
            };
            for t in &here[..cut] {
                let what = match &t.place {
                    Place::Outside { what } => what.as_str(),
                    _ => "(not C source)",
                };
                let _ = writeln!(s, "  {}: {what}  (patch {})", t.file, join(&t.patches));
            }
            if cut < here.len() {
                let mut patches: Vec<usize> =
                    here[cut..].iter().flat_map(|t| t.patches.clone()).collect();
                patches.sort_unstable();
                patches.dedup();
                let _ = writeln!(
                    s,
                    "  {file}: ... and {} more declarations, macros or lines outside functions  (patch {})",
                    here.len() - cut,
                    join(&patches)
                );
            }
        }
    }
    if choice.chosen.is_empty() && library_runs > 0 {
        let _ = writeln!(
            s,
            "\nno ci/seeds campaign chosen: none of the {} shipped campaign(s) with a `reaches:` block executes a function this series changes; {library_runs} workload(s) of the mm library do (below).",
            candidates.len()
        );
        return s;
    }
    if choice.chosen.is_empty() {
        let _ = writeln!(
            s,
            "\nno campaign chosen: none of the {} shipped campaign(s) with a `reaches:` block executes a function this series changes.\nWARNING: {NOTHING_REACHED}.\n`run --series` without a campaign file runs the smoke campaign (ci/smoke.yaml) as that sanity check; to measure this series, write a campaign whose workload runs the code above and pass its file.",
            candidates.len()
        );
        return s;
    }
    let _ = writeln!(
        s,
        "\n{} campaign(s) chosen, each executing code the series changes:",
        choice.chosen.len()
    );
    for chosen in &choice.chosen {
        let c = &candidates[chosen.candidate];
        let _ = writeln!(s, "  {} ({}, workload {})", c.name, c.shown, c.workload);
        for hit in &chosen.hits {
            let _ = writeln!(s, "    executes {}: {}", hit.file, hit.function);
            for phrase in how(hit, &c.shown) {
                let _ = writeln!(s, "      {phrase}");
            }
        }
        if !c.reaches.kconfig.is_empty() {
            let _ = writeln!(
                s,
                "    its kernel builds that code: {}",
                c.reaches
                    .kconfig
                    .iter()
                    .map(|o| format!("CONFIG_{o}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    if !choice.unreached.is_empty() {
        let _ = writeln!(
            s,
            "no shipped campaign executes (a run says nothing about them):"
        );
        for &t in &choice.unreached {
            let t = &choice.touched[t];
            let _ = writeln!(s, "  {}: {}", t.file, t.function().unwrap_or("?"));
        }
    }
    s
}

fn join(patches: &[usize]) -> String {
    patches
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests;
