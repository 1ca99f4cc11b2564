//! What an error-rate example writes: its tables, printed as they are made
//! and kept as one Markdown file under `results/error-rates/`, which
//! docs/statistics.md quotes and `tests/docs.rs` recompares it against.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The example's output: every line it prints, kept for its file.
pub struct Out {
    path: PathBuf,
    text: String,
}

impl Out {
    /// An output kept at `path` (relative to the repository, where
    /// `cargo run --example` runs), opened with the line that makes it
    /// again.
    pub fn new(path: &str, command: &str) -> Out {
        let mut out = Out {
            path: PathBuf::from(path),
            text: String::new(),
        };
        out.line(&format!(
            "<!-- Written by `{command}`; docs/statistics.md quotes these tables, and tests/docs.rs holds it to them. -->\n"
        ));
        out
    }

    /// One line, printed now and kept.
    pub fn line(&mut self, line: &str) {
        println!("{line}");
        let _ = writeln!(self.text, "{line}");
    }

    /// Writes the file whole, atomically, once every table is made.
    pub fn finish(self) {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).expect("results/error-rates/ can be made");
        }
        patchbench::fsutil::write_atomic(Path::new(&self.path), self.text.as_bytes())
            .unwrap_or_else(|e| panic!("{}: {e}", self.path.display()));
        eprintln!("written: {}", self.path.display());
    }
}
