//! The only module that spawns host processes.
//!
//! Every command is an argument vector (never a shell string). A child runs in
//! its own process group, so a timeout or an early exit kills everything it
//! started. Output is drained concurrently into a log file or memory, the exit
//! status is always checked, and errors carry a bounded tail of the output.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

/// How many trailing output lines an error keeps.
const TAIL_LINES: usize = 40;

/// How long a child gets between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(3);

/// A command to run: program, arguments, and where its output goes.
#[derive(Debug, Clone)]
pub struct Cmd {
    program: OsString,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    env: Vec<(OsString, OsString)>,
    log: Option<PathBuf>,
    deadline: Option<Duration>,
}

impl Cmd {
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        Cmd {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            log: None,
            deadline: None,
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

    /// Kill the whole process group if it has not finished by then.
    pub fn deadline(mut self, limit: Duration) -> Self {
        self.deadline = Some(limit);
        self
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
    #[error("`{command}` did not finish within {}{}", humantime::format_duration(*after), log_hint(log))]
    Timeout {
        command: String,
        after: Duration,
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

fn command_for(cmd: &Cmd) -> Command {
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
    command
}

/// Run a command to completion: drain its output, enforce the deadline, and
/// fail unless it exits 0. Stdout is kept in memory unless it goes to a log.
pub async fn run(cmd: &Cmd) -> Result<Output, ProcessError> {
    let mut command = command_for(cmd);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|e| spawn_error(cmd, e))?;
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
    tokio::spawn(forward_lines(out, true, tx.clone()));
    tokio::spawn(forward_lines(err, false, tx));

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
    let status = match cmd.deadline {
        Some(limit) => match tokio::time::timeout(limit, drain).await {
            Ok(status) => status.map_err(io_err)?,
            Err(_) => {
                terminate_group(&mut child).await;
                return Err(ProcessError::Timeout {
                    command: cmd.to_string(),
                    after: limit,
                    log: cmd.log.clone(),
                });
            }
        },
        None => drain.await.map_err(io_err)?,
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

async fn forward_lines<R: AsyncRead + Unpin>(
    reader: R,
    is_stdout: bool,
    tx: tokio::sync::mpsc::Sender<(bool, String)>,
) {
    let mut lines = BufReader::new(reader).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if tx.send((is_stdout, line)).await.is_err() {
            break;
        }
    }
}

/// A long-running child (QEMU) whose stdout is discarded and stderr goes to a
/// file. Dropping it kills its whole process group.
pub struct Daemon {
    child: Child,
}

impl Daemon {
    pub fn spawn(cmd: &Cmd, stderr_to: &Path) -> Result<Daemon, ProcessError> {
        let stderr = std::fs::File::create(stderr_to).map_err(|source| ProcessError::Io {
            command: cmd.to_string(),
            source,
        })?;
        let mut command = command_for(cmd);
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        let child = command.spawn().map_err(|e| spawn_error(cmd, e))?;
        Ok(Daemon { child })
    }

    /// Wait for the child to exit by itself.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// SIGTERM the group, wait a grace period, then SIGKILL, and reap.
    pub async fn stop(mut self) {
        terminate_group(&mut self.child).await;
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
            signal_group(pid, libc::SIGKILL);
        }
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

    #[tokio::test]
    async fn a_failing_command_reports_status_and_tail() {
        let cmd = Cmd::new("ls").arg("/definitely/not/here");
        let err = run(&cmd).await.unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("`ls /definitely/not/here` failed with exit status: 2"),
            "{text}"
        );
        assert!(text.contains("No such file or directory"), "{text}");
    }

    #[tokio::test]
    async fn a_missing_program_names_its_debian_package() {
        let err = run(&Cmd::new("flex-does-not-exist")).await.unwrap_err();
        assert!(matches!(err, ProcessError::NotFound { .. }));
        assert!(debian_package_for("flex") == Some("flex"));
    }

    #[tokio::test]
    async fn the_deadline_kills_a_command_that_runs_too_long() {
        let cmd = Cmd::new("sleep")
            .arg("30")
            .deadline(Duration::from_millis(300));
        let started = std::time::Instant::now();
        let err = run(&cmd).await.unwrap_err();
        assert!(matches!(err, ProcessError::Timeout { .. }), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[tokio::test]
    async fn stdout_is_captured_and_logs_are_written() {
        let out = run(&Cmd::new("echo").arg("hello")).await.unwrap();
        assert_eq!(out.stdout, "hello\n");
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        run(&Cmd::new("echo").arg("to-log").log_to(&log))
            .await
            .unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "to-log\n");
    }

    #[test]
    fn display_quotes_words_with_spaces() {
        let cmd = Cmd::new("make").arg("CC=ccache gcc").arg("-j2");
        assert_eq!(cmd.to_string(), "make 'CC=ccache gcc' -j2");
    }
}
