//! Pure hunk placement in the manner of GNU patch(1): find where each hunk's
//! old side sits in a file (at its stated line first, then an offset search
//! alternating +1, -1, +2, -2, ..., then the same with fuzz 1 and 2) and
//! splice its new side in.
//!
//! Lines are byte slices that keep their `\n`, so a last line without one
//! (`\ No newline at end of file`) matches only a last line without one.
//! They are bytes rather than `&str` because kernel sources are not all
//! UTF-8, and a patch must apply to a Latin-1 comment like any other line.
//!
//! Fuzz follows GNU patch: with fuzz N, up to N context lines are ignored at
//! each edge of the hunk, counted against the longer edge. A hunk that
//! starts at the first line with less leading than trailing context claims
//! the start of the file, and one with less trailing context claims the
//! end; patch(1) only looks for such a hunk there. One deviation: the
//! stated line itself is always accepted, as libgit2's exact apply does.

/// What a hunk line does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineKind {
    Context,
    Remove,
    Add,
}

/// One line of a hunk; `text` keeps its `\n` unless the patch marks it
/// `\ No newline at end of file`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HunkLine {
    pub kind: LineKind,
    pub text: Vec<u8>,
}

/// One hunk, with the line numbers of its `@@ -a,b +c,d @@` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hunk {
    pub old_start: usize,
    pub old_lines: usize,
    pub new_start: usize,
    pub new_lines: usize,
    pub lines: Vec<HunkLine>,
}

impl Hunk {
    /// The lines the hunk expects in the file: context and removed lines.
    pub fn old_side(&self) -> Vec<&[u8]> {
        self.lines
            .iter()
            .filter(|l| l.kind != LineKind::Add)
            .map(|l| l.text.as_slice())
            .collect()
    }

    /// The 0-based index of the hunk's first old line. A hunk that removes
    /// nothing and has no context (`@@ -5,0 +6,2 @@`) inserts after line 5.
    pub fn first_old_index(&self) -> usize {
        if self.old_lines == 0 {
            self.old_start
        } else {
            self.old_start.saturating_sub(1)
        }
    }

    /// The same hunk undoing its change.
    pub fn reversed(&self) -> Hunk {
        let flip = |kind| match kind {
            LineKind::Add => LineKind::Remove,
            LineKind::Remove => LineKind::Add,
            LineKind::Context => LineKind::Context,
        };
        Hunk {
            old_start: self.new_start,
            old_lines: self.new_lines,
            new_start: self.old_start,
            new_lines: self.old_lines,
            lines: self
                .lines
                .iter()
                .map(|l| HunkLine {
                    kind: flip(l.kind),
                    text: l.text.clone(),
                })
                .collect(),
        }
    }

    /// Context lines before the first change and after the last one.
    fn context_edges(&self) -> (usize, usize) {
        let is_context = |l: &&HunkLine| l.kind == LineKind::Context;
        if self.lines.iter().all(|l| l.kind == LineKind::Context) {
            return (0, 0);
        }
        let prefix = self.lines.iter().take_while(is_context).count();
        let suffix = self.lines.iter().rev().take_while(is_context).count();
        (prefix, suffix)
    }
}

/// How far from the stated line a hunk may move, and how much fuzz it may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// `None`: anywhere in the file.
    pub max_offset: Option<usize>,
    pub max_fuzz: u32,
}

impl Limits {
    /// Only at the stated line, all context matching: libgit2's rule.
    pub const EXACT: Limits = Limits {
        max_offset: Some(0),
        max_fuzz: 0,
    };
    /// Anywhere, all context matching (the already-applied probe).
    pub const OFFSET: Limits = Limits {
        max_offset: None,
        max_fuzz: 0,
    };
    /// Anywhere, up to fuzz 2: patch(1)'s defaults.
    pub const FUZZY: Limits = Limits {
        max_offset: None,
        max_fuzz: 2,
    };
}

/// Where a hunk went: lines away from its stated line, and the fuzz used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placement {
    pub offset: i64,
    pub fuzz: u32,
}

/// The first hunk that found no place: its 0-based index, and the 0-based
/// file line where it was looked for first (stated line plus the offset
/// the hunks before it carried).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Misfit {
    pub hunk: usize,
    pub expected: usize,
}

/// Split file content into lines that keep their `\n`.
pub(crate) fn split_lines(content: &[u8]) -> Vec<&[u8]> {
    content.split_inclusive(|&b| b == b'\n').collect()
}

/// Apply `hunks` in order to `file`. Hunks may not overlap or go backwards,
/// and each starts its search where the one before it ended up (patch's
/// cumulative offset). Returns the new content and each hunk's placement.
pub(crate) fn apply_hunks(
    file: &[&[u8]],
    hunks: &[Hunk],
    limits: Limits,
) -> Result<(Vec<u8>, Vec<Placement>), Misfit> {
    let mut out = Vec::new();
    let mut placements = Vec::with_capacity(hunks.len());
    let mut copied = 0; // file[..copied] is already in `out`
    let mut in_offset = 0i64;
    for (index, hunk) in hunks.iter().enumerate() {
        let (prefix, suffix) = hunk.context_edges();
        let max_fuzz = limits.max_fuzz.min(prefix.max(suffix) as u32);
        let found = (0..=max_fuzz).find_map(|fuzz| {
            locate(file, hunk, fuzz, in_offset, copied, limits.max_offset).map(|s| (fuzz, s))
        });
        let Some((fuzz, spot)) = found else {
            let guess = hunk.first_old_index() as i64 + in_offset;
            return Err(Misfit {
                hunk: index,
                expected: guess.clamp(0, file.len() as i64) as usize,
            });
        };
        in_offset = spot.offset;
        file[copied..spot.pos]
            .iter()
            .for_each(|l| out.extend_from_slice(l));
        let body = &hunk.lines[spot.skip_front..hunk.lines.len() - spot.skip_back];
        let mut at = spot.pos;
        for line in body {
            match line.kind {
                LineKind::Context => {
                    out.extend_from_slice(file[at]);
                    at += 1;
                }
                LineKind::Remove => at += 1,
                LineKind::Add => out.extend_from_slice(&line.text),
            }
        }
        copied = at;
        placements.push(Placement {
            offset: spot.offset,
            fuzz,
        });
    }
    file[copied..].iter().for_each(|l| out.extend_from_slice(l));
    Ok((out, placements))
}

/// A place for a hunk: where its compared core starts in the file, how many
/// context lines were ignored at each edge, and its offset.
struct Spot {
    pos: usize,
    skip_front: usize,
    skip_back: usize,
    offset: i64,
}

/// patch(1)'s `locate_hunk`, on 0-based lines, never before `min_pos`.
fn locate(
    file: &[&[u8]],
    hunk: &Hunk,
    fuzz: u32,
    in_offset: i64,
    min_pos: usize,
    max_offset: Option<usize>,
) -> Option<Spot> {
    let old = hunk.old_side();
    let (prefix, suffix) = hunk.context_edges();
    let context = prefix.max(suffix) as i64;
    let prefix_fuzz = fuzz as i64 + prefix as i64 - context;
    let suffix_fuzz = fuzz as i64 + suffix as i64 - context;
    let skip_front = prefix_fuzz.max(0) as usize;
    let skip_back = suffix_fuzz.max(0) as usize;
    let stated = (hunk.first_old_index() + skip_front) as i64;
    let guess = stated + in_offset;
    let within = |pos: i64| max_offset.is_none_or(|m| (pos - guess).unsigned_abs() <= m as u64);
    let spot = |pos: i64| Spot {
        pos: pos as usize,
        skip_front,
        skip_back,
        offset: pos - stated,
    };

    if old.is_empty() {
        // A pure insertion without context fits anywhere: put it where the
        // hunks before it say, but never before what they consumed.
        let pos = guess.clamp(min_pos as i64, file.len() as i64);
        return (fuzz == 0 && within(pos)).then(|| spot(pos));
    }
    if skip_front + skip_back >= old.len() || old.len() - skip_front - skip_back > file.len() {
        return None;
    }
    let core = &old[skip_front..old.len() - skip_back];
    let last = (file.len() - core.len()) as i64;
    let fits = |pos: i64| {
        pos >= min_pos as i64
            && pos <= last
            && file[pos as usize..pos as usize + core.len()] == *core
    };

    if fits(guess) {
        return Some(spot(guess));
    }
    let at_start = prefix_fuzz < 0 && hunk.old_start <= 1;
    let at_end = suffix_fuzz < 0;
    if at_start || at_end {
        let pos = if at_start { 0 } else { last };
        let whole_file = !(at_start && at_end) || core.len() == file.len();
        return (whole_file && within(pos) && fits(pos)).then(|| spot(pos));
    }
    let reach = (guess - min_pos as i64).abs().max((last - guess).abs());
    let reach = max_offset.map_or(reach, |m| reach.min(m as i64));
    (1..=reach)
        .flat_map(|d| [guess + d, guess - d])
        .find(|&pos| fits(pos))
        .map(spot)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hunk from unified-diff body lines (" ctx", "-old", "+new").
    fn hunk(old_start: usize, body: &[&str]) -> Hunk {
        let lines: Vec<HunkLine> = body
            .iter()
            .map(|l| {
                let (sigil, text) = l.split_at(1);
                let kind = match sigil {
                    "+" => LineKind::Add,
                    "-" => LineKind::Remove,
                    _ => LineKind::Context,
                };
                HunkLine {
                    kind,
                    text: format!("{text}\n").into_bytes(),
                }
            })
            .collect();
        let old_lines = lines.iter().filter(|l| l.kind != LineKind::Add).count();
        let new_lines = lines.iter().filter(|l| l.kind != LineKind::Remove).count();
        Hunk {
            old_start,
            old_lines,
            new_start: old_start,
            new_lines,
            lines,
        }
    }

    fn text(lines: &[&str]) -> Vec<u8> {
        lines
            .iter()
            .flat_map(|l| format!("{l}\n").into_bytes())
            .collect()
    }

    fn numbered(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("line {i}")).collect()
    }

    fn run(
        file: &[String],
        hunks: &[Hunk],
        limits: Limits,
    ) -> Result<(String, Vec<Placement>), Misfit> {
        let content = text(&file.iter().map(String::as_str).collect::<Vec<_>>());
        let lines = split_lines(&content);
        apply_hunks(&lines, hunks, limits).map(|(out, p)| (String::from_utf8(out).unwrap(), p))
    }

    const MIDDLE: [&str; 8] = [
        " line 4", " line 5", " line 6", "-line 7", "+seven", " line 8", " line 9", " line 10",
    ];

    #[test]
    fn a_hunk_at_its_stated_line_applies_exactly() {
        let file = numbered(12);
        let (out, placed) = run(&file, &[hunk(4, &MIDDLE)], Limits::EXACT).unwrap();
        assert!(out.contains("line 6\nseven\nline 8\n"));
        assert_eq!(placed, [Placement { offset: 0, fuzz: 0 }]);
    }

    #[test]
    fn moved_context_is_found_at_an_offset_and_the_offset_carries_to_the_next_hunk() {
        let mut file = numbered(30);
        for i in 0..3 {
            file.insert(0, format!("new {i}"));
        }
        let second = hunk(
            20,
            &[
                " line 20", " line 21", " line 22", "-line 23", "+x", " line 24", " line 25",
            ],
        );
        assert_eq!(
            run(&file, &[hunk(4, &MIDDLE), second.clone()], Limits::EXACT).unwrap_err(),
            Misfit {
                hunk: 0,
                expected: 3
            }
        );
        let (out, placed) = run(&file, &[hunk(4, &MIDDLE), second], Limits::FUZZY).unwrap();
        assert!(out.contains("line 6\nseven\nline 8\n") && out.contains("line 22\nx\nline 24\n"));
        assert_eq!(placed, [Placement { offset: 3, fuzz: 0 }; 2]);
    }

    #[test]
    fn the_nearest_of_two_matches_wins_searching_both_ways() {
        // The same text at lines 2 and 9 (0-based 1 and 8); stated at 6.
        let mut file = numbered(12);
        file[1] = "a".into();
        file[2] = "b".into();
        file[8] = "a".into();
        file[9] = "b".into();
        let h = hunk(6, &[" a", "-b"]);
        let (_, placed) = run(&file, &[h], Limits::FUZZY).unwrap();
        assert_eq!(placed[0].offset, 3);
    }

    #[test]
    fn a_changed_edge_context_line_needs_fuzz_one_and_is_kept_from_the_file() {
        let mut file = numbered(12);
        file[3] = "line 4 (edited)".into();
        let (out, placed) = run(&file, &[hunk(4, &MIDDLE)], Limits::FUZZY).unwrap();
        assert_eq!(placed, [Placement { offset: 0, fuzz: 1 }]);
        assert!(out.contains("line 4 (edited)\nline 5\nline 6\nseven\n"));
        assert_eq!(
            run(&file, &[hunk(4, &MIDDLE)], Limits::OFFSET)
                .unwrap_err()
                .hunk,
            0
        );
    }

    #[test]
    fn a_changed_inner_context_line_is_never_fuzzed_away() {
        let mut file = numbered(12);
        file[5] = "line 6 (edited)".into();
        assert_eq!(
            run(&file, &[hunk(4, &MIDDLE)], Limits::FUZZY).unwrap_err(),
            Misfit {
                hunk: 0,
                expected: 3
            }
        );
    }

    #[test]
    fn a_hunk_with_short_leading_context_claims_the_start_of_the_file() {
        let h = hunk(1, &["-line 1", "+one", " line 2", " line 3", " line 4"]);
        let mut file = numbered(10);
        file.insert(0, "added above".into());
        // Not at the start any more: patch(1) refuses until fuzz frees the edge,
        // and even fuzz 2 keeps one trailing context line anchored.
        assert!(run(&file, std::slice::from_ref(&h), Limits::FUZZY).is_err());
        assert!(run(&numbered(10), &[h], Limits::EXACT).is_ok());
    }

    #[test]
    fn a_hunk_with_short_trailing_context_claims_the_end_of_the_file() {
        let h = hunk(8, &[" line 8", " line 9", " line 10", "+eleven"]);
        let mut file = numbered(10);
        file.insert(0, "added above".into());
        let (out, placed) = run(&file, std::slice::from_ref(&h), Limits::OFFSET).unwrap();
        assert!(out.ends_with("line 10\neleven\n"));
        assert_eq!(placed[0].offset, 1);
        file.push("added below".into());
        assert!(run(&file, &[h], Limits::OFFSET).is_err());
    }

    #[test]
    fn hunks_never_go_back_over_an_earlier_hunk() {
        let file: Vec<String> = ["x", "a", "b", "y"].map(String::from).to_vec();
        let first = hunk(2, &[" a", "-b", "+B"]);
        let again = hunk(2, &[" a", "-b", "+C"]);
        assert_eq!(
            run(&file, &[first, again], Limits::FUZZY).unwrap_err().hunk,
            1
        );
    }

    #[test]
    fn a_missing_final_newline_is_part_of_the_line() {
        let content = b"one\ntwo".to_vec();
        let lines = split_lines(&content);
        let mut h = hunk(1, &[" one", "-two", "+two"]);
        h.lines[1].text.pop(); // "-two" + "\ No newline at end of file"
        let (out, _) = apply_hunks(&lines, &[h.clone()], Limits::EXACT).unwrap();
        assert_eq!(out, b"one\ntwo\n");
        let with_newline = b"one\ntwo\n".to_vec();
        assert!(apply_hunks(&split_lines(&with_newline), &[h], Limits::FUZZY).is_err());
    }

    #[test]
    fn a_new_file_is_a_pure_insertion_into_nothing() {
        let h = Hunk {
            old_start: 0,
            old_lines: 0,
            new_start: 1,
            new_lines: 2,
            lines: hunk(0, &["+a", "+b"]).lines,
        };
        let (out, _) = apply_hunks(&[], &[h], Limits::EXACT).unwrap();
        assert_eq!(out, b"a\nb\n");
    }

    #[test]
    fn a_reversed_hunk_undoes_the_change() {
        let file = numbered(12);
        let (once, _) = run(&file, &[hunk(4, &MIDDLE)], Limits::EXACT).unwrap();
        let lines = split_lines(once.as_bytes());
        let (back, _) = apply_hunks(&lines, &[hunk(4, &MIDDLE).reversed()], Limits::EXACT).unwrap();
        assert_eq!(
            back,
            text(&file.iter().map(String::as_str).collect::<Vec<_>>())
        );
    }
}
