//! `swap`: anonymous pages swapped out and back in, as vm-scalability's
//! case-swapin does (usemem writes its memory, other processes push it to
//! swap, then it reads it all back), with MADV_PAGEOUT doing the pushing
//! for one region. Each task maps `size` of private anonymous memory
//! (MADV_NOHUGEPAGE: base pages) and writes a distinct word at the start
//! of every page (compressible, not a page of one repeated word, which
//! swap would not store), untimed; one cycle untimed checks that the
//! pageout left the region out of memory. Each operation advises the whole
//! region MADV_PAGEOUT (every page unmapped, written to the swap device
//! and freed) and reads every page's word back and checks it (a swap-in
//! fault each). `device` is where the pages go: `zram` (`/dev/zram0`,
//! compressed in memory), `ram` (the RAM disk `/dev/ram0`: a plain block
//! device in guest memory, no compression) or `zswap` (zswap's compressed
//! pool in front of the RAM disk: the campaign must enable zswap, and for
//! the other two must not). With `back: swapoff` the pages come back
//! another way: each operation pages the region out, then swapoff(2)s the
//! device (`try_to_unuse()` walks every mm that has swap entries and
//! swaps each page back in, mapped again), swapon(2)s it again (its swap
//! map vmalloc()ed anew) and checks every word; one task only, as the
//! device is every task's. Spec: `workloads/swap.yaml`.

use std::ffi::CStr;
use std::io;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{self, Map, check_stamps, page_size, resident_pages, stamp};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held, check_one_task};
use crate::kind::Kind;
use crate::memory::SwapBackend;

const ZSWAP_ENABLED: &str = "/sys/module/zswap/parameters/enabled";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Swap {
    pub tasks: u32,
    pub ops: u32,
    /// The region each operation pages out and reads back.
    pub size: Bytes,
    /// Where the pages go.
    pub device: SwapDevice,
    /// How they come back.
    pub back: SwapBack,
}

/// How a [`Swap`] region's pages come back in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SwapBack {
    /// A swap-in fault each, as the task reads its words.
    #[default]
    Fault,
    /// swapoff(2) of the device, then swapon(2) again.
    Swapoff,
}

/// Where a [`Swap`] region's pages go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SwapDevice {
    Zram,
    Zswap,
    Ram,
}

impl Default for Swap {
    fn default() -> Self {
        Swap {
            tasks: 1,
            ops: 4,
            size: Bytes::mib(8),
            device: SwapDevice::Zram,
            back: SwapBack::Fault,
        }
    }
}

impl Kind for Swap {
    fn swap_backend(&self) -> SwapBackend {
        match self.device {
            SwapDevice::Zram => SwapBackend::Zram,
            SwapDevice::Zswap | SwapDevice::Ram => SwapBackend::Ram,
        }
    }

    /// Every task's whole region.
    fn zram_bytes(&self) -> u64 {
        self.size.get() * u64::from(self.tasks)
    }

    fn describe(&self) -> String {
        let back = match self.back {
            SwapBack::Fault => "",
            SwapBack::Swapoff => " back=swapoff",
        };
        format!("size={} device={:?}{back}", self.size, self.device)
    }
}

impl Bench for Swap {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        if self.back == SwapBack::Swapoff {
            check_one_task(
                self.tasks,
                "with back: swapoff the swap device is every task's, and a second swapoff would find it off",
            )?;
        }
        check_held("size", self.size, self.tasks, guest)
    }

    fn prepare(&self) -> io::Result<()> {
        let enabled = sys::read_file(ZSWAP_ENABLED)? == "Y";
        let want = self.device == SwapDevice::Zswap;
        if enabled != want {
            return Err(io::Error::other(if want {
                format!(
                    "device zswap needs zswap enabled ({ZSWAP_ENABLED} reads N): set the campaign's `zswap: {{enabled: true, ...}}`"
                )
            } else {
                format!(
                    "device {:?} needs zswap off, or zswap takes the pages first ({ZSWAP_ENABLED} reads Y): set the campaign's `zswap: {{enabled: false, ...}}`",
                    self.device
                )
            }));
        }
        Ok(())
    }

    fn task(&self, index: usize) -> io::Result<Box<dyn Task>> {
        let mut map = Map::anon(self.size.bytes())?;
        map.advise(libc::MADV_NOHUGEPAGE)?;
        let seed = index as u64;
        stamp(&mut map, page_size(), seed);
        let swapoff = match self.back {
            SwapBack::Fault => None,
            SwapBack::Swapoff => Some(self.device_path()),
        };
        let cycle = Cycle { map, seed, swapoff };
        cycle.map.advise(libc::MADV_PAGEOUT)?;
        let resident = resident_pages(&cycle.map)?;
        let pages = cycle.map.len / page_size();
        // Every page, give or take a few that reclaim found busy.
        if resident > pages / 64 {
            return Err(io::Error::other(format!(
                "{resident} of {pages} pages still resident after MADV_PAGEOUT: is swap on?"
            )));
        }
        check_stamps(&cycle.map, page_size(), seed)?;
        Ok(Box::new(cycle))
    }
}

impl Swap {
    /// The device the boot swaps on, and the priority it was given
    /// (`SwapBackend`'s setup: zram preferred at 32767, the RAM disk at
    /// the kernel's default).
    fn device_path(&self) -> (&'static CStr, libc::c_int) {
        match self.device {
            SwapDevice::Zram => (ZRAM_DEVICE, SWAP_FLAG_PREFER | 32767),
            SwapDevice::Zswap | SwapDevice::Ram => (RAM_DEVICE, 0),
        }
    }
}

const ZRAM_DEVICE: &CStr = c"/dev/zram0";
/// [`crate::memory::RAM_SWAP_DEVICE`], as swapoff(2) takes it.
const RAM_DEVICE: &CStr = c"/dev/ram0";
/// <linux/swap.h>; libc does not export it.
const SWAP_FLAG_PREFER: libc::c_int = 0x8000;

struct Cycle {
    map: Map,
    seed: u64,
    /// With `back: swapoff`, the device and its swapon flags.
    swapoff: Option<(&'static CStr, libc::c_int)>,
}

impl Task for Cycle {
    fn op(&mut self) -> io::Result<()> {
        self.map.advise(libc::MADV_PAGEOUT)?;
        if let Some((device, flags)) = self.swapoff {
            // SAFETY: a NUL-terminated path.
            if unsafe { libc::swapoff(device.as_ptr()) } != 0 {
                return Err(sys::last(&format!("swapoff {device:?}")));
            }
            // SAFETY: a NUL-terminated path.
            if unsafe { libc::swapon(device.as_ptr(), flags) } != 0 {
                return Err(sys::last(&format!("swapon {device:?}")));
            }
        }
        check_stamps(&self.map, page_size(), self.seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::RAM_SWAP_DEVICE;

    #[test]
    fn swapoff_names_the_device_the_boot_swaps_on() {
        assert_eq!(RAM_DEVICE.to_str().unwrap(), RAM_SWAP_DEVICE);
        let ram = Swap {
            device: SwapDevice::Ram,
            back: SwapBack::Swapoff,
            ..Swap::default()
        };
        assert_eq!(ram.device_path(), (RAM_DEVICE, 0));
        assert_eq!(Swap::default().device_path().0, ZRAM_DEVICE);
    }

    #[test]
    fn swapoff_takes_one_task() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        let two = Swap {
            tasks: 2,
            back: SwapBack::Swapoff,
            ..Swap::default()
        };
        assert_eq!(two.check(guest).unwrap_err().param, "tasks");
        let faults = Swap {
            back: SwapBack::Fault,
            ..two
        };
        assert!(faults.check(guest).is_ok());
    }
}
