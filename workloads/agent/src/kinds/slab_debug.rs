//! `slab-debug`: SLUB's debugging interfaces used as their users use them
//! on a kernel booted with `slub_debug`: `slabinfo -v`
//! (tools/mm/slabinfo.c) validates every cache through its sysfs
//! `validate` file; Documentation/mm/slub.rst's
//! /sys/kernel/debug/slab/<cache>/alloc_traces and free_traces list each
//! cache's allocation and free call sites with counts (what one reads to
//! find a leak); and `min_partial`, `cpu_partial` and
//! `remote_node_defrag_ratio` are the per-cache tunables slub.rst
//! documents. It runs mm/slub.c's debugging code outside the allocation
//! and free paths, which slab-churn under slub_debug runs.
//!
//! One task: validation takes each cache's node locks. Each operation:
//! 1. writes 1 to every cache's `validate` (in /sys/kernel/slab, the
//!    caches themselves, not their aliases' links): every slab's free list
//!    and every object's red zones and poison checked;
//! 2. for each of [`TRACED`], reads `total_objects` (counted slab by slab
//!    under debugging), then alloc_traces and free_traces whole (every
//!    slab walked, every object's stored track gathered, sorted by count)
//!    and checks alloc_traces names at least one call site;
//! 3. writes each of those caches' three tunables back with the value it
//!    read once per boot.
//!
//! Once per boot, untimed: the agent checks the caches store their users
//! (`store_user` reads 1: `slub_debug=U`, which the campaign's command
//! line must give) and reads the tunables. Spec: `workloads/slab-debug.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use super::drop_caches::slab_caches;
use crate::bench::sys::{Saved, read_file, write_file};
use crate::bench::{Bench, GuestSize, Load, ParamError, Task, check_one_task};
use crate::kind::Kind;

const SLAB: &str = "/sys/kernel/slab";
const TRACES: &str = "/sys/kernel/debug/slab";
/// The caches whose call sites each operation lists: kmalloc's, and
/// three of mm's own, in every kernel of both trees.
const TRACED: [&str; 4] = ["kmalloc-64", "vm_area_struct", "anon_vma", "dentry"];
/// The per-cache tunables written back.
const TUNABLES: [&str; 3] = ["min_partial", "cpu_partial", "remote_node_defrag_ratio"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlabDebug {
    pub tasks: u32,
    pub ops: u32,
}

impl Default for SlabDebug {
    fn default() -> Self {
        SlabDebug { tasks: 1, ops: 2 }
    }
}

impl Kind for SlabDebug {
    fn describe(&self) -> String {
        format!("validate all caches, traces of {}", TRACED.join(" "))
    }
}

impl Bench for SlabDebug {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, _guest: GuestSize) -> Result<(), ParamError> {
        check_one_task(
            self.tasks,
            "validation takes every cache's node locks, and two tasks would wait on each other",
        )
    }

    fn prepare(&self) -> io::Result<()> {
        for cache in TRACED {
            let path = format!("{SLAB}/{cache}/store_user");
            if read_file(&path)? != "1" {
                return Err(io::Error::other(format!(
                    "{path} is not 1: the caches do not store their users, so they have no traces; the campaign's kernel command line needs slub_debug with U (slub_debug=FZPU)"
                )));
            }
        }
        Ok(())
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        let paths = TRACED
            .iter()
            .flat_map(|cache| TUNABLES.map(|name| format!("{SLAB}/{cache}/{name}")));
        Ok(Box::new(Debugger {
            caches: slab_caches()?,
            tunables: Saved::read(paths)?,
        }))
    }
}

struct Debugger {
    caches: Vec<std::path::PathBuf>,
    /// The tunables' values once per boot.
    tunables: Saved,
}

impl Task for Debugger {
    fn op(&mut self) -> io::Result<()> {
        for cache in &self.caches {
            write_file(cache.join("validate"), "1")?;
        }
        for cache in TRACED {
            read_file(format!("{SLAB}/{cache}/total_objects"))?;
            let allocs = read_file(format!("{TRACES}/{cache}/alloc_traces"))?;
            read_file(format!("{TRACES}/{cache}/free_traces"))?;
            if !allocs.contains('+') {
                return Err(io::Error::other(format!(
                    "{TRACES}/{cache}/alloc_traces names no call site: {allocs:?}"
                )));
            }
        }
        self.tunables.restore()
    }
}
