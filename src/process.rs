//! The only module that spawns host processes.
//!
//! Every command is an argument vector (never a shell string) with a
//! deadline, given when the [`Cmd`] is made: there is no way to run one
//! without. A child runs in its own process group, so a timeout, an early
//! exit or a cancelled future kills everything it started. Output is
//! drained concurrently into a log file or memory, decoded lossily line by
//! line to the end, the exit status is always checked, and errors (a
//! timeout too) carry a bounded tail of the output. No child outlives
//! patchbench, even a SIGKILLed one: see [`lifeline`].

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

mod lifeline;

/// How many trailing output lines an error keeps.
const TAIL_LINES: usize = 40;

/// A line longer than this many bytes is split: a child that writes
/// megabytes without a newline cannot make us hold them as one line.
const MAX_LINE: u64 = 64 * 1024;

/// How long a child gets between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(3);

/// A command to run: program, arguments, where its output goes, and how
/// long it may take.
#[derive(Debug, Clone)]
pub struct Cmd {
    program: OsString,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    env: Vec<(OsString, OsString)>,
    log: Option<PathBuf>,
    deadline: Duration,
}

impl Cmd {
    /// A command that is killed, with its whole process group, if it has
    /// not finished `deadline` after it started. Each caller chooses the
    /// deadline and says why next to it.
    pub fn new(program: impl AsRef<OsStr>, deadline: Duration) -> Self {
        Cmd {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            log: None,
            deadline,
        }
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Append stdout and stderr, interleaved by line, to this file.
    pub fn log_to(mut self, path: impl Into<PathBuf>) -> Self {
        self.log = Some(path.into());
        self
    }

    /// How long the command may run.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    pub fn argv(&self) -> impl Iterator<Item = &OsStr> {
        std::iter::once(self.program.as_os_str()).chain(self.args.iter().map(|a| a.as_os_str()))
    }
}

/// The command line, for messages (quoted where a word needs it).
impl fmt::Display for Cmd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words: Vec<String> = self
            .argv()
            .map(|w| {
                let w = w.to_string_lossy();
                if w.is_empty() || w.contains(|c: char| c.is_whitespace() || c == '\'') {
                    format!("'{}'", w.replace('\'', r"'\''"))
                } else {
                    w.into_owned()
                }
            })
            .collect();
        f.write_str(&words.join(" "))
    }
}

/// What a finished command produced.
#[derive(Debug)]
pub struct Output {
    pub stdout: String,
    pub tail: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("`{program}` was not found on PATH{}", install_hint(program))]
    NotFound { program: String },
    #[error("could not start `{command}`")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` failed with {status}{}\n{}", log_hint(log), tail.join("\n"))]
    Failed {
        command: String,
        status: ExitStatus,
        tail: Vec<String>,
        log: Option<PathBuf>,
    },
    #[error("`{command}` did not finish within {} and was killed{}\n{}", humantime::format_duration(*after), log_hint(log), tail.join("\n"))]
    Timeout {
        command: String,
        after: Duration,
        /// The last lines it wrote before it was killed.
        tail: Vec<String>,
        log: Option<PathBuf>,
    },
    #[error("i/o while running `{command}`")]
    Io {
        command: String,
        #[source]
        source: std::io::Error,
    },
}

fn log_hint(log: &Option<PathBuf>) -> String {
    match log {
        Some(p) => format!(" (full log: {})", p.display()),
        None => String::new(),
    }
}

/// The Debian package that provides a program the pipeline needs.
pub fn debian_package_for(program: &str) -> Option<&'static str> {
    Some(match program {
        "make" => "make",
        "gcc" | "cc" => "gcc",
        "flex" => "flex",
        "bison" => "bison",
        "bc" => "bc",
        "tar" => "tar",
        "xz" => "xz-utils",
        "ccache" => "ccache",
        "cp" => "coreutils",
        "cpio" => "cpio",
        "qemu-system-x86_64" => "qemu-system-x86",
        "busybox" => "busybox-static",
        "strace" => "strace",
        "stress-ng" => "stress-ng",
        "ldd" => "libc-bin",
        _ => return None,
    })
}

fn install_hint(program: &str) -> String {
    match debian_package_for(program) {
        Some(pkg) => format!(": install it with `apt-get install {pkg}`"),
        None => String::new(),
    }
}

/// A bounded ring of the last lines seen.
#[derive(Default)]
struct Tail(VecDeque<String>);

impl Tail {
    fn push(&mut self, line: String) {
        if self.0.len() == TAIL_LINES {
            self.0.pop_front();
        }
        self.0.push_back(line);
    }
}

fn spawn_error(cmd: &Cmd, source: std::io::Error) -> ProcessError {
    if source.kind() == std::io::ErrorKind::NotFound {
        ProcessError::NotFound {
            program: cmd.program.to_string_lossy().into_owned(),
        }
    } else {
        ProcessError::Spawn {
            command: cmd.to_string(),
            source,
        }
    }
}

fn command_for(cmd: &Cmd) -> Result<Command, ProcessError> {
    let lifeline = lifeline::fd().map_err(|source| ProcessError::Spawn {
        command: cmd.to_string(),
        source,
    })?;
    let mut command = Command::new(&cmd.program);
    command.args(&cmd.args);
    if let Some(dir) = &cmd.cwd {
        command.current_dir(dir);
    }
    for (k, v) in &cmd.env {
        command.env(k, v);
    }
    // Its own process group: a kill reaches everything it started (make's
    // compilers, QEMU's helpers).
    command.process_group(0);
    command.kill_on_drop(true);
    // SAFETY: the closure runs in the forked child before exec and makes
    // only async-signal-safe calls (getpid, send).
    unsafe {
        command.pre_exec(move || lifeline::register_self(lifeline));
    }
    Ok(command)
}

/// Kills a child's whole process group when dropped before the child was
/// reaped: a cancelled `run` (Ctrl-C, a `select!` that went the other way)
/// leaves nothing behind, not even make's compilers. It also takes the
/// group off the lifeline's list once it is gone.
struct GroupGuard(Option<u32>);

impl GroupGuard {
    fn new(child: &Child) -> GroupGuard {
        GroupGuard(child.id())
    }

    /// The child was reaped: its process group id may be reused now.
    fn disarm(&mut self) {
        if let Some(pid) = self.0.take() {
            lifeline::unregister(pid);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            signal_group(pid, libc::SIGKILL);
        }
        self.disarm();
    }
}

/// Run a command to completion: drain its output, enforce the deadline, and
/// fail unless it exits 0. Stdout is kept in memory unless it goes to a log.
pub async fn run(cmd: &Cmd) -> Result<Output, ProcessError> {
    let mut command = command_for(cmd)?;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|e| spawn_error(cmd, e))?;
    let mut guard = GroupGuard::new(&child);
    let io_err = |source| ProcessError::Io {
        command: cmd.to_string(),
        source,
    };

    let mut log = match &cmd.log {
        Some(path) => Some(
            tokio::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .await
                .map_err(io_err)?,
        ),
        None => None,
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel::<(bool, String)>(256);
    let out = child.stdout.take().expect("stdout is piped");
    let err = child.stderr.take().expect("stderr is piped");
    let readers = [
        tokio::spawn(forward_lines(out, true, tx.clone())),
        tokio::spawn(forward_lines(err, false, tx)),
    ];

    let mut tail = Tail::default();
    let mut stdout = String::new();
    let drain = async {
        while let Some((is_stdout, line)) = rx.recv().await {
            if let Some(file) = log.as_mut() {
                file.write_all(line.as_bytes()).await?;
                file.write_all(b"\n").await?;
            } else if is_stdout {
                stdout.push_str(&line);
                stdout.push('\n');
            }
            tail.push(line);
        }
        if let Some(file) = log.as_mut() {
            file.flush().await?;
        }
        child.wait().await
    };
    let status = match tokio::time::timeout(cmd.deadline, drain).await {
        Ok(status) => {
            guard.disarm();
            status.map_err(io_err)?
        }
        Err(_) => {
            terminate_group(&mut child).await;
            guard.disarm();
            for reader in readers {
                reader.abort();
            }
            return Err(ProcessError::Timeout {
                command: cmd.to_string(),
                after: cmd.deadline,
                tail: tail.0.into(),
                log: cmd.log.clone(),
            });
        }
    };
    if !status.success() {
        return Err(ProcessError::Failed {
            command: cmd.to_string(),
            status,
            tail: tail.0.into(),
            log: cmd.log.clone(),
        });
    }
    Ok(Output {
        stdout,
        tail: tail.0.into(),
    })
}

/// [`run`] for a caller that is not async, such as a campaign's checks
/// while it is read (`stress-ng --stressors`): the command runs on a
/// thread of its own with a runtime of its own, so this works inside an
/// async caller too, whose thread waits meanwhile. Only for quick queries:
/// give them a deadline of seconds, so that Ctrl-C is not held up.
pub fn run_blocking(cmd: &Cmd) -> Result<Output, ProcessError> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|source| ProcessError::Spawn {
                        command: cmd.to_string(),
                        source,
                    })?;
                runtime.block_on(run(cmd))
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Send each line of `reader` to `tx`, decoded lossily (a byte that is not
/// UTF-8 becomes U+FFFD; the line and every line after it still arrive),
/// without its line ending, until the end of the stream or a read error.
async fn forward_lines<R: AsyncRead + Unpin>(
    reader: R,
    is_stdout: bool,
    tx: tokio::sync::mpsc::Sender<(bool, String)>,
) {
    let mut reader = BufReader::new(reader);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match (&mut reader)
            .take(MAX_LINE)
            .read_until(b'\n', &mut buf)
            .await
        {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
        }
        let line = String::from_utf8_lossy(&buf).into_owned();
        if tx.send((is_stdout, line)).await.is_err() {
            break;
        }
    }
}

/// A long-running child (QEMU) whose stdout is discarded and stderr goes to a
/// file. Its command's deadline is enforced from the spawn on (callers wait
/// for it under shorter, more specific deadlines of their own; this one is
/// the backstop). Dropping it kills its whole process group.
pub struct Daemon {
    child: Child,
    guard: GroupGuard,
    killer: tokio::task::JoinHandle<()>,
}

impl Daemon {
    pub fn spawn(cmd: &Cmd, stderr_to: &Path) -> Result<Daemon, ProcessError> {
        let stderr = std::fs::File::create(stderr_to).map_err(|source| ProcessError::Io {
            command: cmd.to_string(),
            source,
        })?;
        let mut command = command_for(cmd)?;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        let child = command.spawn().map_err(|e| spawn_error(cmd, e))?;
        let guard = GroupGuard::new(&child);
        let pid = child.id();
        let deadline = cmd.deadline;
        let killer = tokio::spawn(async move {
            tokio::time::sleep(deadline).await;
            if let Some(pid) = pid {
                signal_group(pid, libc::SIGKILL);
            }
        });
        Ok(Daemon {
            child,
            guard,
            killer,
        })
    }

    /// The child's process ID, while it has not been reaped.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Wait for the child to exit by itself (or be killed at its deadline).
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let status = self.child.wait().await;
        self.killer.abort();
        if status.is_ok() {
            self.guard.disarm();
        }
        status
    }

    /// SIGTERM the group, wait a grace period, then SIGKILL, and reap.
    pub async fn stop(mut self) {
        self.killer.abort();
        terminate_group(&mut self.child).await;
        self.guard.disarm();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // The guard, dropped after this, kills the group unless the child
        // was reaped.
        self.killer.abort();
    }
}

fn signal_group(pid: u32, signal: libc::c_int) {
    // SAFETY: kill(2) with a negative pid signals the process group the child
    // leads (it was spawned with process_group(0)); it touches no memory.
    unsafe {
        libc::kill(-(pid as libc::pid_t), signal);
    }
}

async fn terminate_group(child: &mut Child) {
    let Some(pid) = child.id() else {
        return;
    };
    signal_group(pid, libc::SIGTERM);
    if tokio::time::timeout(GRACE, child.wait()).await.is_err() {
        signal_group(pid, libc::SIGKILL);
        let _ = child.wait().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Long enough for any of these tiny commands on a loaded host.
    const QUICK: Duration = Duration::from_secs(60);

    #[tokio::test]
    async fn a_failing_command_reports_status_and_tail() {
        let cmd = Cmd::new("ls", QUICK).arg("/definitely/not/here");
        let err = run(&cmd).await.unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("`ls /definitely/not/here` failed with exit status: 2"),
            "{text}"
        );
        assert!(text.contains("No such file or directory"), "{text}");
    }

    /// From a plain thread and from inside a runtime alike.
    #[test]
    fn a_blocking_run_works_with_or_without_a_runtime() {
        let out = run_blocking(&Cmd::new("echo", QUICK).arg("plain")).unwrap();
        assert_eq!(out.stdout, "plain\n");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let out = runtime.block_on(async { run_blocking(&Cmd::new("echo", QUICK).arg("inside")) });
        assert_eq!(out.unwrap().stdout, "inside\n");
        let err = run_blocking(&Cmd::new("ls", QUICK).arg("/definitely/not/here")).unwrap_err();
        assert!(matches!(err, ProcessError::Failed { .. }), "{err}");
    }

    #[tokio::test]
    async fn a_missing_program_names_its_debian_package() {
        let err = run(&Cmd::new("flex-does-not-exist", QUICK))
            .await
            .unwrap_err();
        assert!(matches!(err, ProcessError::NotFound { .. }));
        assert!(debian_package_for("flex") == Some("flex"));
    }

    #[tokio::test]
    async fn the_deadline_kills_a_command_that_runs_too_long_and_keeps_its_last_lines() {
        // `sh` here is the program under test, not a way to run our commands.
        let cmd = Cmd::new("sh", Duration::from_millis(500))
            .arg("-c")
            .arg("echo first; echo second >&2; exec sleep 30");
        let started = std::time::Instant::now();
        let err = run(&cmd).await.unwrap_err();
        let ProcessError::Timeout { tail, after, .. } = &err else {
            panic!("not a timeout: {err}");
        };
        assert_eq!(*after, Duration::from_millis(500));
        let mut lines = tail.clone();
        lines.sort();
        assert_eq!(lines, ["first", "second"]);
        let text = err.to_string();
        assert!(
            text.contains("did not finish within 500ms and was killed"),
            "{text}"
        );
        assert!(
            text.ends_with("first\nsecond") || text.ends_with("second\nfirst"),
            "{text}"
        );
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[tokio::test]
    async fn output_that_is_not_utf8_is_decoded_lossily_to_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mixed");
        std::fs::write(&file, b"before\nbad \xff\xfe byte\r\nafter\nno newline").unwrap();
        let out = run(&Cmd::new("cat", QUICK).arg(&file)).await.unwrap();
        assert_eq!(
            out.stdout,
            "before\nbad \u{fffd}\u{fffd} byte\nafter\nno newline\n"
        );
        assert_eq!(
            out.tail,
            ["before", "bad \u{fffd}\u{fffd} byte", "after", "no newline"]
        );
    }

    #[tokio::test]
    async fn a_very_long_line_is_split_not_held_whole() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("long");
        let long = vec![b'x'; MAX_LINE as usize * 2 + 10];
        std::fs::write(&file, &long).unwrap();
        let out = run(&Cmd::new("cat", QUICK).arg(&file)).await.unwrap();
        let lengths: Vec<usize> = out.tail.iter().map(String::len).collect();
        assert_eq!(lengths, [MAX_LINE as usize, MAX_LINE as usize, 10]);
    }

    #[tokio::test]
    async fn a_cancelled_run_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        // A child that starts a grandchild in its group, records both pids,
        // and waits: what make does with its compilers.
        let cmd = Cmd::new("sh", QUICK)
            .arg("-c")
            .arg(format!("sleep 30 & echo $$ $! > {}; wait", pids.display()));
        let run = run(&cmd);
        let read_pids = async {
            loop {
                if let Ok(text) = std::fs::read_to_string(&pids)
                    && text.ends_with('\n')
                {
                    return text;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        let text = tokio::select! {
            _ = run => panic!("the command finished"),
            text = read_pids => text,
        };
        // The run future is dropped here, as on Ctrl-C.
        let alive = |pid: &str| {
            std::path::Path::new(&format!("/proc/{pid}")).exists()
                && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .unwrap_or_default()
                    .contains(") Z ")
        };
        let until = std::time::Instant::now() + Duration::from_secs(5);
        let pids: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(pids.len(), 2, "{text}");
        while pids.iter().any(|p| alive(p)) {
            assert!(std::time::Instant::now() < until, "{pids:?} still alive");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn stdout_is_captured_and_logs_are_written() {
        let out = run(&Cmd::new("echo", QUICK).arg("hello")).await.unwrap();
        assert_eq!(out.stdout, "hello\n");
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        run(&Cmd::new("echo", QUICK).arg("to-log").log_to(&log))
            .await
            .unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "to-log\n");
    }

    #[tokio::test]
    async fn a_daemon_is_killed_at_its_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let cmd = Cmd::new("sleep", Duration::from_millis(300)).arg("30");
        let mut daemon = Daemon::spawn(&cmd, &dir.path().join("stderr")).unwrap();
        let status = tokio::time::timeout(Duration::from_secs(10), daemon.wait())
            .await
            .expect("killed at its deadline")
            .unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
    }

    #[test]
    fn display_quotes_words_with_spaces() {
        let cmd = Cmd::new("make", QUICK).arg("CC=ccache gcc").arg("-j2");
        assert_eq!(cmd.to_string(), "make 'CC=ccache gcc' -j2");
    }
}
