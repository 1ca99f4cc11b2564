//! `patchbench cache`: list the cache's entries against the build budget,
//! and evict down to a size.

use crate::events::{Event, Sink};
use std::fmt::Write;
use std::path::PathBuf;

use bytesize::ByteSize;

use crate::build::cache::{self, Entry};

pub(super) const AFTER_HELP: &str = "Examples:\n  patchbench cache list\n  patchbench cache gc                 # down to the budget (--max, PATCHBENCH_CACHE_MAX, 8 GiB)\n  patchbench cache gc --max 2GiB\n\nThe budget counts kernel builds (finished kernels and work directories).\nSource trees and kernel-build workload trees are listed but not counted.\nA kernel a running campaign holds is never evicted.";

#[derive(clap::Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    action: Action,
    /// The cache directory [default: $XDG_CACHE_HOME/patchbench or ~/.cache/patchbench].
    #[arg(long, value_name = "DIR", env = "PATCHBENCH_CACHE", global = true)]
    cache_dir: Option<PathBuf>,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Every entry: size, last use, what it is, and the builds' total
    /// against the budget.
    List {
        /// The budget to compare with.
        #[arg(long, value_name = "SIZE", env = "PATCHBENCH_CACHE_MAX", default_value_t = cache::DEFAULT_BUDGET)]
        max: ByteSize,
    },
    /// Evict the least recently used kernels until the builds fit.
    Gc {
        /// The size to bring the builds down to.
        #[arg(long, value_name = "SIZE", env = "PATCHBENCH_CACHE_MAX", default_value_t = cache::DEFAULT_BUDGET)]
        max: ByteSize,
    },
}

pub(super) async fn cache(args: CacheArgs, sink: &dyn Sink) -> anyhow::Result<()> {
    let dir = args
        .cache_dir
        .unwrap_or_else(super::args::default_cache_dir);
    match args.action {
        Action::List { max } => {
            let owned = dir.clone();
            let entries = crate::blocking::unblock(move || cache::entries(&owned)).await;
            sink.emit(Event::Output(render_list(&dir, &entries, max)));
        }
        Action::Gc { max } => {
            let owned = dir.clone();
            let done = crate::blocking::unblock(move || cache::evict(&owned, max)).await?;
            sink.emit(Event::Output(render_gc(&dir, &done, max)));
        }
    }
    Ok(())
}

/// What `cache gc` prints: each entry evicted, then where the builds stand.
pub fn render_gc(dir: &std::path::Path, done: &cache::Eviction, budget: ByteSize) -> String {
    let mut s = String::new();
    for e in &done.evicted {
        let _ = writeln!(
            s,
            "evicted {:>10}  {}  {}",
            e.size.to_string(),
            e.kind.describe(),
            e.path.strip_prefix(dir).unwrap_or(&e.path).display()
        );
    }
    let _ = writeln!(
        s,
        "builds now {} against {budget}{}",
        done.total,
        if done.over {
            "; the rest is in use by running campaigns"
        } else {
            ""
        }
    );
    s
}

/// The table `cache list` prints: one line per entry, least recently used
/// first among the counted ones, then the totals.
pub fn render_list(dir: &std::path::Path, entries: &[Entry], budget: ByteSize) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "cache {}", dir.display());
    let mut sorted: Vec<&Entry> = entries.iter().collect();
    sorted.sort_by_key(|e| (!e.kind.counted(), e.last_use));
    for e in &sorted {
        let when = jiff::Timestamp::try_from(e.last_use)
            .map(|t| t.strftime("%Y-%m-%d %H:%M").to_string())
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "  {:>10}  {when}  {}{}  {}",
            e.size.to_string(),
            e.kind.describe(),
            if e.in_use { " [in use]" } else { "" },
            e.path.strip_prefix(dir).unwrap_or(&e.path).display()
        );
    }
    let counted: u64 = entries
        .iter()
        .filter(|e| e.kind.counted())
        .map(|e| e.size.0)
        .sum();
    let _ = writeln!(
        s,
        "builds: {} in {} entries, budget {budget}{}",
        ByteSize(counted),
        entries.iter().filter(|e| e.kind.counted()).count(),
        if counted > budget.0 {
            " (over: `patchbench cache gc` evicts the least recently used)"
        } else {
            ""
        }
    );
    s
}
