//! What the engine tells the user interface. Library code never prints: it
//! emits [`Event`]s to a [`Sink`], and the binary decides how to show them.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A long stage began (`import`, `apply`, `build A`, `boot A'`...).
    Started { stage: String, detail: String },
    /// Progress inside a stage, such as a sample of a boot.
    Progress { stage: String, detail: String },
    /// How far a stage is, counted: `done` of `total` (when known) `unit`s,
    /// such as objects compiled of those expected.
    Count {
        stage: String,
        done: u64,
        total: Option<u64>,
        unit: &'static str,
    },
    /// The stage ended after `elapsed`.
    Finished {
        stage: String,
        elapsed: Duration,
        detail: String,
    },
    /// Something the user should know that is not an error.
    Note(String),
    /// The command's own output (a table, a report, a manifest), for
    /// stdout exactly as it is: what a user pipes to a file.
    Output(String),
}

/// Receives events; implemented by the terminal UI and by tests.
pub trait Sink: Send + Sync {
    fn emit(&self, event: Event);
}

/// Names the campaign every event of one comes from, when several run at
/// once (`run --suite --jobs`): its stages (so that their progress lines
/// stay apart) and its notes; its output is the campaign's own, as it is.
pub struct Prefixed<'a> {
    pub inner: &'a dyn Sink,
    pub prefix: String,
}

impl Sink for Prefixed<'_> {
    fn emit(&self, event: Event) {
        let named = |stage: String| format!("{}: {stage}", self.prefix);
        self.inner.emit(match event {
            Event::Started { stage, detail } => Event::Started {
                stage: named(stage),
                detail,
            },
            Event::Progress { stage, detail } => Event::Progress {
                stage: named(stage),
                detail,
            },
            Event::Count {
                stage,
                done,
                total,
                unit,
            } => Event::Count {
                stage: named(stage),
                done,
                total,
                unit,
            },
            Event::Finished {
                stage,
                elapsed,
                detail,
            } => Event::Finished {
                stage: named(stage),
                elapsed,
                detail,
            },
            Event::Note(note) => Event::Note(named(note)),
            Event::Output(text) => Event::Output(text),
        })
    }
}

/// Collects events in memory (for tests).
#[derive(Default)]
pub struct Recorder(pub std::sync::Mutex<Vec<Event>>);

impl Sink for Recorder {
    fn emit(&self, event: Event) {
        self.0.lock().expect("recorder lock").push(event);
    }
}
