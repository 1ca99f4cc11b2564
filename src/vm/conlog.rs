//! The guest's serial console, copied to its log with a cap.
//!
//! QEMU writes the console into a FIFO patchbench reads (QEMU's own `file`
//! backend on a regular file has no size limit). The copy keeps the first
//! [`HEAD`] bytes as they come, so the log can be read while the guest runs;
//! past that it keeps only the last [`TAIL`] bytes in memory and writes them
//! when the console closes, after a line saying how many bytes were
//! dropped. A guest that floods its console costs at most `HEAD + TAIL`
//! bytes on disk and `TAIL` in memory, and the end of the log (a panic,
//! say) is kept.
//!
//! **The guest never waits for this reader.** When QEMU cannot write a
//! byte, its UART keeps "transmitter empty" clear until the host's main
//! loop finds the file writable again, and the kernel's console polls the
//! UART meanwhile: under icount, how many instructions that poll executes
//! depends on when the host read, so two boots of one kernel diverge from
//! the first console line on (docs/cost-model.md, Determinism). QEMU writes
//! the UART one byte per write. A Unix socket, where each byte takes a
//! buffer of its own, filled after a few hundred unread bytes; the FIFO
//! holds [`PIPE_BYTES`] of them ([`fifo`]), hundreds of times a boot's
//! console, so however late the host reads, QEMU's writes complete at
//! once. The copy reads as soon as anything arrives all the same. A failed
//! write of the log (a full disk) stops the writing, not the reading, and
//! is reported when the console closes.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::net::unix::pipe;

/// Bytes of console output written as they come: a boot's console is tens
/// of KiB (the kernel, the agent's lines, a panic's trace), so 1 MiB holds
/// any diagnosis many times over.
pub const HEAD: u64 = 1 << 20;
/// Bytes of console output kept from the end once [`HEAD`] is reached.
pub const TAIL: usize = 256 << 10;
/// The console FIFO's capacity: 1 MiB, the most an unprivileged process
/// may give a pipe on a default Linux (`/proc/sys/fs/pipe-max-size`).
pub const PIPE_BYTES: usize = 1 << 20;

/// Makes the console FIFO at `path` and opens its reading end, with room
/// for [`PIPE_BYTES`] unread bytes. QEMU opens the writing end when it
/// starts (its `file` console backend); until then, reads wait.
pub fn fifo(path: &Path) -> std::io::Result<pipe::Receiver> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::io::AsRawFd;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: a valid NUL-terminated path; mkfifo touches nothing else.
    if unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let receiver = pipe::OpenOptions::new().open_receiver(path)?;
    let bytes = libc::c_int::try_from(PIPE_BYTES).unwrap_or(libc::c_int::MAX);
    // SAFETY: F_SETPIPE_SZ on a pipe descriptor we own.
    if unsafe { libc::fcntl(receiver.as_raw_fd(), libc::F_SETPIPE_SZ, bytes) } < 0 {
        let e = std::io::Error::last_os_error();
        return Err(std::io::Error::new(
            e.kind(),
            format!(
                "giving the console FIFO {PIPE_BYTES} bytes (see /proc/sys/fs/pipe-max-size): {e}"
            ),
        ));
    }
    Ok(receiver)
}

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

/// Copy QEMU's console from `stream` (the [`fifo`]) into `log` (created
/// already, so it exists from the start) until QEMU closes it.
pub async fn copy(
    mut stream: impl AsyncRead + Unpin,
    log: std::fs::File,
    path: &Path,
) -> Result<(), LogError> {
    let err = |source| LogError {
        path: path.to_owned(),
        source,
    };
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

    /// QEMU's console writes, one byte each and non-blocking like QEMU's,
    /// all go through while nobody reads: 300 000 bytes, where a Unix
    /// socket took a few hundred. Then the copy gets them all, and ends when
    /// the writer closes.
    #[tokio::test]
    async fn the_fifo_takes_a_boots_console_unread_and_the_copy_gets_it_all() {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo_path = dir.path().join("console.fifo");
        let receiver = fifo(&fifo_path).unwrap();
        let mut writer = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo_path)
            .unwrap();
        let text: Vec<u8> = (0..300_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        for (i, byte) in text.iter().enumerate() {
            match writer.write(std::slice::from_ref(byte)) {
                Ok(1) => {}
                other => panic!("byte {i} of the console: {other:?}"),
            }
        }
        drop(writer);
        let log_path = dir.path().join("console.log");
        let log = std::fs::File::create(&log_path).unwrap();
        copy(receiver, log, &log_path).await.unwrap();
        assert_eq!(std::fs::read(&log_path).unwrap(), text);
    }

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
