//! The virtio-serial port that carries [`Message`]s to the host.
//!
//! The port is found by its name (`PORT_NAME`) under
//! `/sys/class/virtio-ports`, and its device node is opened for writing. Each
//! message is one JSON line, written in a single `write` the moment it exists.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use patchbench_agent::{Message, PORT_NAME, Sample};

use crate::error::{Context, Error, Result};

const CLASS_DIR: &str = "/sys/class/virtio-ports";
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// The open port.
pub struct Port {
    file: File,
    path: PathBuf,
    /// The condition every sample sent is tagged with (`None`: the main
    /// workload).
    condition: Option<String>,
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
                        Ok(file) => {
                            return Ok(Port {
                                file,
                                path,
                                condition: None,
                            });
                        }
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

    /// Tags every sample sent from now on with `condition` (a control's
    /// name; `None` for the main workload).
    pub fn set_condition(&mut self, condition: Option<&str>) {
        self.condition = condition.map(str::to_string);
    }

    /// Writes one message as one line, a sample tagged with the condition.
    pub fn send(&mut self, message: &Message) -> Result<()> {
        let message = tagged(message, self.condition.as_deref());
        let mut line = serde_json::to_string(&message).context("encoding a message")?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush())
            .with_context(|| format!("writing to {}", self.path.display()))
    }
}

/// `message`, a sample tagged with `condition`; any other message as it is.
pub fn tagged(message: &Message, condition: Option<&str>) -> Message {
    match message {
        Message::Sample(sample) => Message::Sample(Sample {
            condition: condition.map(str::to_string),
            ..sample.clone()
        }),
        other => other.clone(),
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
    fn samples_are_tagged_with_the_condition_being_run() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("port");
        let mut port = Port {
            file: File::create(&path).unwrap(),
            path: path.clone(),
            condition: None,
        };
        let sample = |index| {
            Message::Sample(Sample {
                index,
                warmup: index == 0,
                metrics: [("pageout_flushes".to_string(), 1)].into(),
                condition: None,
            })
        };
        port.send(&sample(0)).unwrap();
        port.set_condition(Some("unlimited"));
        port.send(&sample(0)).unwrap();
        port.send(&sample(1)).unwrap();
        port.send(&Message::Done).unwrap();
        port.set_condition(None);
        port.send(&sample(1)).unwrap();
        let tags: Vec<Option<String>> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|line| match serde_json::from_str(line).unwrap() {
                Message::Sample(s) => s.condition,
                Message::Done => Some("(done)".into()),
                other => panic!("{other:?}"),
            })
            .collect();
        let unlimited = || Some("unlimited".to_string());
        assert_eq!(
            tags,
            [None, unlimited(), unlimited(), Some("(done)".into()), None]
        );
    }

    #[test]
    fn a_missing_class_dir_means_not_yet() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("virtio-ports");
        assert_eq!(find_device(&dir, PORT_NAME).unwrap(), None);
    }
}
