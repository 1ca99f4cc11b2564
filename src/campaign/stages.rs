//! Timing a campaign's stages: each announced to the event sink when it
//! starts and ends, and its wall time recorded for `results.json`.

use std::time::Instant;

use crate::events::{Event, Sink};
use crate::results::Timing;

/// The stages of a run, each announced and timed.
pub(crate) struct Stages<'a> {
    pub(crate) sink: &'a dyn Sink,
    pub(crate) timings: Vec<Timing>,
}

impl Stages<'_> {
    pub(crate) async fn time<T, F>(&mut self, stage: &str, detail: &str, f: F) -> anyhow::Result<T>
    where
        F: std::future::Future<Output = anyhow::Result<T>>,
    {
        self.sink.emit(Event::Started {
            stage: stage.into(),
            detail: detail.into(),
        });
        let started = Instant::now();
        let value = f.await?;
        let elapsed = started.elapsed();
        self.timings.push(Timing {
            stage: stage.into(),
            seconds: elapsed.as_secs_f64(),
        });
        self.sink.emit(Event::Finished {
            stage: stage.into(),
            elapsed,
            detail: String::new(),
        });
        Ok(value)
    }
}
