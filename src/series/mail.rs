//! Patch mails: split an mbox, parse one `git format-patch` mail, and read
//! what a series needs from it (subject number, cover letter, trailers).
//! Pure functions over bytes; no I/O.

use mailparse::MailHeaderMap;

/// One parsed mail.
#[derive(Debug, Clone, PartialEq)]
pub struct Mail {
    pub author_name: String,
    pub author_email: String,
    /// Seconds since the epoch, and the author's UTC offset in minutes.
    pub date: (i64, i32),
    /// The subject as sent, unfolded.
    pub raw_subject: String,
    /// The subject without `[PATCH ...]` prefixes.
    pub subject: String,
    /// `n/N` from `[PATCH v2 n/N]`.
    pub number: Option<(u32, u32)>,
    pub message_id: Option<String>,
    /// The commit message body: the mail body up to the `---` line.
    pub body: String,
    /// The mail carries a `diff --git` section.
    pub has_diff: bool,
    /// The `base-commit:` trailer `git format-patch --base` writes.
    pub base_commit: Option<String>,
}

impl Mail {
    /// A reply (`Re:`) in a thread mbox: never a patch of the series.
    pub fn is_reply(&self) -> bool {
        self.raw_subject
            .trim_start()
            .get(..3)
            .is_some_and(|p| p.eq_ignore_ascii_case("re:"))
    }

    /// A cover letter: `[PATCH 0/N]`, or a patch mail with no diff.
    pub fn is_cover_letter(&self) -> bool {
        matches!(self.number, Some((0, _))) || !self.has_diff
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

/// The part of a format-patch body that is the commit message.
pub fn message_body(body: &str) -> String {
    let mut out = Vec::new();
    for line in body.lines() {
        if line == "---" || line.starts_with("diff --git ") {
            break;
        }
        out.push(line);
    }
    out.join("\n").trim().to_string()
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

/// A bare `git diff` with no mail headers, as diffs are often posted inline
/// or attached: it gets a placeholder author and the given subject.
pub fn bare_diff(raw: &[u8], subject: &str) -> Option<Mail> {
    if !raw.starts_with(b"diff --git ") {
        return None;
    }
    Some(Mail {
        author_name: "Unknown Author".into(),
        author_email: "unknown@unknown".into(),
        date: (0, 0),
        raw_subject: subject.to_string(),
        subject: subject.to_string(),
        number: None,
        message_id: None,
        body: "Applied from a bare diff with no mail headers; author and date unknown.".into(),
        has_diff: true,
        base_commit: None,
    })
}

/// Parse one mail. The error is a reason fragment for the caller to place.
pub fn parse(raw: &[u8]) -> Result<Mail, String> {
    let mail = mailparse::parse_mail(raw).map_err(|e| e.to_string())?;
    let header = |name: &str| mail.headers.get_first_value(name);
    let from = header("From").ok_or("no From: header")?;
    // `git am` refuses an empty ident too; say what the line should hold.
    const FIX: &str = "write the author as `From: Name <name@example.org>` in the mail \
                       (git format-patch writes it from user.name and user.email)";
    let body = mail.get_body().map_err(|e| e.to_string())?;
    // In-body headers, as `git am` reads them: a patch sent by someone else
    // (a maintainer forwarding it, or a sender whose mailer rewrites From:)
    // names its author in a `From:` line opening the body.
    let (inline, body) = in_body_headers(&body);
    let from = inline.from.unwrap_or(from);
    let info = mailparse::addrparse(&from)
        .map_err(|e| format!("bad From: header `{from}`: {e}; {FIX}"))?
        .extract_single_info()
        .ok_or_else(|| format!("From: header `{from}` has no address; {FIX}"))?;
    let date_text = inline
        .date
        .or_else(|| header("Date"))
        .ok_or("no Date: header")?;
    let secs = mailparse::dateparse(&date_text)
        .map_err(|e| format!("bad Date: header `{date_text}`: {e}"))?;
    let raw_subject = unfold(
        &inline
            .subject
            .or_else(|| header("Subject"))
            .ok_or("no Subject: header")?,
    );
    let has_diff = body.starts_with("diff --git ") || body.contains("\ndiff --git ");
    Ok(Mail {
        author_name: info.display_name.unwrap_or_default(),
        author_email: info.addr,
        date: (secs, utc_offset_minutes(&date_text)),
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
        assert!(err.starts_with("bad From: header `<>`: "), "{err}");
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
        assert_eq!(m.date, (1729715760, 780));
        assert!(m.has_diff && !m.is_cover_letter() && !m.is_reply());
    }

    #[test]
    fn a_bare_diff_gets_a_placeholder_author() {
        let m = bare_diff(b"diff --git a/x b/x\n", "x.diff").unwrap();
        assert_eq!(
            (m.subject.as_str(), m.author_name.as_str()),
            ("x.diff", "Unknown Author")
        );
        assert!(bare_diff(b"From: a@b\n", "x").is_none());
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
