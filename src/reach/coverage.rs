//! Coverage read from a reach map: per mm/ file, the functions built and
//! those some workload executes in its window; per function, the workload
//! that executes it most. A function counts as executed when a workload's
//! profile names it; a profile names symbols, not files, so a static
//! function that two files define (a header's, not inlined) is executed in
//! both when either runs: the totals say how many such names there are.
//! Pure: the map in, text out.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::map::{Most, ReachMap};

/// One file's counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileCoverage {
    pub file: String,
    pub built: usize,
    pub executed: usize,
    pub init_exit: usize,
    pub from_headers: usize,
}

impl FileCoverage {
    pub fn percent(&self) -> f64 {
        percent(self.executed, self.built)
    }
}

fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// Every function name some workload executes.
pub fn executed(map: &ReachMap) -> BTreeSet<&str> {
    map.workloads
        .values()
        .flat_map(|w| w.functions.keys().map(String::as_str))
        .collect()
}

/// Per file, in name order, and the sum over them.
pub fn by_file(map: &ReachMap) -> (Vec<FileCoverage>, FileCoverage) {
    let run = executed(map);
    let rows: Vec<FileCoverage> = map
        .files
        .iter()
        .map(|(file, f)| FileCoverage {
            file: file.clone(),
            built: f.functions.len(),
            executed: f
                .functions
                .iter()
                .filter(|n| run.contains(n.as_str()))
                .count(),
            init_exit: f.init_exit.len(),
            from_headers: f.from_headers.len(),
        })
        .collect();
    let total = FileCoverage {
        file: format!("all {} files", rows.len()),
        built: rows.iter().map(|r| r.built).sum(),
        executed: rows.iter().map(|r| r.executed).sum(),
        init_exit: rows.iter().map(|r| r.init_exit).sum(),
        from_headers: rows.iter().map(|r| r.from_headers).sum(),
    };
    (rows, total)
}

/// Names built in more than one file, and how many of those are executed.
pub fn shared_names(map: &ReachMap) -> (usize, usize) {
    let mut files_of: BTreeMap<&str, usize> = BTreeMap::new();
    for f in map.files.values() {
        for n in &f.functions {
            *files_of.entry(n).or_default() += 1;
        }
    }
    let run = executed(map);
    let shared: Vec<&str> = files_of
        .into_iter()
        .filter(|(_, k)| *k > 1)
        .map(|(n, _)| n)
        .collect();
    let executed = shared.iter().filter(|n| run.contains(*n)).count();
    (shared.len(), executed)
}

/// What the map was made from, in one paragraph.
pub fn provenance(map: &ReachMap) -> String {
    format!(
        "tree {} at {}; .config sha256 {}; objects of {}; {} workloads from {} results",
        map.tree.origin,
        short(&map.tree.base_commit),
        short(&map.config_sha256),
        map.objects,
        map.workloads.len(),
        map.sources.len()
    )
}

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

/// The coverage table for a terminal.
pub fn table(map: &ReachMap) -> String {
    let (rows, total) = by_file(map);
    let width = rows
        .iter()
        .map(|r| r.file.len())
        .chain([total.file.len(), 4])
        .max()
        .unwrap_or(4);
    let mut s = String::new();
    let _ = writeln!(s, "{}", provenance(map));
    let _ = writeln!(
        s,
        "{:width$}  {:>5}  {:>8}  {:>6}  {:>9}  {:>7}",
        "file", "built", "executed", "%", "init/exit", "headers"
    );
    for r in rows.iter().chain([&total]) {
        let _ = writeln!(
            s,
            "{:width$}  {:>5}  {:>8}  {:>5.1}%  {:>9}  {:>7}",
            r.file,
            r.built,
            r.executed,
            r.percent(),
            r.init_exit,
            r.from_headers
        );
    }
    s.push_str(&footnote(map));
    s
}

fn footnote(map: &ReachMap) -> String {
    let (shared, shared_run) = shared_names(map);
    format!(
        "built: the file's own functions (defined in its C) in its object, outside .init/.exit sections; executed: named by some workload's base profile in its window; init/exit and headers (a header's static functions, tracepoint code) are not counted. {shared} names are built in more than one file ({shared_run} of them executed): a profile names symbols, not files, so each such file counts them.\n"
    )
}

/// The coverage table in Markdown, for docs/reach.md.
pub fn markdown(map: &ReachMap) -> String {
    let (rows, total) = by_file(map);
    let mut s = String::new();
    let _ = writeln!(s, "| file | built | executed | % | init/exit | headers |");
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|");
    for r in &rows {
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {:.1}% | {} | {} |",
            r.file,
            r.built,
            r.executed,
            r.percent(),
            r.init_exit,
            r.from_headers
        );
    }
    let _ = writeln!(
        s,
        "| **{}** | **{}** | **{}** | **{:.1}%** | **{}** | **{}** |",
        total.file,
        total.built,
        total.executed,
        total.percent(),
        total.init_exit,
        total.from_headers
    );
    s.push('\n');
    s.push_str(&footnote(map));
    s
}

/// One file's functions: those executed, most executed first, each with
/// the workload that executes it most; then those no workload executes;
/// then its init/exit functions. `None` when the map has no such file
/// (`mm/ksm.c` or its object `mm/ksm.o`).
pub fn file(map: &ReachMap, name: &str) -> Option<String> {
    let (file, f) = map
        .files
        .iter()
        .find(|(file, f)| *file == name || f.object == name)?;
    let mut run: Vec<(&str, Most)> = Vec::new();
    let mut not_run: Vec<&str> = Vec::new();
    for function in &f.functions {
        match map.most(function) {
            Some(m) => run.push((function, m)),
            None => not_run.push(function),
        }
    }
    run.sort_by(|a, b| b.1.share.total_cmp(&a.1.share).then(a.0.cmp(b.0)));
    let width = f
        .functions
        .iter()
        .map(String::len)
        .max()
        .unwrap_or(8)
        .max(8);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{file} ({}): {} functions built, {} executed ({:.1}%), {} init/exit",
        f.object,
        f.functions.len(),
        run.len(),
        percent(run.len(), f.functions.len()),
        f.init_exit.len()
    );
    let _ = writeln!(
        s,
        "{:width$}  executed most by (share of its kernel instructions, instructions per unit)",
        "function"
    );
    for (function, m) in &run {
        let _ = writeln!(
            s,
            "{function:width$}  {} ({}, {:.1} insns/{})",
            m.campaign,
            super::map::percent(m.share),
            m.insns,
            m.workload.per
        );
    }
    for function in &not_run {
        let _ = writeln!(s, "{function:width$}  not executed");
    }
    if !f.from_headers.is_empty() {
        let _ = writeln!(
            s,
            "from headers or macros (not counted): {}",
            f.from_headers.len()
        );
    }
    if !f.init_exit.is_empty() {
        let _ = writeln!(
            s,
            "init/exit only (not counted): {}",
            f.init_exit.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    Some(s)
}
