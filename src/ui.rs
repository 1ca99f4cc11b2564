//! Showing engine events: indicatif spinners on a terminal, plain
//! timestamped lines otherwise (CI logs). Honours `NO_COLOR`.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::events::{Event, Sink};

pub struct Ui {
    live: bool,
    bar: Mutex<Option<ProgressBar>>,
}

impl Ui {
    /// A spinner UI when stderr is a terminal, plain lines otherwise.
    pub fn new() -> Ui {
        Ui {
            live: std::io::stderr().is_terminal()
                && std::env::var_os("TERM").is_some_and(|t| t != "dumb"),
            bar: Mutex::new(None),
        }
    }

    fn line(&self, text: &str) {
        let stamp = jiff::ZonedDateTime::now().strftime("%H:%M:%S");
        let line = format!("[{stamp}] {text}");
        let bar = self.bar.lock().expect("ui lock").clone();
        match bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }
}

impl Default for Ui {
    fn default() -> Self {
        Ui::new()
    }
}

fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

impl Sink for Ui {
    fn emit(&self, event: Event) {
        match event {
            Event::Started { stage, detail } => {
                if self.live {
                    let color = std::env::var_os("NO_COLOR").is_none();
                    let template = if color {
                        "{spinner:.cyan} [{elapsed_precise}] {prefix:.bold} {wide_msg}"
                    } else {
                        "{spinner} [{elapsed_precise}] {prefix} {wide_msg}"
                    };
                    let bar = ProgressBar::new_spinner();
                    bar.set_style(ProgressStyle::with_template(template).expect("valid template"));
                    bar.set_prefix(stage);
                    bar.set_message(detail);
                    bar.enable_steady_tick(Duration::from_millis(120));
                    *self.bar.lock().expect("ui lock") = Some(bar);
                } else {
                    self.line(&format!("{stage}: {detail}"));
                }
            }
            Event::Progress { stage, detail } => {
                // Take the lock once: `line` takes it again.
                let bar = self.bar.lock().expect("ui lock").clone();
                match bar {
                    Some(bar) if self.live => bar.set_message(detail),
                    _ => self.line(&format!("{stage}: {detail}")),
                }
            }
            Event::Finished {
                stage,
                elapsed,
                detail,
            } => {
                if let Some(bar) = self.bar.lock().expect("ui lock").take() {
                    bar.finish_and_clear();
                }
                let detail = if detail.is_empty() {
                    String::new()
                } else {
                    format!(" ({detail})")
                };
                self.line(&format!("{stage}: done in {}{detail}", secs(elapsed)));
            }
            Event::Note(text) => self.line(&text),
            Event::Output(text) => {
                use std::io::Write;
                let bar = self.bar.lock().expect("ui lock").clone();
                let write = || {
                    let mut out = std::io::stdout().lock();
                    // A closed pipe (`| head`) is not an error of ours.
                    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
                };
                match bar {
                    Some(bar) => bar.suspend(write),
                    None => write(),
                }
            }
        }
    }
}
