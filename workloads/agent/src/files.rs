//! Reading and writing small kernel files (sysfs, procfs, cgroupfs), with the
//! path and the value in every error.

use std::path::Path;

use crate::error::{Context, Result};

/// Reads a whole file as text.
pub fn read(path: impl AsRef<Path>) -> Result<String> {
    let path = path.as_ref();
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// Reads a file and trims surrounding whitespace (a one-value sysfs file).
pub fn read_value(path: impl AsRef<Path>) -> Result<String> {
    read(path).map(|text| text.trim().to_string())
}

/// Writes `value` to a file in one `write(2)`, as sysfs and cgroupfs expect.
pub fn write(path: impl AsRef<Path>, value: &str) -> Result<()> {
    let path = path.as_ref();
    std::fs::write(path, value).with_context(|| format!("writing {value:?} to {}", path.display()))
}
