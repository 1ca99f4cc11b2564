//! Host I/O inside a timed window, refused. QEMU completes a 9p request in
//! a host worker thread (hw/9pfs/coth.h), so even under icount its
//! completion lands at an instruction count the host's speed decides: a
//! window that read the host over 9p measured the host too. The guest
//! sees every completion as an interrupt of the 9p device, so a window
//! whose device took none did no 9p I/O; [`Watch`] counts them across a
//! window from `/proc/interrupts`. The swap disk's completions arrive the
//! same way; they are the workload's own I/O, so they are counted
//! ([`Watch::disks`]) rather than refused.

use std::path::Path;

use crate::error::{Context, Result, bail};
use crate::files;

const DEVICES: &str = "/sys/bus/virtio/devices";
const NINEP_DRIVER: &str = "9pnet_virtio";
const BLOCK_DRIVER: &str = "virtio_blk";

/// Some virtio devices of this guest and their interrupts.
pub struct Watch {
    /// `virtioN` of each device, as `/proc/interrupts` names it.
    devices: Vec<String>,
}

/// The interrupt count at a window's start.
pub struct Start(u64);

impl Watch {
    /// The guest's 9p devices (none without host-root mode).
    pub fn ninep() -> Result<Watch> {
        Self::of_driver(Path::new(DEVICES), NINEP_DRIVER)
    }

    /// The guest's virtio disks (the swap disk, where there is one).
    pub fn disks() -> Result<Watch> {
        Self::of_driver(Path::new(DEVICES), BLOCK_DRIVER)
    }

    fn of_driver(dir: &Path, wanted: &str) -> Result<Watch> {
        let mut devices = Vec::new();
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Watch { devices });
            }
            Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
        };
        for entry in entries {
            let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
            let driver = std::fs::read_link(entry.path().join("driver")).ok();
            if driver.is_some_and(|d| d.file_name().is_some_and(|n| n == wanted)) {
                devices.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        devices.sort();
        Ok(Watch { devices })
    }

    /// The count now, at the start of a window.
    pub fn start(&self) -> Result<Start> {
        self.count().map(Start)
    }

    /// Refuses the window that began at `start` if a 9p device took an
    /// interrupt inside it.
    pub fn check(&self, start: Start, what: &str) -> Result<()> {
        let n = self.count()? - start.0;
        if n > 0 {
            bail!(
                "{what} did host I/O: {n} interrupt(s) of the 9p device {} inside the timed window, so the sample is refused (QEMU completes 9p requests in host threads, and their timing is the host's: a window must read only guest memory)",
                self.devices.join(", ")
            );
        }
        Ok(())
    }

    /// The devices' interrupts so far, summed over every CPU.
    pub fn count(&self) -> Result<u64> {
        if self.devices.is_empty() {
            return Ok(0);
        }
        let text = files::read("/proc/interrupts")?;
        Ok(interrupts_of(&text, &self.devices))
    }
}

/// The interrupts of `devices` in a `/proc/interrupts` text, summed over
/// every CPU: each line whose name column names one of them, alone
/// (`virtio2`), among devices sharing the line (`virtio1, virtio2`) or
/// with a queue's suffix (`virtio2-requests`).
pub fn interrupts_of(text: &str, devices: &[String]) -> u64 {
    let mut lines = text.lines();
    let cpus = lines
        .next()
        .map_or(0, |header| header.split_whitespace().count());
    lines
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            fields.next()?.strip_suffix(':')?;
            let counts: Vec<u64> = fields
                .by_ref()
                .take(cpus)
                .map(str::parse)
                .collect::<std::result::Result<_, _>>()
                .ok()?;
            let names: Vec<&str> = fields.map(|f| f.trim_end_matches(',')).collect();
            let named = devices.iter().any(|d| {
                names.iter().any(|n| {
                    n == d
                        || n.strip_prefix(d.as_str())
                            .is_some_and(|r| r.starts_with('-'))
                })
            });
            named.then(|| counts.iter().sum::<u64>())
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTERRUPTS: &str = "           CPU0       CPU1       
  0:        625          0   IO-APIC   2-edge      timer
 21:          4          0   IO-APIC  21-fasteoi   virtio0
 22:          0          5   IO-APIC  22-fasteoi   virtio1, virtio12
 23:        115          7   IO-APIC  23-fasteoi   virtio2
 24:          3          0   PCI-MSI 65536-edge      virtio2-requests
NMI:          0          0   Non-maskable interrupts
ERR:          0
";

    fn devices(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_devices_interrupts_are_summed_over_cpus_and_queues() {
        assert_eq!(interrupts_of(INTERRUPTS, &devices(&["virtio2"])), 125);
        assert_eq!(interrupts_of(INTERRUPTS, &devices(&["virtio12"])), 5);
        // virtio1 is not virtio12, nor virtio2's queue a device of its own.
        assert_eq!(interrupts_of(INTERRUPTS, &devices(&["virtio1"])), 5);
        assert_eq!(
            interrupts_of(INTERRUPTS, &devices(&["virtio0", "virtio2"])),
            129
        );
        assert_eq!(interrupts_of(INTERRUPTS, &devices(&["virtio3"])), 0);
        assert_eq!(interrupts_of(INTERRUPTS, &[]), 0);
    }

    #[test]
    fn the_9p_devices_are_found_by_their_driver() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        for (dev, driver) in [
            ("virtio0", "virtio_console"),
            ("virtio1", "virtio_blk"),
            ("virtio2", "9pnet_virtio"),
        ] {
            std::fs::create_dir(dir.path().join(dev)).unwrap();
            symlink(
                format!("../../../bus/virtio/drivers/{driver}"),
                dir.path().join(dev).join("driver"),
            )
            .unwrap();
        }
        let of = |driver| Watch::of_driver(dir.path(), driver).unwrap().devices;
        assert_eq!(of(NINEP_DRIVER), ["virtio2"]);
        assert_eq!(of(BLOCK_DRIVER), ["virtio1"]);
        let none = Watch::of_driver(&dir.path().join("absent"), NINEP_DRIVER).unwrap();
        assert!(none.devices.is_empty());
        assert!(none.check(none.start().unwrap(), "x").is_ok());
    }
}
