//! The line protocol from a forked worker to the agent, over a pipe.
//!
//! It is private to the agent (both ends are this binary), so it is plain
//! text rather than part of the host wire protocol:
//!
//! ```text
//! ready                     the worker is pinned and in the cgroup; it now waits for "go"
//! done pageout_cpu_ns=N verify_cpu_ns=N total_cpu_ns=N start_mono_ns=N end_mono_ns=N
//! error <one-line message>  the worker failed; it exits with status 1
//! ```
//!
//! A worker writes `ready`, then exactly one `done` or `error`. Times are
//! nanoseconds; `*_mono_ns` are `CLOCK_MONOTONIC` readings, comparable across
//! workers.

/// What one worker measured.
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

/// One line from a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Ready,
    Done(WorkerResult),
    Error(String),
}

const FIELDS: [&str; 5] = [
    "pageout_cpu_ns",
    "verify_cpu_ns",
    "total_cpu_ns",
    "start_mono_ns",
    "end_mono_ns",
];

impl Line {
    /// The line's text, newline included.
    pub fn encode(&self) -> String {
        match self {
            Line::Ready => "ready\n".to_string(),
            Line::Done(r) => format!(
                "done pageout_cpu_ns={} verify_cpu_ns={} total_cpu_ns={} start_mono_ns={} end_mono_ns={}\n",
                r.pageout_cpu_ns, r.verify_cpu_ns, r.total_cpu_ns, r.start_mono_ns, r.end_mono_ns
            ),
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

fn decode_done(rest: &str) -> Result<WorkerResult, String> {
    let mut values = [None; FIELDS.len()];
    for pair in rest.split_whitespace() {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("malformed field {pair:?} in worker result"))?;
        let slot = FIELDS
            .iter()
            .position(|&f| f == key)
            .ok_or_else(|| format!("unknown field {key:?} in worker result"))?;
        let value = value
            .parse::<u64>()
            .map_err(|_| format!("non-numeric {key} {value:?} in worker result"))?;
        if values[slot].replace(value).is_some() {
            return Err(format!("duplicate field {key:?} in worker result"));
        }
    }
    let get = |i: usize| values[i].ok_or_else(|| format!("worker result lacks {}", FIELDS[i]));
    Ok(WorkerResult {
        pageout_cpu_ns: get(0)?,
        verify_cpu_ns: get(1)?,
        total_cpu_ns: get(2)?,
        start_mono_ns: get(3)?,
        end_mono_ns: get(4)?,
    })
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
            Line::Done(result()),
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
        let cases = [
            ("done pageout_cpu_ns=1", "lacks verify_cpu_ns"),
            ("done pageout_cpu_ns=x", "non-numeric"),
            ("done bogus=1", "unknown field"),
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
