//! Where a C file's top-level definitions are: each function definition's
//! lines and name, each other braced top-level item (a struct, an
//! initialised array), and which lines hold code rather than comments or
//! blanks. Pure; no macro expansion.
//!
//! The scan follows brace depth outside comments, string and character
//! literals and preprocessor directives. A `{` at depth 0 opens a function
//! when the text since the last top-level `;` or `}` ends with `)` and has
//! no `=` outside parentheses (an initialiser has one, a struct has no
//! parameter list). The name is the identifier before the last parenthesised
//! group that is not an attribute (`__releases(x)`, `__attribute__((...))`)
//! nor the parameter list of a returned function pointer; a top-level macro
//! invocation left without its `;` before a function is passed over that
//! way. `SYSCALL_DEFINEn(name, ...)` is named `sys_name`.
//!
//! `#if`/`#elif`/`#else`/`#endif` branches may each open a brace that one
//! closing brace ends (a function header or an `if (...) {` written twice):
//! every branch starts at the depth the `#if` had, and after `#endif` the
//! depth is the one the first branch ended at, so each group counts once.

/// A braced top-level item: its 1-based first line (the header's first
/// code line), the line of its closing brace, and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub kind: ItemKind,
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemKind {
    /// A function definition and its name.
    Function(String),
    /// Anything else with braces at the top level: its header, with runs
    /// of whitespace made one space (`struct memcg_vmstats`,
    /// `static struct cftype memory_files[] =`).
    Other(String),
}

/// A scanned file: its items in order, and for each line (index 0 is line
/// 1) whether it holds code outside comments (a directive counts).
#[derive(Debug, Clone, Default)]
pub struct Scan {
    pub items: Vec<Item>,
    pub code: Vec<bool>,
}

impl Scan {
    /// The item whose lines hold `line` (1-based).
    pub fn item_at(&self, line: usize) -> Option<&Item> {
        self.items.iter().find(|i| i.start <= line && line <= i.end)
    }

    /// Whether `line` (1-based) holds code: a change to a line without any
    /// (a comment, a blank line) changes nothing the compiler sees.
    pub fn is_code(&self, line: usize) -> bool {
        self.code
            .get(line.wrapping_sub(1))
            .copied()
            .unwrap_or(false)
    }

    /// The function definitions' names, in order.
    pub fn function_names(&self) -> impl Iterator<Item = &str> {
        self.items.iter().filter_map(|i| match &i.kind {
            ItemKind::Function(name) => Some(name.as_str()),
            ItemKind::Other(_) => None,
        })
    }
}

/// Attribute-like macros of the kernel that take arguments and may stand
/// after a parameter list or before a declaration.
const ATTRIBUTES: &[&str] = &[
    "__attribute__",
    "__attribute",
    "__acquires",
    "__releases",
    "__must_hold",
    "__cond_acquires",
    "__cond_releases",
    "__printf",
    "__scanf",
    "__section",
    "__aligned",
    "__alloc_size",
    "__diagnose_as",
    "__no_sanitize_or_inline",
    "__counted_by",
    "__nocfi",
    "__weak",
    "__malloc",
    "__realloc_size",
    "asm",
    "__asm__",
];

#[derive(Clone, Copy)]
struct Branch {
    /// The depth at the `#if`.
    at_if: usize,
    /// The depth the first branch ended at, once an `#elif`/`#else` is seen.
    first_end: Option<usize>,
}

/// Scan C source (bytes: kernel files are not all UTF-8).
pub fn scan(src: &[u8]) -> Scan {
    let lines = src.split(|&b| b == b'\n').count();
    let mut code = vec![false; lines];
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut branches: Vec<Branch> = Vec::new();
    // The top-level text since the last `;` or `}` at depth 0, and the
    // line its first code character is on.
    let mut header = String::new();
    let mut header_line: Option<usize> = None;
    // The item open at depth 1: its kind and first line.
    let mut open: Option<(ItemKind, usize)> = None;
    let mut line = 1usize;
    let mut at_line_start = true;
    let mut i = 0;
    let b = src;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            at_line_start = true;
            if depth == 0 {
                header.push(' ');
            }
            i += 1;
            continue;
        }
        if c == b' ' || c == b'\t' || c == b'\r' || c == 0x0c {
            if depth == 0 {
                header.push(' ');
            }
            i += 1;
            continue;
        }
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if b[i..].starts_with(b"/*") {
            i += 2;
            while i < b.len() && !b[i..].starts_with(b"*/") {
                if b[i] == b'\n' {
                    line += 1;
                }
                i += 1;
            }
            i = (i + 2).min(b.len());
            if depth == 0 {
                header.push(' ');
            }
            continue;
        }
        if c == b'#' && at_line_start {
            let (directive, next, newlines) = directive(b, i);
            for l in line..=line + newlines {
                if let Some(slot) = code.get_mut(l - 1) {
                    *slot = true;
                }
            }
            line += newlines;
            i = next;
            conditional(&directive, &mut depth, &mut branches);
            continue;
        }
        at_line_start = false;
        if let Some(slot) = code.get_mut(line - 1) {
            *slot = true;
        }
        if c == b'"' || c == b'\'' {
            let (next, newlines) = literal(b, i);
            line += newlines;
            if depth == 0 {
                header.push_str(if c == b'"' { "\"\"" } else { "''" });
                header_line.get_or_insert(line);
            }
            i = next;
            continue;
        }
        match c {
            b'{' => {
                if depth == 0 {
                    let start = header_line.unwrap_or(line);
                    let kind = match function_name(&header) {
                        Some(name) => ItemKind::Function(name),
                        None => ItemKind::Other(squeeze(&header)),
                    };
                    open = Some((kind, start));
                }
                depth += 1;
            }
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    if let Some((kind, start)) = open.take() {
                        items.push(Item {
                            kind,
                            start,
                            end: line,
                        });
                    }
                    header.clear();
                    header_line = None;
                }
            }
            b';' if depth == 0 => {
                header.clear();
                header_line = None;
            }
            _ => {
                if depth == 0 {
                    header_line.get_or_insert(line);
                    header.push(c as char);
                }
            }
        }
        i += 1;
    }
    Scan { items, code }
}

/// The directive starting at `b[i]` (`#`): its text (continuations joined,
/// comments dropped), where scanning resumes (the newline that ends it),
/// and how many newlines it spans before that one.
fn directive(b: &[u8], mut i: usize) -> (String, usize, usize) {
    let mut text = String::new();
    let mut newlines = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'\n') {
            newlines += 1;
            i += 2;
            text.push(' ');
            continue;
        }
        if b[i] == b'\n' {
            break;
        }
        if b[i..].starts_with(b"/*") {
            i += 2;
            while i < b.len() && !b[i..].starts_with(b"*/") {
                if b[i] == b'\n' {
                    newlines += 1;
                }
                i += 1;
            }
            i = (i + 2).min(b.len());
            text.push(' ');
            continue;
        }
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            break;
        }
        text.push(b[i] as char);
        i += 1;
    }
    (text, i, newlines)
}

/// Follow `#if` branches so that each group's braces count once.
fn conditional(directive: &str, depth: &mut usize, branches: &mut Vec<Branch>) {
    let word: String = directive
        .trim_start_matches('#')
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect();
    match word.as_str() {
        "if" | "ifdef" | "ifndef" => branches.push(Branch {
            at_if: *depth,
            first_end: None,
        }),
        "elif" | "elifdef" | "elifndef" | "else" => {
            if let Some(branch) = branches.last_mut() {
                branch.first_end.get_or_insert(*depth);
                *depth = branch.at_if;
            }
        }
        "endif" => {
            if let Some(Branch {
                first_end: Some(end),
                ..
            }) = branches.pop()
            {
                *depth = end;
            }
        }
        _ => {}
    }
}

/// Skip a string or character literal starting at `b[i]`: where scanning
/// resumes and how many newlines (escaped ones) it held.
fn literal(b: &[u8], i: usize) -> (usize, usize) {
    let quote = b[i];
    let mut j = i + 1;
    let mut newlines = 0;
    while j < b.len() {
        match b[j] {
            b'\\' => {
                if b.get(j + 1) == Some(&b'\n') {
                    newlines += 1;
                }
                j += 2;
            }
            b'\n' => return (j, newlines), // unterminated: stop at the line's end
            c if c == quote => return (j + 1, newlines),
            _ => j += 1,
        }
    }
    (b.len(), newlines)
}

fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The function a top-level header declares, if it is a function
/// definition's (see the module docs).
pub fn function_name(header: &str) -> Option<String> {
    let h = header.trim();
    if !h.ends_with(')') {
        return None;
    }
    let b = h.as_bytes();
    // Top-level parenthesised groups: (open, close) byte offsets; and
    // whether an `=` stands outside them.
    let mut groups = Vec::new();
    let mut level = 0usize;
    let mut start = 0;
    for (k, &c) in b.iter().enumerate() {
        match c {
            b'(' => {
                if level == 0 {
                    start = k;
                }
                level += 1;
            }
            b')' => {
                level = level.checked_sub(1)?;
                if level == 0 {
                    groups.push((start, k));
                }
            }
            b'=' if level == 0 => return None,
            _ => {}
        }
    }
    for &(open, close) in groups.iter().rev() {
        // `void (*get(int))(long)`: the declarator in parentheses holds the
        // name and its parameter list.
        if let Some(inner) = h[open + 1..close].trim_start().strip_prefix('*') {
            return function_name(inner);
        }
        let before = h[..open].trim_end();
        let ident_start = before
            .bytes()
            .rposition(|c| !is_ident_byte(c))
            .map_or(0, |p| p + 1);
        let ident = &before[ident_start..];
        if ident.is_empty() || ident.as_bytes()[0].is_ascii_digit() {
            // `(*f(int))(long)`: the parameters of a returned function
            // pointer, or a cast; the name is further left.
            continue;
        }
        if ATTRIBUTES.contains(&ident) {
            continue;
        }
        if let Some(n) = ident
            .strip_prefix("SYSCALL_DEFINE")
            .or_else(|| ident.strip_prefix("COMPAT_SYSCALL_DEFINE"))
            && n.bytes().all(|c| c.is_ascii_digit())
        {
            let args = &h[open + 1..close];
            let name = args.split(',').next().unwrap_or("").trim();
            let prefix = if ident.starts_with("COMPAT_") {
                "compat_sys_"
            } else {
                "sys_"
            };
            return Some(format!("{prefix}{name}"));
        }
        return Some(ident.to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn functions(src: &str) -> Vec<(String, usize, usize)> {
        scan(src.as_bytes())
            .items
            .into_iter()
            .filter_map(|i| match i.kind {
                ItemKind::Function(name) => Some((name, i.start, i.end)),
                ItemKind::Other(_) => None,
            })
            .collect()
    }

    #[test]
    fn a_function_spans_its_header_and_body() {
        let src = "\
#include <linux/mm.h>

/* a comment { with a brace */
static int foo(int a,
\t       int b)
{
\tif (a) {
\t\treturn '}';
\t}
\treturn strlen(\"{\");
}

int bar(void) { return 0; }
";
        assert_eq!(
            functions(src),
            [("foo".to_string(), 4, 11), ("bar".to_string(), 13, 13)]
        );
    }

    #[test]
    fn structs_and_initialisers_are_not_functions() {
        let src = "\
struct memcg_vmstats {
\tlong state[4];
};

static struct cftype memory_files[] = {
\t{ .name = \"current\", .read_u64 = memory_current_read, },
\t{ }\t/* terminate */
};

struct cgroup_subsys memory_cgrp_subsys = {
\t.css_alloc = mem_cgroup_css_alloc,
};
";
        let s = scan(src.as_bytes());
        let kinds: Vec<_> = s.items.iter().map(|i| i.kind.clone()).collect();
        assert_eq!(
            kinds,
            [
                ItemKind::Other("struct memcg_vmstats".into()),
                ItemKind::Other("static struct cftype memory_files[] =".into()),
                ItemKind::Other("struct cgroup_subsys memory_cgrp_subsys =".into()),
            ]
        );
        assert_eq!((s.items[1].start, s.items[1].end), (5, 8));
    }

    #[test]
    fn kernel_headers_name_the_function_not_the_attribute() {
        for (header, name) in [
            ("static void __init foo(void)", "foo"),
            (
                "static inline bool mem_cgroup_swapin_margin_protected(struct mem_cgroup *memcg, struct folio *folio)",
                "mem_cgroup_swapin_margin_protected",
            ),
            (
                "static void lock_it(struct x *x) __acquires(&x->lock)",
                "lock_it",
            ),
            (
                "__printf(2, 3) void logit(int level, const char *fmt, ...)",
                "logit",
            ),
            ("int weak_one(void) __attribute__((weak))", "weak_one"),
            (
                "SYSCALL_DEFINE3(madvise, unsigned long, start, size_t, len_in, int, behavior)",
                "sys_madvise",
            ),
            (
                "COMPAT_SYSCALL_DEFINE2(foo, int, a, int, b)",
                "compat_sys_foo",
            ),
            ("static void (*get_handler(int kind))(int)", "get_handler"),
            // A macro invocation whose `;` is missing, then a function.
            ("DEFINE_STATIC_KEY_FALSE(x) static int after(void)", "after"),
            (
                "struct mem_cgroup *parent_of(struct mem_cgroup *memcg)",
                "parent_of",
            ),
        ] {
            assert_eq!(function_name(header).as_deref(), Some(name), "{header}");
        }
        for header in [
            "struct foo",
            "static const struct file_operations fops =",
            "enum x",
            "int table[] = (int[])",
        ] {
            assert_eq!(function_name(header), None, "{header}");
        }
    }

    #[test]
    fn if_branches_that_each_open_a_brace_count_once() {
        let src = "\
static void foo(void)
{
#ifdef CONFIG_A
\tif (a) {
#else
\tif (b) {
#endif
\t\tbar();
\t}
}

#ifdef CONFIG_X
static int baz(int a)
#else
static int baz(int a, int b)
#endif
{
\treturn 0;
}
";
        assert_eq!(
            functions(src),
            [("foo".to_string(), 1, 10), ("baz".to_string(), 13, 19)]
        );
    }

    #[test]
    fn macros_and_their_continuations_hold_no_braces() {
        let src = "\
#define FOO(x) do { \\
\tbar(x); \\
} while (0)

static int f(void)
{
\treturn 1;
}
";
        let s = scan(src.as_bytes());
        assert_eq!(functions(src), [("f".to_string(), 5, 8)]);
        assert!(s.is_code(2), "a directive's continuation is code");
    }

    #[test]
    fn comment_and_blank_lines_are_not_code() {
        let src = "int a;\n\n/*\n * doc\n */\nint b; // trailing\n";
        let s = scan(src.as_bytes());
        let code: Vec<bool> = (1..=6).map(|l| s.is_code(l)).collect();
        assert_eq!(code, [true, false, false, false, false, true]);
    }

    #[test]
    fn a_line_between_functions_is_in_none() {
        let src = "int f(void)\n{\n}\n\nstatic int x;\n\nint g(void)\n{\n}\n";
        let s = scan(src.as_bytes());
        assert_eq!(s.item_at(5), None);
        assert!(matches!(&s.item_at(8).unwrap().kind, ItemKind::Function(n) if n == "g"));
        assert!(matches!(&s.item_at(1).unwrap().kind, ItemKind::Function(n) if n == "f"));
    }
}
