//! `zram-device`: a zram device's whole life, as systemd's
//! zram-generator sets one up at boot and `zramctl --reset` takes it down
//! (Documentation/admin-guide/blockdev/zram.rst: hot_add, disksize, use,
//! reset, hot_remove). Setting the disk size creates the device's
//! zsmalloc pool (`zs_create_pool()`: two slab caches made with
//! `kmem_cache_create()` and a shrinker registered), and the reset
//! destroys it (`kmem_cache_destroy()`), so this is the one window where
//! slab caches are made and destroyed.
//!
//! Each operation:
//! 1. reads `/sys/class/zram-control/hot_add` (a new device, its number);
//! 2. writes `size` to its `disksize`;
//! 3. writes `data` to `/dev/zram<N>` through the block device's page
//!    cache, one word of each page set to its index (not a page of one
//!    repeated word, which zram would store as a flag and never compress),
//!    fsyncs it (each page compressed into the zsmalloc pool), drops the
//!    clean pages (POSIX_FADV_DONTNEED), reads them back (each
//!    decompressed) and checks every word;
//! 4. closes it, writes 1 to its `reset` (pool and memory freed) and its
//!    number to `hot_remove`.
//!
//! One task: device numbers are the kernel's. Spec:
//! `workloads/zram-device.yaml`.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;

use serde::{Deserialize, Serialize};

use crate::bench::sys::{self, page_size, read_file, write_file};
use crate::bench::{Bench, Bytes, GuestSize, Load, ParamError, Task, check_held, check_one_task};
use crate::kind::Kind;

const CONTROL: &str = "/sys/class/zram-control";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ZramDevice {
    pub tasks: u32,
    pub ops: u32,
    /// Each device's disksize.
    pub size: Bytes,
    /// What each operation writes to it and reads back.
    pub data: Bytes,
}

impl Default for ZramDevice {
    fn default() -> Self {
        ZramDevice {
            tasks: 1,
            ops: 8,
            size: Bytes::mib(16),
            data: Bytes::mib(4),
        }
    }
}

impl Kind for ZramDevice {
    fn describe(&self) -> String {
        format!("disksize={} data={}", self.size, self.data)
    }
}

impl Bench for ZramDevice {
    fn load(&self) -> Load {
        Load {
            tasks: self.tasks,
            ops: self.ops,
        }
    }

    fn check(&self, guest: GuestSize) -> Result<(), ParamError> {
        check_one_task(
            self.tasks,
            "zram's device numbers are the kernel's, and hot_add hands out the lowest free one",
        )?;
        check_held("data", self.data, self.tasks, guest)?;
        if self.data.get() == 0
            || self.data.bytes() % page_size() != 0
            || self.data.get() > self.size.get()
        {
            return Err(ParamError::new(
                "data",
                self.data,
                format!(
                    "must be whole pages, at least one, and no more than size ({})",
                    self.size
                ),
            ));
        }
        Ok(())
    }

    fn task(&self, _index: usize) -> io::Result<Box<dyn Task>> {
        let pattern = pattern(self.data.bytes(), page_size());
        Ok(Box::new(Device {
            size: self.size.get(),
            read: vec![0; pattern.len()],
            pattern,
        }))
    }
}

/// `len` bytes whose every `page` starts with its index from 1 as a
/// word, the rest zeros: each page different, none one word repeated.
fn pattern(len: usize, page: usize) -> Vec<u8> {
    let mut pattern = vec![0u8; len];
    for (i, chunk) in pattern.chunks_mut(page).enumerate() {
        chunk[..8].copy_from_slice(&(i as u64 + 1).to_ne_bytes());
    }
    pattern
}

struct Device {
    size: u64,
    pattern: Vec<u8>,
    read: Vec<u8>,
}

impl Task for Device {
    fn op(&mut self) -> io::Result<()> {
        let id = read_file(format!("{CONTROL}/hot_add"))?;
        let sysfs = format!("/sys/block/zram{id}");
        write_file(format!("{sysfs}/disksize"), &self.size.to_string())?;
        self.use_device(&format!("/dev/zram{id}"))?;
        write_file(format!("{sysfs}/reset"), "1")?;
        write_file(format!("{CONTROL}/hot_remove"), &id)
    }
}

impl Device {
    fn use_device(&mut self, path: &str) -> io::Result<()> {
        let file: File = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| io::Error::new(e.kind(), format!("opening {path}: {e}")))?;
        file.write_all_at(&self.pattern, 0)?;
        file.sync_all()?;
        sys::fadvise(
            &file,
            libc::POSIX_FADV_DONTNEED,
            &format!("DONTNEED of {path}"),
        )?;
        file.read_exact_at(&mut self.read, 0)?;
        if self.read != self.pattern {
            return Err(io::Error::other(format!(
                "{path} read back other data than was written"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_fits_the_device_in_whole_pages() {
        let guest = GuestSize {
            online_cpus: 2,
            memory: 1 << 30,
        };
        assert!(ZramDevice::default().check(guest).is_ok());
        for data in [Bytes::kib(6), Bytes::mib(32)] {
            let odd = ZramDevice {
                data,
                ..ZramDevice::default()
            };
            assert_eq!(odd.check(guest).unwrap_err().param, "data");
        }
    }

    #[test]
    fn every_page_of_the_pattern_differs_and_none_is_one_word_repeated() {
        let page = 4096;
        let pattern = pattern(16 << 10, page);
        let pages: Vec<&[u8]> = pattern.chunks(page).collect();
        assert!(pages.windows(2).all(|w| w[0] != w[1]));
        assert!(pages.iter().all(|p| p[..8] != p[8..16]));
    }
}
