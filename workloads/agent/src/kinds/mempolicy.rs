//! `mempolicy`: the NUMA memory policy system calls, as numactl(8) and
//! libnuma make them (`numactl --interleave`, `--membind`, `--preferred`,
//! `--localalloc`; `numa_tonode_memory()` is mbind(2) with MPOL_MF_MOVE),
//! over memory the policy then places: the policy code of
//! mm/mempolicy.c, where the library's page migration workloads only
//! move pages.
//!
//! The guest's two nodes are `numa=fake=2`'s (the campaign's
//! `kernel.cmdline`); the agent checks once per boot that node 1 exists.
//! Each operation of a task, on `size` of base pages (MADV_NOHUGEPAGE):
//! 1. **The task's policy** (set_mempolicy(2)), once in each mode:
//!    interleave over both nodes, weighted interleave over both (where the
//!    kernel has it: /sys/kernel/mm/mempolicy, Linux 6.9 on), preferred
//!    many, bind to node 1, preferred node 1 and local. Under each, a fresh
//!    region is written page by page (each fault allocates where the
//!    policy says) and unmapped; under bind, get_mempolicy(2) must say its
//!    first page is on node 1. Then the default policy again.
//! 2. **A VMA's policy** (mbind(2)): a region written on node 0 (bound
//!    there by mbind) is bound to node 1 with MPOL_MF_MOVE | MPOL_MF_STRICT,
//!    which moves every page, and get_mempolicy must find its first and
//!    last pages there; then its first half is given interleave (the VMA
//!    splits) and its second half a home node (set_mempolicy_home_node(2)).
//! 3. **A shared policy** on shmem (memfd_create(2)): a mapping of the
//!    file is bound to node 1 by mbind (the inode's shared policy tree),
//!    written, its second half given interleave (the tree's range split),
//!    and the file closed and unmapped, which frees the tree.
//!
//! Spec: `workloads/mempolicy.yaml`.

use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::numa_migrate::check_two_nodes;
use crate::bench::sys::{Map, last, memfd, page_size};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;

/// Where a kernel with MPOL_WEIGHTED_INTERLEAVE keeps its node weights.
const WEIGHTED: &str = "/sys/kernel/mm/mempolicy/weighted_interleave";

// include/uapi/linux/mempolicy.h
const MPOL_DEFAULT: libc::c_int = 0;
const MPOL_PREFERRED: libc::c_int = 1;
const MPOL_BIND: libc::c_int = 2;
const MPOL_INTERLEAVE: libc::c_int = 3;
const MPOL_LOCAL: libc::c_int = 4;
const MPOL_PREFERRED_MANY: libc::c_int = 5;
const MPOL_WEIGHTED_INTERLEAVE: libc::c_int = 6;
const MPOL_F_NODE: libc::c_ulong = 1;
const MPOL_F_ADDR: libc::c_ulong = 2;
const MPOL_MF_STRICT: libc::c_uint = 1;
const MPOL_MF_MOVE: libc::c_uint = 2;

/// Node masks of one word.
const NODE0: libc::c_ulong = 1;
const ONLY_NODE1: libc::c_ulong = 2;
const BOTH: libc::c_ulong = 3;
/// The bits a mask holds, as maxnode: the kernel reads maxnode - 1 of them.
const MAXNODE: libc::c_ulong = libc::c_ulong::BITS as libc::c_ulong;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Mempolicy {
    pub tasks: u32,
    pub ops: u32,
    /// Each region the operation places under a policy.
    pub size: Bytes,
}

impl Default for Mempolicy {
    fn default() -> Self {
        Mempolicy {
            tasks: 1,
            ops: 4,
            size: Bytes::mib(2),
        }
    }
}

impl Kind for Mempolicy {
    fn describe(&self) -> String {
        format!("size={}", self.size)
    }
}

impl Bench for Mempolicy {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_held("size", self.size, self.tasks, guest)?;
        if self.size.get() % 8192 != 0 {
            return Err(ParamError::new(
                "size",
                self.size,
                "must be a whole, even number of 4 KiB pages: each region is split in halves",
            ));
        }
        Ok(())
    }

    fn prepare(&self) -> io::Result<()> {
        check_two_nodes()
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        let mut modes = vec![(MPOL_INTERLEAVE, BOTH)];
        if Path::new(WEIGHTED).exists() {
            modes.push((MPOL_WEIGHTED_INTERLEAVE, BOTH));
        }
        modes.extend([
            (MPOL_PREFERRED_MANY, BOTH),
            (MPOL_BIND, ONLY_NODE1),
            (MPOL_PREFERRED, ONLY_NODE1),
            (MPOL_LOCAL, 0),
        ]);
        Ok(Box::new(Placer {
            len: self.size.bytes(),
            page: page_size(),
            modes,
        }))
    }
}

struct Placer {
    len: usize,
    page: usize,
    /// The task policies of step 1, each with its node mask.
    modes: Vec<(libc::c_int, libc::c_ulong)>,
}

/// set_mempolicy(2) with a one-word node mask (none for 0).
fn set_mempolicy(mode: libc::c_int, mask: libc::c_ulong) -> io::Result<()> {
    let (ptr, max) = match mask {
        0 => (std::ptr::null(), 0),
        _ => (&mask as *const libc::c_ulong, MAXNODE),
    };
    // SAFETY: a mask of one word, read only, or none.
    let ret = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, ptr, max) };
    if ret < 0 {
        return Err(last(&format!("set_mempolicy mode {mode}")));
    }
    Ok(())
}

/// mbind(2) of `len` bytes at `map`'s `start`.
fn mbind(
    map: &Map,
    start: usize,
    len: usize,
    mode: libc::c_int,
    mask: libc::c_ulong,
    flags: libc::c_uint,
) -> io::Result<()> {
    // SAFETY: a range inside `map`, and a mask of one word, read only.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            map.ptr.wrapping_add(start),
            len,
            mode,
            &mask as *const libc::c_ulong,
            MAXNODE,
            flags,
        )
    };
    if ret < 0 {
        return Err(last(&format!("mbind mode {mode} of {len} bytes")));
    }
    Ok(())
}

/// The node of the page at `map`'s `offset` (get_mempolicy with
/// MPOL_F_NODE | MPOL_F_ADDR), which must be `want`.
fn check_node(map: &Map, offset: usize, want: libc::c_int, what: &str) -> io::Result<()> {
    let mut node: libc::c_int = -1;
    // SAFETY: one int written; the address is inside `map`, mapped.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut node as *mut libc::c_int,
            std::ptr::null_mut::<libc::c_ulong>(),
            0 as libc::c_ulong,
            map.ptr.wrapping_add(offset),
            MPOL_F_NODE | MPOL_F_ADDR,
        )
    };
    if ret < 0 {
        return Err(last(&format!("get_mempolicy of {what}")));
    }
    if node != want {
        return Err(io::Error::other(format!(
            "{what} is on node {node}, where its policy puts it on node {want}"
        )));
    }
    Ok(())
}

/// A private anonymous region of base pages.
fn region(len: usize) -> io::Result<Map> {
    let map = Map::anon(len)?;
    map.advise(libc::MADV_NOHUGEPAGE)?;
    Ok(map)
}

impl Placer {
    fn task_policies(&self) -> io::Result<()> {
        for &(mode, mask) in &self.modes {
            set_mempolicy(mode, mask)?;
            let mut map = region(self.len)?;
            map.touch(self.page);
            if mode == MPOL_BIND {
                check_node(
                    &map,
                    0,
                    1,
                    "a page written under set_mempolicy(MPOL_BIND, node 1)",
                )?;
            }
            map.unmap()?;
        }
        set_mempolicy(MPOL_DEFAULT, 0)
    }

    fn vma_policies(&self) -> io::Result<()> {
        let half = self.len / 2;
        let mut map = region(self.len)?;
        mbind(&map, 0, self.len, MPOL_BIND, NODE0, 0)?;
        map.touch(self.page);
        mbind(
            &map,
            0,
            self.len,
            MPOL_BIND,
            ONLY_NODE1,
            MPOL_MF_MOVE | MPOL_MF_STRICT,
        )?;
        check_node(&map, 0, 1, "the first page after mbind moved it to node 1")?;
        check_node(
            &map,
            self.len - self.page,
            1,
            "the last page after mbind moved it to node 1",
        )?;
        mbind(&map, 0, half, MPOL_INTERLEAVE, BOTH, 0)?;
        // SAFETY: no pointers; a range inside `map`.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_set_mempolicy_home_node,
                map.ptr.wrapping_add(half) as libc::c_ulong,
                half as libc::c_ulong,
                1 as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        if ret < 0 {
            return Err(last("set_mempolicy_home_node"));
        }
        map.unmap()
    }

    fn shared_policy(&self) -> io::Result<()> {
        let file = memfd(c"mempolicy")?;
        file.set_len(self.len as u64)
            .map_err(|e| io::Error::new(e.kind(), format!("ftruncate of the memfd: {e}")))?;
        let mut map = Map::new(
            self.len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )?;
        mbind(&map, 0, self.len, MPOL_BIND, ONLY_NODE1, 0)?;
        map.touch(self.page);
        check_node(
            &map,
            0,
            1,
            "a shmem page written under a shared mbind to node 1",
        )?;
        let half = self.len / 2;
        mbind(&map, half, half, MPOL_INTERLEAVE, BOTH, 0)?;
        map.unmap()?;
        drop(file);
        Ok(())
    }
}

impl Task for Placer {
    fn op(&mut self) -> io::Result<()> {
        self.task_policies()?;
        self.vma_policies()?;
        self.shared_policy()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_size_is_halves_of_whole_pages() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        assert!(Mempolicy::default().check(guest).is_ok());
        for size in [Bytes(6000), Bytes::kib(4), Bytes::kib(12)] {
            let m = Mempolicy {
                size,
                ..Mempolicy::default()
            };
            assert_eq!(m.check(guest).unwrap_err().param, "size", "{size}");
        }
    }

    /// On a host with one node, bind to node 0 places every page there,
    /// and the checks read it back.
    #[test]
    fn a_region_bound_to_node_0_is_found_there() {
        let mut map = region(64 << 10).unwrap();
        mbind(&map, 0, map.len, MPOL_BIND, NODE0, 0).unwrap();
        map.touch(page_size());
        check_node(&map, 0, 0, "the first page").unwrap();
        let err = check_node(&map, 0, 1, "the first page").unwrap_err();
        assert!(err.to_string().contains("on node 0"), "{err}");
    }
}
