//! A staged root written as the archive a boot's initramfs appends.

use std::path::Path;

use super::error::{StageError, io_err};
use crate::kbuild::write_archive;

/// Writes the root `root` as the archive `archive`, its members under
/// the guest directory the archive's name gives; atomically, so that a
/// complete archive is the only kind there is. Off the async thread.
pub(super) async fn write(root: &Path, archive: &Path) -> Result<(), StageError> {
    let (root, archive) = (root.to_owned(), archive.to_owned());
    crate::blocking::unblock(move || {
        let prefix = patchbench_agent::staged::staged_prefix(&archive.display().to_string());
        let mut bytes = Vec::new();
        write_archive(&root, &prefix, &mut bytes).map_err(io_err(&root))?;
        crate::fsutil::write_atomic(&archive, &bytes).map_err(io_err(&archive))
    })
    .await
}

/// The name of an archive: the kind, then 16 hex digits of `key`.
pub(super) fn archive_name(kind: &str, key: &[u8]) -> String {
    format!("{kind}-{}.cpio", &hex::encode(key)[..16])
}

/// Every member of a newc archive: its name and its data (for tests).
#[cfg(test)]
pub(super) fn members(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut members = Vec::new();
    let mut rest = bytes;
    loop {
        let mut reader = cpio::NewcReader::new(rest).unwrap();
        if reader.entry().is_trailer() {
            break;
        }
        let name = reader.entry().name().to_string();
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut reader, &mut data).unwrap();
        members.push((name, data));
        rest = reader.finish().unwrap();
    }
    members
}
