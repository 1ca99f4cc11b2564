//! Runs the workers of one sample: fork them, let each pin itself and join
//! its cgroup, then lead them through their gates together, and collect
//! their numbers.
//!
//! Each worker has its own report pipe (see [`crate::report`]) and its own
//! control pipe. A worker says `ready` at every gate and blocks on its control
//! pipe; once every worker is at the gate the agent runs its gate action (such
//! as resetting the function profiler) and writes one byte to each control
//! pipe. Gate 0 is the start: fork, pinning and cgroup migration stay out of
//! the timed window, and the workers really run concurrently. If any worker
//! fails, the agent closes every control pipe without writing, and the others
//! exit with [`crate::gate::EXIT_ABORTED`] at their next gate.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};

use crate::error::{Context, Error, Result, bail};
pub use crate::gate::{Body, Gate, Slot};
use crate::report::{Fields, Line};
use crate::sys::{self, Exit, Forked};
use crate::worker;

/// A forked worker, seen from the agent.
struct Worker {
    index: usize,
    cpu: Option<u32>,
    pid: libc::pid_t,
    reports: BufReader<File>,
    control: Option<File>,
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

    fn who(&self) -> String {
        who(self.index, self.cpu)
    }
}

fn who(index: usize, cpu: Option<u32>) -> String {
    match cpu {
        Some(cpu) => format!("worker {index} (CPU {cpu})"),
        None => format!("worker {index}"),
    }
}

/// Runs one worker per slot and returns their numbers in slot order.
/// `on_gate(n)` runs once every worker waits at gate `n` (gate 0 is the
/// start), before the agent opens it.
pub fn run_workers(
    slots: &[Slot],
    body: Body,
    on_gate: &mut dyn FnMut(usize) -> Result<()>,
) -> Result<Vec<Fields>> {
    if slots.is_empty() {
        bail!("at least one worker is needed");
    }
    let mut workers: Vec<Worker> = Vec::with_capacity(slots.len());
    for (index, slot) in slots.iter().enumerate() {
        let forked = sys::pipe()
            .context("creating a report pipe")
            .and_then(|(rr, rw)| Ok((rr, rw, sys::pipe().context("creating a control pipe")?)))
            .and_then(|(rr, rw, (cr, cw))| Ok((rr, rw, cr, cw, sys::fork().context("fork")?)));
        match forked {
            Ok((reports, report, control, control_write, Forked::Child)) => {
                // The child must hold no control pipe's write end, or closing
                // them in the agent would not reach the workers as end-of-file.
                drop((reports, control_write));
                drop(std::mem::take(&mut workers));
                worker::child_main(index, slot, body, report, control)
            }
            Ok((reports, write, _, control, Forked::Parent { pid })) => {
                drop(write);
                workers.push(Worker {
                    index,
                    cpu: slot.cpu,
                    pid,
                    reports: BufReader::new(File::from(reports)),
                    control: Some(File::from(control)),
                });
            }
            Err(e) => {
                abort(&mut workers);
                return Err(e).context(format!("starting worker {index}"));
            }
        }
    }

    let mut gate = 0;
    loop {
        let lines: Vec<Option<Line>> = workers.iter_mut().map(Worker::next_line).collect();
        if lines.iter().all(|l| matches!(l, Some(Line::Ready))) {
            if let Err(e) = on_gate(gate).and_then(|()| open_gate(&mut workers)) {
                abort(&mut workers);
                return Err(e).context(format!("at gate {gate}"));
            }
            gate += 1;
            continue;
        }
        if lines.iter().all(|l| matches!(l, Some(Line::Done(_)))) {
            let mut outcomes = Vec::with_capacity(workers.len());
            for (w, line) in workers.iter().zip(lines) {
                outcomes.push(w.wait().and_then(|exit| judge(&w.who(), line, exit)));
            }
            return outcomes.into_iter().collect();
        }
        // Someone failed, or the workers are out of step: call the run off.
        let exits = abort(&mut workers);
        let (position, line) = lines
            .into_iter()
            .enumerate()
            .find(|(_, l)| !matches!(l, Some(Line::Ready)))
            .expect("not all lines are ready");
        let w = &workers[position];
        let exit = exits[position].clone()?;
        return Err(match judge(&w.who(), line, exit) {
            Err(e) => e,
            Ok(_) if gate == 0 => Error::msg(format!("{} reported before starting", w.who())),
            Ok(_) => Error::msg(format!(
                "{} finished while others waited at gate {gate}",
                w.who()
            )),
        });
    }
}

/// Writes one byte to every worker's control pipe.
fn open_gate(workers: &mut [Worker]) -> Result<()> {
    for w in workers.iter_mut() {
        let control = w.control.as_mut().expect("gates open only while running");
        control
            .write_all(b"g")
            .with_context(|| format!("writing the control pipe of {}", w.who()))?;
    }
    Ok(())
}

/// Closes every control pipe, so each worker exits at its next gate, and
/// waits for them all.
fn abort(workers: &mut [Worker]) -> Vec<Result<Exit>> {
    for w in workers.iter_mut() {
        w.control = None;
    }
    workers.iter().map(Worker::wait).collect()
}

/// What a worker's last line and exit status amount to.
fn judge(who: &str, line: Option<Line>, exit: Exit) -> Result<Fields> {
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
    bail!("{message}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn fields(n: u64) -> Fields {
        Fields::from([("n".to_string(), n)])
    }

    #[test]
    fn judge_accepts_a_clean_result() {
        assert_eq!(
            judge("w", Some(Line::Done(fields(1))), Exit::Code(0)),
            Ok(fields(1))
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
                Some(Line::Done(fields(1))),
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
                Some(Line::Done(fields(1))),
                Exit::Code(2),
                "worker 1 (CPU 3) exited with status 2 and no message",
            ),
        ];
        for (line, exit, want) in cases {
            assert_eq!(
                judge(&who(1, Some(3)), line, exit).unwrap_err().to_string(),
                want
            );
        }
        assert_eq!(who(2, None), "worker 2");
    }

    fn slots(n: usize) -> Vec<Slot<'static>> {
        (0..n)
            .map(|_| Slot {
                cpu: None,
                cgroup_procs: None,
            })
            .collect()
    }

    /// On the build host: real forked workers pass two gates in step, and
    /// the agent's gate action runs once per gate with all of them waiting.
    #[test]
    fn workers_pass_their_gates_together() {
        let body = |index: usize, gate: &mut Gate| -> Result<Fields> {
            gate.wait()?;
            gate.wait()?;
            Ok(fields(index as u64))
        };
        let mut gates = Vec::new();
        let results = run_workers(&slots(3), &body, &mut |g| {
            gates.push(g);
            Ok(())
        })
        .unwrap();
        assert_eq!(results, [fields(0), fields(1), fields(2)]);
        assert_eq!(gates, [0, 1, 2]);
    }

    #[test]
    fn a_failing_worker_calls_the_others_off() {
        let body = |index: usize, gate: &mut Gate| -> Result<Fields> {
            if index == 1 {
                bail!("no memory for you");
            }
            gate.wait()?;
            Ok(fields(0))
        };
        let err = run_workers(&slots(3), &body, &mut |_| Ok(())).unwrap_err();
        assert_eq!(err.to_string(), "worker 1: no memory for you");
    }

    #[test]
    fn a_failing_gate_action_calls_the_workers_off() {
        let body = |_: usize, gate: &mut Gate| -> Result<Fields> {
            gate.wait()?;
            Ok(fields(0))
        };
        let err = run_workers(&slots(2), &body, &mut |g| {
            if g == 1 {
                bail!("profiler gone");
            }
            Ok(())
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "at gate 1: profiler gone");
    }

    #[test]
    fn a_worker_that_cannot_join_fails_the_sample() {
        let slot = Slot {
            cpu: Some(0),
            cgroup_procs: Some(Path::new("/nonexistent/cgroup.procs")),
        };
        let body = |_: usize, _: &mut Gate| -> Result<Fields> { Ok(Fields::new()) };
        let err = run_workers(&[slot], &body, &mut |_| Ok(())).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("worker 0 (CPU 0): writing"), "{text}");
        assert!(text.contains("/nonexistent/cgroup.procs"), "{text}");
    }
}
