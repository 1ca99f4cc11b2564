//! `brk`: will-it-scale's brk1 (and brk2, which keeps the heap's VMA
//! between calls, as here: the task's allocator already has a heap). Each
//! operation raises the task's program break by `size` (brk(2) expands
//! the heap's VMA), writes one byte in every page of the new stretch when
//! `touch` is set (a fault each: brk1 does not write), and lowers the
//! break back (the stretch is unmapped, its pages freed). The break is the
//! task's own: each task is a process of its own, single-threaded, and
//! nothing in it allocates between its operations, so the allocator's
//! view of the heap is the same after each. Spec: `workloads/brk.yaml`.

use std::io;

use serde::{Deserialize, Serialize};

use crate::bench::sys::page_size;
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held};
use crate::kind::Kind;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Brk {
    pub tasks: u32,
    pub ops: u32,
    /// How far each operation raises the break, and lowers it back.
    pub size: Bytes,
    /// Write one byte in every page of the stretch before lowering the
    /// break (false: brk1's calls alone).
    pub touch: bool,
}

impl Default for Brk {
    fn default() -> Self {
        Brk {
            tasks: 1,
            ops: 16384,
            size: Bytes::kib(4),
            touch: true,
        }
    }
}

impl Kind for Brk {
    fn describe(&self) -> String {
        format!("size={} touch={}", self.size, self.touch)
    }
}

impl Bench for Brk {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_held("size", self.size, self.tasks, guest)?;
        if self.size.get() % 4096 != 0 {
            return Err(ParamError::new(
                "size",
                self.size,
                "must be a whole number of 4 KiB pages",
            ));
        }
        Ok(())
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        Ok(Box::new(Breaker {
            base: None,
            len: self.size.bytes(),
            touch: self.touch,
        }))
    }
}

/// The raw brk(2): the break it leaves (the old one on a failure). libc's
/// brk() and sbrk() keep a copy of the break, and musl's refuse to move
/// it; the system call is the same either way.
fn brk(addr: usize) -> usize {
    // SAFETY: moves this process's break, below which nothing of ours
    // lives (see `Breaker`).
    unsafe { libc::syscall(libc::SYS_brk, addr) as usize }
}

fn set_brk(addr: usize) -> io::Result<()> {
    let got = brk(addr);
    if got != addr {
        return Err(io::Error::other(format!(
            "brk({addr:#x}) left the break at {got:#x}"
        )));
    }
    Ok(())
}

struct Breaker {
    /// The break as the first operation found it, which every operation
    /// restores: read then, inside the window, so that nothing the
    /// harness allocates before it can move it.
    base: Option<usize>,
    len: usize,
    touch: bool,
}

impl Task for Breaker {
    fn op(&mut self) -> io::Result<()> {
        let base = *self.base.get_or_insert_with(|| brk(0));
        set_brk(base + self.len)?;
        if self.touch {
            let mut off = 0;
            while off < self.len {
                // SAFETY: inside the stretch just added to the heap.
                unsafe { ((base + off) as *mut u8).write_volatile(1) };
                off += page_size();
            }
        }
        set_brk(base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::sys::{fork_child, wait_ok};

    /// In a child of its own, single-threaded, as a task is: the test
    /// harness's other threads allocate.
    #[test]
    fn the_break_goes_up_and_back_down() {
        for touch in [true, false] {
            let pid = fork_child(|| {
                let mut task = Breaker {
                    base: None,
                    len: 16 << 10,
                    touch,
                };
                for _ in 0..3 {
                    task.op()?;
                }
                if brk(0) == task.base.unwrap() {
                    Ok(())
                } else {
                    Err(io::Error::other("the break moved"))
                }
            })
            .unwrap();
            wait_ok(pid).unwrap();
        }
    }
}
