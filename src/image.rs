//! The guest's initramfs: busybox, the guest agent as `/init`, the shared
//! libraries the agent needs, and the boot's job, as a reproducible newc cpio.
//!
//! What goes in besides the agent is described by `images/initramfs.yaml`.
//! Entries are sorted, owned by root, and dated 0, so identical inputs give
//! an identical archive and sha256.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

/// The default image spec, shipped in the source tree.
pub const DEFAULT_SPEC: &str = include_str!("../images/initramfs.yaml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageSpec {
    pub busybox: PathBuf,
    pub directories: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("image spec: {0}")]
    Spec(String),
    #[error("cannot read {} for the initramfs", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is dynamically linked; the initramfs needs a static busybox (apt-get install busybox-static)", path.display())]
    DynamicBusybox { path: PathBuf },
    #[error("cannot resolve the shared libraries of {}: {message}", path.display())]
    Libraries { path: PathBuf, message: String },
    #[error("cannot write the initramfs to {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// One archive member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Dir,
    File { data: Vec<u8>, executable: bool },
    CharDev { major: u32, minor: u32 },
}

/// Archive path (no leading `/`) → member. A BTreeMap keeps the order
/// deterministic and puts every directory before its contents.
pub type Entries = BTreeMap<String, Node>;

fn read(path: &Path) -> Result<Vec<u8>, ImageError> {
    std::fs::read(path).map_err(|source| ImageError::Read {
        path: path.to_owned(),
        source,
    })
}

/// Add a node and every missing parent directory.
pub fn insert(entries: &mut Entries, path: &str, node: Node) {
    let path = path.trim_start_matches('/');
    let mut parent = String::new();
    for part in path
        .split('/')
        .collect::<Vec<_>>()
        .iter()
        .rev()
        .skip(1)
        .rev()
    {
        if !parent.is_empty() {
            parent.push('/');
        }
        parent.push_str(part);
        entries.entry(parent.clone()).or_insert(Node::Dir);
    }
    entries.insert(path.to_string(), node);
}

/// The entries every boot shares: directories, busybox, the agent and its
/// libraries, and `/dev/console`.
pub fn base_entries(spec: &ImageSpec, agent: &Path) -> Result<Entries, ImageError> {
    let mut entries = Entries::new();
    for dir in &spec.directories {
        insert(&mut entries, dir, Node::Dir);
    }
    // The kernel opens /dev/console for PID 1 before devtmpfs is mounted.
    insert(
        &mut entries,
        "dev/console",
        Node::CharDev { major: 5, minor: 1 },
    );

    let busybox = lddtree::DependencyAnalyzer::default()
        .analyze(&spec.busybox)
        .map_err(|e| ImageError::Libraries {
            path: spec.busybox.clone(),
            message: e.to_string(),
        })?;
    if busybox.interpreter.is_some() || !busybox.needed.is_empty() {
        return Err(ImageError::DynamicBusybox {
            path: spec.busybox.clone(),
        });
    }
    insert(
        &mut entries,
        "bin/busybox",
        Node::File {
            data: read(&spec.busybox)?,
            executable: true,
        },
    );

    let deps = lddtree::DependencyAnalyzer::default()
        .analyze(agent)
        .map_err(|e| ImageError::Libraries {
            path: agent.to_owned(),
            message: e.to_string(),
        })?;
    if let Some(interp) = &deps.interpreter {
        let data = read(Path::new(interp))?;
        insert(
            &mut entries,
            interp,
            Node::File {
                data,
                executable: true,
            },
        );
    }
    for lib in deps.libraries.values() {
        let Some(real) = &lib.realpath else {
            return Err(ImageError::Libraries {
                path: agent.to_owned(),
                message: format!("library {} was not found", lib.name),
            });
        };
        let data = read(real)?;
        insert(
            &mut entries,
            &lib.path.to_string_lossy(),
            Node::File {
                data,
                executable: true,
            },
        );
    }
    insert(
        &mut entries,
        "init",
        Node::File {
            data: read(agent)?,
            executable: true,
        },
    );
    Ok(entries)
}

/// Write `entries` as a newc cpio archive and return its sha256.
pub fn write_cpio<W: Write>(entries: &Entries, out: W) -> std::io::Result<String> {
    let mut out = HashingWriter {
        inner: out,
        hasher: Sha256::new(),
    };
    for (ino, (path, node)) in entries.iter().enumerate() {
        let builder = cpio::newc::Builder::new(path)
            .ino(ino as u32 + 1)
            .uid(0)
            .gid(0)
            .mtime(0);
        let (builder, data): (_, &[u8]) = match node {
            Node::Dir => (builder.mode(0o040755).nlink(2), &[]),
            Node::File { data, executable } => {
                let mode = if *executable { 0o100755 } else { 0o100644 };
                (builder.mode(mode).nlink(1), data)
            }
            Node::CharDev { major, minor } => (
                builder
                    .mode(0o020600)
                    .nlink(1)
                    .rdev_major(*major)
                    .rdev_minor(*minor),
                &[],
            ),
        };
        write_member(builder, path, data, &mut out)?;
    }
    cpio::newc::trailer(&mut out)?;
    out.flush()?;
    Ok(hex::encode(out.hasher.finalize()))
}

/// One newc member: the header `builder` describes (named `name`), sized
/// by `data`, then `data`. Shared by the boot's archive and the kernel
/// build's staged root (`kbuild::stage`).
pub fn write_member<W: Write>(
    builder: cpio::newc::Builder,
    name: &str,
    data: &[u8],
    out: W,
) -> std::io::Result<()> {
    let size = u32::try_from(data.len()).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{name} is over 4 GiB"),
        )
    })?;
    let mut writer = builder.write(out, size);
    writer.write_all(data)?;
    writer.finish().map(drop)
}

struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Parse the image spec.
pub fn parse_spec(text: &str) -> Result<ImageSpec, ImageError> {
    yaml_serde::from_str(text).map_err(|e| ImageError::Spec(e.to_string()))
}

/// Build the initramfs for one boot at `path`: the shared entries plus the
/// job at [`patchbench_agent::JOB_PATH`], then each archive of `appended`
/// byte for byte (the kernel unpacks concatenated newc archives in turn,
/// Documentation/driver-api/early-userspace/buffer-format.rst). Returns
/// the whole file's sha256.
pub fn build(
    base: &Entries,
    job_json: &[u8],
    appended: &[PathBuf],
    path: &Path,
) -> Result<String, ImageError> {
    let mut entries = base.clone();
    insert(
        &mut entries,
        patchbench_agent::JOB_PATH,
        Node::File {
            data: job_json.to_vec(),
            executable: false,
        },
    );
    let write_err = |source| ImageError::Write {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::create(path).map_err(write_err)?;
    let mut out = HashingWriter {
        inner: std::io::BufWriter::new(file),
        hasher: Sha256::new(),
    };
    write_cpio(&entries, &mut out).map_err(write_err)?;
    for archive in appended {
        let mut from = std::fs::File::open(archive).map_err(|source| ImageError::Read {
            path: archive.clone(),
            source,
        })?;
        std::io::copy(&mut from, &mut out).map_err(write_err)?;
    }
    out.flush().map_err(write_err)?;
    Ok(hex::encode(out.hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_creates_parents_in_order() {
        let mut e = Entries::new();
        insert(&mut e, "/lib/x86_64-linux-gnu/libc.so.6", Node::Dir);
        let keys: Vec<_> = e.keys().cloned().collect();
        assert_eq!(
            keys,
            [
                "lib",
                "lib/x86_64-linux-gnu",
                "lib/x86_64-linux-gnu/libc.so.6"
            ]
        );
    }

    #[test]
    fn appended_archives_follow_the_boots_own_and_the_hash_covers_them() {
        let dir = tempfile::tempdir().unwrap();
        let stage = dir.path().join("stage.cpio");
        std::fs::write(&stage, b"070701-the-stage").unwrap();
        let (with, without) = (dir.path().join("with"), dir.path().join("without"));
        let e = Entries::new();
        let sha_with = build(&e, b"{}", std::slice::from_ref(&stage), &with).unwrap();
        let sha_without = build(&e, b"{}", &[], &without).unwrap();
        let (with, without) = (
            std::fs::read(with).unwrap(),
            std::fs::read(without).unwrap(),
        );
        assert_eq!(with, [&without[..], b"070701-the-stage"].concat());
        assert_eq!(sha_with, hex::encode(Sha256::digest(&with)));
        assert_ne!(sha_with, sha_without);
        // The kernel reads the next archive at a 4-byte boundary.
        assert_eq!(without.len() % 4, 0);
        let missing = dir.path().join("no-such.cpio");
        let err = build(
            &e,
            b"{}",
            std::slice::from_ref(&missing),
            &dir.path().join("x"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("no-such.cpio"), "{err}");
    }

    #[test]
    fn archives_are_reproducible_and_readable() {
        let mut e = Entries::new();
        insert(&mut e, "dev/console", Node::CharDev { major: 5, minor: 1 });
        insert(
            &mut e,
            "init",
            Node::File {
                data: b"#!x".to_vec(),
                executable: true,
            },
        );
        let mut a = Vec::new();
        let mut b = Vec::new();
        let sha_a = write_cpio(&e, &mut a).unwrap();
        let sha_b = write_cpio(&e, &mut b).unwrap();
        assert_eq!(a, b);
        assert_eq!(sha_a, sha_b);
        assert_eq!(sha_a, hex::encode(Sha256::digest(&a)));
        // Read it back: names, modes and device numbers survive.
        let mut names = Vec::new();
        let mut rest: &[u8] = &a;
        loop {
            let reader = cpio::NewcReader::new(rest).unwrap();
            if reader.entry().is_trailer() {
                break;
            }
            names.push((
                reader.entry().name().to_string(),
                reader.entry().mode(),
                reader.entry().rdev_major(),
            ));
            rest = reader.finish().unwrap();
        }
        assert_eq!(
            names,
            [
                ("dev".to_string(), 0o040755, 0),
                ("dev/console".to_string(), 0o020600, 5),
                ("init".to_string(), 0o100755, 0)
            ]
        );
    }

    #[test]
    fn the_shipped_spec_parses() {
        let spec = parse_spec(DEFAULT_SPEC).unwrap();
        assert_eq!(spec.busybox, Path::new("/bin/busybox"));
        assert!(spec.directories.iter().any(|d| d == "proc"));
    }
}
