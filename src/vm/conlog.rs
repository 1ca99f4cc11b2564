//! The guest's serial console, copied to its log with a cap.
//!
//! QEMU sends the console to a socket patchbench listens on (QEMU's own
//! `file` backend has no size limit). The copy keeps the first [`HEAD`]
//! bytes as they come, so the log can be read while the guest runs; past
//! that it keeps only the last [`TAIL`] bytes in memory and writes them when
//! the console closes, after a line saying how many bytes were dropped. A
//! guest that floods its console costs at most `HEAD + TAIL` bytes on disk
//! and `TAIL` in memory, and the end of the log (a panic, say) is kept.
//!
//! The copy never stops reading while QEMU writes: a guest whose console
//! is not read blocks in its next console write. It reads as soon as
//! anything arrives: QEMU writes the UART one byte per write, each byte
//! takes a buffer of its own in the socket, and a reader that waits for
//! bytes to gather lets the socket fill and slows the guest (5 times, for
//! a 10 ms wait). A failed write of the log
//! (a full disk) stops the writing, not the reading, and is reported when
//! the console closes.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};

use tokio::io::AsyncReadExt;
use tokio::net::UnixListener;

/// Bytes of console output written as they come: a boot's console is tens
/// of KiB (the kernel, the agent's lines, a panic's trace), so 1 MiB holds
/// any diagnosis many times over.
pub const HEAD: u64 = 1 << 20;
/// Bytes of console output kept from the end once [`HEAD`] is reached.
pub const TAIL: usize = 256 << 10;

/// The log being written: the head, then the tail at [`Capped::finish`].
pub struct Capped<W: Write> {
    out: W,
    head: u64,
    tail_cap: usize,
    written: u64,
    tail: VecDeque<u8>,
    /// Bytes past the head that fell out of the tail.
    dropped: u64,
}

impl<W: Write> Capped<W> {
    pub fn new(out: W) -> Capped<W> {
        Capped::with_caps(out, HEAD, TAIL)
    }

    pub fn with_caps(out: W, head: u64, tail: usize) -> Capped<W> {
        Capped {
            out,
            head,
            tail_cap: tail,
            written: 0,
            tail: VecDeque::new(),
            dropped: 0,
        }
    }

    /// Take the next bytes of console output.
    pub fn push(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        if self.written < self.head {
            let room = usize::try_from(self.head - self.written).unwrap_or(usize::MAX);
            let now = bytes.len().min(room);
            self.out.write_all(&bytes[..now])?;
            self.out.flush()?;
            self.written += now as u64;
            bytes = &bytes[now..];
        }
        if bytes.is_empty() {
            return Ok(());
        }
        self.tail.extend(bytes);
        let excess = self.tail.len().saturating_sub(self.tail_cap);
        self.tail.drain(..excess);
        self.dropped += excess as u64;
        Ok(())
    }

    /// The console closed: write the tail, after a line saying what was
    /// dropped. Returns the number of bytes dropped.
    pub fn finish(mut self) -> std::io::Result<u64> {
        if self.dropped > 0 {
            write!(
                self.out,
                "\n[patchbench: {} bytes of console output dropped here; the log keeps the first {} and the last {}]\n",
                self.dropped,
                self.head,
                self.tail.len()
            )?;
        }
        let (a, b) = self.tail.as_slices();
        self.out.write_all(a)?;
        self.out.write_all(b)?;
        self.out.flush()?;
        Ok(self.dropped)
    }
}

/// A console log that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the console log {}", path.display())]
pub struct LogError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Accept QEMU's console connection on `listener` and copy it into `log`
/// (created already, so it exists from the start) until QEMU closes it.
pub async fn copy(listener: UnixListener, log: std::fs::File, path: &Path) -> Result<(), LogError> {
    let err = |source| LogError {
        path: path.to_owned(),
        source,
    };
    let (mut stream, _) = listener.accept().await.map_err(err)?;
    let mut capped = Some(Capped::new(log));
    let mut failed = None;
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                failed.get_or_insert(e);
                break;
            }
        };
        if let Some(log) = capped.as_mut()
            && let Err(e) = log.push(&buf[..n])
        {
            // Keep reading, so the guest never blocks on its console.
            failed = Some(e);
            capped = None;
        }
    }
    if let Some(log) = capped
        && let Err(e) = log.finish()
    {
        failed.get_or_insert(e);
    }
    match failed {
        Some(e) => Err(err(e)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_log_is_written_whole() {
        let mut out = Vec::new();
        let mut log = Capped::with_caps(&mut out, 10, 4);
        log.push(b"boot\n").unwrap();
        log.push(b"ok\n").unwrap();
        assert_eq!(log.finish().unwrap(), 0);
        assert_eq!(out, b"boot\nok\n");
    }

    #[test]
    fn a_flood_keeps_the_head_and_the_tail_and_counts_the_rest() {
        let mut out = Vec::new();
        let mut log = Capped::with_caps(&mut out, 6, 4);
        log.push(b"head:").unwrap();
        for _ in 0..1000 {
            log.push(b"xxxxxxxxxx").unwrap();
        }
        log.push(b"PANIC").unwrap();
        // 5 + 10,000 + 5 bytes: 6 written, 4 kept, the rest dropped.
        assert_eq!(log.dropped, 10_010 - 6 - 4);
        assert!(log.tail.len() <= 4);
        assert_eq!(log.finish().unwrap(), 10_000);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("head:x\n[patchbench: 10000 bytes"),
            "{text}"
        );
        assert!(text.ends_with("]\nANIC"), "{text}");
    }
}
