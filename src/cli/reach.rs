//! `patchbench reach`: the reach map of the mm library's kernel. `reach
//! build` makes it from a kernel build directory (its mm/ objects) and the
//! kept counting-lane runs; `reach` alone prints the coverage it gives,
//! per mm/ file or, with `--file`, per function.

use std::path::{Path, PathBuf};

use clap::Subcommand;

use crate::events::{Event, Sink};
use crate::reach::coverage;
use crate::reach::map::{self, MapError, ReachMap};

/// The map committed for the shipped tree, relative to the checkout.
pub(super) const SHIPPED_MAP: &str = "results/reach/linux-6.12-mm-all.json";

/// The maps of the library's second kernels (kconfigs/mm-kmemleak.config's),
/// relative to the checkout: `plan --series` ranks the files only they
/// build by their workloads (`ReachMap::add_kernel`). `reach` reads the
/// library kernel's alone.
pub(super) const SECOND_MAPS: &[&str] = &["results/reach/linux-6.12-mm-kmemleak.json"];

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ReachArgs {
    #[command(subcommand)]
    action: Option<ReachAction>,
    /// The reach map to read [default: results/reach/linux-6.12-mm-all.json
    /// of this checkout, the shipped tree's].
    #[arg(long, value_name = "FILE")]
    map: Option<PathBuf>,
    /// One mm/ file's functions (`mm/ksm.c`, or its object `mm/ksm.o`):
    /// each with the workload that executes it most, or "not executed".
    #[arg(long, value_name = "mm/FILE.c")]
    file: Option<String>,
    /// The per-file table as Markdown (docs/reach.md's).
    #[arg(long, conflicts_with = "file")]
    markdown: bool,
}

#[derive(Subcommand)]
enum ReachAction {
    /// Build the map from a kernel build directory and kept runs, and
    /// write it atomically.
    #[command(after_help = BUILD_AFTER_HELP)]
    Build(BuildArgs),
}

#[derive(clap::Args)]
struct BuildArgs {
    /// A kernel build directory of the cache (`builds/<tree>/<key>`): its
    /// .config, patchbench-build.json (the commit built), mm/ objects, and
    /// `source` link (the tree's repository, where each object's C file is
    /// read at that commit).
    #[arg(long, value_name = "DIR")]
    objects: PathBuf,
    /// A directory of kept runs, `<run>/results.json` each; runs of
    /// another tree or .config than the objects' are skipped, and named.
    #[arg(long, value_name = "DIR")]
    results: PathBuf,
    /// Where the map goes.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

const BUILD_AFTER_HELP: &str = "\
Examples:
  patchbench reach build --objects ~/.cache/patchbench/builds/<tree>/<key> --results results/mm --out results/reach/linux-6.12-mm-all.json

The build directory is the library's kernel (ci/mm/*.yaml build it: its
.config has CONFIG_KSM=y); results.json's variants[].kernel.build_dir
names it below the cache. Per workload the map holds the base kernel's
(variant A) instructions per function per operation, the mean over
samples of the profile's count over `ops`; per mm/ object, the functions
its C file defines, with .init/.exit ones and headers' copies apart. It
records the tree, the .config's sha256 and each results.json's sha256.";

/// The `after_help` of `patchbench reach`.
pub(super) const AFTER_HELP: &str = "\
Examples:
  patchbench reach                                   # per mm/ file: functions built, executed, %
  patchbench reach --file mm/ksm.c                   # each function: the workload that runs it most
  patchbench reach --markdown                        # the table of docs/reach.md
  patchbench reach --map results/reach/linux-6.12-mm-all.json --file mm/vmscan.c
  patchbench reach build --objects ~/.cache/patchbench/builds/<tree>/<key> --results results/mm --out results/reach/linux-6.12-mm-all.json

Built: defined in the file's C, and in its object outside .init/.exit
sections (a header's static functions the object also holds are listed
apart, as `headers`).
Executed: named by some workload's base profile inside its window. The
workload that runs a function most is the one where it takes the largest
share of the kernel's instructions; its instructions per op (per run for
a workload without ops) are shown beside it.
Exit codes: 0, or 2 for a map, directory or --file that cannot be used.";

/// A file of this checkout (`rel` from its root, the parent of ci/).
fn in_checkout(rel: &str) -> PathBuf {
    let ci = crate::config::default_campaign_dir();
    ci.parent().unwrap_or(&ci).join(rel)
}

fn map_path(args: &ReachArgs) -> PathBuf {
    args.map.clone().unwrap_or_else(|| in_checkout(SHIPPED_MAP))
}

/// With no `--map` given, the shipped second kernel's map (as shown) that
/// has `file`, the library kernel's lacking it.
fn second_map_of(args: &ReachArgs, file: &str) -> Option<&'static str> {
    if args.map.is_some() {
        return None;
    }
    SECOND_MAPS.iter().copied().find(|m| {
        ReachMap::load(&in_checkout(m)).is_ok_and(|map| coverage::file(&map, file).is_some())
    })
}

/// The checks before any reading: the directories and the map are there.
pub(super) fn check(args: &ReachArgs) -> anyhow::Result<()> {
    let missing = |option: &'static str, path: &Path, what: &str| MapError::Option {
        option,
        value: path.display().to_string(),
        message: what.to_string(),
    };
    match &args.action {
        Some(ReachAction::Build(b)) => {
            if !b.objects.join(".config").is_file() {
                return Err(missing(
                    "--objects",
                    &b.objects,
                    "not a kernel build directory (no .config)",
                )
                .into());
            }
            if !b.results.is_dir() {
                return Err(missing("--results", &b.results, "not a directory").into());
            }
        }
        None => {
            let path = map_path(args);
            if !path.is_file() {
                return Err(missing(
                    "--map",
                    &path,
                    "no such file; build one with `patchbench reach build`",
                )
                .into());
            }
        }
    }
    Ok(())
}

pub(super) fn reach(args: ReachArgs, sink: &dyn Sink) -> anyhow::Result<()> {
    check(&args)?;
    if let Some(ReachAction::Build(b)) = &args.action {
        let built = map::build(&b.objects, &b.results)?;
        built.write(&b.out)?;
        for s in &built.skipped {
            sink.emit(Event::Note(format!("skipped {}: {}", s.results, s.why)));
        }
        let (_, total) = coverage::by_file(&built);
        sink.emit(Event::Output(format!(
            "wrote {}: {} workloads, {} mm/ files; {} of {} functions built executed ({:.1}%)\n",
            b.out.display(),
            built.workloads.len(),
            built.files.len(),
            total.executed,
            total.built,
            total.percent()
        )));
        return Ok(());
    }
    let path = map_path(&args);
    let map = ReachMap::load(&path)?;
    let text = match &args.file {
        Some(file) => coverage::file(&map, file).ok_or_else(|| MapError::Option {
            option: "--file",
            value: file.clone(),
            message: format!(
                "not an mm/ file of the map {} (its files are like mm/ksm.c){}",
                path.display(),
                second_map_of(&args, file)
                    .map(|m| format!("; a second kernel builds it: --map {m}"))
                    .unwrap_or_default()
            ),
        })?,
        None if args.markdown => coverage::markdown(&map),
        None => coverage::table(&map),
    };
    sink.emit(Event::Output(text));
    Ok(())
}
