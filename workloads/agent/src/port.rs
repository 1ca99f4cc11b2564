//! The virtio-serial port that carries [`Message`]s to the host.
//!
//! The port is found by its name (`PORT_NAME`) under
//! `/sys/class/virtio-ports`, and its device node is opened for writing. Each
//! message is one JSON line, written in a single `write` the moment it exists.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use patchbench_agent::{Message, PORT_NAME};

use crate::error::{Context, Error, Result};

const CLASS_DIR: &str = "/sys/class/virtio-ports";
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// The open port.
pub struct Port {
    file: File,
    path: PathBuf,
}

impl Port {
    /// Waits up to `deadline` for the port named [`PORT_NAME`] to appear and
    /// opens it.
    pub fn open(deadline: Duration) -> Result<Port> {
        let started = Instant::now();
        loop {
            let last = match find_device(Path::new(CLASS_DIR), PORT_NAME) {
                Ok(Some(dev)) => {
                    let path = Path::new("/dev").join(&dev);
                    match OpenOptions::new().write(true).open(&path) {
                        Ok(file) => return Ok(Port { file, path }),
                        Err(e) => format!("opening {}: {e}", path.display()),
                    }
                }
                Ok(None) => format!("no port named {PORT_NAME} under {CLASS_DIR}"),
                Err(e) => format!("scanning {CLASS_DIR}: {e}"),
            };
            if started.elapsed() >= deadline {
                return Err(Error::msg(format!(
                    "virtio-serial port {PORT_NAME} not usable after {} s: {last}",
                    deadline.as_secs()
                )));
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// The device node, such as `/dev/vport1p1`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes one message as one line.
    pub fn send(&mut self, message: &Message) -> Result<()> {
        let mut line = serde_json::to_string(message).context("encoding a message")?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush())
            .with_context(|| format!("writing to {}", self.path.display()))
    }
}

/// The device name (directory name under `class_dir`) of the port whose
/// `name` file reads `name`.
pub fn find_device(class_dir: &Path, name: &str) -> io::Result<Option<String>> {
    let entries = match std::fs::read_dir(class_dir) {
        Ok(entries) => entries,
        // The class directory appears with the first port.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut matches = Vec::new();
    for entry in entries {
        let entry = entry?;
        // A port without a name file, or one not yet named, is not ours.
        let Ok(port_name) = std::fs::read_to_string(entry.path().join("name")) else {
            continue;
        };
        if port_name.trim() == name {
            matches.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    matches.sort();
    Ok(matches.into_iter().next())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_port_by_name() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        for (dev, name) in [
            ("vport0p0", ""),
            ("vport1p1", PORT_NAME),
            ("vport1p2", "other"),
        ] {
            std::fs::create_dir(dir.join(dev)).unwrap();
            std::fs::write(dir.join(dev).join("name"), format!("{name}\n")).unwrap();
        }
        std::fs::create_dir(dir.join("vport2p1")).unwrap(); // no name file
        assert_eq!(
            find_device(dir, PORT_NAME).unwrap().as_deref(),
            Some("vport1p1")
        );
        assert_eq!(find_device(dir, "absent").unwrap(), None);
    }

    #[test]
    fn a_missing_class_dir_means_not_yet() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("virtio-ports");
        assert_eq!(find_device(&dir, PORT_NAME).unwrap(), None);
    }
}
