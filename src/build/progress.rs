//! What a running build reports: waits for another run's lock, and the
//! objects `make` compiled, counted from its log as it grows.

use std::path::Path;
use std::time::Duration;

use super::objects;

/// What a build tells its caller while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildProgress {
    /// Another run holds a lock this build needs; it waits for it.
    Waiting(WaitingFor),
    /// The wait is over: this run builds.
    Building,
    /// `make` compiled `done` objects, of `expected` when that is known.
    Compiled { done: u64, expected: Option<u64> },
}

/// The lock a build waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WaitingFor {
    /// Another run is building this very kernel; this one will reuse it.
    #[error("waiting for another run building this kernel")]
    SameKernel,
    /// Another run is building a kernel of this tree; builds take turns.
    #[error("waiting for another run's build of this tree")]
    Tree,
}

/// How often a running `make`'s log is read for its progress.
const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// Reports `progress(compiled, expected)` about every second, from the
/// lines `make` appends to `log` after byte `from`, until dropped.
pub(super) async fn watch_compiles(
    log: &Path,
    from: u64,
    expected: Option<u64>,
    progress: &(dyn Fn(BuildProgress) + Sync),
) {
    use std::io::{Read, Seek};
    let mut offset = from;
    let mut partial = Vec::new();
    let mut compiled = 0;
    progress(BuildProgress::Compiled { done: 0, expected });
    loop {
        tokio::time::sleep(PROGRESS_INTERVAL).await;
        let Ok(mut file) = std::fs::File::open(log) else {
            continue;
        };
        if file.seek(std::io::SeekFrom::Start(offset)).is_err() {
            continue;
        }
        let before = compiled;
        let mut bytes = Vec::new();
        if let Ok(n) = file.read_to_end(&mut bytes) {
            offset += n as u64;
            partial.extend_from_slice(&bytes);
            // Count whole lines only; keep a line still being written.
            let end = partial
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |i| i + 1);
            compiled += String::from_utf8_lossy(&partial[..end])
                .lines()
                .filter(|l| objects::compiled_object(l))
                .count() as u64;
            partial.drain(..end);
        }
        if compiled != before {
            progress(BuildProgress::Compiled {
                done: compiled,
                expected,
            });
        }
    }
}

/// Objects compiled, by kbuild's lines in `log` after byte `from`.
pub(super) fn compiled_in_log(log: &Path, from: u64) -> u64 {
    let text = std::fs::read(log).unwrap_or_default();
    let start = (from as usize).min(text.len());
    objects::count_compiled(&String::from_utf8_lossy(&text[start..]))
}
