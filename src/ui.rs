//! Showing engine events. On a terminal: an indicatif spinner per stage,
//! which becomes a bar with an ETA once the stage reports a count with a
//! total (objects compiled of those expected, samples of a boot). Off a
//! terminal (CI logs): plain timestamped lines, and a heartbeat line at
//! least every [`HEARTBEAT`] while a stage runs, with its count and ETA
//! when known. Honours `NO_COLOR`, and `--quiet` ([`set_quiet`]): nothing
//! but warnings.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::events::{Event, Sink};

/// Off a terminal, the longest a running stage stays silent.
pub const HEARTBEAT: Duration = Duration::from_secs(30);

static QUIET: AtomicBool = AtomicBool::new(false);

/// `--quiet`: from now on, every [`Ui`] shows only warnings.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A terminal: spinners and bars.
    Live { color: bool },
    /// A log: lines, with heartbeats.
    Plain,
    /// `--quiet`: warnings only.
    Quiet,
}

/// A count a stage reported, and since when it has been counting.
#[derive(Debug, Clone, PartialEq)]
struct Counted {
    done: u64,
    total: Option<u64>,
    unit: &'static str,
    /// When the first count arrived, and its value: the rate is measured
    /// from there, so set-up time before counting does not skew the ETA.
    first: (Instant, u64),
}

#[derive(Debug)]
struct Running {
    stage: String,
    started: Instant,
    counted: Option<Counted>,
    /// The stage's last progress detail, such as a wait for a lock: what
    /// its heartbeat says until something is counted.
    status: Option<String>,
}

#[derive(Default)]
struct State {
    running: Option<Running>,
    bar: Option<ProgressBar>,
    last_line: Option<Instant>,
    closing: bool,
}

pub struct Ui {
    mode: Mode,
    state: Arc<(Mutex<State>, Condvar)>,
    heartbeat: Option<std::thread::JoinHandle<()>>,
}

impl Ui {
    /// Spinners and bars when stderr is a terminal, plain lines otherwise;
    /// warnings only under `--quiet`.
    pub fn new() -> Ui {
        let mode = if QUIET.load(Ordering::Relaxed) {
            Mode::Quiet
        } else if std::io::stderr().is_terminal()
            && std::env::var_os("TERM").is_some_and(|t| t != "dumb")
        {
            Mode::Live {
                color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
            }
        } else {
            Mode::Plain
        };
        let state = Arc::new((Mutex::new(State::default()), Condvar::new()));
        let heartbeat = (mode == Mode::Plain).then(|| {
            let state = state.clone();
            std::thread::spawn(move || heartbeats(&state))
        });
        Ui {
            mode,
            state,
            heartbeat,
        }
    }

    fn line(&self, state: &mut State, text: &str) {
        let line = format!("[{}] {text}", stamp());
        match &state.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
        state.last_line = Some(Instant::now());
    }

    fn style(&self, counted: Option<&Counted>) -> ProgressStyle {
        let color = matches!(self.mode, Mode::Live { color: true });
        let template = match (counted.and_then(|c| c.total), color) {
            (Some(_), true) => {
                "{spinner:.cyan} [{elapsed_precise}] {prefix:.bold} [{bar:25.cyan/blue}] {pos}/{len} {msg} (ETA {eta})"
            }
            (Some(_), false) => {
                "{spinner} [{elapsed_precise}] {prefix} [{bar:25}] {pos}/{len} {msg} (ETA {eta})"
            }
            (None, true) => "{spinner:.cyan} [{elapsed_precise}] {prefix:.bold} {wide_msg}",
            (None, false) => "{spinner} [{elapsed_precise}] {prefix} {wide_msg}",
        };
        ProgressStyle::with_template(template)
            .expect("valid template")
            .progress_chars("=> ")
    }
}

impl Default for Ui {
    fn default() -> Self {
        Ui::new()
    }
}

impl Drop for Ui {
    fn drop(&mut self) {
        let (lock, wake) = &*self.state;
        {
            let mut state = lock.lock().expect("ui lock");
            state.closing = true;
            if let Some(bar) = state.bar.take() {
                bar.finish_and_clear();
            }
        }
        wake.notify_all();
        if let Some(thread) = self.heartbeat.take() {
            let _ = thread.join();
        }
    }
}

fn stamp() -> String {
    jiff::ZonedDateTime::now().strftime("%H:%M:%S").to_string()
}

/// `1m05s`, `42s`, `1h02m`.
pub fn short_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

/// The time left at the rate observed since counting began: `counted`
/// units in `elapsed`, `left` to go. None until something was counted.
pub fn eta(counted: u64, elapsed: Duration, left: u64) -> Option<Duration> {
    (counted > 0).then(|| elapsed.mul_f64(left as f64 / counted as f64))
}

/// The heartbeat line of a running stage (without the timestamp).
fn heartbeat_text(running: &Running, now: Instant) -> String {
    let elapsed = short_duration(now.duration_since(running.started));
    match &running.counted {
        None => format!(
            "{}: {}, {elapsed} elapsed",
            running.stage,
            running.status.as_deref().unwrap_or("running")
        ),
        Some(c) => {
            let count = match c.total {
                Some(total) => format!(
                    "{}/{total} {} ({}%)",
                    c.done,
                    c.unit,
                    (c.done * 100).checked_div(total).unwrap_or(0).min(100)
                ),
                None => format!("{} {}", c.done, c.unit),
            };
            let left = c.total.and_then(|total| {
                eta(
                    c.done.saturating_sub(c.first.1),
                    now.duration_since(c.first.0),
                    total.saturating_sub(c.done),
                )
            });
            match left {
                Some(left) => format!(
                    "{}: {count}, {elapsed} elapsed, about {} left",
                    running.stage,
                    short_duration(left)
                ),
                None => format!("{}: {count}, {elapsed} elapsed", running.stage),
            }
        }
    }
}

/// Off a terminal: a line whenever a running stage has been silent for
/// [`HEARTBEAT`].
fn heartbeats(state: &(Mutex<State>, Condvar)) {
    let (lock, wake) = state;
    let mut guard = lock.lock().expect("ui lock");
    loop {
        if guard.closing {
            return;
        }
        let now = Instant::now();
        let due = guard
            .last_line
            .map_or(now, |last| last + HEARTBEAT)
            .max(now);
        if let Some(running) = &guard.running
            && due <= now
        {
            eprintln!("[{}] {}", stamp(), heartbeat_text(running, now));
            guard.last_line = Some(now);
            continue;
        }
        let wait = if guard.running.is_some() {
            due - now
        } else {
            HEARTBEAT
        };
        guard = wake.wait_timeout(guard, wait).expect("ui lock").0;
    }
}

fn is_warning(text: &str) -> bool {
    text.starts_with("warning")
}

impl Sink for Ui {
    fn emit(&self, event: Event) {
        let (lock, wake) = &*self.state;
        let mut state = lock.lock().expect("ui lock");
        if self.mode == Mode::Quiet {
            // Progress and notes go; warnings and the command's own output
            // (what `compare -q --markdown > report.md` is for) stay.
            match &event {
                Event::Note(text) if is_warning(text) => self.line(&mut state, text),
                Event::Output(text) => write_output(text),
                _ => {}
            }
            return;
        }
        match event {
            Event::Started { stage, detail } => {
                if let Some(bar) = state.bar.take() {
                    bar.finish_and_clear();
                }
                state.running = Some(Running {
                    status: None,
                    stage: stage.clone(),
                    started: Instant::now(),
                    counted: None,
                });
                if let Mode::Live { .. } = self.mode {
                    let bar = ProgressBar::new_spinner();
                    bar.set_style(self.style(None));
                    bar.set_prefix(stage);
                    bar.set_message(detail);
                    bar.enable_steady_tick(Duration::from_millis(120));
                    state.bar = Some(bar);
                } else {
                    self.line(&mut state, &format!("{stage}: {detail}"));
                }
                wake.notify_all();
            }
            Event::Progress { stage, detail } => {
                if let Some(running) = state.running.as_mut().filter(|r| r.stage == stage) {
                    running.status = Some(detail.clone());
                }
                match (&state.bar, self.mode) {
                    (Some(bar), Mode::Live { .. }) => bar.set_message(detail),
                    _ => self.line(&mut state, &format!("{stage}: {detail}")),
                }
            }
            Event::Count {
                stage,
                done,
                total,
                unit,
            } => {
                let total = total.map(|t| t.max(done));
                let Some(running) = state.running.as_mut().filter(|r| r.stage == stage) else {
                    return;
                };
                let first = running
                    .counted
                    .as_ref()
                    .map_or((Instant::now(), done), |c| c.first);
                let had_total = running.counted.as_ref().and_then(|c| c.total).is_some();
                running.counted = Some(Counted {
                    done,
                    total,
                    unit,
                    first,
                });
                let counted = running.counted.clone();
                if let Some(bar) = &state.bar {
                    if total.is_some() != had_total {
                        bar.set_style(self.style(counted.as_ref()));
                    }
                    match total {
                        Some(total) => {
                            bar.set_length(total);
                            bar.set_position(done);
                            bar.set_message(unit);
                        }
                        None => bar.set_message(format!("{done} {unit}")),
                    }
                }
            }
            Event::Finished {
                stage,
                elapsed,
                detail,
            } => {
                if let Some(bar) = state.bar.take() {
                    bar.finish_and_clear();
                }
                if state.running.as_ref().is_some_and(|r| r.stage == stage) {
                    state.running = None;
                }
                let detail = if detail.is_empty() {
                    String::new()
                } else {
                    format!(" ({detail})")
                };
                self.line(
                    &mut state,
                    &format!("{stage}: done in {:.1}s{detail}", elapsed.as_secs_f64()),
                );
            }
            Event::Note(text) => self.line(&mut state, &text),
            Event::Output(text) => match state.bar.clone() {
                Some(bar) => bar.suspend(|| write_output(&text)),
                None => write_output(&text),
            },
        }
    }
}

/// The command's own output, to stdout exactly as it is.
fn write_output(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error of ours.
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(started: Instant, counted: Option<Counted>) -> Running {
        Running {
            stage: "build A".into(),
            started,
            counted,
            status: None,
        }
    }

    #[test]
    fn durations_read_short() {
        assert_eq!(short_duration(Duration::from_secs(42)), "42s");
        assert_eq!(short_duration(Duration::from_secs(65)), "1m05s");
        assert_eq!(short_duration(Duration::from_secs(3720)), "1h02m");
    }

    #[test]
    fn the_eta_follows_the_rate_since_counting_began() {
        let eta = |c, secs, left| eta(c, Duration::from_secs(secs), left);
        assert_eq!(eta(100, 50, 300), Some(Duration::from_secs(150)));
        assert_eq!(eta(0, 50, 300), None);
        assert_eq!(eta(10, 50, 0), Some(Duration::ZERO));
    }

    #[test]
    fn a_heartbeat_gives_the_count_and_the_time_left_when_known() {
        let t0 = Instant::now();
        let now = t0 + Duration::from_secs(200);
        let silent = running(t0, None);
        assert_eq!(
            heartbeat_text(&silent, now),
            "build A: running, 3m20s elapsed"
        );
        let waiting = Running {
            status: Some(crate::build::WaitingFor::Tree.to_string()),
            ..running(t0, None)
        };
        assert_eq!(
            heartbeat_text(&waiting, now),
            "build A: waiting for another run's build of this tree, 3m20s elapsed"
        );
        let counting = running(
            t0,
            Some(Counted {
                done: 300,
                total: Some(1100),
                unit: "objects",
                // Counting began 20 s in with 0 done: 300 in 180 s.
                first: (t0 + Duration::from_secs(20), 0),
            }),
        );
        assert_eq!(
            heartbeat_text(&counting, now),
            "build A: 300/1100 objects (27%), 3m20s elapsed, about 8m00s left"
        );
        let open = running(
            t0,
            Some(Counted {
                done: 12,
                total: None,
                unit: "objects",
                first: (t0, 0),
            }),
        );
        assert_eq!(
            heartbeat_text(&open, now),
            "build A: 12 objects, 3m20s elapsed"
        );
    }

    #[test]
    fn a_count_past_its_total_reads_one_hundred_percent() {
        let t0 = Instant::now();
        let over = running(
            t0,
            Some(Counted {
                done: 12,
                total: Some(10),
                unit: "objects",
                first: (t0, 12),
            }),
        );
        assert!(heartbeat_text(&over, t0).contains("(100%)"));
    }

    #[test]
    fn warnings_pass_quiet() {
        assert!(is_warning("warning: applied with fuzz: x"));
        assert!(!is_warning("tree reused from /x"));
    }
}
