//! Pure text shaping for GitHub: the hidden campaign marker, and cutting a
//! report to GitHub's size limits at a line boundary with a note saying where
//! the rest is. No I/O here.

use super::types::GithubError;

/// GitHub rejects an issue comment body longer than this many characters
/// (Unicode scalar values, not bytes).
pub const COMMENT_LIMIT_CHARS: usize = 65_536;

/// GitHub rejects a commit status description longer than this many characters.
pub const DESCRIPTION_LIMIT_CHARS: usize = 140;

/// GitHub drops a job step summary larger than 1 MiB (counted in bytes).
pub const STEP_SUMMARY_LIMIT_BYTES: usize = 1024 * 1024;

/// How a limit counts text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    Chars,
    Bytes,
}

impl Unit {
    fn of_char(self, c: char) -> usize {
        match self {
            Unit::Chars => 1,
            Unit::Bytes => c.len_utf8(),
        }
    }

    pub(crate) fn size(self, text: &str) -> usize {
        match self {
            Unit::Chars => text.chars().count(),
            Unit::Bytes => text.len(),
        }
    }
}

/// The hidden marker that identifies a campaign's comment on a PR:
/// `<!-- patchbench:<campaign> -->`.
///
/// The campaign name is restricted to characters that cannot end the HTML
/// comment early or span lines, so a marker can never match another
/// campaign's (the closing ` -->` is part of what is matched).
pub fn campaign_marker(campaign: &str) -> Result<String, GithubError> {
    let invalid = |reason: &str| GithubError::InvalidCampaign {
        given: campaign.to_string(),
        reason: reason.to_string(),
    };
    if campaign.is_empty() {
        return Err(invalid("it is empty"));
    }
    if let Some(c) = campaign
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "._-/+:@".contains(*c)))
    {
        return Err(invalid(&format!(
            "{c:?} is not a letter, digit or one of ._-/+:@"
        )));
    }
    // `--` may not appear inside an HTML comment.
    if campaign.contains("--") {
        return Err(invalid("it contains `--`"));
    }
    Ok(format!("<!-- patchbench:{campaign} -->"))
}

/// Whether a comment body is the one marked with `marker` (the marker opens it).
pub(crate) fn is_marked(body: &str, marker: &str) -> bool {
    body.trim_start().starts_with(marker)
}

/// The longest prefix of `text` that is at most `budget` in `unit`, ending at
/// a line boundary. If not even the first line fits, the longest prefix of
/// whole characters.
pub(crate) fn prefix_within(text: &str, budget: usize, unit: Unit) -> &str {
    let mut used = 0;
    let mut line_end = 0;
    let mut char_end = 0;
    for (i, c) in text.char_indices() {
        used += unit.of_char(c);
        if used > budget {
            let end = if line_end > 0 { line_end } else { char_end };
            return &text[..end];
        }
        char_end = i + c.len_utf8();
        if c == '\n' {
            line_end = char_end;
        }
    }
    text
}

/// A fenced code block left open by a cut would swallow the note after it.
fn unclosed_fence(text: &str) -> bool {
    text.lines()
        .filter(|line| line.trim_start().starts_with("```"))
        .count()
        % 2
        == 1
}

/// `text` cut to fit `limit` in `unit` together with a note about the cut,
/// and whether it was cut. `what` names the limit in the note.
pub(crate) fn fit(
    text: &str,
    limit: usize,
    unit: Unit,
    what: &str,
    full_report: Option<&str>,
) -> (String, bool) {
    if unit.size(text) <= limit {
        return (text.to_string(), false);
    }
    let where_ = match full_report {
        Some(url) => format!("The full report: {url}"),
        None => "The rest was dropped.".to_string(),
    };
    let note = format!("\n---\n**Truncated** to fit {what}. {where_}\n");
    const FENCE: &str = "```\n";
    // Reserve room for a closing fence whether or not it is needed.
    let budget = limit.saturating_sub(unit.size(&note) + unit.size(FENCE) + 1);
    let kept = prefix_within(text, budget, unit);
    let mut out = String::with_capacity(kept.len() + note.len() + FENCE.len() + 1);
    out.push_str(kept);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if unclosed_fence(&out) {
        out.push_str(FENCE);
    }
    out.push_str(&note);
    (out, true)
}

/// The full comment body: the marker on the first line, then the report
/// made [`inert`](super::inert) and cut to [`COMMENT_LIMIT_CHARS`] if
/// needed.
pub fn comment_body(marker: &str, report: &str, full_report: Option<&str>) -> String {
    let head = format!("{marker}\n");
    let limit = COMMENT_LIMIT_CHARS - Unit::Chars.size(&head);
    let (report, _) = fit(
        &super::inert(report),
        limit,
        Unit::Chars,
        "GitHub's 65,536-character comment limit",
        full_report,
    );
    head + &report
}

/// A status description cut to [`DESCRIPTION_LIMIT_CHARS`], ending in `…`
/// when cut; newlines become spaces since GitHub shows one line.
pub fn status_description(text: &str) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let one_line = one_line.trim();
    if one_line.chars().count() <= DESCRIPTION_LIMIT_CHARS {
        return one_line.to_string();
    }
    let mut cut: String = one_line.chars().take(DESCRIPTION_LIMIT_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_of_different_campaigns_never_match_each_other() {
        let short = campaign_marker("mm").unwrap();
        let long = campaign_marker("mm-thp").unwrap();
        assert_eq!(short, "<!-- patchbench:mm -->");
        assert!(!is_marked(&format!("{long}\nbody"), &short));
        assert!(!is_marked(&format!("{short}\nbody"), &long));
        assert!(is_marked(&format!("\r\n{short}\r\nbody"), &short));
        assert!(!is_marked(&format!("quoting {short}"), &short));
    }

    #[test]
    fn campaign_names_that_would_break_the_marker_are_refused() {
        for bad in ["", "a b", "x-->y", "a--b", "line\nbreak", "é"] {
            assert!(campaign_marker(bad).is_err(), "{bad:?}");
        }
        for good in ["mm", "mm-thp/v2", "zswap_2025.1", "pr+42"] {
            assert!(campaign_marker(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn prefixes_end_at_line_boundaries_in_the_right_unit() {
        // "é" is 1 char but 2 bytes.
        let text = "éé\nab\ncd\n";
        assert_eq!(prefix_within(text, 6, Unit::Chars), "éé\nab\n");
        assert_eq!(prefix_within(text, 6, Unit::Bytes), "éé\n");
        assert_eq!(prefix_within(text, 100, Unit::Bytes), text);
        // A first line longer than the budget is cut at a character.
        assert_eq!(prefix_within("ééé\n", 5, Unit::Bytes), "éé");
    }

    #[test]
    fn a_long_multibyte_comment_is_cut_at_a_line_within_the_char_limit() {
        let marker = campaign_marker("mm").unwrap();
        // 3,000 lines of 30 chars (each 4-byte crab is 1 char): ~90k chars.
        let line = format!("{}\n", "🦀".repeat(29));
        let report = line.repeat(3000);
        let url = "https://example.org/results/42";
        let body = comment_body(&marker, &report, Some(url));
        let chars = body.chars().count();
        assert!(chars <= COMMENT_LIMIT_CHARS, "{chars}");
        // Cut close to the limit, not far below it.
        assert!(chars > COMMENT_LIMIT_CHARS - 200, "{chars}");
        // More bytes than the limit: the limit was counted in chars.
        assert!(body.len() > COMMENT_LIMIT_CHARS);
        assert!(body.starts_with(&format!("{marker}\n{line}")));
        let (kept, note) = body.split_once("\n---\n").unwrap();
        assert!(kept.ends_with(&line), "cut inside a line");
        assert!(note.contains(url), "{note}");
    }

    #[test]
    fn a_short_comment_is_left_whole() {
        let body = comment_body("<!-- patchbench:x -->", "# Report\n", Some("u"));
        assert_eq!(body, "<!-- patchbench:x -->\n# Report\n");
    }

    #[test]
    fn a_cut_inside_a_code_block_closes_the_fence_before_the_note() {
        let report = format!("intro\n```\n{}```\n", "0123456789\n".repeat(100));
        let (cut, truncated) = fit(&report, 300, Unit::Chars, "a test limit", None);
        assert!(truncated);
        assert!(cut.chars().count() <= 300);
        assert!(cut.contains("```\n\n---\n**Truncated** to fit a test limit."));
        assert_eq!(cut.matches("```").count(), 2);
    }

    #[test]
    fn descriptions_are_one_line_and_at_most_140_chars() {
        assert_eq!(status_description(" 3 regressions\n"), "3 regressions");
        let long = "é".repeat(200);
        let cut = status_description(&long);
        assert_eq!(cut.chars().count(), DESCRIPTION_LIMIT_CHARS);
        assert!(cut.ends_with('…'));
        let exact = "x".repeat(DESCRIPTION_LIMIT_CHARS);
        assert_eq!(status_description(&exact), exact);
    }
}
