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
/// start), before the agent opens it. The workers live for this one run:
/// a [`Crew`] with one body, run once.
pub fn run_workers(
    slots: &[Slot],
    body: Body,
    on_gate: &mut dyn FnMut(usize) -> Result<()>,
) -> Result<Vec<Fields>> {
    let mut crew = Crew::start(slots, &[body])?;
    let results = crew.run(0, on_gate)?;
    crew.finish()?;
    Ok(results)
}

/// Forked workers that stay alive from one run to the next: each runs any
/// of the crew's bodies as often as the agent asks, in the same process
/// (one mm, one set of per-process kernel objects) pinned to its CPU and
/// in its cgroup from the start. Between runs each worker waits at the
/// next run's gate 0; the byte that opens it names the body.
pub struct Crew {
    workers: Vec<Worker>,
    bodies: usize,
}

impl Crew {
    /// Forks one worker per slot, each able to run any of `bodies`.
    pub fn start(slots: &[Slot], bodies: &[Body]) -> Result<Crew> {
        if slots.is_empty() {
            bail!("at least one worker is needed");
        }
        if bodies.is_empty() || bodies.len() > usize::from(u8::MAX) {
            bail!("a crew runs 1 to 255 bodies, not {}", bodies.len());
        }
        let mut workers: Vec<Worker> = Vec::with_capacity(slots.len());
        for (index, slot) in slots.iter().enumerate() {
            let forked = sys::pipe()
                .context("creating a report pipe")
                .and_then(|(rr, rw)| Ok((rr, rw, sys::pipe().context("creating a control pipe")?)))
                .and_then(|(rr, rw, (cr, cw))| Ok((rr, rw, cr, cw, sys::fork().context("fork")?)));
            match forked {
                Ok((reports, report, control, control_write, Forked::Child)) => {
                    // The child must hold no control pipe's write end, or
                    // closing them in the agent would not reach the workers
                    // as end-of-file.
                    drop((reports, control_write));
                    drop(std::mem::take(&mut workers));
                    worker::child_main(index, slot, bodies, report, control)
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
        Ok(Crew {
            workers,
            bodies: bodies.len(),
        })
    }

    /// Every worker runs body `body` once, through its gates together;
    /// their numbers in slot order. On any failure every worker is called
    /// off and the crew is spent: later runs fail.
    pub fn run(
        &mut self,
        body: usize,
        on_gate: &mut dyn FnMut(usize) -> Result<()>,
    ) -> Result<Vec<Fields>> {
        if body >= self.bodies {
            bail!("body {body} asked for, but the crew has {}", self.bodies);
        }
        if self.workers.iter().any(|w| w.control.is_none()) {
            bail!("the workers were called off by an earlier failure");
        }
        let workers = &mut self.workers;
        let mut gate = 0;
        loop {
            let lines: Vec<Option<Line>> = workers.iter_mut().map(Worker::next_line).collect();
            if lines.iter().all(|l| matches!(l, Some(Line::Ready))) {
                // Gate 0's byte names the body; later gates' bytes say go.
                let byte = if gate == 0 { body as u8 } else { GO };
                if let Err(e) = on_gate(gate).and_then(|()| open_gate(workers, byte)) {
                    abort(workers);
                    return Err(e).context(format!("at gate {gate}"));
                }
                gate += 1;
                continue;
            }
            if lines.iter().all(|l| matches!(l, Some(Line::Done(_)))) {
                return Ok(lines
                    .into_iter()
                    .map(|l| match l {
                        Some(Line::Done(fields)) => fields,
                        _ => unreachable!("every line is a result"),
                    })
                    .collect());
            }
            // Someone failed, or the workers are out of step: call it off.
            let exits = abort(workers);
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

    /// Lets the workers go: each, waiting at the next run's gate 0, reads
    /// end-of-file and exits. Each must exit with status 0.
    pub fn finish(mut self) -> Result<()> {
        let exits = abort(&mut self.workers);
        for (w, exit) in self.workers.iter().zip(exits) {
            match exit? {
                Exit::Code(0) => {}
                exit => {
                    judge(&w.who(), None, exit)?;
                }
            }
        }
        Ok(())
    }
}

impl Drop for Crew {
    /// A crew dropped without [`Crew::finish`] (an error on the way) still
    /// leaves no worker behind.
    fn drop(&mut self) {
        if self.workers.iter().any(|w| w.control.is_some()) {
            abort(&mut self.workers);
        }
    }
}

/// The byte that opens every gate after gate 0.
const GO: u8 = b'g';

/// Writes `byte` to every worker's control pipe.
fn open_gate(workers: &mut [Worker], byte: u8) -> Result<()> {
    for w in workers.iter_mut() {
        let control = w.control.as_mut().expect("gates open only while running");
        control
            .write_all(&[byte])
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

    /// One forking test at a time: a worker forked by one test thread
    /// inherits every pipe the others hold open at that moment, so a
    /// long-lived worker (a crew's) could keep another test's control pipe
    /// from reaching its workers as end-of-file, and each wait on the other.
    /// The agent itself forks from one thread only.
    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        static FORKS: std::sync::Mutex<()> = std::sync::Mutex::new(());
        FORKS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
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
        let _forks = one_at_a_time();
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

    /// A crew's workers are the same processes from run to run, run the
    /// body each run names, pass each run's gates in step, and exit
    /// cleanly when let go.
    #[test]
    fn a_crew_keeps_its_workers_across_runs() {
        let _forks = one_at_a_time();
        let pid = |_: usize, gate: &mut Gate| -> Result<Fields> {
            gate.wait()?;
            Ok(Fields::from([("pid".to_string(), sys::getpid() as u64)]))
        };
        let index = |i: usize, _: &mut Gate| -> Result<Fields> { Ok(fields(100 + i as u64)) };
        let mut crew = Crew::start(&slots(2), &[&pid, &index]).unwrap();
        let mut gates = Vec::new();
        let mut note = |g| {
            gates.push(g);
            Ok(())
        };
        let first = crew.run(0, &mut note).unwrap();
        assert_eq!(crew.run(1, &mut note).unwrap(), [fields(100), fields(101)]);
        let again = crew.run(0, &mut note).unwrap();
        assert_eq!(gates, [0, 1, 0, 0, 1]);
        assert_eq!(first, again, "the same two processes ran both times");
        assert_ne!(first[0], first[1]);
        assert_ne!(first[0]["pid"], u64::from(std::process::id()));
        let err = crew.run(2, &mut |_| Ok(())).unwrap_err();
        assert_eq!(err.to_string(), "body 2 asked for, but the crew has 2");
        crew.finish().unwrap();
    }

    #[test]
    fn a_failure_spends_the_crew() {
        let _forks = one_at_a_time();
        let body = |index: usize, _: &mut Gate| -> Result<Fields> {
            if index == 0 {
                bail!("out of luck");
            }
            Ok(fields(1))
        };
        let mut crew = Crew::start(&slots(2), &[&body]).unwrap();
        let err = crew.run(0, &mut |_| Ok(())).unwrap_err();
        assert_eq!(err.to_string(), "worker 0: out of luck");
        let err = crew.run(0, &mut |_| Ok(())).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the workers were called off by an earlier failure"
        );
    }

    #[test]
    fn a_failing_worker_calls_the_others_off() {
        let _forks = one_at_a_time();
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
        let _forks = one_at_a_time();
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
        let _forks = one_at_a_time();
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
