//! `patchbench cache`: list the cache's entries against the build budget,
//! evict down to a size, and print the `kconfigs/objects.tsv` lines of the
//! full builds it holds.

use crate::events::{Event, Sink};
use std::fmt::Write;
use std::path::PathBuf;

use bytesize::ByteSize;

use crate::build::cache::{self, Entry, FullBuild};

pub(super) const AFTER_HELP: &str = "Examples:\n  patchbench cache list\n  patchbench cache gc                 # down to the budget (--max, PATCHBENCH_CACHE_MAX, 8 GiB)\n  patchbench cache gc --max 2GiB\n  patchbench cache objects            # lines for kconfigs/objects.tsv\n\nThe budget counts kernel builds (finished kernels and work directories).\nSource trees and kernel-build workload trees are listed but not counted.\nA kernel a running campaign holds is never evicted.";

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
    /// For each full build in the cache, its line for kconfigs/objects.tsv:
    /// its .config's digest, the objects its make compiled (the CC and AS
    /// lines of its build.log), and which entry it is.
    Objects,
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
        Action::Objects => {
            let owned = dir.clone();
            let builds = crate::blocking::unblock(move || cache::full_builds(&owned)).await;
            if builds.is_empty() {
                sink.emit(Event::Note(format!(
                    "no full build in {} (an incremental build's log counts only what it rebuilt)",
                    dir.display()
                )));
            } else {
                sink.emit(Event::Output(render_objects(&dir, &builds)));
            }
        }
    }
    Ok(())
}

/// What `cache objects` prints: a line of `kconfigs/objects.tsv` for each
/// full build, by digest; its third column says which entry it came from,
/// for a person to replace with what the configuration is. A
/// configuration built twice with the same count is listed once.
pub fn render_objects(dir: &std::path::Path, builds: &[FullBuild]) -> String {
    let mut sorted: Vec<&FullBuild> = builds.iter().collect();
    sorted.sort_by(|a, b| {
        (&a.config_digest, a.objects, &a.entry).cmp(&(&b.config_digest, b.objects, &b.entry))
    });
    sorted.dedup_by(|a, b| a.config_digest == b.config_digest && a.objects == b.objects);
    let mut s = String::new();
    for b in sorted {
        let when = jiff::Timestamp::try_from(b.built)
            .map(|t| t.strftime("%Y-%m-%d").to_string())
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "{}\t{}\tLinux {}, {}: {} ({when})",
            b.config_digest,
            b.objects,
            b.kernel_release
                .as_deref()
                .unwrap_or("(no release in .config)"),
            b.compiler,
            b.entry.strip_prefix(dir).unwrap_or(&b.entry).display()
        );
    }
    s
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::time::{Duration, SystemTime};

    fn build(entry: &str, digest: char, objects: u64) -> FullBuild {
        FullBuild {
            entry: Path::new("/c/builds/linux-1").join(entry),
            config_digest: digest.to_string().repeat(64),
            objects,
            kernel_release: Some("6.12.118".into()),
            compiler: "gcc (Debian 12.2.0-14+deb12u1) 12.2.0".into(),
            // 2026-12-03 09:44:16 UTC.
            built: SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_291_056),
        }
    }

    #[test]
    fn cache_objects_prints_table_lines_by_digest_once_each() {
        let builds = [
            build("bbbb", 'b', 1229),
            build("aaaa", 'a', 1068),
            build("a2a2", 'a', 1068),
        ];
        let text = render_objects(Path::new("/c"), &builds);
        let mut lines = text.lines();
        let first = lines.next().unwrap();
        assert_eq!(
            first,
            format!(
                "{}\t1068\tLinux 6.12.118, gcc (Debian 12.2.0-14+deb12u1) 12.2.0: \
                 builds/linux-1/a2a2 (2026-12-03)",
                "a".repeat(64)
            )
        );
        assert!(
            lines
                .next()
                .unwrap()
                .starts_with(&format!("{}\t1229\t", "b".repeat(64)))
        );
        assert_eq!(lines.next(), None);
    }
}
