//! Traditional unified diffs in git's form, for libgit2, which parses only
//! file sections that open with `diff --git`. `diff -u`, quilt and the mm
//! tree's own patches (akpm's scripts) open a section with `--- old` and
//! `+++ new` alone. Each such section gets the header git would have
//! written, its names read as `git apply` reads a traditional patch, at
//! `-p1`:
//! - a name ends at a tab, or before the timestamp `diff -u` writes after it;
//! - its first directory is stripped (`a/`, `b/`, `linux.orig/`, `linux/`);
//! - the mm tree's old name drops its `~patch-name` tail (`--- a/mm/x.c~fix`
//!   beside `+++ a/mm/x.c`);
//! - of two names, the new one is the file's, unless the old one is it cut
//!   short (git's rule: `x.c` beside `x.c.new`);
//! - `/dev/null`, or the epoch timestamp of `diff -N`, marks a file the
//!   patch creates or deletes (mode 100644, as git apply gives it).
//!
//! Sections that have a `diff --git` line are left as they are, so a patch
//! mixing both forms is read whole (the mm tree writes new files in git's
//! form and changes in the traditional one). Hunk bodies are skipped by
//! their headers' counts, so a removed line `-- x` is never taken for a
//! header. Lines are only inserted (`diff --git`, and `new file mode` or
//! `deleted file mode`) or rewritten in place (`---`, `+++`), so each line
//! of the result maps back to a line of the original. Pure text; no I/O.

use super::lint::header_counts;

/// A patch with its traditional sections in git's form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Normalised {
    pub text: Vec<u8>,
    /// 1-based lines of `text` that the original does not have, ascending.
    inserted: Vec<usize>,
}

impl Normalised {
    /// The 1-based line of the original that line `line` of `text` stands
    /// for: an inserted line stands for the `---` line it introduces.
    pub fn original_line(&self, line: usize) -> usize {
        line - self.inserted.partition_point(|&i| i < line)
    }
}

/// Why a traditional section cannot be put in git's form: the 1-based
/// line of its `---` in the original, and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unreadable {
    pub line: usize,
    pub reason: String,
}

/// The file sections of a patch's lines (each with its line ending).
#[derive(Debug, Default, PartialEq, Eq)]
struct Scan {
    /// 0-based line of the first `diff --git`.
    first_git: Option<usize>,
    /// 0-based lines of the `---` of each section without `diff --git`.
    traditional: Vec<usize>,
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn scan(lines: &[&[u8]]) -> Scan {
    let mut found = Scan::default();
    // A `diff --git` header whose `---`/`+++` lines are still to come.
    let mut git_open = false;
    let mut i = 0;
    while i < lines.len() {
        let line = trim_eol(lines[i]);
        if line.starts_with(b"diff --git ") {
            found.first_git.get_or_insert(i);
            git_open = true;
        } else if let Some((old, new)) = line
            .starts_with(b"@@ -")
            .then(|| header_counts(line))
            .flatten()
        {
            i = skip_hunk(lines, i + 1, old, new);
            git_open = false;
            continue;
        } else if line.starts_with(b"--- ")
            && lines
                .get(i + 1)
                .is_some_and(|l| trim_eol(l).starts_with(b"+++ "))
            && lines
                .get(i + 2)
                .map(|l| trim_eol(l))
                .is_some_and(|l| l.starts_with(b"@@ -") && header_counts(l).is_some())
        {
            if !git_open {
                found.traditional.push(i);
            }
            git_open = false;
            i += 2;
            continue;
        } else if line.starts_with(b"GIT binary patch") || line.starts_with(b"Binary files ") {
            git_open = false;
        }
        i += 1;
    }
    found
}

/// The index after a hunk body starting at `start` with `old` and `new`
/// lines to see; a line no hunk may hold ends it early.
fn skip_hunk(lines: &[&[u8]], start: usize, mut old: usize, mut new: usize) -> usize {
    let mut i = start;
    while (old > 0 || new > 0) && i < lines.len() {
        match trim_eol(lines[i]).first() {
            None | Some(b' ') => {
                old = old.saturating_sub(1);
                new = new.saturating_sub(1);
            }
            Some(b'-') if old > 0 => old -= 1,
            Some(b'+') if new > 0 => new -= 1,
            Some(b'\\') => {}
            _ => break,
        }
        i += 1;
    }
    i
}

/// A line that leads a traditional section in the tools that write one:
/// quilt's `Index:` and its rule, the `diff -u ...` command line.
fn leads_section(line: &[u8]) -> bool {
    let line = trim_eol(line);
    line.starts_with(b"Index: ")
        || line.starts_with(b"diff ")
        || (line.len() >= 10 && line.iter().all(|&b| b == b'='))
}

/// The 0-based line where the diff of `text` begins: its first
/// `diff --git`, or the first traditional section with the lines that
/// lead it; `None` when `text` holds no diff.
pub fn diff_start(text: &[u8]) -> Option<usize> {
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    let found = scan(&lines);
    let traditional = found.traditional.first().map(|&minus| {
        let mut start = minus;
        while start > 0 && leads_section(lines[start - 1]) {
            start -= 1;
        }
        start
    });
    match (found.first_git, traditional) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// `text` with each traditional section in git's form, or `None` when it
/// has none (a `git format-patch` mail, a `git diff`).
pub(crate) fn normalise(text: &[u8]) -> Result<Option<Normalised>, Unreadable> {
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    let found = scan(&lines);
    if found.traditional.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(text.len() + 80 * found.traditional.len());
    let mut inserted = Vec::new();
    let mut written = 0;
    let mut sections = found.traditional.iter().peekable();
    let mut i = 0;
    while i < lines.len() {
        if sections.next_if_eq(&&i).is_none() {
            out.extend_from_slice(lines[i]);
            written += 1;
            i += 1;
            continue;
        }
        let header = git_header(lines[i], lines[i + 1]).map_err(|reason| Unreadable {
            line: i + 1,
            reason,
        })?;
        for (n, line) in header.iter().enumerate() {
            out.extend_from_slice(line.as_bytes());
            written += 1;
            // The last two lines are the `---` and `+++` rewritten.
            if n + 2 < header.len() {
                inserted.push(written);
            }
        }
        i += 2;
    }
    Ok(Some(Normalised {
        text: out,
        inserted,
    }))
}

/// One side of a traditional section: the file's name, or none
/// (`/dev/null`, or the epoch timestamp of a created or deleted file).
fn side(line: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let rest = trim_eol(&line[4..]);
    let (name, stamp) = if rest.first() == Some(&b'"') {
        unquote(rest).ok_or_else(|| {
            format!(
                "the quoted name in `{}` does not end",
                String::from_utf8_lossy(trim_eol(line))
            )
        })?
    } else if let Some(tab) = rest.iter().position(|&b| b == b'\t') {
        (rest[..tab].to_vec(), &rest[tab + 1..])
    } else {
        let cut = rest.len() - timestamp_suffix(rest);
        (rest[..cut].to_vec(), &rest[cut..])
    };
    let name = trim_end(&name).to_vec();
    if name == b"/dev/null" || is_epoch(trim_start(stamp)) {
        return Ok(None);
    }
    Ok(Some(name))
}

fn trim_end(s: &[u8]) -> &[u8] {
    let end = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |p| p + 1);
    &s[..end]
}

fn trim_start(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    &s[start..]
}

/// `name` at `-p1`: without its first directory; `None` when it has none.
fn strip_first_directory(name: &[u8]) -> Option<&[u8]> {
    let slash = name.iter().position(|&b| b == b'/')?;
    let rest = &name[slash + 1..];
    let rest = &rest[rest.iter().position(|&b| b != b'/').unwrap_or(rest.len())..];
    (!rest.is_empty()).then_some(rest)
}

/// The mm tree's old name without its `~patch-name` tail.
fn strip_tilde_tail(name: &[u8]) -> &[u8] {
    let base = name.iter().rposition(|&b| b == b'/').map_or(0, |p| p + 1);
    match name[base..].iter().rposition(|&b| b == b'~') {
        Some(tilde) if tilde > 0 => &name[..base + tilde],
        _ => name,
    }
}

/// The git header for a traditional section: `diff --git`, the mode line
/// of a created or deleted file, then `---` and `+++` rewritten.
fn git_header(minus: &[u8], plus: &[u8]) -> Result<Vec<String>, String> {
    let at_p1 = |name: Option<Vec<u8>>, line: &[u8]| -> Result<Option<Vec<u8>>, String> {
        let Some(name) = name else { return Ok(None) };
        strip_first_directory(&name)
            .map(|n| Some(n.to_vec()))
            .ok_or_else(|| {
                format!(
                    "`{}` names no file once its first directory is stripped (a patch is read \
                     at -p1, as git apply and patch -p1 read it)",
                    String::from_utf8_lossy(trim_eol(line))
                )
            })
    };
    let old = at_p1(side(minus)?, minus)?.map(|n| strip_tilde_tail(&n).to_vec());
    let new = at_p1(side(plus)?, plus)?;
    let (path, created, deleted) = match (old, new) {
        // git apply's choice between two names (find_name_common).
        (Some(old), Some(new)) if old.len() < new.len() && new.starts_with(&old) => {
            (old, false, false)
        }
        (Some(_), Some(new)) => (new, false, false),
        (None, Some(new)) => (new, true, false),
        (Some(old), None) => (old, false, true),
        (None, None) => {
            return Err(format!(
                "`{}` and `{}` both name no file (/dev/null)",
                String::from_utf8_lossy(trim_eol(minus)),
                String::from_utf8_lossy(trim_eol(plus))
            ));
        }
    };
    let (a, b) = (quote(b"a/", &path), quote(b"b/", &path));
    let mut header = vec![format!("diff --git {a} {b}\n")];
    if created {
        header.push("new file mode 100644\n".into());
    }
    if deleted {
        header.push("deleted file mode 100644\n".into());
    }
    header.push(format!("--- {}\n", if created { "/dev/null" } else { &a }));
    header.push(format!("+++ {}\n", if deleted { "/dev/null" } else { &b }));
    Ok(header)
}

/// `prefix` + `path` as git writes a name: C-quoted when it holds a quote,
/// a backslash or a control character.
fn quote(prefix: &[u8], path: &[u8]) -> String {
    let name: Vec<u8> = prefix.iter().chain(path).copied().collect();
    if !name
        .iter()
        .any(|&b| b == b'"' || b == b'\\' || b < 0x20 || b == 0x7f)
    {
        return String::from_utf8_lossy(&name).into_owned();
    }
    let mut out = String::from("\"");
    for &b in &name {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b if !(0x20..0x7f).contains(&b) => out.push_str(&format!("\\{b:03o}")),
            b => out.push(b as char),
        }
    }
    out.push('"');
    out
}

/// A C-quoted name (`"a/x y.c"`) and what follows its closing quote.
fn unquote(text: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let mut out = Vec::new();
    let mut i = 1;
    while i < text.len() {
        match text[i] {
            b'"' => return Some((out, &text[i + 1..])),
            b'\\' => {
                let c = *text.get(i + 1)?;
                i += 2;
                match c {
                    b'a' => out.push(7),
                    b'b' => out.push(8),
                    b't' => out.push(b'\t'),
                    b'n' => out.push(b'\n'),
                    b'v' => out.push(11),
                    b'f' => out.push(12),
                    b'r' => out.push(b'\r'),
                    b'0'..=b'3' => {
                        let digits = text.get(i - 1..i + 2)?;
                        if !digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                            return None;
                        }
                        out.push(digits.iter().fold(0u8, |n, d| n * 8 + (d - b'0')));
                        i += 2;
                    }
                    c => out.push(c),
                }
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    None
}

/// `YYYY-MM-DD HH:MM:SS[.frac] ±HHMM` (or `±HH:MM`) split into its date,
/// time and zone, if it is one.
fn parse_stamp(stamp: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    // Digits, with the given separators at the given places.
    let shaped = |s: &[u8], seps: &[(usize, u8)]| {
        s.iter()
            .enumerate()
            .all(|(i, &b)| match seps.iter().find(|(at, _)| *at == i) {
                Some(&(_, sep)) => b == sep,
                None => b.is_ascii_digit(),
            })
    };
    let mut words = stamp.split(|&b| b == b' ');
    let (date, time, zone) = (words.next()?, words.next()?, words.next()?);
    if words.next().is_some() {
        return None;
    }
    let clock = &time[..time.iter().position(|&b| b == b'.').unwrap_or(time.len())];
    let frac = &time[clock.len()..];
    let zone_ok = matches!(zone.first(), Some(b'+' | b'-'))
        && (shaped(&zone[1..], &[]) && zone.len() == 5
            || shaped(&zone[1..], &[(2, b':')]) && zone.len() == 6);
    let ok = date.len() == 10
        && shaped(date, &[(4, b'-'), (7, b'-')])
        && clock.len() == 8
        && shaped(clock, &[(2, b':'), (5, b':')])
        && frac.first().is_none_or(|&b| b == b'.')
        && frac.iter().skip(1).all(u8::is_ascii_digit)
        && zone_ok;
    ok.then_some((date, time, zone))
}

/// How many bytes at the end of `rest` are a ` YYYY-MM-DD HH:MM:SS ±HHMM`
/// timestamp written after a name with a space (0 when none is).
fn timestamp_suffix(rest: &[u8]) -> usize {
    let spaces: Vec<usize> = rest
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b' ')
        .map(|(i, _)| i)
        .collect();
    match spaces.len().checked_sub(3).map(|k| spaces[k]) {
        Some(at) if at > 0 && parse_stamp(&rest[at + 1..]).is_some() => rest.len() - at,
        _ => 0,
    }
}

/// Whether a `diff -u` timestamp is the epoch (in any zone), which
/// `diff -N` writes for the missing side of a created or deleted file.
fn is_epoch(stamp: &[u8]) -> bool {
    let Some((date, time, zone)) = parse_stamp(trim_end(stamp)) else {
        return false;
    };
    let day: i64 = match date {
        b"1970-01-01" => 0,
        b"1969-12-31" => -1,
        _ => return false,
    };
    let num = |s: &[u8]| -> i64 {
        s.iter()
            .filter(|b| b.is_ascii_digit())
            .fold(0, |n, b| n * 10 + i64::from(b - b'0'))
    };
    let (clock, frac) = match time.iter().position(|&b| b == b'.') {
        Some(dot) => (&time[..dot], &time[dot + 1..]),
        None => (time, &b""[..]),
    };
    let seconds =
        day * 86_400 + num(&clock[..2]) * 3600 + num(&clock[3..5]) * 60 + num(&clock[6..]);
    let sign = if zone[0] == b'-' { -1 } else { 1 };
    let digits: Vec<u8> = zone[1..].iter().copied().filter(|b| *b != b':').collect();
    let offset = sign * (num(&digits[..2]) * 3600 + num(&digits[2..]) * 60);
    seconds - offset == 0 && frac.iter().all(|&b| b == b'0')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalised(text: &str) -> String {
        let n = normalise(text.as_bytes())
            .unwrap()
            .expect("a traditional section");
        String::from_utf8(n.text).unwrap()
    }

    const HUNK: &str = "@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n";

    #[test]
    fn the_mm_trees_tilde_form_becomes_a_git_header_for_the_file() {
        let text = format!("--- a/mm/vmscan.c~mm-vmscan-fix-comment\n+++ a/mm/vmscan.c\n{HUNK}_\n");
        assert_eq!(
            normalised(&text),
            format!(
                "diff --git a/mm/vmscan.c b/mm/vmscan.c\n--- a/mm/vmscan.c\n+++ b/mm/vmscan.c\n{HUNK}_\n"
            )
        );
    }

    #[test]
    fn names_are_read_at_p1_as_git_apply_reads_them() {
        for (minus, plus, path) in [
            // quilt
            ("linux.orig/mm/x.c", "linux/mm/x.c", "mm/x.c"),
            // diff -u with timestamps after a tab
            (
                "a/mm/x.c\t2026-12-05 10:00:00.123456789 +0100",
                "b/mm/x.c\t2026-12-05 10:01:00.000000000 +0100",
                "mm/x.c",
            ),
            // a timestamp after a space
            (
                "a/mm/x.c 2026-12-05 10:00:00 +0000",
                "b/mm/x.c 2026-12-05 10:01:00 +0000",
                "mm/x.c",
            ),
            // git's rule: the old name when the new one is it with a tail
            ("a/mm/x.c", "b/mm/x.c.new", "mm/x.c"),
            ("a/mm/x.c.orig", "b/mm/x.c", "mm/x.c"),
            // a doubled slash after the stripped directory
            ("a//mm/x.c", "b//mm/x.c", "mm/x.c"),
        ] {
            let text = format!("--- {minus}\n+++ {plus}\n{HUNK}");
            assert_eq!(
                normalised(&text).lines().next().unwrap(),
                format!("diff --git a/{path} b/{path}"),
                "{minus} / {plus}"
            );
        }
    }

    #[test]
    fn dev_null_and_the_epoch_mark_created_and_deleted_files() {
        let add = "@@ -0,0 +1 @@\n+new\n";
        let del = "@@ -1 +0,0 @@\n-old\n";
        for (minus, plus, hunk, want) in [
            (
                "/dev/null",
                "a/mm/new.c",
                add,
                "diff --git a/mm/new.c b/mm/new.c\nnew file mode 100644\n--- /dev/null\n+++ b/mm/new.c\n",
            ),
            (
                "a/mm/new.c\t1970-01-01 00:00:00.000000000 +0000",
                "b/mm/new.c\t2026-12-05 10:00:00.000000000 +0000",
                add,
                "diff --git a/mm/new.c b/mm/new.c\nnew file mode 100644\n--- /dev/null\n+++ b/mm/new.c\n",
            ),
            (
                "a/mm/old.c~remove-it",
                "/dev/null",
                del,
                "diff --git a/mm/old.c b/mm/old.c\ndeleted file mode 100644\n--- a/mm/old.c\n+++ /dev/null\n",
            ),
            (
                "a/mm/old.c\t2026-12-05 10:00:00 +0100",
                "b/mm/old.c\t1969-12-31 16:00:00.000000000 -0800",
                del,
                "diff --git a/mm/old.c b/mm/old.c\ndeleted file mode 100644\n--- a/mm/old.c\n+++ /dev/null\n",
            ),
        ] {
            let text = format!("--- {minus}\n+++ {plus}\n{hunk}");
            assert_eq!(
                normalised(&text),
                format!("{want}{hunk}"),
                "{minus} / {plus}"
            );
        }
    }

    #[test]
    fn git_sections_are_kept_and_only_traditional_ones_get_a_header() {
        let git = "diff --git a/mm/zblock.c a/mm/zblock.c\nnew file mode 100644\n--- /dev/null\n+++ a/mm/zblock.c\n@@ -0,0 +1 @@\n+x\n";
        let text = format!("--- a/mm/x.c~z\n+++ a/mm/x.c\n{HUNK}{git}");
        let n = normalise(text.as_bytes()).unwrap().unwrap();
        let out = String::from_utf8(n.text.clone()).unwrap();
        assert_eq!(
            out,
            format!("diff --git a/mm/x.c b/mm/x.c\n--- a/mm/x.c\n+++ b/mm/x.c\n{HUNK}{git}")
        );
        // Only the one `diff --git` line is new: line 1 stands for the
        // `---`, and every later line is one further down.
        assert_eq!(n.original_line(1), 1);
        assert_eq!(n.original_line(2), 1);
        assert_eq!(n.original_line(4), 3);
        assert_eq!(n.original_line(12), 11);
        // A patch in git's form alone is left as it is.
        assert_eq!(normalise(git.as_bytes()).unwrap(), None);
    }

    #[test]
    fn hunk_bodies_are_skipped_by_their_counts() {
        // The removed line `-- x` and added `++ y` look like a header.
        let text = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n--- x\n+++ y\n@@ -9 +9 @@\n same\n";
        let out = normalised(text);
        assert_eq!(out.matches("diff --git").count(), 1, "{out}");
    }

    #[test]
    fn a_name_without_a_directory_to_strip_is_refused_with_its_line() {
        let text = format!("Index: x.c\n--- x.c.orig\n+++ x.c\n{HUNK}");
        let err = normalise(text.as_bytes()).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(
            err.reason
                .starts_with("`--- x.c.orig` names no file once its first directory is stripped"),
            "{}",
            err.reason
        );
        let text = format!("--- /dev/null\n+++ /dev/null\n{HUNK}");
        assert!(
            normalise(text.as_bytes())
                .unwrap_err()
                .reason
                .contains("both name no file")
        );
    }

    #[test]
    fn quoted_names_are_read_and_written_as_git_quotes_them() {
        let text = format!(
            "--- \"a/mm/we\\\"ird\\tname.c\"\t2026-12-05 10:00:00 +0000\n+++ \"b/mm/we\\\"ird\\tname.c\"\n{HUNK}"
        );
        assert_eq!(
            normalised(&text).lines().next().unwrap(),
            "diff --git \"a/mm/we\\\"ird\\tname.c\" \"b/mm/we\\\"ird\\tname.c\""
        );
        assert_eq!(
            unquote(b"\"a\\303\\251\" rest"),
            Some((vec![b'a', 0xc3, 0xa9], &b" rest"[..]))
        );
        assert_eq!(unquote(b"\"open"), None);
    }

    #[test]
    fn the_diff_starts_at_its_first_section_and_the_lines_leading_it() {
        let quilt = format!(
            "Fix the thing.\n\n---\n mm/x.c | 2 +-\n\nIndex: linux/mm/x.c\n===================================================================\n--- linux.orig/mm/x.c\n+++ linux/mm/x.c\n{HUNK}"
        );
        assert_eq!(diff_start(quilt.as_bytes()), Some(5));
        let pun =
            format!("text\ndiff -puN mm/x.c~fix mm/x.c\n--- a/mm/x.c~fix\n+++ a/mm/x.c\n{HUNK}");
        assert_eq!(diff_start(pun.as_bytes()), Some(1));
        assert_eq!(diff_start(b"why\n\ndiff --git a/f b/f\n"), Some(2));
        // A `---` line without a hunk after it is no diff.
        assert_eq!(diff_start(b"---\n--- a/f\n+++ b/f\nno hunk\n"), None);
        assert_eq!(diff_start(b"just text\n"), None);
    }

    #[test]
    fn epoch_stamps_are_recognised_in_any_zone() {
        assert!(is_epoch(b"1970-01-01 00:00:00.000000000 +0000"));
        assert!(is_epoch(b"1970-01-01 01:00:00 +0100"));
        assert!(is_epoch(b"1969-12-31 16:00:00.000000000 -0800"));
        assert!(!is_epoch(b"1970-01-01 00:00:01 +0000"));
        assert!(!is_epoch(b"1970-01-01 00:00:00.5 +0000"));
        assert!(!is_epoch(b"2026-12-05 10:00:00 +0000"));
        assert!(!is_epoch(b"(revision 0)"));
    }
}
