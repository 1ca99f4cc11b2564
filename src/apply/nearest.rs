//! Explaining a hunk that does not apply, on pure lines: the region of the
//! file that looks most like the hunk's old side, whether the hunk would
//! match if whitespace were ignored (a whitespace-damaged patch), and
//! bounded renderings of lines for error messages.

use std::collections::HashSet;

/// At most this many lines of a hunk or region go into an error.
pub(crate) const MAX_SHOWN_LINES: usize = 40;
/// Longer lines are cut to this many bytes in an error.
const MAX_SHOWN_WIDTH: usize = 200;
/// The look-alike search stops after this many line comparisons, so a huge
/// hunk against a huge file still answers quickly (with the best so far).
const COMPARISON_BUDGET: usize = 20_000_000;

/// A window of the file: 0-based start, length, and how many of the hunk's
/// old lines it holds in order (blank lines do not count).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Region {
    pub start: usize,
    pub len: usize,
    pub matching: usize,
}

fn significant(line: &[u8]) -> bool {
    !line.trim_ascii().is_empty()
}

/// The window of `old.len()` file lines sharing the longest in-order run of
/// significant lines with `old` (a longest common subsequence), the nearest
/// to `expected` among equals. `None` when no significant line matches.
pub(crate) fn nearest_region(file: &[&[u8]], old: &[&[u8]], expected: usize) -> Option<Region> {
    if old.is_empty() || file.is_empty() {
        return None;
    }
    let len = old.len().min(file.len());
    let wanted: HashSet<&[u8]> = old.iter().copied().filter(|l| significant(l)).collect();
    let hit: Vec<usize> = file
        .iter()
        .map(|l| usize::from(wanted.contains(l)))
        .collect();
    // Upper bound for each window: how many of its lines occur in `old`.
    let mut bounds = Vec::with_capacity(file.len() - len + 1);
    let mut sum: usize = hit[..len].iter().sum();
    bounds.push(sum);
    for start in 1..=file.len() - len {
        sum = sum + hit[start + len - 1] - hit[start - 1];
        bounds.push(sum);
    }
    let mut order: Vec<usize> = (0..bounds.len()).filter(|&s| bounds[s] > 0).collect();
    order.sort_by_key(|&s| (std::cmp::Reverse(bounds[s]), s.abs_diff(expected)));

    let mut best: Option<Region> = None;
    let mut spent = 0;
    for start in order {
        if best.is_some_and(|b| bounds[start] < b.matching) || spent > COMPARISON_BUDGET {
            break;
        }
        spent += old.len() * len;
        let matching = common_lines(old, &file[start..start + len]);
        let closer = |b: Region| start.abs_diff(expected) < b.start.abs_diff(expected);
        if matching > 0
            && best.is_none_or(|b| matching > b.matching || (matching == b.matching && closer(b)))
        {
            best = Some(Region {
                start,
                len,
                matching,
            });
        }
    }
    best
}

/// Longest common subsequence of significant lines.
fn common_lines(a: &[&[u8]], b: &[&[u8]]) -> usize {
    let mut previous = vec![0; b.len() + 1];
    let mut current = vec![0; b.len() + 1];
    for x in a {
        for (j, y) in b.iter().enumerate() {
            current[j + 1] = if x == y && significant(x) {
                previous[j] + 1
            } else {
                previous[j + 1].max(current[j])
            };
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

/// Where `old` matches `file` only when all whitespace is ignored, the
/// nearest to `expected`: the sign of a patch whose tabs became spaces or
/// whose trailing blanks were stripped. `None` if `old` has no significant
/// line, and for places where it matches as it is.
pub(crate) fn whitespace_match(file: &[&[u8]], old: &[&[u8]], expected: usize) -> Option<usize> {
    if old.len() > file.len() || !old.iter().any(|l| significant(l)) {
        return None;
    }
    let squeeze = |l: &&[u8]| -> Vec<u8> {
        l.iter()
            .copied()
            .filter(|b| !b.is_ascii_whitespace())
            .collect()
    };
    let squeezed: Vec<Vec<u8>> = file.iter().map(squeeze).collect();
    let wanted: Vec<Vec<u8>> = old.iter().map(squeeze).collect();
    (0..=file.len() - old.len())
        .filter(|&s| squeezed[s..s + old.len()] == wanted[..] && file[s..s + old.len()] != *old)
        .min_by_key(|&s| s.abs_diff(expected))
}

/// Lines as text for an error: lossy UTF-8, each prefixed by `prefix(i)`,
/// cut to a bounded number of lines and bytes per line.
pub(crate) fn render(lines: &[&[u8]], mut prefix: impl FnMut(usize) -> String) -> String {
    let mut out = String::new();
    for (i, line) in lines.iter().take(MAX_SHOWN_LINES).enumerate() {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let cut = &body[..body.len().min(MAX_SHOWN_WIDTH)];
        out.push_str(&prefix(i));
        out.push_str(&String::from_utf8_lossy(cut));
        if cut.len() < body.len() {
            out.push_str(" [...]");
        }
        out.push('\n');
        if !line.ends_with(b"\n") {
            out.push_str("\\ No newline at end of file\n");
        }
    }
    if lines.len() > MAX_SHOWN_LINES {
        out.push_str(&format!(
            "[... {} more lines]\n",
            lines.len() - MAX_SHOWN_LINES
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<&[u8]> {
        text.split_inclusive('\n').map(str::as_bytes).collect()
    }

    #[test]
    fn the_region_with_most_lines_in_order_wins_over_a_closer_weaker_one() {
        let file = lines("a\nx\nc\n\nq\nr\na\nb\nX\nd\n");
        let old = lines("a\nb\nc\nd\n");
        let region = nearest_region(&file, &old, 0).unwrap();
        assert_eq!(
            region,
            Region {
                start: 6,
                len: 4,
                matching: 3
            }
        );
    }

    #[test]
    fn among_equal_regions_the_nearest_to_the_expected_line_wins() {
        let file = lines("a\nb\nz\nz\nz\nz\na\nb\n");
        let old = lines("a\nb\n");
        assert_eq!(nearest_region(&file, &old, 5).unwrap().start, 6);
        assert_eq!(nearest_region(&file, &old, 1).unwrap().start, 0);
    }

    #[test]
    fn blank_lines_alone_make_no_region() {
        let file = lines("\n\nx\n");
        assert_eq!(nearest_region(&file, &lines("\ny\n"), 0), None);
    }

    #[test]
    fn tabs_turned_into_spaces_still_match_when_whitespace_is_ignored() {
        let file = lines("int f(void)\n{\n\treturn 0;\n}\n");
        let damaged = lines("{\n        return 0;\n}\n");
        assert_eq!(whitespace_match(&file, &damaged, 0), Some(1));
        assert_eq!(whitespace_match(&file, &lines("{\n\treturn 1;\n"), 0), None);
        assert_eq!(whitespace_match(&file, &lines("{\n\treturn 0;\n"), 0), None);
    }

    #[test]
    fn renderings_are_bounded_and_mark_a_missing_final_newline() {
        let long = "y".repeat(500);
        let text = format!("{long}\nlast");
        let shown = render(&lines(&text), |i| format!("{}: ", i + 1));
        assert!(shown.starts_with(&format!("1: {} [...]\n", "y".repeat(200))));
        assert!(shown.ends_with("2: last\n\\ No newline at end of file\n"));
        let many: String = (0..100).map(|i| format!("{i}\n")).collect();
        let shown = render(&lines(&many), |_| String::new());
        assert_eq!(shown.lines().count(), MAX_SHOWN_LINES + 1);
        assert!(shown.ends_with("[... 60 more lines]\n"));
    }
}
