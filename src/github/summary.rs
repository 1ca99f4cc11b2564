//! The GitHub Actions job summary: `$GITHUB_STEP_SUMMARY` names a file that
//! a step appends Markdown to. GitHub drops a summary over 1 MiB, so what is
//! appended is cut to fit beside what the step already wrote.

use std::io::Write;
use std::path::Path;

use super::text::{STEP_SUMMARY_LIMIT_BYTES, Unit, fit};
use super::types::GithubError;

/// What [`append_step_summary`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummaryWrite {
    pub bytes: usize,
    /// The Markdown was cut to fit.
    pub truncated: bool,
}

/// Appends `markdown`, made [`inert`](super::inert), to the step summary
/// file at `path` (creating it), cut at a line so that the file stays
/// within 1 MiB, with a note pointing at `full_report` when cut.
pub fn append_step_summary(
    path: &Path,
    markdown: &str,
    full_report: Option<&str>,
) -> Result<SummaryWrite, GithubError> {
    let failed = |source| GithubError::Summary {
        path: path.to_path_buf(),
        source,
    };
    let existing = match std::fs::metadata(path) {
        Ok(meta) => usize::try_from(meta.len()).unwrap_or(usize::MAX),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(failed(e)),
    };
    let budget = STEP_SUMMARY_LIMIT_BYTES.saturating_sub(existing);
    // A summary renders like a comment: links and images would too.
    let mut text = super::inert(markdown);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let (text, truncated) = fit(
        &text,
        budget,
        Unit::Bytes,
        "GitHub's 1 MiB step summary limit",
        full_report,
    );
    // With almost no room left even the note may not fit; write nothing then.
    let text = if text.len() > budget {
        String::new()
    } else {
        text
    };
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(failed)?;
    file.write_all(text.as_bytes()).map_err(failed)?;
    Ok(SummaryWrite {
        bytes: text.len(),
        truncated,
    })
}

/// [`append_step_summary`] to the file `$GITHUB_STEP_SUMMARY` names; `None`
/// when the variable is unset or empty (not running under GitHub Actions).
pub fn append_step_summary_from_env(
    markdown: &str,
    full_report: Option<&str>,
) -> Result<Option<SummaryWrite>, GithubError> {
    match std::env::var_os("GITHUB_STEP_SUMMARY") {
        Some(path) if !path.is_empty() => {
            append_step_summary(Path::new(&path), markdown, full_report).map(Some)
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_is_appended_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.md");
        std::fs::write(&path, "# Earlier step output\n").unwrap();
        let wrote = append_step_summary(&path, "## A/B report\n| a | b |", None).unwrap();
        assert_eq!(
            wrote,
            SummaryWrite {
                bytes: 24,
                truncated: false
            }
        );
        let content = std::fs::read_to_string(&path).unwrap();
        assert_eq!(content, "# Earlier step output\n## A/B report\n| a | b |\n");
    }

    #[test]
    fn a_summary_is_cut_so_the_file_stays_within_one_mib() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.md");
        let earlier = "x".repeat(1000) + "\n";
        std::fs::write(&path, &earlier).unwrap();
        // 4-byte chars, so a byte count and a char count differ.
        let line = format!("{}\n", "🦀".repeat(99));
        let report = line.repeat(3000); // ~1.2 MB
        let url = "https://example.org/artifacts/7";
        let wrote = append_step_summary(&path, &report, Some(url)).unwrap();
        assert!(wrote.truncated);
        let content = std::fs::read_to_string(&path).unwrap();
        assert!(
            content.len() <= STEP_SUMMARY_LIMIT_BYTES,
            "{}",
            content.len()
        );
        assert!(content.len() > STEP_SUMMARY_LIMIT_BYTES - 1000);
        assert_eq!(content.len(), earlier.len() + wrote.bytes);
        let appended = content.strip_prefix(&earlier).unwrap();
        let (kept, note) = appended.split_once("\n---\n").unwrap();
        assert!(kept.ends_with(&line), "cut inside a line");
        assert!(note.contains(url), "{note}");
    }

    #[test]
    fn a_full_summary_file_gets_nothing_more() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.md");
        // Room for 5 bytes: neither the 9-byte report nor the note fits.
        std::fs::write(&path, "y".repeat(STEP_SUMMARY_LIMIT_BYTES - 5)).unwrap();
        let wrote = append_step_summary(&path, "# Report\n", Some("https://e.org/x")).unwrap();
        assert_eq!(wrote.bytes, 0);
        assert!(wrote.truncated);
        let len = std::fs::metadata(&path).unwrap().len() as usize;
        assert_eq!(len, STEP_SUMMARY_LIMIT_BYTES - 5);
    }

    #[test]
    fn a_missing_directory_is_reported_with_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no/such/summary.md");
        let err = append_step_summary(&path, "x", None).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("cannot append the step summary to {}", path.display())
        );
    }
}
