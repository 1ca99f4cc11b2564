//! Patch mails: split an mbox, parse one `git format-patch` mail, and read
//! what a series needs from it (subject number, cover letter, trailers).
//! A file with no mail header (a bare `git diff` or `diff -u`, a quilt
//! patch) is read too: its subject comes from its file name, its author is
//! the identity patchbench commits with. Pure functions over bytes; no I/O.
//!
//! Reasons for refusing a mail are this module's own words, never the
//! mail parser's: they follow the caller's name for the mail.

use mailparse::MailHeaderMap;

/// The identity patchbench commits with, and the author of a patch whose
/// file has no mail header.
pub const IDENTITY_NAME: &str = "patchbench";
pub const IDENTITY_EMAIL: &str = "patchbench@localhost";

/// One parsed mail.
#[derive(Debug, Clone, PartialEq)]
pub struct Mail {
    pub author_name: String,
    pub author_email: String,
    /// Seconds since the epoch, and the author's UTC offset in minutes;
    /// `None` when the mail has no `Date:` (the commit then takes its
    /// parent's date: see `series::apply`).
    pub date: Option<(i64, i32)>,
    /// The subject as sent, unfolded.
    pub raw_subject: String,
    /// The subject without `[PATCH ...]` prefixes.
    pub subject: String,
    /// `n/N` from `[PATCH v2 n/N]`.
    pub number: Option<(u32, u32)>,
    pub message_id: Option<String>,
    /// The commit message body: the mail body up to the `---` line.
    pub body: String,
    /// The mail carries a diff: a `diff --git` section or a traditional
    /// one (`--- a/x`, `+++ b/x`, `@@`).
    pub has_diff: bool,
    /// The `base-commit:` trailer `git format-patch --base` writes.
    pub base_commit: Option<String>,
    /// The file had no mail header: the subject is its file name's, the
    /// author patchbench's identity.
    pub headerless: bool,
}

impl Mail {
    /// A reply (`Re:`) in a thread mbox: never a patch of the series.
    pub fn is_reply(&self) -> bool {
        self.raw_subject
            .trim_start()
            .get(..3)
            .is_some_and(|p| p.eq_ignore_ascii_case("re:"))
    }

    /// A cover letter: `[PATCH 0/N]`. Any other mail without a diff is an
    /// empty patch, which `git am` refuses ("Patch is empty").
    pub fn is_cover_letter(&self) -> bool {
        matches!(self.number, Some((0, _)))
    }
}

/// Collapse folded whitespace.
fn unfold(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Strip `[PATCH v2 1/3]`-style prefixes from a subject.
pub fn clean_subject(subject: &str) -> String {
    let mut s = unfold(subject);
    loop {
        let trimmed = s.trim_start();
        if trimmed.starts_with('[')
            && let Some(end) = trimmed.find(']')
        {
            s = trimmed[end + 1..].to_string();
            continue;
        }
        return trimmed.to_string();
    }
}

/// `n/N` from the first bracketed prefix that has one.
pub fn patch_number(subject: &str) -> Option<(u32, u32)> {
    let mut rest = subject;
    while let Some(start) = rest.find('[') {
        let end = rest[start..].find(']')? + start;
        for word in rest[start + 1..end].split_whitespace() {
            if let Some((n, total)) = word.split_once('/')
                && let (Ok(n), Ok(total)) = (n.parse(), total.parse())
            {
                return Some((n, total));
            }
        }
        rest = &rest[end + 1..];
    }
    None
}

/// The part of a format-patch body that is the commit message: what comes
/// before the `---` line and the diff, without a diffstat at its end.
pub fn message_body(body: &str) -> String {
    let diff = crate::apply::diff_start(body.as_bytes()).unwrap_or(usize::MAX);
    let mut out: Vec<&str> = body
        .lines()
        .take(diff)
        .take_while(|line| *line != "---")
        .collect();
    while out
        .last()
        .is_some_and(|l| l.trim().is_empty() || is_diffstat(l))
    {
        out.pop();
    }
    out.join("\n").trim().to_string()
}

/// A line of the diffstat git, quilt and akpm's scripts write above a diff:
/// ` mm/x.c | 2 +-`, ` 1 file changed, 1 insertion(+), 1 deletion(-)`.
fn is_diffstat(line: &str) -> bool {
    let Some(rest) = line.strip_prefix(' ') else {
        return false;
    };
    let summary = rest.split_once(' ').is_some_and(|(n, tail)| {
        n.chars().all(|c| c.is_ascii_digit())
            && (tail.starts_with("file changed") || tail.starts_with("files changed"))
    });
    let file_row = rest.split_once(" | ").is_some_and(|(path, stat)| {
        !path.trim().is_empty()
            && (stat.trim_start().starts_with("Bin")
                || stat
                    .split_whitespace()
                    .next()
                    .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit())))
    });
    summary || file_row
}

/// The UTC offset of an RFC 2822 date, in minutes (`+1300` → 780).
pub fn utc_offset_minutes(date: &str) -> i32 {
    let Some(zone) = date.split_whitespace().last() else {
        return 0;
    };
    let (sign, digits) = match zone.as_bytes().first() {
        Some(b'+') => (1, &zone[1..]),
        Some(b'-') => (-1, &zone[1..]),
        _ => return 0,
    };
    match (digits.len(), digits.parse::<i32>()) {
        (4, Ok(hhmm)) => sign * (hhmm / 100 * 60 + hhmm % 100),
        _ => 0,
    }
}

fn base_commit(body: &str) -> Option<String> {
    body.lines().find_map(|l| {
        l.strip_prefix("base-commit: ")
            .map(|id| id.trim().to_string())
            .filter(|id| id.len() >= 7 && id.chars().all(|c| c.is_ascii_hexdigit()))
    })
}

/// Whether `raw` opens with a mail header: a first line `Name: value`, in
/// a block (up to the first blank line) of header lines that names the
/// author or the subject. A quilt patch's `Index:` line, a description
/// that opens `mm: fix ...`, a diffstat or a `diff` line do not.
pub fn has_mail_header(raw: &[u8]) -> bool {
    let is_field = |line: &[u8]| {
        line.iter()
            .position(|&b| b == b':')
            .is_some_and(|colon| colon > 0 && line[..colon].iter().all(|b| b.is_ascii_graphic()))
    };
    let mut lines = raw
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .take_while(|l| !l.is_empty())
        .peekable();
    // The mbox `From <sha> <date>` line git format-patch opens a file with.
    lines.next_if(|l| is_separator(l));
    let Some(first) = lines.next() else {
        return false;
    };
    let names = |line: &[u8], name: &str| {
        line.get(..name.len())
            .is_some_and(|h| h.eq_ignore_ascii_case(name.as_bytes()))
    };
    is_field(first)
        && std::iter::once(first)
            .chain(lines)
            .filter(|l| !l.starts_with(b" ") && !l.starts_with(b"\t"))
            .any(|l| names(l, "from:") || names(l, "subject:"))
}

/// The subject a file with no mail header takes from its name:
/// `0001-mm-fix-thing.patch` or `v2-0001-mm-fix-thing.patch` → "mm fix
/// thing" (git format-patch made that name from a subject), else the name
/// without its extension.
pub fn subject_from_file_name(name: &str) -> String {
    let path = std::path::Path::new(name);
    let stem = path
        .file_stem()
        .map_or_else(|| name.to_string(), |s| s.to_string_lossy().into_owned());
    let unversioned = stem
        .split_once('-')
        .filter(|(v, _)| {
            v.strip_prefix('v')
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        })
        .map_or(stem.as_str(), |(_, rest)| rest);
    let numbered = unversioned.split_once('-').filter(|(n, rest)| {
        n.len() == 4 && n.chars().all(|c| c.is_ascii_digit()) && !rest.is_empty()
    });
    match numbered {
        Some((_, rest)) => rest.replace('-', " "),
        None if stem.is_empty() => name.to_string(),
        None => stem,
    }
}

/// A file with no mail header (see [`has_mail_header`]), named `file_name`:
/// a bare `git diff` or `diff -u`, or a quilt patch whose description, if
/// any, becomes the commit message's body. It needs a diff.
pub fn headerless(raw: &[u8], file_name: &str) -> Result<Mail, String> {
    let text = String::from_utf8_lossy(raw);
    if crate::apply::diff_start(raw).is_none() {
        return Err(
            "neither a mail nor a diff: it has no mail header (From:, Subject:) and no diff \
             (`diff --git`, or `--- a/path` and `+++ b/path` before an `@@` hunk)"
                .into(),
        );
    }
    let subject = subject_from_file_name(file_name);
    Ok(Mail {
        author_name: IDENTITY_NAME.into(),
        author_email: IDENTITY_EMAIL.into(),
        date: None,
        raw_subject: subject.clone(),
        subject,
        number: None,
        message_id: None,
        body: message_body(&text),
        has_diff: true,
        base_commit: base_commit(&text),
        headerless: true,
    })
}

/// What could not be read in a mail, in words for the user: the parser's
/// own messages name its internals.
fn unreadable(error: &mailparse::MailParseError) -> String {
    use mailparse::MailParseError as E;
    match error {
        E::QuotedPrintableDecodeError(_) => {
            "its body, sent quoted-printable, does not decode: the mail is damaged".into()
        }
        E::Base64DecodeError(_) => {
            "its body, sent in base64, does not decode: the mail is damaged".into()
        }
        E::EncodingError(_) => "its body is not text in the charset its Content-Type names".into(),
        E::Generic(_) => "its mail header cannot be read: a header line is damaged (a line \
                          break inside a header, or a stray carriage return)"
            .into(),
    }
}

/// Parse one mail. The error is a reason fragment for the caller to place.
pub fn parse(raw: &[u8]) -> Result<Mail, String> {
    let mail = mailparse::parse_mail(raw).map_err(|e| unreadable(&e))?;
    let header = |name: &str| mail.headers.get_first_value(name);
    let from = header("From").ok_or("no From: header")?;
    // `git am` refuses an empty ident too; say what the line should hold.
    const FIX: &str = "write the author as `From: Name <name@example.org>` in the mail \
                       (git format-patch writes it from user.name and user.email)";
    let body = mail.get_body().map_err(|e| unreadable(&e))?;
    // In-body headers, as `git am` reads them: a patch sent by someone else
    // (a maintainer forwarding it, or a sender whose mailer rewrites From:)
    // names its author in a `From:` line opening the body.
    let (inline, body) = in_body_headers(&body);
    let from = inline.from.unwrap_or(from);
    let info = mailparse::addrparse(&from)
        .map_err(|_| format!("From: header `{from}` is not a name and address; {FIX}"))?
        .extract_single_info()
        .ok_or_else(|| format!("From: header `{from}` has no address; {FIX}"))?;
    // No Date: is no reason to refuse (git am takes the current time);
    // one that is not a date is (git am: "invalid date format").
    let date = match inline.date.or_else(|| header("Date")) {
        None => None,
        Some(text) => {
            // mailparse skips what it cannot read, and gives 0 for text
            // with no date in it; no patch mail is dated at the epoch.
            let secs = mailparse::dateparse(&text)
                .ok()
                .filter(|&secs| secs != 0)
                .ok_or_else(|| {
                    format!(
                        "Date: header `{text}` is not a date as mails write it (RFC 2822, such \
                         as `Thu, 24 Oct 2024 09:36:00 +1300`)"
                    )
                })?;
            Some((secs, utc_offset_minutes(&text)))
        }
    };
    let raw_subject = unfold(
        &inline
            .subject
            .or_else(|| header("Subject"))
            .ok_or("no Subject: header")?,
    );
    let has_diff = crate::apply::diff_start(body.as_bytes()).is_some();
    Ok(Mail {
        author_name: info.display_name.unwrap_or_default(),
        author_email: info.addr,
        date,
        subject: clean_subject(&raw_subject),
        number: patch_number(&raw_subject),
        message_id: header("Message-ID")
            .map(|id| {
                id.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_string()
            })
            .filter(|id| !id.is_empty()),
        base_commit: base_commit(body),
        body: message_body(body),
        has_diff,
        raw_subject,
        headerless: false,
    })
}

/// The `From:`, `Date:` and `Subject:` lines that open a mail's body, as
/// git mailinfo takes them (they override the mail's own headers), and the
/// body after them and the blank line that ends them.
#[derive(Debug, Default, PartialEq, Eq)]
struct InBody {
    from: Option<String>,
    date: Option<String>,
    subject: Option<String>,
}

fn in_body_headers(body: &str) -> (InBody, &str) {
    let mut found = InBody::default();
    let mut rest = body.trim_start_matches(['\n', '\r']);
    loop {
        let (line, after) = rest.split_once('\n').unwrap_or((rest, ""));
        let line = line.trim_end_matches('\r');
        let value = |name: &str| {
            line.get(..name.len())
                .filter(|h| h.eq_ignore_ascii_case(name))
                .map(|_| line[name.len()..].trim().to_string())
        };
        if let Some(v) = value("From:") {
            found.from = Some(v);
        } else if let Some(v) = value("Date:") {
            found.date = Some(v);
        } else if let Some(v) = value("Subject:") {
            found.subject = Some(v);
        } else {
            break;
        }
        rest = after;
    }
    if found == InBody::default() {
        return (found, body);
    }
    (found, rest)
}

/// Whether a line is an mbox separator: `From <sender> <date with hh:mm:ss>`,
/// as git format-patch, b4 and mail clients write it. Body text that merely
/// starts with "From " has no time of day in it.
fn is_separator(line: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(line) else {
        return false;
    };
    let Some(rest) = text.strip_prefix("From ") else {
        return false;
    };
    rest.split_whitespace().skip(1).any(|w| {
        let b = w.as_bytes();
        b.len() == 8
            && b[2] == b':'
            && b[5] == b':'
            && w.chars().filter(char::is_ascii_digit).count() == 6
    })
}

/// Split an mbox into its mails. A mail starts at a separator line that
/// opens the file or follows a blank line; a file with none is one mail.
pub fn split_mbox(bytes: &[u8]) -> Vec<&[u8]> {
    let mut starts = Vec::new();
    let mut at_boundary = true;
    let mut pos = 0;
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        if at_boundary && is_separator(line) {
            starts.push(pos);
        }
        at_boundary = line == b"\n" || line == b"\r\n";
        pos += line.len();
    }
    if starts.is_empty() {
        return vec![bytes];
    }
    let mut mails = Vec::new();
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(bytes.len());
        // The `From ` separator line is not part of the mail.
        let mail = &bytes[start..end];
        let body_start = mail
            .iter()
            .position(|b| *b == b'\n')
            .map_or(mail.len(), |p| p + 1);
        mails.push(&mail[body_start..]);
    }
    mails
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_lose_their_patch_prefixes() {
        assert_eq!(
            clean_subject("[PATCH v2 1/3] mm: memcg: do a thing"),
            "mm: memcg: do a thing"
        );
        assert_eq!(
            clean_subject("[RFC]  [PATCH]\n mm: folded\n subject"),
            "mm: folded subject"
        );
        assert_eq!(clean_subject("plain"), "plain");
    }

    #[test]
    fn numbers_come_from_any_prefix() {
        assert_eq!(patch_number("[PATCH v2 1/3] x"), Some((1, 3)));
        assert_eq!(patch_number("[RFC] [PATCH 0/4] x"), Some((0, 4)));
        assert_eq!(patch_number("[PATCH] x"), None);
        assert_eq!(patch_number("Re: [PATCH 2/2] x"), Some((2, 2)));
    }

    #[test]
    fn offsets_come_from_the_date_zone() {
        assert_eq!(utc_offset_minutes("Thu, 24 Oct 2024 09:36:00 +1300"), 780);
        assert_eq!(utc_offset_minutes("Wed, 11 Nov 2026 16:09:08 -0530"), -330);
        assert_eq!(utc_offset_minutes("Wed, 11 Nov 2026 16:09:08 GMT"), 0);
    }

    const MAIL: &str = "From: =?UTF-8?q?J=C3=B6rg_Tester?= <jt@example.org>\nDate: Thu, 24 Oct 2024 09:36:00 +1300\nMessage-ID: <20241024.1@example.org>\nSubject: [PATCH v2\n 1/2] mm: change\n the greeting\n\nWhy.\n---\ndiff --git a/a b/a\n--\nbase-commit: 0123456789abcdef0123456789abcdef01234567\n";

    #[test]
    fn an_in_body_from_names_the_author_as_git_am_reads_it() {
        let mail = MAIL.replacen(
            "\n\nWhy.\n",
            "\n\nFrom: Kairui Song <kasong@tencent.com>\n\nWhy.\n",
            1,
        );
        let m = parse(mail.as_bytes()).unwrap();
        assert_eq!(
            (m.author_name.as_str(), m.author_email.as_str()),
            ("Kairui Song", "kasong@tencent.com")
        );
        assert_eq!(m.body, "Why.");
        // A body that merely mentions From: later keeps the mail's author.
        let m = parse(MAIL.replacen("Why.", "Why.\nFrom: x <x@y>", 1).as_bytes()).unwrap();
        assert_eq!(m.author_email, "jt@example.org");
    }

    #[test]
    fn an_empty_author_is_refused_with_how_to_fix_the_mail() {
        let mail = MAIL.replacen("=?UTF-8?q?J=C3=B6rg_Tester?= <jt@example.org>", "<>", 1);
        let err = parse(mail.as_bytes()).unwrap_err();
        assert!(
            err.starts_with("From: header `<>` is not a name and address; "),
            "{err}"
        );
        assert!(err.ends_with("write the author as `From: Name <name@example.org>` in the mail (git format-patch writes it from user.name and user.email)"), "{err}");
    }

    #[test]
    fn a_mail_gives_its_author_subject_number_and_trailers() {
        let m = parse(MAIL.as_bytes()).unwrap();
        assert_eq!(m.author_name, "Jörg Tester");
        assert_eq!(m.author_email, "jt@example.org");
        assert_eq!(m.subject, "mm: change the greeting");
        assert_eq!(m.number, Some((1, 2)));
        assert_eq!(m.message_id.as_deref(), Some("20241024.1@example.org"));
        assert_eq!(
            m.base_commit.as_deref(),
            Some("0123456789abcdef0123456789abcdef01234567")
        );
        assert_eq!(m.body, "Why.");
        assert_eq!(m.date, Some((1729715760, 780)));
        assert!(m.has_diff && !m.is_cover_letter() && !m.is_reply() && !m.headerless);
    }

    #[test]
    fn a_mail_without_a_date_is_read_and_a_bad_date_is_refused_in_plain_words() {
        let undated = MAIL.replacen("Date: Thu, 24 Oct 2024 09:36:00 +1300\n", "", 1);
        assert_eq!(parse(undated.as_bytes()).unwrap().date, None);
        let bad = MAIL.replacen("Thu, 24 Oct 2024 09:36:00 +1300", "yesterday", 1);
        assert_eq!(
            parse(bad.as_bytes()).unwrap_err(),
            "Date: header `yesterday` is not a date as mails write it (RFC 2822, such as \
             `Thu, 24 Oct 2024 09:36:00 +1300`)"
        );
    }

    /// akpm's form: a diffstat, then `--- a/x~name` / `+++ a/x`, then `_`.
    const MM_TREE: &str = "From: Ann Tester <ann@example.org>\nSubject: mm: fix the comment\nDate: Thu, 24 Oct 2024 09:36:00 +0000\n\nWhy.\n\nSigned-off-by: Ann Tester <ann@example.org>\n---\n\n mm/vmscan.c |    2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\n--- a/mm/vmscan.c~mm-fix-the-comment\n+++ a/mm/vmscan.c\n@@ -1 +1 @@\n-a\n+b\n_\n";

    #[test]
    fn a_mail_with_a_traditional_diff_is_a_patch_not_a_cover_letter() {
        let m = parse(MM_TREE.as_bytes()).unwrap();
        assert!(m.has_diff && !m.is_cover_letter(), "{m:?}");
        assert_eq!(
            m.body,
            "Why.\n\nSigned-off-by: Ann Tester <ann@example.org>"
        );
    }

    #[test]
    fn a_mail_without_a_diff_is_an_empty_patch_unless_numbered_0() {
        let m = parse(b"From: A <a@b.c>\nSubject: [PATCH] x\n\nno diff\n").unwrap();
        assert!(!m.has_diff && !m.is_cover_letter());
        let m = parse(b"From: A <a@b.c>\nSubject: [PATCH 0/2] x\n\ncover\n").unwrap();
        assert!(m.is_cover_letter());
    }

    #[test]
    fn only_a_header_naming_the_author_or_subject_makes_a_mail() {
        for mail in [
            &b"From: A <a@b.c>\nSubject: x\n\n"[..],
            b"Return-Path: <a@b.c>\nReceived: by x;\n  Thu, 1 Jan 2026\nsubject: x\n\n",
        ] {
            assert!(has_mail_header(mail), "{}", String::from_utf8_lossy(mail));
        }
        for bare in [
            &b"diff --git a/f b/f\n"[..],
            b"--- a/f\n+++ b/f\n",
            b" mm/x.c | 2 +-\n 1 file changed\n\n--- a/mm/x.c~y\n",
            b"Index: linux/mm/x.c\n=====\n--- linux.orig/mm/x.c\n",
            b"mm: fix the thing\n\nFrom: later <a@b.c>\n",
            b"",
        ] {
            assert!(!has_mail_header(bare), "{}", String::from_utf8_lossy(bare));
        }
    }

    #[test]
    fn subjects_come_from_file_names_as_format_patch_made_them() {
        for (name, subject) in [
            ("0001-fix-thing.patch", "fix thing"),
            (
                "0012-mm-vmscan-fix-a-comment.patch",
                "mm vmscan fix a comment",
            ),
            ("foo.diff", "foo"),
            ("mm-vmscan-fix-a-comment.patch", "mm-vmscan-fix-a-comment"),
            ("v2-0003-mm-fix-thing.patch", "mm fix thing"),
            ("v2-notes.txt", "v2-notes"),
            ("fix", "fix"),
        ] {
            assert_eq!(subject_from_file_name(name), subject, "{name}");
        }
    }

    #[test]
    fn a_headerless_file_takes_patchbenchs_identity_and_its_description() {
        let quilt = b"Fix the comment.\n\nLonger text.\n---\n mm/x.c | 2 +-\n\nIndex: linux/mm/x.c\n===================================================================\n--- linux.orig/mm/x.c\n+++ linux/mm/x.c\n@@ -1 +1 @@\n-a\n+b\n";
        let m = headerless(quilt, "0001-fix-the-comment.patch").unwrap();
        assert_eq!(
            (m.author_name.as_str(), m.author_email.as_str()),
            (IDENTITY_NAME, IDENTITY_EMAIL)
        );
        assert_eq!(m.subject, "fix the comment");
        assert_eq!(m.body, "Fix the comment.\n\nLonger text.");
        assert!(m.headerless && m.has_diff && m.date.is_none());
        // A bare diff has no description: the diffstat is not one.
        let bare = b" mm/x.c | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\n--- a/mm/x.c~y\n+++ a/mm/x.c\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(headerless(bare, "y.patch").unwrap().body, "");
        let err = headerless(b"just text\n", "notes.txt").unwrap_err();
        assert!(err.starts_with("neither a mail nor a diff: "), "{err}");
    }

    #[test]
    fn mboxes_split_at_from_lines_after_blank_lines() {
        let mbox = b"From abc Mon Sep 17 00:00:00 2001\nSubject: one\n\nFrom here on, text\n\nFrom def Mon Sep 17 00:00:00 2001\nSubject: two\n\nbody\n";
        let mails = split_mbox(mbox);
        assert_eq!(mails.len(), 2);
        assert!(mails[0].starts_with(b"Subject: one"));
        assert!(mails[0].ends_with(b"From here on, text\n\n"));
        assert!(mails[1].starts_with(b"Subject: two"));
        assert_eq!(split_mbox(b"Subject: x\n\nbody\n").len(), 1);
    }
}
