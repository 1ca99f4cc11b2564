//! The layering ARCHITECTURE.md promises, checked on the source itself:
//!
//! - no module imports a module that imports it back, directly or through
//!   others (a parent and its child count as two modules: a parent that
//!   re-exports its child's items while the child uses the parent's is a
//!   cycle too);
//! - `model` imports nothing of the crate outside itself;
//! - `stats` imports nothing of the crate but `model`.
//!
//! "Imports" means any path naming another module of the same crate: a
//! `use` (groups expanded), or an inline `crate::`/`super::`/`self::` path,
//! or a path through a child module the file declares. Test code
//! (`#[cfg(test)]` modules and `tests.rs` files) is left out. The checker
//! reads the crate roots `src/lib.rs`, `src/main.rs` and the agent's
//! `lib.rs` and `main.rs`, and follows their `mod` declarations.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type ModPath = Vec<String>;

/// One crate: every module's file and the modules each references.
struct Crate {
    name: String,
    files: BTreeMap<ModPath, PathBuf>,
    edges: BTreeMap<ModPath, BTreeSet<ModPath>>,
}

/// The source with comments, string and char literals blanked out, so
/// that only code is searched.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if b[i] == b'r'
            && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            // A raw string r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push('r');
                i += 1;
                continue;
            }
            j += 1;
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            while j < b.len() && !b[j..].starts_with(&close) {
                j += 1;
            }
            i = j + close.len();
            out.push_str("\"\"");
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            let end = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map(|p| i + 2 + p)
            } else if b.get(i + 2) == Some(&b'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    out.push_str("' '");
                    i = end + 1;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let ch = text[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// The text with every `#[cfg(test)]` item removed (a module's braces, or
/// a declaration up to its `;`), and the names of test-only child modules.
fn without_tests(code: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut test_mods = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let (brace, semi) = (after.find('{'), after.find(';'));
        let end = match (brace, semi) {
            (Some(b), Some(s)) if s < b => {
                let decl = after[..s].trim();
                if let Some(name) = decl.strip_prefix("mod ").or(decl.strip_prefix("pub mod ")) {
                    test_mods.push(name.trim().to_string());
                }
                s + 1
            }
            (Some(b), _) => {
                let mut depth = 0;
                let mut end = after.len();
                for (k, c) in after[b..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = b + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (None, Some(s)) => s + 1,
            (None, None) => after.len(),
        };
        rest = &after[end..];
    }
    out.push_str(rest);
    (out, test_mods)
}

/// `mod name;` declarations (any visibility) of a file's code.
fn declared_mods(code: &str) -> Vec<String> {
    let mut mods = Vec::new();
    let words: Vec<&str> = code
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ';' || c == '{'))
        .filter(|w| !w.is_empty())
        .collect();
    for (k, w) in words.iter().enumerate() {
        if *w == "mod"
            && let Some(next) = words.get(k + 1)
            && let Some(name) = next.strip_suffix(';')
        {
            mods.push(name.to_string());
        }
    }
    mods
}

/// Every `use` tree of the code, expanded into plain paths.
fn use_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = find_word(rest, "use") {
        let after = &rest[at + 3..];
        let end = after.find(';').unwrap_or(after.len());
        expand(&after[..end], &mut Vec::new(), &mut out);
        rest = &after[end..];
    }
    out
}

fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(p) = text[from..].find(word) {
        let at = from + p;
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        if !ident(before) && !ident(after) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// Expand one use tree (`a::b::{c, d::e as f, *}`) under `prefix`.
fn expand(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    let (head, group) = match tree.find('{') {
        Some(b) if tree.ends_with('}') => (&tree[..b], Some(&tree[b + 1..tree.len() - 1])),
        _ => (tree, None),
    };
    let segs: Vec<String> = head
        .split("::")
        .map(|s| s.split_whitespace().next().unwrap_or("").to_string())
        .filter(|s| !s.is_empty() && s != "*")
        .collect();
    let depth = prefix.len();
    prefix.extend(segs);
    match group {
        None => out.push(prefix.clone()),
        Some(group) => {
            // Split at top-level commas.
            let (mut level, mut start) = (0, 0);
            let parts: Vec<&str> = group
                .char_indices()
                .filter_map(|(k, c)| {
                    match c {
                        '{' => level += 1,
                        '}' => level -= 1,
                        ',' if level == 0 => {
                            let part = &group[start..k];
                            start = k + 1;
                            return Some(part);
                        }
                        _ => {}
                    }
                    None
                })
                .collect::<Vec<_>>()
                .into_iter()
                .chain(std::iter::once(&group[start..]))
                .collect();
            for part in parts {
                if part.trim() == "self" {
                    out.push(prefix.clone());
                } else if !part.trim().is_empty() {
                    expand(part, prefix, out);
                }
            }
        }
    }
    prefix.truncate(depth);
}

/// Inline paths starting at `crate`, `super`, `self` or one of `heads`.
fn inline_paths(code: &str, heads: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let ident_start = (chars[i].is_alphabetic() || chars[i] == '_')
            && (i == 0
                || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_' || chars[i - 1] == ':'));
        if !ident_start {
            i += 1;
            continue;
        }
        let mut segs = Vec::new();
        let mut j = i;
        loop {
            let s = j;
            while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                j += 1;
            }
            segs.push(chars[s..j].iter().collect::<String>());
            if j + 2 < chars.len()
                && chars[j] == ':'
                && chars[j + 1] == ':'
                && (chars[j + 2].is_alphabetic() || chars[j + 2] == '_')
            {
                j += 2;
            } else {
                break;
            }
        }
        let first = segs[0].as_str();
        if segs.len() > 1
            && (matches!(first, "crate" | "super" | "self") || heads.iter().any(|h| h == first))
        {
            out.push(segs);
        }
        i = j.max(i + 1);
    }
    out
}

/// The module `path` names from module `at` of `files`: the longest
/// existing module prefix of its absolute form.
fn resolve(
    at: &ModPath,
    path: &[String],
    children: &[String],
    files: &BTreeMap<ModPath, PathBuf>,
) -> Option<ModPath> {
    let mut abs: ModPath = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("self") => at.clone(),
        Some("super") => {
            let mut p = at.clone();
            let mut k = 0;
            while path.get(k).map(String::as_str) == Some("super") {
                p.pop();
                k += 1;
            }
            p.extend(path[k..].iter().cloned());
            return longest(&p, files);
        }
        Some(first) if children.iter().any(|c| c == first) => {
            let mut p = at.clone();
            p.extend(path.iter().cloned());
            return longest(&p, files);
        }
        _ => return None,
    };
    abs.extend(path[1..].iter().cloned());
    longest(&abs, files)
}

fn longest(abs: &ModPath, files: &BTreeMap<ModPath, PathBuf>) -> Option<ModPath> {
    (0..=abs.len())
        .rev()
        .map(|n| abs[..n].to_vec())
        .find(|p| files.contains_key(p))
}

/// Read a crate from its root file, following `mod` declarations.
fn read_crate(name: &str, root: &Path) -> Crate {
    let mut files = BTreeMap::new();
    let mut texts: BTreeMap<ModPath, (String, Vec<String>)> = BTreeMap::new();
    let mut queue = vec![(Vec::<String>::new(), root.to_path_buf())];
    while let Some((path, file)) = queue.pop() {
        let raw =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let (code, test_mods) = without_tests(&code_only(&raw));
        let dir = if path.is_empty() || file.file_name().is_some_and(|f| f == "mod.rs") {
            file.parent().unwrap().to_path_buf()
        } else {
            file.with_extension("")
        };
        let children: Vec<String> = declared_mods(&code)
            .into_iter()
            .filter(|m| !test_mods.contains(m))
            .collect();
        for child in &children {
            let candidates = [
                dir.join(format!("{child}.rs")),
                dir.join(child).join("mod.rs"),
            ];
            let child_file = candidates
                .iter()
                .find(|p| p.is_file())
                .unwrap_or_else(|| panic!("{}: no file for mod {child}", file.display()))
                .clone();
            let mut child_path = path.clone();
            child_path.push(child.clone());
            queue.push((child_path, child_file));
        }
        files.insert(path.clone(), file);
        texts.insert(path, (code, children));
    }
    let mut edges = BTreeMap::new();
    for (at, (code, children)) in &texts {
        let mut to = BTreeSet::new();
        let paths = use_paths(code)
            .into_iter()
            .chain(inline_paths(code, children));
        for path in paths {
            if let Some(target) = resolve(at, &path, children, &files)
                && &target != at
            {
                to.insert(target);
            }
        }
        edges.insert(at.clone(), to);
    }
    Crate {
        name: name.to_string(),
        files,
        edges,
    }
}

/// The strongly connected components with more than one module (Tarjan).
fn cycles(c: &Crate) -> Vec<Vec<ModPath>> {
    struct State<'a> {
        edges: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<ModPath, usize>,
        low: BTreeMap<ModPath, usize>,
        stack: Vec<ModPath>,
        on_stack: BTreeSet<ModPath>,
        next: usize,
        out: Vec<Vec<ModPath>>,
    }
    fn visit(s: &mut State, v: &ModPath) {
        s.index.insert(v.clone(), s.next);
        s.low.insert(v.clone(), s.next);
        s.next += 1;
        s.stack.push(v.clone());
        s.on_stack.insert(v.clone());
        for w in s.edges.get(v).cloned().unwrap_or_default() {
            if !s.index.contains_key(&w) {
                visit(s, &w);
                let low = s.low[v].min(s.low[&w]);
                s.low.insert(v.clone(), low);
            } else if s.on_stack.contains(&w) {
                let low = s.low[v].min(s.index[&w]);
                s.low.insert(v.clone(), low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack.remove(&w);
                let done = &w == v;
                component.push(w);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        edges: &c.edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in c.files.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn show(p: &ModPath) -> String {
    if p.is_empty() {
        "crate".into()
    } else {
        p.join("::")
    }
}

fn crates() -> Vec<Crate> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    [
        ("patchbench (lib)", "src/lib.rs"),
        ("patchbench (bin)", "src/main.rs"),
        ("patchbench-agent (lib)", "workloads/agent/src/lib.rs"),
        ("patchbench-agent (bin)", "workloads/agent/src/main.rs"),
    ]
    .iter()
    .map(|(name, file)| read_crate(name, &root.join(file)))
    .collect()
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let mut found = Vec::new();
    for c in crates() {
        for cycle in cycles(&c) {
            let mut lines = vec![format!(
                "{}: {}",
                c.name,
                cycle.iter().map(show).collect::<Vec<_>>().join(" <-> ")
            )];
            for m in &cycle {
                let into: Vec<String> = c.edges[m]
                    .iter()
                    .filter(|t| cycle.contains(t))
                    .map(show)
                    .collect();
                lines.push(format!("    {} imports {}", show(m), into.join(", ")));
            }
            found.push(lines.join("\n"));
        }
    }
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
}

#[test]
fn the_model_and_the_statistics_sit_at_the_bottom() {
    let lib = crates().remove(0);
    let under = |p: &ModPath, top: &str| p.first().is_some_and(|f| f == top);
    for (module, targets) in &lib.edges {
        if under(module, "model") {
            let outside: Vec<String> = targets
                .iter()
                .filter(|t| !under(t, "model"))
                .map(show)
                .collect();
            assert!(outside.is_empty(), "{} imports {outside:?}", show(module));
        }
        if under(module, "stats") {
            let outside: Vec<String> = targets
                .iter()
                .filter(|t| !under(t, "stats") && !under(t, "model"))
                .map(show)
                .collect();
            assert!(outside.is_empty(), "{} imports {outside:?}", show(module));
        }
    }
}

/// The renderers render the stored judgement and never judge: `report`,
/// `html` and `github` import neither the statistics nor the judge.
#[test]
fn the_renderers_never_judge() {
    let lib = crates().remove(0);
    let under = |p: &ModPath, top: &str| p.first().is_some_and(|f| f == top);
    for (module, targets) in &lib.edges {
        if ["report", "html", "github"]
            .iter()
            .any(|r| under(module, r))
        {
            let judging: Vec<String> = targets
                .iter()
                .filter(|t| under(t, "stats") || under(t, "judge"))
                .map(show)
                .collect();
            assert!(judging.is_empty(), "{} imports {judging:?}", show(module));
        }
    }
}

/// The results document has types of its own, converted at the edge
/// (`campaign::record`): `results` imports nothing of `vm`, `hostnoise`,
/// `build`, `cost` or the agent's crate, and `report` renders the stored
/// lane and profiles without the cost stage.
#[test]
fn the_results_document_and_its_renderers_keep_to_their_own_types() {
    let lib = crates().remove(0);
    let under = |p: &ModPath, top: &str| p.first().is_some_and(|f| f == top);
    let banned = |module: &ModPath| -> &[&str] {
        if under(module, "results") {
            &["vm", "hostnoise", "build", "cost", "campaign"]
        } else if under(module, "report") {
            &["cost", "vm", "hostnoise"]
        } else {
            &[]
        }
    };
    let mut found = Vec::new();
    for (module, targets) in &lib.edges {
        for t in targets {
            if banned(module).iter().any(|b| under(t, b)) {
                found.push(format!("{} imports {}", show(module), show(t)));
            }
        }
        if under(module, "results") {
            let text = std::fs::read_to_string(&lib.files[module]).unwrap();
            let (code, _) = without_tests(&code_only(&text));
            if code.contains("patchbench_agent") {
                found.push(format!("{} names the agent's crate", show(module)));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_checker_sees_groups_children_and_inline_paths() {
    let code = code_only(
        "use crate::{a::{b, c::D}, e};\nmod kid;\nfn f() { kid::go(); super::up(); let s = \"crate::nope::x\"; }\n// crate::comment::x\n",
    );
    let uses = use_paths(&code);
    assert!(
        uses.contains(&vec!["crate".into(), "a".into(), "b".into()]),
        "{uses:?}"
    );
    assert!(uses.contains(&vec!["crate".into(), "a".into(), "c".into(), "D".into()]));
    assert!(uses.contains(&vec!["crate".into(), "e".into()]));
    let inline = inline_paths(&code, &["kid".to_string()]);
    assert!(
        inline.contains(&vec!["kid".to_string(), "go".to_string()]),
        "{inline:?}"
    );
    assert!(inline.contains(&vec!["super".to_string(), "up".to_string()]));
    assert!(
        !inline
            .iter()
            .any(|p| p.contains(&"nope".to_string()) || p.contains(&"comment".to_string()))
    );
    assert_eq!(declared_mods(&code), ["kid"]);
    let (kept, tests) =
        without_tests("a\n#[cfg(test)]\nmod tests;\nb\n#[cfg(test)]\nmod t { fn x() { { } } }\nc");
    assert_eq!(tests, ["tests"]);
    assert!(
        kept.contains('a') && kept.contains('b') && kept.contains('c') && !kept.contains("fn x")
    );
}

/// The same crate seen one level up: every module folded into its
/// top-level module (`vm::args` into `vm`), edges inside one top-level
/// module dropped. `cost::args` importing `vm::args` while `vm` imported
/// `cost` was no cycle between the two files, but `cost` and `vm` still
/// depended on each other; this is the granularity the before-stop hook's
/// import-cycles tool checks.
fn top_level(c: &Crate) -> Crate {
    let top = |p: &ModPath| p.iter().take(1).cloned().collect::<ModPath>();
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for (from, targets) in &c.edges {
        for to in targets {
            if top(from) != top(to) && !top(from).is_empty() && !top(to).is_empty() {
                edges.entry(top(from)).or_default().insert(top(to));
            }
        }
    }
    Crate {
        name: c.name.clone(),
        files: c.files.keys().map(|p| (top(p), PathBuf::new())).collect(),
        edges,
    }
}

#[test]
fn no_top_level_module_depends_on_one_that_depends_on_it() {
    let found: Vec<String> = crates()
        .iter()
        .map(top_level)
        .flat_map(|c| {
            cycles(&c).into_iter().map(move |cycle| {
                format!(
                    "{}: {}",
                    c.name,
                    cycle.iter().map(show).collect::<Vec<_>>().join(" <-> ")
                )
            })
        })
        .collect();
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
}
