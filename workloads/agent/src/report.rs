//! The line protocol from a forked worker to the agent, over a pipe.
//!
//! It is private to the agent (both ends are this binary), so it is plain
//! text rather than part of the host wire protocol:
//!
//! ```text
//! ready                     the worker waits at a gate for the agent's byte
//! done name=N name=N ...    the worker's numbers (which ones: its workload's)
//! error <one-line message>  the worker failed; it exits with status 1
//! ```
//!
//! A worker writes `ready` at every gate (the first one: pinned, in its
//! cgroup, clocks not started), then exactly one `done` or `error`. Times are
//! nanoseconds; `*_mono_ns` are `CLOCK_MONOTONIC` readings, comparable across
//! workers.

use std::collections::BTreeMap;

/// A worker's numbers, by name.
pub type Fields = BTreeMap<String, u64>;

/// What one ZswapPageout worker measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerResult {
    /// Process CPU time spent in `madvise(MADV_PAGEOUT)`.
    pub pageout_cpu_ns: u64,
    /// Process CPU time spent re-reading and checking every page.
    pub verify_cpu_ns: u64,
    /// Process CPU time from the start clock to after `munmap`.
    pub total_cpu_ns: u64,
    /// `CLOCK_MONOTONIC` when the worker's clocks started.
    pub start_mono_ns: u64,
    /// `CLOCK_MONOTONIC` when the worker's clocks stopped.
    pub end_mono_ns: u64,
}

const FIELDS: [&str; 5] = [
    "pageout_cpu_ns",
    "verify_cpu_ns",
    "total_cpu_ns",
    "start_mono_ns",
    "end_mono_ns",
];

impl WorkerResult {
    pub fn to_fields(self) -> Fields {
        let values = [
            self.pageout_cpu_ns,
            self.verify_cpu_ns,
            self.total_cpu_ns,
            self.start_mono_ns,
            self.end_mono_ns,
        ];
        FIELDS
            .iter()
            .zip(values)
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    pub fn from_fields(fields: &Fields) -> Result<WorkerResult, String> {
        if let Some(extra) = fields.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(format!("unknown field {extra:?} in worker result"));
        }
        let get = |i: usize| {
            fields
                .get(FIELDS[i])
                .copied()
                .ok_or_else(|| format!("worker result lacks {}", FIELDS[i]))
        };
        Ok(WorkerResult {
            pageout_cpu_ns: get(0)?,
            verify_cpu_ns: get(1)?,
            total_cpu_ns: get(2)?,
            start_mono_ns: get(3)?,
            end_mono_ns: get(4)?,
        })
    }
}

/// One line from a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Ready,
    Done(Fields),
    Error(String),
}

impl Line {
    /// The line's text, newline included.
    pub fn encode(&self) -> String {
        match self {
            Line::Ready => "ready\n".to_string(),
            Line::Done(fields) => {
                let mut text = "done".to_string();
                for (k, v) in fields {
                    text.push_str(&format!(" {k}={v}"));
                }
                text.push('\n');
                text
            }
            Line::Error(message) => format!("error {}\n", message.replace(['\n', '\r'], " ")),
        }
    }

    /// Parses one line (with or without its newline).
    pub fn decode(line: &str) -> Result<Line, String> {
        let line = line.trim_end_matches(['\n', '\r']);
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        match word {
            "ready" if rest.is_empty() => Ok(Line::Ready),
            "error" => Ok(Line::Error(rest.to_string())),
            "done" => decode_done(rest).map(Line::Done),
            _ => Err(format!("unexpected worker line {line:?}")),
        }
    }
}

fn decode_done(rest: &str) -> Result<Fields, String> {
    let mut fields = Fields::new();
    for pair in rest.split_whitespace() {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("malformed field {pair:?} in worker result"))?;
        let value = value
            .parse::<u64>()
            .map_err(|_| format!("non-numeric {key} {value:?} in worker result"))?;
        if fields.insert(key.to_string(), value).is_some() {
            return Err(format!("duplicate field {key:?} in worker result"));
        }
    }
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result() -> WorkerResult {
        WorkerResult {
            pageout_cpu_ns: 17_180_000,
            verify_cpu_ns: 20_000_000,
            total_cpu_ns: 46_215_000,
            start_mono_ns: 2_000_000_000,
            end_mono_ns: 2_094_618_000,
        }
    }

    #[test]
    fn lines_round_trip() {
        for line in [
            Line::Ready,
            Line::Done(result().to_fields()),
            Line::Done(Fields::new()),
            Line::Error("page 12 of 8192: word 0 is 0x0, expected 0xc".to_string()),
        ] {
            let text = line.encode();
            assert!(
                text.ends_with('\n') && text.matches('\n').count() == 1,
                "{text:?}"
            );
            assert_eq!(Line::decode(&text), Ok(line));
        }
    }

    #[test]
    fn error_messages_stay_on_one_line() {
        let text = Line::Error("two\nlines".to_string()).encode();
        assert_eq!(text, "error two lines\n");
    }

    #[test]
    fn incomplete_or_garbled_results_are_rejected() {
        let fields = |text: &str| match Line::decode(text) {
            Ok(Line::Done(f)) => f,
            other => panic!("{other:?}"),
        };
        let lacks = WorkerResult::from_fields(&fields("done pageout_cpu_ns=1")).unwrap_err();
        assert!(lacks.contains("lacks verify_cpu_ns"), "{lacks}");
        let mut extra = result().to_fields();
        extra.insert("bogus".into(), 1);
        let unknown = WorkerResult::from_fields(&extra).unwrap_err();
        assert!(unknown.contains("unknown field"), "{unknown}");
        assert_eq!(
            WorkerResult::from_fields(&result().to_fields()),
            Ok(result())
        );
        let cases = [
            ("done pageout_cpu_ns=x", "non-numeric"),
            ("done pageout_cpu_ns", "malformed"),
            ("done pageout_cpu_ns=1 pageout_cpu_ns=2", "duplicate"),
            ("hello", "unexpected"),
            ("ready now", "unexpected"),
            ("", "unexpected"),
        ];
        for (text, want) in cases {
            let err = Line::decode(text).unwrap_err();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }
}
