//! Boots replayed from the cache in a deterministic lane.
//!
//! Under icount (and in the cost and counting lanes, which run under it) a
//! boot is a pure function of its inputs: the same QEMU and firmware, the
//! same arguments, the same kernel and initramfs bytes give the same guest,
//! instruction for instruction, and so the same samples (whole runs replay
//! exactly: docs/statistics.md). A boot already run with exactly those
//! inputs is therefore not run again: its record and console log come from
//! `CACHE/replays/<key>/`, and the results say so (`Boot::replayed`). A
//! warm verdict then boots only what changed, B. `run --fresh-boots`
//! boots everything.
//!
//! The key is the sha256 of: QEMU's binary, the firmware it loads, and
//! its whole argument vector with every input file named by its sha256 and
//! the boot's own directory and sockets by a placeholder.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context;
use sha2::{Digest, Sha256};

use crate::results::Boot;
use crate::vm::BootSpec;

/// The firmware QEMU's q35 machine loads for a direct kernel boot.
const FIRMWARE: [&str; 4] = [
    "bios-256k.bin",
    "pvh.bin",
    "linuxboot_dma.bin",
    "kvmvapic.bin",
];

/// The replay cache of one run.
pub(super) struct Replays {
    dir: PathBuf,
    /// QEMU's binary and firmware, hashed once a run.
    emulator: String,
    /// Input files already hashed this run, by path.
    hashed: Mutex<HashMap<PathBuf, String>>,
}

/// What a replayed boot keeps: its record and its console log.
#[derive(serde::Serialize, serde::Deserialize)]
struct Entry {
    key: String,
    boot: Boot,
}

impl Replays {
    /// The cache under `cache_dir`, for the QEMU on `PATH`.
    pub(super) fn open(cache_dir: &Path) -> anyhow::Result<Replays> {
        let qemu = crate::cost::api::qemu_on_path()
            .context("qemu-system-x86_64 is not on PATH: apt-get install qemu-system-x86")?;
        let mut emulator = format!("qemu {}\n", file_sha256(&qemu)?);
        for dir in ["/usr/share/qemu", "/usr/share/seabios"] {
            for name in FIRMWARE {
                let path = Path::new(dir).join(name);
                if path.is_file() {
                    emulator.push_str(&format!("{} {}\n", path.display(), file_sha256(&path)?));
                }
            }
        }
        Ok(Replays {
            dir: cache_dir.join("replays"),
            emulator,
            hashed: Mutex::new(HashMap::new()),
        })
    }

    /// The key of a boot: what decides every instruction the guest runs.
    pub(super) fn key(&self, spec: &BootSpec, initramfs_sha256: &str) -> anyhow::Result<String> {
        const SOCKETS: &str = "/patchbench-replay-sockets";
        let cmd = crate::vm::qemu_command(spec, Path::new(SOCKETS));
        let dir = spec.dir.display().to_string();
        let initrd = spec.initrd.display().to_string();
        let mut text = format!("patchbench replay key 1\n{}", self.emulator);
        for arg in cmd.argv() {
            let mut arg = arg
                .to_string_lossy()
                .replace(&initrd, &format!("<initramfs {initramfs_sha256}>"))
                .replace(&dir, "<boot dir>")
                .replace(SOCKETS, "<sockets>");
            // Input files, wherever they sit in an argument (`-kernel F`,
            // `-plugin F,system_map=F`): by their bytes, not their paths.
            let original = arg.clone();
            for file in original
                .split([',', '=', '"', '{', '}', ' '])
                .filter(|p| p.starts_with('/') && Path::new(p).is_file())
            {
                arg = arg.replace(file, &format!("<file {}>", self.hashed(Path::new(file))?));
            }
            text.push_str(&arg);
            text.push('\n');
        }
        Ok(hex::encode(Sha256::digest(text.as_bytes())))
    }

    /// A file's sha256, hashed once a run.
    fn hashed(&self, path: &Path) -> anyhow::Result<String> {
        let mut hashed = self.hashed.lock().expect("the hash memo is never poisoned");
        if let Some(sha) = hashed.get(path) {
            return Ok(sha.clone());
        }
        let sha = file_sha256(path)?;
        hashed.insert(path.to_owned(), sha.clone());
        Ok(sha)
    }

    /// The boot stored under `key`, if one is, with its console log copied
    /// to `console_log`.
    pub(super) fn load(&self, key: &str, console_log: &Path) -> Option<Boot> {
        let entry_dir = self.dir.join(key);
        let text = std::fs::read_to_string(entry_dir.join("boot.json")).ok()?;
        let entry: Entry = serde_json::from_str(&text).ok()?;
        if entry.key != key || !entry.boot.complete {
            return None;
        }
        std::fs::copy(entry_dir.join("console.log"), console_log).ok()?;
        Some(entry.boot)
    }

    /// Keep a complete boot under `key`, atomically: a reader sees the
    /// whole entry or none.
    pub(super) fn store(&self, key: &str, boot: &Boot, console_log: &Path) -> anyhow::Result<()> {
        let entry_dir = self.dir.join(key);
        std::fs::create_dir_all(&entry_dir)
            .with_context(|| format!("cannot create {}", entry_dir.display()))?;
        let console = std::fs::read(console_log)
            .with_context(|| format!("cannot read {}", console_log.display()))?;
        crate::fsutil::write_atomic(&entry_dir.join("console.log"), &console)?;
        let entry = Entry {
            key: key.to_string(),
            boot: boot.clone(),
        };
        crate::fsutil::write_atomic(
            &entry_dir.join("boot.json"),
            serde_json::to_string(&entry)?.as_bytes(),
        )?;
        Ok(())
    }
}

fn file_sha256(path: &Path) -> anyhow::Result<String> {
    crate::tree::sha256_file(path).with_context(|| format!("cannot read {}", path.display()))
}
