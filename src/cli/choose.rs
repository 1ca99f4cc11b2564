//! `plan --series` and `run --series` without a campaign file: read what
//! the series changes in the tree and choose the shipped campaigns that
//! execute it (`reach`). Shared by both commands, so that `plan` prints
//! exactly the choice `run` makes.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::args::{SourceArgs, tree_override};
use crate::config::{self, Campaign, TreeSource};
use crate::events::{Event, Sink};
use crate::reach::{self, Choice};
use crate::results::ReachRecord;
use crate::series::SeriesSource;

/// The choice for one series: the campaigns to run, in order.
pub(super) struct Chose {
    pub choice: Choice,
    /// The ci/seeds campaigns chosen, then the library's (each once).
    pub runs: Vec<ChosenRun>,
    /// The choice for people, headed by the tree, base and series.
    pub text: String,
}

/// One campaign chosen for the series, and why.
pub(super) struct ChosenRun {
    pub file: PathBuf,
    /// Its file relative to the checkout.
    pub shown: String,
    /// What results.json keeps of why it ran.
    pub record: ReachRecord,
}

impl Chose {
    /// The chosen campaigns' files, in order.
    pub fn files(&self) -> Vec<PathBuf> {
        self.runs.iter().map(|r| r.file.clone()).collect()
    }
}

/// Whether a command line asks for the series to choose the campaigns: a
/// series given without a campaign file (`none`, the A/A self-check, has
/// nothing to choose by and runs the built-in campaign).
pub(super) fn wanted(campaign_files: usize, sources: &SourceArgs) -> bool {
    campaign_files == 0 && sources.series.as_deref().is_some_and(|s| s != "none")
}

/// The tree the series is read against: `--tree`, else the built-in
/// campaign's, which every candidate must share (checked in [`choose`]).
fn tree_of(sources: &SourceArgs) -> anyhow::Result<TreeSource> {
    if let Some(tree) = &sources.tree {
        return Ok(tree_override(tree.clone(), sources.rev.clone()));
    }
    let origin = PathBuf::from("(built-in smoke campaign)");
    let smoke = Campaign::parse(config::DEFAULT_CAMPAIGN, &origin)?;
    Ok(resolved(smoke.tree, &config::default_campaign_dir()))
}

fn resolved(tree: TreeSource, dir: &Path) -> TreeSource {
    match tree {
        TreeSource::Tarball(p) => TreeSource::Tarball(dir.join(p)),
        TreeSource::Git { path, rev } => TreeSource::Git {
            path: dir.join(path),
            rev,
        },
        url => url,
    }
}

/// Apply the series to the tree (as `patchbench apply` does, nothing is
/// checked out), read what it changes, and choose.
pub(super) async fn choose(
    sources: &SourceArgs,
    cache_dir: &Path,
    sink: &dyn Sink,
) -> anyhow::Result<Chose> {
    let series_text = sources
        .series
        .as_deref()
        .context("--series is needed to choose campaigns by the series")?;
    let ci = config::default_campaign_dir();
    let root = ci.parent().unwrap_or(&ci).to_path_buf();
    let tree_source = tree_of(sources)?;
    let ci_dir = ci.clone();
    let candidates = crate::blocking::unblock(move || reach::candidates(&ci_dir)).await?;
    if sources.tree.is_none() {
        for c in &candidates {
            let theirs = resolved(c.tree.clone(), c.file.parent().unwrap_or(Path::new(".")));
            anyhow::ensure!(
                same_tree(&theirs, &tree_source),
                "campaign file {} builds {theirs}, not the built-in campaign's {tree_source} that the series is read against; pass --tree",
                c.file.display()
            );
        }
    }
    sink.emit(Event::Note(format!("tree: {tree_source}")));
    let tree = crate::tree::obtain(&tree_source, cache_dir).await?;
    let repo = tree.open()?;
    let source = SeriesSource::parse(series_text, Path::new(""));
    let lore_url = sources
        .lore_url
        .clone()
        .unwrap_or_else(|| crate::series::lore::DEFAULT_BASE_URL.to_string());
    // The touched functions are read where the series lands as every
    // campaign would apply it: with the fuzz the command line allows.
    let fuzz = sources.fuzz.unwrap_or(0);
    let applied =
        crate::campaign::apply_series(&repo, &tree, &tree_source, &source, &lore_url, fuzz, sink)
            .await?;
    let commits: Vec<Option<git2::Oid>> = applied
        .patches
        .iter()
        .map(|p| (!p.already_applied()).then_some(p.commit))
        .collect();
    let (repo_path, base) = (tree.repo_path.clone(), applied.base);
    let what = source.to_string();
    let (touched, candidates, notes) = crate::blocking::unblock(move || {
        let repo = crate::tree::Tree::open_path(&repo_path)?;
        let touched = reach::touched::of_commits(&repo, base, &commits)
            .with_context(|| format!("cannot read what series {what} changes"))?;
        let mut candidates = candidates;
        let notes = reach::drop_undefined(&repo, base, &mut candidates)
            .context("cannot read the declared functions' files in the base tree")?;
        anyhow::Ok((touched, candidates, notes))
    })
    .await?;
    for note in notes {
        sink.emit(Event::Note(format!("warning: {note}")));
    }
    let choice = reach::choose(&touched, &candidates, &root);
    let mut text = String::new();
    let _ = writeln!(
        text,
        "series {source} on {tree_source}\n{}",
        applied.summary()
    );
    for (patch, how) in applied.series.patches.iter().zip(&applied.patches) {
        if how.has_fuzz() {
            let _ = writeln!(
                text,
                "WARNING: \"{}\" applied {}: the kernels measured are patched where the context differs from what its author saw",
                patch.subject(),
                how.describe()
            );
        }
    }
    let (touched, base, ci_dir, map_root, repo_path) = (
        choice.touched.clone(),
        applied.base,
        ci.clone(),
        root.clone(),
        tree.repo_path.clone(),
    );
    let library =
        crate::blocking::unblock(move || library(&touched, base, &repo_path, &ci_dir, &map_root))
            .await?;
    let ranked = match library {
        Library::Ranked(ranked) => {
            for note in &ranked.notes {
                sink.emit(Event::Note(format!("warning: {note}")));
            }
            Some(ranked)
        }
        Library::Note(note) => {
            sink.emit(Event::Note(format!("warning: {note}")));
            None
        }
    };
    let runs = runs(&choice, &candidates, ranked.as_ref(), &root);
    let library_runs = runs.len() - choice.chosen.len();
    text.push_str(&reach::render(&choice, &candidates, library_runs));
    if let Some(ranked) = &ranked {
        text.push_str(&reach::library::render(
            &ranked.ranking,
            &ranked.campaigns,
            &ranked.map_shown,
        ));
    }
    Ok(Chose { choice, runs, text })
}

/// The campaigns to run: the ci/seeds campaigns chosen, then the library
/// workloads that run a changed function most (`Ranking::to_run`). Each
/// record's `unreached` is what no campaign of either kind executes.
fn runs(
    choice: &Choice,
    candidates: &[reach::Candidate],
    library: Option<&RankedLibrary>,
    root: &Path,
) -> Vec<ChosenRun> {
    let unreached = choice.unreached_but(|t| {
        library.is_some_and(|l| t.function().is_some_and(|f| l.ranking.runs(&t.file, f)))
    });
    let mut runs: Vec<ChosenRun> = choice
        .chosen
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let file = candidates[c.candidate].file.clone();
            let shown = reach::shown(root, &file);
            let record = ReachRecord {
                unreached: unreached.clone(),
                ..choice.record(Some(i), &shown)
            };
            ChosenRun {
                file,
                shown,
                record,
            }
        })
        .collect();
    // Library campaigns are ci/mm's, never a ci/seeds one chosen above.
    if let Some(l) = library {
        for c in l.ranking.to_run() {
            let campaign = &l.campaigns[c];
            runs.push(ChosenRun {
                file: campaign.file.clone(),
                shown: campaign.shown.clone(),
                record: ReachRecord {
                    executes: l.ranking.executes(c, l.map_of(c)),
                    unreached: unreached.clone(),
                },
            });
        }
    }
    runs
}

/// The mm library ranked by the shipped reach map, or why it is not.
enum Library {
    Ranked(RankedLibrary),
    Note(String),
}

/// The library's campaigns, their ranking for the series, and the map's
/// file as shown.
struct RankedLibrary {
    ranking: reach::library::Ranking,
    campaigns: Vec<reach::library::LibraryCampaign>,
    /// The maps as the ranking's heading names them.
    map_shown: String,
    /// The library kernel's map, as shown.
    first_shown: String,
    /// Campaign name → the map its workload comes from, where that is a
    /// second kernel's (`reach::SECOND_MAPS`), as shown.
    second: BTreeMap<String, String>,
    /// What the ranking left out, and why (a second map missing or not
    /// fitting).
    notes: Vec<String>,
}

impl RankedLibrary {
    /// The map campaign `c`'s workload comes from, as shown.
    fn map_of(&self, c: usize) -> &str {
        let name = &self.campaigns[c].name;
        self.second.get(name).unwrap_or(&self.first_shown)
    }
}

/// Rank the library campaigns (`ci/mm/`) for `touched` by the shipped
/// reach map, when the map is of the tree at `base`; a changed function
/// with no symbol in the map's object is found in its callers in the
/// base's C.
fn library(
    touched: &[reach::Touched],
    base: git2::Oid,
    repo_path: &Path,
    ci: &Path,
    root: &Path,
) -> anyhow::Result<Library> {
    let path = root.join(super::reach::SHIPPED_MAP);
    let shown = reach::shown(root, &path);
    if !path.is_file() {
        return Ok(Library::Note(format!(
            "no reach map at {shown}: the mm library is not ranked for this series"
        )));
    }
    let mut map = reach::map::ReachMap::load(&path)?;
    if map.tree.base_commit != base.to_string() {
        return Ok(Library::Note(format!(
            "the reach map {shown} is of {} at {}, and the series is read at {base}: the mm library is not ranked for it",
            map.tree.origin, map.tree.base_commit
        )));
    }
    let (map_shown, second, notes) = add_second_maps(&mut map, root, &shown)?;
    let mut inlined = reach::library::Inlined::new();
    let repo = crate::tree::Tree::open_path(repo_path)?;
    let tree = repo.find_commit(base)?.tree()?;
    for t in touched {
        let reach::Place::Function {
            name,
            in_base: true,
        } = &t.place
        else {
            continue;
        };
        if !reach::library::has_no_symbol(&map, &t.file, name) {
            continue;
        }
        let blob = repo.find_blob(tree.get_path(Path::new(&t.file))?.id())?;
        let scan = reach::cscan::scan(blob.content());
        // A caller in .init or .exit has a symbol too: what is inlined
        // only there is init-only, not compiled out.
        let file = &map.files[&t.file];
        let callers = reach::library::symbol_callers(blob.content(), &scan, name, |f| {
            file.functions.contains(f) || file.init_exit.contains(f)
        });
        inlined.insert((t.file.clone(), name.clone()), callers);
    }
    let campaigns = reach::library::library_campaigns(ci)?;
    let ranking = reach::library::rank(touched, &map, &campaigns, &inlined);
    Ok(Library::Ranked(RankedLibrary {
        ranking,
        campaigns,
        map_shown,
        first_shown: shown,
        second,
        notes,
    }))
}

/// Adds to `map` what the shipped second kernels' maps (`SECOND_MAPS`)
/// know that it does not. Returns the maps as the ranking's heading names
/// them (`shown`, the first map, with each added map's files), campaign
/// name → the second map its workload comes from, and what was left out
/// and why.
fn add_second_maps(
    map: &mut reach::map::ReachMap,
    root: &Path,
    shown: &str,
) -> anyhow::Result<(String, BTreeMap<String, String>, Vec<String>)> {
    let mut map_shown = shown.to_string();
    let mut second = BTreeMap::new();
    let mut notes = Vec::new();
    for other in super::reach::SECOND_MAPS {
        let path = root.join(other);
        let other_shown = reach::shown(root, &path);
        if !path.is_file() {
            notes.push(format!(
                "no reach map at {other_shown}: what only its kernel builds is not ranked"
            ));
            continue;
        }
        let other = reach::map::ReachMap::load(&path)?;
        let campaigns: Vec<String> = other.workloads.keys().cloned().collect();
        match map.add_kernel(other) {
            Ok(files) => {
                if !files.is_empty() {
                    write!(map_shown, "; {} from {other_shown}", files.join(", "))
                        .expect("writing to a String");
                }
                second.extend(campaigns.into_iter().map(|c| (c, other_shown.clone())));
            }
            Err(why) => notes.push(format!("the reach map {other_shown} {why}: it is left out")),
        }
    }
    Ok((map_shown, second, notes))
}

fn same_tree(a: &TreeSource, b: &TreeSource) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    match (a, b) {
        (TreeSource::Tarball(x), TreeSource::Tarball(y)) => canon(x) == canon(y),
        _ => a == b,
    }
}
