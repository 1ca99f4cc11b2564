//! The documentation checks: every relative link in the Markdown resolves,
//! every `results/` path a doc names exists, no doc names a path on one
//! machine, every `patchbench` command in README.md's code blocks parses
//! with the real CLI, the front doors keep their size, and every figure
//! docs/seeds.md quotes is what the committed results file it links to
//! gives when compared again (`report::rows`, the code `patchbench compare`
//! runs). No QEMU, no kernel.

use std::path::{Path, PathBuf};

use clap::Parser;
use patchbench::cli::Cli;
use patchbench::results::Results;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every Markdown file of the repository, `target/`, `.git/` and the
/// runs' own reports under `results/` aside.
fn markdown_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(root())
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            // results/ holds runs' own reports: data, not docs.
            !(e.depth() == 1 && (name == "target" || name == "results" || name.starts_with('.')))
        })
        .flatten()
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "{files:?}");
    files
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The targets of `[text](target)` links.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            out.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_and_results_path_resolves() {
    for file in markdown_files() {
        let text = read(&file);
        let dir = file.parent().unwrap();
        for link in links(&text) {
            if link.contains("://") || link.starts_with('#') || link.starts_with("mailto:") {
                continue;
            }
            let path = link.split('#').next().unwrap();
            assert!(
                dir.join(path).exists(),
                "{}: the link {link} does not resolve",
                file.display()
            );
        }
        // A results/ path named in running text, a link or code.
        for word in text.split(|c: char| c.is_whitespace() || "`()[]<>,;\"'".contains(c)) {
            let Some(at) = ["results/seeds/", "results/outside/"]
                .iter()
                .find_map(|prefix| word.find(prefix))
            else {
                continue;
            };
            let path = word[at..].trim_end_matches(['.', ':']);
            let from_root = root().join(path);
            let from_dir = dir.join(&word[..at]).join(path);
            assert!(
                from_root.exists() || from_dir.exists(),
                "{}: {path} does not exist",
                file.display()
            );
        }
    }
}

#[test]
fn no_doc_names_a_path_on_one_machine() {
    for file in markdown_files() {
        let text = read(&file);
        for machine in ["/work/", "/root/", "/home/"] {
            assert!(
                !text.contains(machine),
                "{}: names a path on one machine ({machine}...)",
                file.display()
            );
        }
    }
}

/// A shell line's words, quotes removed, a trailing `# comment` dropped.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in line.chars() {
        match (quote, c) {
            (None, '#') if word.is_empty() => break,
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any || !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                any = false;
            }
            (_, c) => word.push(c),
        }
    }
    if any || !word.is_empty() {
        out.push(word);
    }
    out
}

/// Every command in README.md's `sh` code blocks that runs patchbench
/// (`patchbench` or `target/release/patchbench`, after `VAR=value`s), with
/// `\` continuations joined.
fn readme_commands() -> Vec<Vec<String>> {
    let text = read(&root().join("README.md"));
    let mut commands = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_sh = line == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        if let Some(head) = line.trim_end().strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(line);
        let mut argv = words(&std::mem::take(&mut pending));
        while argv
            .first()
            .is_some_and(|w| w.contains('=') && !w.starts_with('-'))
        {
            argv.remove(0);
        }
        if argv
            .first()
            .is_some_and(|p| p == "patchbench" || p.ends_with("/patchbench"))
        {
            commands.push(argv);
        }
    }
    commands
}

#[test]
fn every_patchbench_command_in_the_readme_parses() {
    let commands = readme_commands();
    assert!(commands.len() >= 4, "{commands:?}");
    for argv in commands {
        if let Err(e) = Cli::try_parse_from(&argv) {
            panic!("README.md: `{}` does not parse:\n{e}", argv.join(" "));
        }
    }
}

#[test]
fn the_front_doors_stay_short() {
    let size = |p: &str| std::fs::metadata(root().join(p)).unwrap().len();
    assert!(
        size("README.md") <= 12 * 1024,
        "README.md is {} bytes",
        size("README.md")
    );
    assert!(
        size("docs/cost-model.md") <= 12 * 1024,
        "docs/cost-model.md (the user guide) is {} bytes",
        size("docs/cost-model.md")
    );
    let seeds = read(&root().join("docs/seeds.md"));
    let table = headline_rows(&seeds);
    assert!(
        !table.is_empty() && table.len() <= 12,
        "{} rows",
        table.len()
    );
    for row in &table {
        for cell in row.split('|') {
            assert!(
                cell.chars().count() <= 200,
                "docs/seeds.md: a cell of {} characters: {cell}",
                cell.chars().count()
            );
        }
    }
}

/// The rows of the first Markdown table of `text`, header and rule aside.
fn headline_rows(text: &str) -> Vec<&str> {
    text.lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .collect()
}

/// A figure as docs/seeds.md writes it: `` `metric` `` (or
/// `` `metric` (control NAME) ``) then `±N.NN% [±N.NN%, ±N.NN%], verdict`.
#[derive(Debug)]
struct Figure {
    metric: String,
    condition: Option<String>,
    pct: String,
    lo: String,
    hi: String,
    verdict: String,
}

fn figures(cell: &str) -> Vec<Figure> {
    let mut out = Vec::new();
    let parts: Vec<&str> = cell.split('`').collect();
    // Odd parts are code spans: a metric when a change follows.
    for i in (1..parts.len()).step_by(2) {
        let metric = parts[i].to_string();
        let Some(after) = parts.get(i + 1) else {
            continue;
        };
        let mut after = after.trim_start();
        let mut condition = None;
        if let Some(rest) = after.strip_prefix("(control ") {
            let end = rest.find(')').unwrap();
            condition = Some(rest[..end].to_string());
            after = rest[end + 1..].trim_start();
        }
        let Some((pct, rest)) = after.split_once("% [") else {
            continue;
        };
        let Some((lo, rest)) = rest.split_once("%, ") else {
            continue;
        };
        let Some((hi, rest)) = rest.split_once("%], ") else {
            continue;
        };
        let verdict: String = rest
            .chars()
            .take_while(|c| c.is_alphabetic() || *c == ' ')
            .collect();
        out.push(Figure {
            metric,
            condition,
            pct: pct.trim().to_string(),
            lo: lo.to_string(),
            hi: hi.to_string(),
            verdict: verdict.trim().to_string(),
        });
    }
    out
}

/// `−18.09` as the docs write a signed percentage, from a number.
fn signed(x: f64) -> String {
    let text = format!("{x:+.2}");
    text.replacen('-', "\u{2212}", 1)
}

/// Where `.github/workflows/site.yml` deploys the site built from `results/`.
const SITE: &str = "https://patchbench.github.io/patchbench/";

#[test]
fn every_figure_in_the_seeds_table_is_its_results_file_compared_again() {
    figures_are_their_files("docs/seeds.md", "not re-run", true, 8);
}

#[test]
fn every_figure_in_the_outside_series_table_is_its_results_file_compared_again() {
    figures_are_their_files("docs/outside-series.md", "—", false, 6);
}

/// Each figure in the first table of `doc` is its row's results file
/// compared again (change, interval, verdict); a row without one says why
/// with `no_figure`; with `pages`, a row links the site's page of its file.
fn figures_are_their_files(doc: &str, no_figure: &str, pages: bool, at_least: usize) {
    let path = root().join(doc);
    let text = read(&path);
    let mut checked = 0;
    for row in headline_rows(&text) {
        let files: Vec<String> = links(row)
            .into_iter()
            .filter(|l| l.ends_with("results.json"))
            .collect();
        let found = figures(row);
        if found.is_empty() {
            assert!(
                row.contains(no_figure) && files.is_empty(),
                "{doc}: a row with no figure says why ({no_figure:?}) and links no file: {row}"
            );
            continue;
        }
        assert_eq!(
            files.len(),
            1,
            "{doc}: a row with figures links one results file: {row}"
        );
        let file = path.parent().unwrap().join(&files[0]);
        let results = Results::load(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        if pages {
            // Its page is the one the site renders from that very file.
            let slug = format!(
                "{}-{}",
                results.started_at.strftime("%Y%m%dT%H%M%SZ"),
                patchbench::html::view::slugify(&results.campaign)
            );
            let pages: Vec<String> = links(row)
                .into_iter()
                .filter(|l| l.starts_with(SITE))
                .collect();
            assert_eq!(
                pages,
                [format!("{SITE}runs/{slug}/")],
                "{doc}: a row links the page of its results file: {row}"
            );
        }
        // The figure as stored: the judgement the file holds is what its
        // report and page show.
        let rows = patchbench::report::rows(&results);
        for f in found {
            let r = rows
                .iter()
                .find(|r| r.metric == f.metric && r.condition == f.condition)
                .unwrap_or_else(|| panic!("{}: no {f:?}", file.display()));
            let change = r.mean_change.as_ref().expect("a change");
            let ci = change.ci.expect("an interval");
            let got = (
                signed(change.pct),
                signed(ci.lo),
                signed(ci.hi),
                r.kind().label().to_string(),
            );
            let want = (f.pct.clone(), f.lo.clone(), f.hi.clone(), f.verdict.clone());
            assert_eq!(got, want, "{doc} quotes {f:?} from {}", file.display());
            checked += 1;
        }
    }
    assert!(checked >= at_least, "{doc}: only {checked} figures checked");
}
