//! Runs the workers of one sample: fork them, wait until every one is pinned
//! and in its cgroup, start them together, and collect their results.
//!
//! Each worker has its own report pipe (see [`crate::report`]); all share one
//! start pipe. The agent writes one start byte per worker once all are ready,
//! so setup (fork, pinning, cgroup migration) stays out of the timed window
//! and the workers really run concurrently. If any worker fails before it is
//! ready, the agent closes the start pipe without writing, and the others exit
//! with [`worker::EXIT_ABORTED`].

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use crate::error::{Context, Error, Result};
use crate::report::{Line, WorkerResult};
use crate::sys::{self, Exit, Forked};
use crate::worker::{self, WorkerPlan};

/// A forked worker, seen from the agent.
struct Worker {
    index: usize,
    cpu: u32,
    pid: libc::pid_t,
    reports: BufReader<File>,
}

impl Worker {
    /// The next report line; `None` at end of file. A pipe or protocol
    /// failure comes back as an `error` line, judged like the worker's own.
    fn next_line(&mut self) -> Option<Line> {
        let mut text = String::new();
        match self.reports.read_line(&mut text) {
            Ok(0) => None,
            Ok(_) => Some(
                Line::decode(&text)
                    .unwrap_or_else(|e| Line::Error(format!("sent a garbled report: {e}"))),
            ),
            Err(e) => Some(Line::Error(format!("reading its report pipe: {e}"))),
        }
    }

    fn wait(&self) -> Result<Exit> {
        sys::wait_for(self.pid).with_context(|| format!("waiting for worker {}", self.index))
    }
}

/// Runs one worker per CPU in `cpus`, each over `mib` MiB, and returns their
/// results in CPU order.
pub fn run_workers(
    cpus: &[u32],
    mib: u64,
    cgroup_procs: Option<&Path>,
) -> Result<Vec<WorkerResult>> {
    let (start_read, start_write) = sys::pipe().context("creating the start pipe")?;
    let mut workers: Vec<Worker> = Vec::with_capacity(cpus.len());
    for (index, &cpu) in cpus.iter().enumerate() {
        let forked = sys::pipe()
            .context("creating a report pipe")
            .and_then(|(read, write)| Ok((read, write, sys::fork().context("fork")?)));
        match forked {
            Ok((_, write, Forked::Child)) => {
                // The child must not hold the write end, or closing it in the
                // agent would not reach the others as end-of-file.
                drop(start_write);
                let start = match start_read.try_clone() {
                    Ok(fd) => fd,
                    Err(_) => sys::exit_now(worker::EXIT_FAILED),
                };
                let plan = WorkerPlan {
                    cpu,
                    cgroup_procs,
                    mib,
                };
                worker::child_main(&plan, write, start)
            }
            Ok((read, write, Forked::Parent { pid })) => {
                drop(write);
                workers.push(Worker {
                    index,
                    cpu,
                    pid,
                    reports: BufReader::new(File::from(read)),
                });
            }
            Err(e) => {
                drop(start_write);
                reap(&workers);
                return Err(e).context(format!("starting worker {index}"));
            }
        }
    }
    drop(start_read);

    // Every worker says `ready` (or why not) before any clock starts.
    let mut not_ready = None;
    for (position, w) in workers.iter_mut().enumerate() {
        match w.next_line() {
            Some(Line::Ready) => {}
            line => {
                not_ready = Some((position, line));
                break;
            }
        }
    }
    if let Some((position, line)) = not_ready {
        drop(start_write);
        let exits = reap(&workers);
        let w = &workers[position];
        let exit = exits[position].clone()?;
        return Err(judge(w.index, w.cpu, line, exit).err().unwrap_or_else(|| {
            Error::msg(format!("worker {} reported before starting", w.index))
        }));
    }

    let go = vec![b'g'; workers.len()];
    let started = File::from(start_write)
        .write_all(&go)
        .context("writing the start pipe");
    if let Err(e) = started {
        reap(&workers);
        return Err(e);
    }

    let mut outcomes = Vec::with_capacity(workers.len());
    for w in &mut workers {
        let line = w.next_line();
        let outcome = w.wait().and_then(|exit| judge(w.index, w.cpu, line, exit));
        outcomes.push(outcome);
    }
    outcomes.into_iter().collect()
}

/// Waits for every worker (they all exit once the start pipe is closed).
fn reap(workers: &[Worker]) -> Vec<Result<Exit>> {
    workers.iter().map(Worker::wait).collect()
}

/// What a worker's last line and exit status amount to.
fn judge(index: usize, cpu: u32, line: Option<Line>, exit: Exit) -> Result<WorkerResult> {
    let who = format!("worker {index} (CPU {cpu})");
    let message = match (exit, line) {
        (Exit::Signal(signal), _) => {
            let hint = if signal == libc::SIGKILL {
                " (the OOM killer?)"
            } else {
                ""
            };
            format!("{who} was killed by {}{hint}", sys::signal_name(signal))
        }
        (_, Some(Line::Error(message))) => format!("{who}: {message}"),
        (Exit::Code(0), Some(Line::Done(result))) => return Ok(result),
        (Exit::Code(0), _) => format!("{who} exited without reporting a result"),
        (Exit::Code(code), _) => format!("{who} exited with status {code} and no message"),
    };
    Err(Error::msg(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result() -> WorkerResult {
        WorkerResult {
            pageout_cpu_ns: 1,
            verify_cpu_ns: 2,
            total_cpu_ns: 3,
            start_mono_ns: 4,
            end_mono_ns: 5,
        }
    }

    #[test]
    fn judge_accepts_a_clean_result() {
        assert_eq!(
            judge(0, 0, Some(Line::Done(result())), Exit::Code(0)),
            Ok(result())
        );
    }

    #[test]
    fn judge_names_what_went_wrong() {
        let cases = [
            (
                None,
                Exit::Signal(libc::SIGKILL),
                "worker 1 (CPU 3) was killed by SIGKILL (the OOM killer?)",
            ),
            (
                Some(Line::Done(result())),
                Exit::Signal(libc::SIGSEGV),
                "worker 1 (CPU 3) was killed by SIGSEGV",
            ),
            (
                Some(Line::Error("verify: page 7 of 8192 is corrupt".into())),
                Exit::Code(1),
                "worker 1 (CPU 3): verify: page 7 of 8192 is corrupt",
            ),
            (
                None,
                Exit::Code(0),
                "worker 1 (CPU 3) exited without reporting a result",
            ),
            (
                Some(Line::Ready),
                Exit::Code(0),
                "worker 1 (CPU 3) exited without reporting a result",
            ),
            (
                None,
                Exit::Code(3),
                "worker 1 (CPU 3) exited with status 3 and no message",
            ),
            (
                Some(Line::Done(result())),
                Exit::Code(2),
                "worker 1 (CPU 3) exited with status 2 and no message",
            ),
        ];
        for (line, exit, want) in cases {
            assert_eq!(judge(1, 3, line, exit).unwrap_err().to_string(), want);
        }
    }

    /// End to end on the build host: two real forked workers, no cgroup.
    #[test]
    fn workers_run_and_report() {
        let online = crate::parse::cpu_list(
            &std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap(),
        )
        .unwrap();
        let cpus = &online[..online.len().min(2)];
        let results = run_workers(cpus, 1, None).unwrap();
        assert_eq!(results.len(), cpus.len());
        for r in results {
            assert!(r.end_mono_ns > r.start_mono_ns);
            assert!(r.total_cpu_ns >= r.pageout_cpu_ns + r.verify_cpu_ns);
        }
    }

    #[test]
    fn a_worker_that_cannot_join_fails_the_sample() {
        let err = run_workers(&[0], 1, Some(Path::new("/nonexistent/cgroup.procs"))).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("worker 0 (CPU 0): writing"), "{text}");
        assert!(text.contains("/nonexistent/cgroup.procs"), "{text}");
    }
}
