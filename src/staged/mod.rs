//! The host's half of the kinds that run a program staged into the boot's
//! initramfs (`workload::StagedPlan`): the program and everything it loads
//! copied into a root, written as a cpio archive in the cache (named by a
//! content key, reused by every later run), which every boot of the
//! campaign appends to its initramfs (`patchbench_agent::staged`). The
//! guest unpacks it before its first instruction, so no sample reads the
//! host, as a kernel build's staged root ([`crate::kbuild`]).
//!
//! In the cache directory, `staged/`:
//! - `stress-ng-<key>.cpio`: the host's stress-ng, its ELF interpreter
//!   and every library `ldd` names, under their host paths, links as
//!   links ([`stress_ng`]); the key covers each file's path and bytes;
//! - `mm-selftest-<key>.cpio`: a selftest built statically from the
//!   campaign's base commit with that tree's uapi headers
//!   ([`selftest`]); the key covers the commit, the program and the
//!   compiler; `headers-<commit>/`: the tree's `make headers` output.
//!
//! Both are made after the tree is imported and before any kernel is
//! built, so a selftest that does not build in the tree stops the run at
//! once.

mod archive;
mod error;
mod selftest;
mod stress_ng;

pub use error::StageError;

use std::path::Path;

use git2::{Oid, Repository};

use crate::events::{Event, Sink};
use crate::workload::{StagedArchive, StagedPlan};

/// The staged archive of `plan`, made unless the cache holds it.
pub async fn prepare(
    plan: &StagedPlan,
    repo: &Repository,
    commit: Oid,
    cache_dir: &Path,
    sink: &dyn Sink,
) -> Result<StagedArchive, StageError> {
    let dir = cache_dir.join("staged");
    std::fs::create_dir_all(&dir).map_err(error::io_err(&dir))?;
    let staged = match plan {
        StagedPlan::StressNg(_) => stress_ng::stage(&dir).await?,
        StagedPlan::MmSelftest(p) => {
            selftest::stage(p.program, repo, commit, cache_dir, &dir, sink).await?
        }
    };
    let made_of = match plan {
        StagedPlan::StressNg(_) => format!("stress-ng {}", staged.source),
        StagedPlan::MmSelftest(p) => format!("{} built from {}", p.program.name(), staged.source),
    };
    sink.emit(Event::Note(format!(
        "{}: {made_of}, staged for the guest's memory: {}",
        plan.kind(),
        staged.archive.display()
    )));
    Ok(staged)
}
