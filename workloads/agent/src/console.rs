//! Human lines on the serial console (the agent's stderr is `/dev/console`).
//!
//! The host keeps the console log as evidence, so every line is prefixed and
//! terse. Writing never fails loudly: a console that cannot be written to must
//! not take PID 1 down.

use std::io::Write;

/// Prints `patchbench-agent: <line>` on the console.
pub fn say(line: impl std::fmt::Display) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "patchbench-agent: {line}");
    let _ = err.flush();
}
