//! `numa-migrate`: page migration between NUMA nodes with move_pages(2),
//! as the kernel's selftest `tools/testing/selftests/mm/migration.c`
//! does: it moves the first page of a 2 MiB private anonymous region
//! between two nodes and back, `move_pages(0, 1, ..., MPOL_MF_MOVE_ALL)`,
//! for 20 s while other threads read it. Here a whole region moves, with
//! MPOL_MF_MOVE, and nothing else touches it.
//!
//! The guest's two nodes are `numa=fake=2`'s (the campaign's
//! `kernel.cmdline`); the agent checks once per boot that node 1 exists.
//! Each task, before the window, maps `size` of anonymous memory with base
//! pages (MADV_NOHUGEPAGE; with `page: thp`, 2 MiB aligned and advised
//! MADV_HUGEPAGE, each huge page named by its first address and moved
//! whole), writes every page and moves them all to node 0.
//! Each operation moves every page to node 1 and back to node 0 with one
//! move_pages(2) call each way (for each page: isolate it from the LRU,
//! allocate on the target node, unmap, copy, remap, free the old page),
//! and fails unless every page reports the node it was sent to. With
//! `call: migrate_pages`, each move is instead one migrate_pages(2) call
//! for the whole process, node 0's pages to node 1 and back (as
//! migratepages(8) and cpuset migration do: `do_migrate_pages`, a walk of
//! every VMA of the mm), and move_pages(2) only queries where the region's
//! pages are. Spec: `workloads/numa-migrate.yaml`.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{Map, last, page_size};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;
use crate::kinds::page_fault_anon::PageSize;

const NODE1: &str = "/sys/devices/system/node/node1";
/// `MPOL_MF_MOVE` of `include/uapi/linux/mempolicy.h`: move the pages
/// only this process maps. The selftest passes MPOL_MF_MOVE_ALL (pages
/// however many processes map, with CAP_SYS_NICE); for private pages of
/// one process the two move the same pages.
const MPOL_MF_MOVE: libc::c_int = 1 << 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NumaMigrate {
    pub tasks: u32,
    pub ops: u32,
    /// The region each task moves between the nodes.
    pub size: Bytes,
    /// The system call that moves the pages.
    pub call: MigrateCall,
    /// The region's pages: base, or THP (each moved whole).
    pub page: PageSize,
}

/// [`NumaMigrate::call`]: move_pages(2), the region's pages by address, or
/// migrate_pages(2), every page of the process by node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MigrateCall {
    #[default]
    MovePages,
    MigratePages,
}

impl Default for NumaMigrate {
    fn default() -> Self {
        NumaMigrate {
            tasks: 1,
            ops: 8,
            size: Bytes::mib(16),
            call: MigrateCall::MovePages,
            page: PageSize::Base,
        }
    }
}

impl Kind for NumaMigrate {
    fn describe(&self) -> String {
        let call = match self.call {
            MigrateCall::MovePages => "",
            MigrateCall::MigratePages => " call=migrate_pages",
        };
        format!("size={}{call}{}", self.size, self.page.describe())
    }
}

impl Bench for NumaMigrate {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        // Each fake node has half the guest's memory: every task's region
        // must fit on one, as check_held's half of the guest says.
        check_held("size", self.size, self.tasks, guest)?;
        self.page.check("size", self.size)
    }

    fn prepare(&self) -> io::Result<()> {
        check_two_nodes()
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        let page = page_size();
        let mut map = self.page.map(self.size.bytes())?;
        map.touch(page);
        self.page.check_backed(map.len)?;
        // A huge page by its first address only: move_pages(2) moves the
        // whole folio for it, and reports -EBUSY for the rest of its
        // addresses, the folio being off the LRU by then.
        let pages: Vec<*mut libc::c_void> = (0..map.len)
            .step_by(self.page.bytes())
            .map(|off| map.ptr.wrapping_add(off).cast())
            .collect();
        let mut mover = Mover {
            call: self.call,
            status: vec![0; pages.len()],
            to: [vec![0; pages.len()], vec![1; pages.len()]],
            pages,
            _map: map,
        };
        mover.move_to(0)?;
        Ok(Box::new(mover))
    }
}

/// Fails unless the guest has node 1: `numa=fake=2`'s second node.
pub fn check_two_nodes() -> io::Result<()> {
    if !Path::new(NODE1).exists() {
        return Err(io::Error::other(format!(
            "{NODE1} is missing: the guest has one NUMA node; the campaign's kernel.cmdline needs numa=fake=2 (and the kernel NUMA and NUMA_EMU)"
        )));
    }
    Ok(())
}

struct Mover {
    call: MigrateCall,
    pages: Vec<*mut libc::c_void>,
    /// The target node of every page: all 0, all 1.
    to: [Vec<libc::c_int>; 2],
    status: Vec<libc::c_int>,
    _map: Map,
}

impl Mover {
    /// Moves every page to `node` and checks that each is there.
    fn move_to(&mut self, node: usize) -> io::Result<()> {
        let query = match self.call {
            MigrateCall::MovePages => false,
            MigrateCall::MigratePages => {
                // Node masks of one word: the other node's pages, to `node`.
                let from: libc::c_ulong = 1 << (1 - node);
                let to: libc::c_ulong = 1 << node;
                // SAFETY: two one-word node masks of 64 bits, read only.
                let ret = unsafe {
                    libc::syscall(
                        libc::SYS_migrate_pages,
                        0,
                        libc::c_ulong::BITS as libc::c_ulong,
                        &from as *const libc::c_ulong,
                        &to as *const libc::c_ulong,
                    )
                };
                if ret < 0 {
                    return Err(last(&format!("migrate_pages to node {node}")));
                }
                true
            }
        };
        // SAFETY: arrays of `pages.len()` entries each; the pages are this
        // process's own, mapped while `_map` lives. A null node list only
        // asks where each page is.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_move_pages,
                0,
                self.pages.len() as libc::c_ulong,
                self.pages.as_ptr(),
                if query {
                    std::ptr::null()
                } else {
                    self.to[node].as_ptr()
                },
                self.status.as_mut_ptr(),
                MPOL_MF_MOVE,
            )
        };
        if ret < 0 {
            return Err(last(&format!("move_pages to node {node}")));
        }
        let stray = self
            .status
            .iter()
            .filter(|&&s| s != node as libc::c_int)
            .count();
        if ret > 0 || stray > 0 {
            let first = self.status.iter().find(|&&s| s != node as libc::c_int);
            return Err(io::Error::other(format!(
                "move_pages to node {node}: {stray} of {} pages elsewhere (first status {first:?}; a negative one is an errno)",
                self.pages.len()
            )));
        }
        Ok(())
    }
}

impl Task for Mover {
    fn op(&mut self) -> io::Result<()> {
        self.move_to(1)?;
        self.move_to(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_gathers_its_pages_on_node_0_on_this_host() {
        // Every host has a node 0, which is as far as one can test here.
        let bench = NumaMigrate {
            size: Bytes::kib(256),
            ..NumaMigrate::default()
        };
        bench.task(0).unwrap();
    }

    #[test]
    fn the_call_is_read_by_name_and_described_when_not_the_default() {
        let bench: NumaMigrate =
            serde_json::from_str(r#"{"call": "migrate_pages", "tasks": 1}"#).unwrap();
        assert_eq!(bench.call, MigrateCall::MigratePages);
        assert_eq!(bench.describe(), "size=16 MiB call=migrate_pages");
        assert_eq!(NumaMigrate::default().describe(), "size=16 MiB");
        assert!(serde_json::from_str::<NumaMigrate>(r#"{"call": "mbind"}"#).is_err());
    }
}
