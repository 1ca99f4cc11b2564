//! Making untrusted text inert in a PR comment (pure, no I/O).
//!
//! Patch subjects, authors and file names come from whoever sent the
//! series. The report puts them in code spans, where GitHub renders text
//! literally; [`inert`] is the second line of defence, applied to the whole
//! comment outside code: whatever reaches the comment outside a code span
//! or a fenced block cannot mention, link or show an image.
//!
//! It changes only what could start such a construct, so a report that
//! holds none comes out byte for byte as it went in:
//! - `@name` (a mention, a team mention, an e-mail address) gets a
//!   zero-width space after the `@`, as Dependabot writes `@&#8203;name`;
//! - `#123` (an issue reference, which notifies the issue) likewise;
//! - `](`, `][` and `]:` (inline, reference and definition links, and
//!   images, which need them too) get their `]` escaped;
//! - `<` before a letter, `/`, `!` or `?` (a raw HTML tag, an autolink
//!   `<https://...>`) becomes `&lt;`;
//! - `://` and `www.` (GitHub's bare-URL autolinks) get a zero-width space;
//! - `&` that would start an entity (`&#64;` is an `@`) becomes `&amp;`;
//! - a backslash before punctuation is doubled, so that it cannot escape
//!   one of the escapes above (or a backtick, and so hide a code span).
//!
//! Code spans (a run of backticks closed by a run of the same length on
//! the same line) and fenced code blocks are copied as they are: GitHub
//! shows their content literally, and an entity there would show as text.

/// The zero-width space, as an entity: visible in the raw Markdown, absent
/// from the rendered comment, and enough to break a mention or an autolink.
const ZWSP: &str = "&#8203;";

/// `markdown` with every mention, reference, link, image, autolink and raw
/// HTML tag outside code made inert (see the module docs).
pub fn inert(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    // The open fence: its character and length.
    let mut fence: Option<(char, usize)> = None;
    for line in markdown.split_inclusive('\n') {
        let trimmed = line.trim_start_matches(' ');
        let indented = line.len() - trimmed.len();
        let marker = if indented <= 3 {
            fence_marker(trimmed)
        } else {
            None
        };
        match (fence, marker) {
            (None, Some((c, n, _))) => {
                fence = Some((c, n));
                out.push_str(line);
            }
            (Some((open_c, open_n)), Some((c, n, rest)))
                if c == open_c && n >= open_n && rest.trim().is_empty() =>
            {
                fence = None;
                out.push_str(line);
            }
            (Some(_), _) => out.push_str(line),
            (None, None) => inert_line(line, &mut out),
        }
    }
    out
}

/// A fence line's character, its run length and what follows the run.
fn fence_marker(line: &str) -> Option<(char, usize, &str)> {
    let c = line.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let n = line.chars().take_while(|&x| x == c).count();
    (n >= 3).then(|| (c, n, &line[n..]))
}

fn inert_line(line: &str, out: &mut String) {
    let chars: Vec<char> = line.chars().collect();
    let at = |i: usize| chars.get(i).copied();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = at(i + 1);
        match c {
            '`' => {
                let n = run(&chars, i, '`');
                match closing_run(&chars, i + n, n) {
                    Some(end) => {
                        out.extend(&chars[i..end + n]);
                        i = end + n;
                    }
                    None => {
                        out.extend(&chars[i..i + n]);
                        i += n;
                    }
                }
                continue;
            }
            '\\' if next.is_some_and(|n| n.is_ascii_punctuation()) => out.push_str("\\\\"),
            '@' if next.is_some_and(char::is_alphanumeric) => {
                out.push('@');
                out.push_str(ZWSP);
            }
            '#' if next.is_some_and(|n| n.is_ascii_digit()) => {
                out.push('#');
                out.push_str(ZWSP);
            }
            ']' if matches!(next, Some('(' | '[' | ':')) => out.push_str("\\]"),
            '<' if next
                .is_some_and(|n| n.is_ascii_alphabetic() || matches!(n, '/' | '!' | '?')) =>
            {
                out.push_str("&lt;")
            }
            '&' if next.is_some_and(|n| n == '#' || n.is_ascii_alphabetic()) => {
                out.push_str("&amp;")
            }
            ':' if at(i + 1) == Some('/') && at(i + 2) == Some('/') => {
                out.push(':');
                out.push_str(ZWSP);
            }
            'w' | 'W'
                if (i == 0 || !chars[i - 1].is_alphanumeric())
                    && chars[i..]
                        .iter()
                        .take(4)
                        .collect::<String>()
                        .eq_ignore_ascii_case("www.") =>
            {
                out.extend(&chars[i..i + 3]);
                out.push_str(ZWSP);
                i += 3;
                continue;
            }
            c => out.push(c),
        }
        i += 1;
    }
}

/// How many `c` in a row start at `i`.
fn run(chars: &[char], i: usize, c: char) -> usize {
    chars[i..].iter().take_while(|&&x| x == c).count()
}

/// Where a run of exactly `n` backticks starts, at or after `from`.
fn closing_run(chars: &[char], from: usize, n: usize) -> Option<usize> {
    let mut i = from;
    while i < chars.len() {
        if chars[i] == '`' {
            let len = run(chars, i, '`');
            if len == n {
                return Some(i);
            }
            i += len;
        } else {
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_without_such_text_is_unchanged() {
        let report = "### patchbench: zswap-pageout, A = base, B = base + `mm: x @y [z](w)`\n\n\
            > **Accelerator: TCG** \u{2014} no KVM.\n\n\
            | metric | unit | B vs A [95% CI] | p |\n|---|---|---:|---:|\n\
            | pageout_cpu_ns | ms | \u{2212}4.10% [\u{2212}6.0%, \u{2212}2.2%] | 0.01 |\n\n\
            A change is called only when p < 0.05 and the interval lies outside \u{b1}2%.\n";
        assert_eq!(inert(report), report);
    }

    #[test]
    fn each_construct_is_broken() {
        for (given, want) in [
            ("@torvalds", "@&#8203;torvalds"),
            ("@linux/mm-team", "@&#8203;linux/mm-team"),
            ("me@example.org", "me@&#8203;example.org"),
            ("fixes #123", "fixes #&#8203;123"),
            ("[x](javascript:alert(1))", "[x\\](javascript:alert(1))"),
            ("![i](http://x/y.png)", "![i\\](http:&#8203;//x/y.png)"),
            (
                "[x][ref]\n[ref]: http://e",
                "[x\\][ref]\n[ref\\]: http:&#8203;//e",
            ),
            ("<img src=x>", "&lt;img src=x>"),
            ("<https://e.org>", "&lt;https:&#8203;//e.org>"),
            ("see www.e.org", "see www&#8203;.e.org"),
            ("&#64;torvalds", "&amp;#&#8203;64;torvalds"),
            ("\\](x)", "\\\\\\](x)"),
            // An escaped backtick does not open a code span in the input; the
            // doubled backslash makes it open one in the output, and the
            // scan agrees.
            ("\\`@a`", "\\\\`@a`"),
        ] {
            assert_eq!(inert(given), want, "{given:?}");
        }
    }

    #[test]
    fn code_spans_and_fences_are_left_literal() {
        let text = "`@a [x](y)` and ``b ` @c`` then @d\n```\n@e [x](y)\n```\n@f\n";
        assert_eq!(
            inert(text),
            "`@a [x](y)` and ``b ` @c`` then @&#8203;d\n```\n@e [x](y)\n```\n@&#8203;f\n"
        );
        // An unclosed backtick is just a backtick.
        assert_eq!(inert("`@a"), "`@&#8203;a");
        // A fence closes only with its own character, at least as long.
        assert_eq!(
            inert("````\n```\n@a\n````\n@b"),
            "````\n```\n@a\n````\n@&#8203;b"
        );
    }
}
