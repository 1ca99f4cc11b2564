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

/// Collects events in memory (for tests).
#[derive(Default)]
pub struct Recorder(pub std::sync::Mutex<Vec<Event>>);

impl Sink for Recorder {
    fn emit(&self, event: Event) {
        self.0.lock().expect("recorder lock").push(event);
    }
}
