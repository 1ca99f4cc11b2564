//! Finding the line at fault in a patch libgit2 refused to parse. libgit2's
//! messages often lack a line ("invalid patch hunk, expected 7 old lines"),
//! so the hunks are re-counted here against their headers, on the raw text.
//!
//! Only diagnosis happens here; git2 stays the parser. A blank line inside a
//! hunk counts as an empty context line (a mail client stripped its leading
//! space), as it does for libgit2, git apply and patch(1). A line exactly
//! `-- ` ends the hunk: it is the mail signature that follows a truncated
//! hunk, not the removal of a line `- `.

use super::types::ApplyFailure;

/// The `Malformed` failure for a patch libgit2 could not parse. `text` is
/// what libgit2 was given; `original_line` maps its 1-based lines to the
/// patch as the user gave it (they differ for a traditional diff, given
/// a `diff --git` line per file).
pub(crate) fn malformed(
    text: &[u8],
    error: &git2::Error,
    original_line: &dyn Fn(usize) -> usize,
) -> ApplyFailure {
    match diagnose(text, original_line) {
        Some((line, reason)) => ApplyFailure::Malformed {
            line: Some(line),
            reason,
        },
        None => ApplyFailure::Malformed {
            line: line_in_message(error.message()).map(original_line),
            reason: plain_reason(error.message()),
        },
    }
}

/// libgit2's reason in git apply's plain words, for the ones a pasted
/// patch meets; others as libgit2 gives them, without its line number
/// (the failure carries the line, mapped to the patch as given).
fn plain_reason(message: &str) -> String {
    let bare = match message.rsplit_once(" at line ") {
        Some((reason, n)) if n.chars().all(|c| c.is_ascii_digit()) => reason,
        _ => message,
    };
    match bare {
        "invalid hunk header outside patch" => {
            "a hunk (`@@ -l,n +l,n @@`) with no file header (`--- a/path`, `+++ b/path`) \
             before it: a patch fragment without a header, as git apply says"
                .into()
        }
        "no patch found" => "no diff found in it".into(),
        "patch with no hunks" => "a file of the patch has a header but no hunk".into(),
        "invalid patch instruction" | "last line has no trailing newline" => {
            "corrupt patch: the line ends without a line break (cut short when it was copied?)"
                .into()
        }
        "invalid patch header" => "a line of a file's header is none git writes there".into(),
        other => other.to_string(),
    }
}

/// The 1-based patch line and reason of the first hunk whose body does not
/// match its header, if any; lines are reported through `original_line`.
pub(crate) fn diagnose(
    text: &[u8],
    original_line: &dyn Fn(usize) -> usize,
) -> Option<(usize, String)> {
    let mut lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    if text.ends_with(b"\n") {
        lines.pop();
    }
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].starts_with(b"@@ -") {
            i += 1;
            continue;
        }
        let header_line = original_line(i + 1);
        let Some((old, new)) = header_counts(lines[i]) else {
            let header = String::from_utf8_lossy(lines[i]);
            return Some((
                header_line,
                format!("hunk header `{header}` cannot be read"),
            ));
        };
        let (mut seen_old, mut seen_new) = (0, 0);
        i += 1;
        while seen_old < old || seen_new < new {
            let line = lines.get(i).copied();
            match line.and_then(|l| l.first()) {
                _ if line.is_none_or(ends_hunk) => break,
                None | Some(b' ') => {
                    seen_old += 1;
                    seen_new += 1;
                }
                Some(b'-') => seen_old += 1,
                Some(b'+') => seen_new += 1,
                Some(b'\\') => {}
                Some(_) => {
                    return Some((
                        original_line(i + 1),
                        format!(
                            "the line inside the hunk at patch line {header_line} starts with \
                             none of ' ', '+', '-': a context line lost its leading space \
                             (whitespace damage) or the hunk ends early"
                        ),
                    ));
                }
            }
            i += 1;
        }
        if (seen_old, seen_new) != (old, new) {
            return Some((
                header_line,
                format!(
                    "hunk at patch line {header_line} claims {old} old and {new} new lines \
                     but has {seen_old} and {seen_new}"
                ),
            ));
        }
    }
    None
}

/// A line that cannot be part of a hunk body: the next file, hunk or the
/// mail signature.
fn ends_hunk(line: &[u8]) -> bool {
    line.starts_with(b"diff --git ") || line.starts_with(b"@@ ") || line == b"-- "
}

/// The old and new line counts of `@@ -a[,b] +c[,d] @@`.
pub(crate) fn header_counts(line: &[u8]) -> Option<(usize, usize)> {
    let text = std::str::from_utf8(line).ok()?;
    let rest = text.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let count = |range: &str| -> Option<usize> {
        match range.split_once(',') {
            Some((start, n)) => {
                start.parse::<usize>().ok()?;
                n.parse().ok()
            }
            None => range.parse::<usize>().ok().map(|_| 1),
        }
    };
    Some((count(old)?, count(new)?))
}

/// The number in libgit2's "... at line N".
fn line_in_message(message: &str) -> Option<usize> {
    let (_, rest) = message.rsplit_once("at line ")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "diff --git a/f b/f\nindex 1111111..2222222 100644\n--- a/f\n+++ b/f\n";

    #[test]
    fn a_truncated_hunk_names_its_header_line_and_both_counts() {
        let text = format!("{HEAD}@@ -1,7 +1,7 @@\n a\n b\n-c\n+C\n d\n-- \n2.47.3\n");
        assert_eq!(
            diagnose(text.as_bytes(), &|n| n),
            Some((
                5,
                "hunk at patch line 5 claims 7 old and 7 new lines but has 4 and 4".into()
            ))
        );
    }

    #[test]
    fn a_hunk_cut_at_the_end_of_the_text_is_truncated_too() {
        let text = format!("{HEAD}@@ -1,3 +1,3 @@\n a\n-b\n");
        assert_eq!(diagnose(text.as_bytes(), &|n| n).unwrap().0, 5);
    }

    #[test]
    fn a_context_line_without_its_space_is_named_by_its_own_line() {
        let text = format!("{HEAD}@@ -1,3 +1,3 @@\n a\nb\n-c\n+C\n");
        let (line, reason) = diagnose(text.as_bytes(), &|n| n).unwrap();
        assert_eq!(line, 7);
        assert!(reason.contains("lost its leading space"), "{reason}");
    }

    #[test]
    fn blank_lines_count_as_context_and_sound_hunks_pass() {
        let text = format!("{HEAD}@@ -1,3 +1,3 @@\n a\n\n-c\n+C\n@@ -9 +9 @@\n-x\n+y\n-- \n2.4\n");
        assert_eq!(diagnose(text.as_bytes(), &|n| n), None);
    }

    #[test]
    fn headers_with_and_without_counts_are_read() {
        assert_eq!(
            header_counts(b"@@ -4530,7 +4530,8 @@ static int f(void)"),
            Some((7, 8))
        );
        assert_eq!(header_counts(b"@@ -1 +0,0 @@"), Some((1, 0)));
        assert_eq!(header_counts(b"@@ -x,1 +1 @@"), None);
    }

    #[test]
    fn libgit2_line_numbers_are_taken_from_its_message() {
        assert_eq!(line_in_message("invalid patch hunk at line 14"), Some(14));
        assert_eq!(line_in_message("no patch found"), None);
    }
}
