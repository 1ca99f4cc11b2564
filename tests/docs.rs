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

/// The patchbench commands of one shell line: split at `&&`, `||`, `;`
/// and `|`, redirections (`> file`) dropped, leading `VAR=value`s dropped;
/// each kept when it runs `patchbench` or `target/release/patchbench`.
fn commands_of(line: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut argv: Vec<String> = Vec::new();
    let mut words = words(line).into_iter();
    let mut end = |argv: &mut Vec<String>| {
        let mut cmd = std::mem::take(argv);
        while cmd
            .first()
            .is_some_and(|w| w.contains('=') && !w.starts_with('-'))
        {
            cmd.remove(0);
        }
        if cmd
            .first()
            .is_some_and(|p| p == "patchbench" || p.ends_with("/patchbench"))
        {
            out.push(cmd);
        }
    };
    while let Some(w) = words.next() {
        match w.as_str() {
            "&&" | "||" | ";" | "|" => end(&mut argv),
            ">" | ">>" | "2>" | "<" => {
                words.next();
            }
            _ => argv.push(w),
        }
    }
    end(&mut argv);
    out
}

/// Every command in a Markdown file's `sh` code blocks that runs
/// patchbench, with `\` continuations joined.
fn markdown_commands(path: &Path) -> Vec<Vec<String>> {
    let text = read(path);
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
        commands.extend(commands_of(&std::mem::take(&mut pending)));
    }
    commands
}

fn readme_commands() -> Vec<Vec<String>> {
    markdown_commands(&root().join("README.md"))
}

/// The examples of every `--help`: the lines of each command's after-help
/// that run patchbench.
fn help_commands() -> Vec<(String, Vec<String>)> {
    use clap::CommandFactory;
    let cli = Cli::command();
    let mut out = Vec::new();
    for cmd in std::iter::once(&cli).chain(cli.get_subcommands()) {
        let Some(help) = cmd.get_after_help() else {
            continue;
        };
        let mut pending = String::new();
        for line in help.to_string().lines() {
            if let Some(head) = line.trim_end().strip_suffix('\\') {
                pending.push_str(head);
                pending.push(' ');
                continue;
            }
            pending.push_str(line);
            for argv in commands_of(&std::mem::take(&mut pending)) {
                out.push((format!("`patchbench {} --help`", cmd.get_name()), argv));
            }
        }
    }
    out
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

/// What the documents' placeholder words stand for, made real: a series
/// (the shipped zswap-counter patches, as a directory and as one file), a
/// git repository of a kernel-like tree, a kernel image file, and a run's
/// results (the committed smoke run).
struct Stand {
    _dir: tempfile::TempDir,
    series_dir: String,
    patch_file: String,
    repo: String,
    kernel: String,
    /// A kernel build directory of the cache (`reach build --objects`).
    build_dir: String,
    results_dir: String,
    results_file: String,
}

impl Stand {
    fn new() -> Stand {
        let dir = tempfile::tempdir().unwrap();
        let series = dir.path().join("my-series");
        std::fs::create_dir(&series).unwrap();
        let mut first = None;
        for e in std::fs::read_dir(root().join("patches/zswap-counter")).unwrap() {
            let e = e.unwrap();
            if !e.path().is_file() {
                continue;
            }
            std::fs::copy(e.path(), series.join(e.file_name())).unwrap();
            if e.file_name().to_string_lossy().ends_with(".patch") {
                first.get_or_insert(e.path());
            }
        }
        let repo = dir.path().join("linux");
        let git = git2::Repository::init(&repo).unwrap();
        std::fs::create_dir_all(repo.join("mm")).unwrap();
        std::fs::write(repo.join("mm/vmscan.c"), "/* vmscan */\n").unwrap();
        let mut index = git.index().unwrap();
        index.add_path(Path::new("mm/vmscan.c")).unwrap();
        let tree = git.find_tree(index.write_tree().unwrap()).unwrap();
        let who = git2::Signature::now("T", "t@example.org").unwrap();
        git.commit(Some("HEAD"), &who, &who, "base", &tree, &[])
            .unwrap();
        let kernel = dir.path().join("bzImage");
        std::fs::write(&kernel, b"not booted: `check` only looks that it is there").unwrap();
        let build_dir = dir.path().join("builds/linux/key");
        std::fs::create_dir_all(&build_dir).unwrap();
        std::fs::write(build_dir.join(".config"), b"CONFIG_KSM=y\n").unwrap();
        let s = |p: &Path| p.to_string_lossy().into_owned();
        Stand {
            build_dir: s(&build_dir),
            series_dir: s(&series),
            patch_file: s(&first.expect("a .patch in patches/zswap-counter")),
            repo: s(&repo),
            kernel: s(&kernel),
            results_dir: s(&root().join("results/smoke")),
            results_file: s(&root().join("results/smoke/results.json")),
            _dir: dir,
        }
    }

    /// `word` with a placeholder replaced by what it stands for; a path
    /// of the repository made absolute; anything else as written.
    fn real(&self, word: &str) -> String {
        let w = word.trim_end_matches('/');
        let results_placeholder = ["OUT", "out", "s1", "s2", "s3", "s4", "results/*"].contains(&w)
            || w.starts_with("patchbench-out/")
            || w.starts_with("results/seeds/<")
            || w.ends_with("-r2");
        match w {
            "./my-series" | "my-series" => self.series_dir.clone(),
            "0001-fix.patch" => self.patch_file.clone(),
            "~/linux" | "~/src/linux" => self.repo.clone(),
            "KERNEL" | "bzImage" => self.kernel.clone(),
            _ if w.ends_with("/bzImage") => self.kernel.clone(),
            _ if w.starts_with("~/.cache/patchbench/builds/") => self.build_dir.clone(),
            _ if results_placeholder => self.results_dir.clone(),
            _ if w.ends_with("results.json") && !root().join(w).exists() => {
                self.results_file.clone()
            }
            _ if !w.is_empty() && root().join(w).exists() => {
                root().join(w).to_string_lossy().into_owned()
            }
            _ => word.to_string(),
        }
    }
}

/// Every patchbench command that README.md, docs/*.md and each `--help`
/// show goes through the CLI's own checks (`Cli::check`: the campaign and
/// its overrides load, the flags go together, the tree, series, kernel
/// and results it names are there), not only its parser, with the
/// documents' placeholders made real ([`Stand`]). Output paths (`--out`,
/// `--pages`) are not inputs and are left as written.
#[test]
fn every_documented_command_passes_the_clis_checks() {
    let stand = Stand::new();
    let mut commands: Vec<(String, Vec<String>)> = help_commands();
    for file in markdown_files() {
        let shown = file.strip_prefix(root()).unwrap().display().to_string();
        commands.extend(
            markdown_commands(&file)
                .into_iter()
                .map(|c| (shown.clone(), c)),
        );
    }
    assert!(commands.len() >= 30, "{} commands", commands.len());
    let mut failed = Vec::new();
    for (source, argv) in &commands {
        let mut real = vec![argv[0].clone()];
        let mut output = false;
        for w in &argv[1..] {
            real.push(if output { w.clone() } else { stand.real(w) });
            output = matches!(w.as_str(), "--out" | "--pages" | "--cache-dir");
        }
        let outcome = Cli::try_parse_from(&real)
            .map_err(|e| e.to_string())
            .and_then(|cli| cli.check().map_err(|e| format!("{e:#}")));
        if let Err(e) = outcome {
            failed.push(format!("{source}: `{}`\n    {}", argv.join(" "), e.trim()));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} documented commands fail the CLI's checks:\n{}",
        failed.len(),
        commands.len(),
        failed.join("\n")
    );
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
    // A row per seed experiment and lane: five seeds, each in the lanes
    // that measure it.
    assert!(
        !table.is_empty() && table.len() <= 14,
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

/// docs/statistics.md's table "Which way is better": each unit's word
/// (`ns`) and the `better:` words it allows (`lower`, `none`).
fn direction_rule() -> Vec<(String, Vec<String>)> {
    let text = read(&root().join("docs/statistics.md"));
    let ticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    let rows: Vec<(String, Vec<String>)> = text
        .lines()
        .skip_while(|l| !l.starts_with("| unit | what it is | `better:` allowed |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split(" | ").collect();
            assert_eq!(cells.len(), 3, "a row of the rule table: {l}");
            let unit = ticked(cells[0]);
            assert_eq!(unit.len(), 1, "one unit a row: {l}");
            (unit[0].clone(), ticked(cells[2]))
        })
        .collect();
    assert!(rows.len() >= 7, "the rule table: {rows:?}");
    rows
}

/// Every metric of every spec under `workloads/` has a direction its
/// unit allows by docs/statistics.md's table, and the judge's rule
/// (`Unit::directions`) is that table: the docs, the specs and the code
/// state one rule.
#[test]
fn every_specs_directions_follow_the_unit_rule_in_the_statistics_doc() {
    use patchbench::workload::{Unit, WorkloadSpec};
    let rule = direction_rule();
    let allowed = |unit: Unit| -> &Vec<String> {
        &rule
            .iter()
            .find(|(u, _)| u == unit.key())
            .unwrap_or_else(|| {
                panic!(
                    "docs/statistics.md's rule table has no unit `{}`",
                    unit.key()
                )
            })
            .1
    };
    for unit in Unit::ALL {
        let code: Vec<&str> = unit.directions().iter().map(|d| d.key()).collect();
        assert_eq!(
            code,
            *allowed(unit),
            "unit `{}`: model::Unit::directions against docs/statistics.md's table",
            unit.key()
        );
    }
    let mut specs = 0;
    let mut metrics = 0;
    for entry in std::fs::read_dir(root().join("workloads")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let spec: WorkloadSpec = yaml_serde::from_str(&read(&path))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        specs += 1;
        for m in &spec.metrics {
            metrics += 1;
            assert!(
                allowed(m.unit).iter().any(|d| d == m.better.key()),
                "{}: {} has unit `{}` and `better: {}`; docs/statistics.md allows {:?}",
                path.display(),
                m.name,
                m.unit.key(),
                m.better.key(),
                allowed(m.unit)
            );
        }
    }
    assert!(
        specs >= 4 && metrics > 100,
        "{specs} specs, {metrics} metrics"
    );
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
    let checked = rows_are_their_files(doc, &headline_rows(&text), no_figure, pages);
    assert!(checked >= at_least, "{doc}: only {checked} figures checked");
}

/// [`figures_are_their_files`] over some rows of `doc`: how many figures
/// it checked.
fn rows_are_their_files(doc: &str, rows: &[&str], no_figure: &str, pages: bool) -> usize {
    let path = root().join(doc);
    let mut checked = 0;
    for row in rows {
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
    checked
}

/// The rows of the table under the heading `heading` of `text`.
fn table_under<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    let start = text
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no heading {heading:?}"));
    headline_rows(&text[start..])
}

/// The first percentage of `cell` as a number: `−44.69%` → −44.69.
fn first_pct(cell: &str) -> Option<f64> {
    let end = cell.find('%')?;
    let start = cell[..end]
        .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or(0, |i| i + cell[i..].chars().next().unwrap().len_utf8());
    let number: f64 = cell[start..end].parse().ok()?;
    let sign = cell[..start].chars().next_back();
    Some(if sign == Some('\u{2212}') || sign == Some('-') {
        -number
    } else {
        number
    })
}

/// Each row's `share` cell is its first figure's change over the first
/// percentage of its hardware cell, rounded to a whole percent: `40%`.
/// Rows without a figure say `—`. Returns how many shares it checked.
fn shares_are_their_figures(
    doc: &str,
    rows: &[&str],
    hardware: usize,
    figure: usize,
    share: usize,
) -> usize {
    let mut checked = 0;
    for row in rows {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let found = figures(cells[figure]);
        let Some(f) = found.first() else {
            assert_eq!(
                cells[share], "\u{2014}",
                "{doc}: a row without a figure has no share: {row}"
            );
            continue;
        };
        let hw = first_pct(cells[hardware])
            .unwrap_or_else(|| panic!("{doc}: no hardware figure: {row}"));
        let pct: f64 = f.pct.replace('\u{2212}', "-").parse().unwrap();
        assert_eq!(
            cells[share],
            format!("{:.0}%", 100.0 * pct / hw).replacen('-', "\u{2212}", 1),
            "{doc}: the share of {} against {hw}%: {row}",
            f.pct
        );
        checked += 1;
    }
    checked
}

#[test]
fn every_lane_against_hardware_is_its_file_and_its_share() {
    let doc = "docs/cost-model.md";
    let text = read(&root().join(doc));
    let rows = table_under(&text, "## Against hardware");
    assert!(rows_are_their_files(doc, &rows, "\u{2014}", false) >= 6);
    // | seed | the seed's figure | lane | patchbench | share | run |
    assert!(shares_are_their_figures(doc, &rows, 2, 4, 5) >= 6);
    let seeds = read(&root().join("docs/seeds.md"));
    // | seed | experiment | the seed's figure | patchbench | share | lane | run |
    assert!(shares_are_their_figures("docs/seeds.md", &headline_rows(&seeds), 3, 4, 5) >= 8);
}

#[test]
fn a_hardware_percentage_reads_with_its_sign() {
    assert_eq!(
        first_pct("PAGEOUT CPU \u{2212}44.69%, whole-program \u{2212}21.78%"),
        Some(-44.69)
    );
    assert_eq!(first_pct("sys \u{2212}14 to \u{2212}15%"), Some(-15.0));
    assert_eq!(first_pct("zswpout +6.8%"), Some(6.8));
    assert_eq!(first_pct("no figure"), None);
}

/// The error-rate tables docs/statistics.md quotes, each under a link to
/// the file its example wrote (`results/error-rates/*.md`): every line of
/// the table is a line of that file, so a figure can only change with the
/// file, and the file only by running the example again.
#[test]
fn every_error_rate_table_in_the_statistics_doc_is_its_examples_file() {
    let doc = read(&root().join("docs/statistics.md"));
    let lines: Vec<&str> = doc.lines().collect();
    let marker = "](../results/error-rates/";
    let mut checked = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(at) = line.find(marker) else {
            continue;
        };
        let rest = &line[at + marker.len()..];
        let name = &rest[..rest.find(')').expect("a closed link")];
        let file = root().join("results/error-rates").join(name);
        let kept = read(&file);
        let kept: std::collections::HashSet<&str> = kept.lines().map(str::trim_end).collect();
        // The table that follows the link, after its paragraph.
        let table: Vec<&str> = lines[i + 1..]
            .iter()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .copied()
            .collect();
        assert!(
            table.len() >= 3,
            "docs/statistics.md: no table follows the link to {name} (line {})",
            i + 1
        );
        for row in &table {
            assert!(
                kept.contains(row.trim_end()),
                "docs/statistics.md quotes a row that {} does not hold (run its example again, then copy its table):\n{row}",
                file.display()
            );
        }
        checked.push((name.to_string(), table.len() - 2));
    }
    let files: std::collections::BTreeSet<&str> = checked.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        ["sequential.md", "changepoint.md", "kvm.md"]
            .iter()
            .all(|f| files.contains(f)),
        "docs/statistics.md quotes no table of one of {:?}: {checked:?}",
        ["sequential.md", "changepoint.md", "kvm.md"]
    );
    assert!(checked.len() >= 5, "only {checked:?}");
}

/// docs/reach.md's coverage table is `patchbench reach --markdown` of the
/// committed map, as it stands between its markers.
#[test]
fn the_reach_coverage_table_is_the_committed_maps() {
    let doc = read(&root().join("docs/reach.md"));
    let (start, end) = ("<!-- patchbench reach --markdown -->\n", "<!-- end -->");
    let at = doc.find(start).expect("docs/reach.md: no table marker") + start.len();
    let table = &doc[at..at + doc[at..].find(end).expect("docs/reach.md: no end marker")];
    let map = patchbench::reach::map::ReachMap::load(
        &root().join("results/reach/linux-6.12-mm-all.json"),
    )
    .unwrap();
    assert_eq!(
        table,
        patchbench::reach::coverage::markdown(&map),
        "docs/reach.md: the table is not the committed map's; paste `patchbench reach --markdown` again"
    );
}

/// docs/robot.md's figures are its kept run compared again, and the
/// ratios it quotes beside the robot's are that run's means.
#[test]
fn the_robot_finding_is_its_kept_run() {
    let doc = "docs/robot.md";
    let text = read(&root().join(doc));
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with('|') && l.contains("results.json"))
        .collect();
    assert_eq!(rows_are_their_files(doc, &rows, "\u{2014}", false), 2);
    let results =
        Results::load(&root().join("results/robot/malloc1-d4148aeab412/results.json")).unwrap();
    let row = |metric: &str| {
        patchbench::report::rows(&results)
            .iter()
            .find(|r| r.metric == metric)
            .unwrap_or_else(|| panic!("no {metric}"))
    };
    let insns = row("ops_kernel_insns_per_op");
    let (a, b) = (insns.a.mean, insns.b.mean);
    let ops = row("ops_per_s");
    let quoted = format!(
        "kernel instructions per op {} k \u{2192} {:.1} k: \u{d7}1/{:.1}; icount ops/s {:.1} \u{2192} {}: \u{d7}{:.1}",
        thousands(b / 1e3),
        a / 1e3,
        b / a,
        ops.b.mean,
        thousands(ops.a.mean),
        ops.a.mean / ops.b.mean
    );
    assert!(text.contains(&quoted), "{doc} lacks {quoted:?}");
}

/// `23178.3` as `23,178`.
fn thousands(v: f64) -> String {
    let whole = format!("{:.0}", v);
    let mut out = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Every file under 30% in docs/reach.md's coverage table is named in the
/// table of reasons under it ("Files under 30%"), once.
#[test]
fn every_file_under_30_percent_is_accounted_for() {
    let text = read(&root().join("docs/reach.md"));
    let (start, end) = ("<!-- patchbench reach --markdown -->\n", "<!-- end -->");
    let coverage = &text[text.find(start).unwrap() + start.len()..text.find(end).unwrap()];
    let under: Vec<&str> = headline_rows(coverage)
        .into_iter()
        .filter_map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let file = cells[1].strip_prefix('`')?.strip_suffix('`')?;
            let pct: f64 = cells[4].strip_suffix('%')?.parse().ok()?;
            (pct < 30.0).then_some(file)
        })
        .collect();
    // The table parsed: some files stand under 30% (7 with kernel-boot).
    assert!(under.len() >= 5, "{under:?}");
    let reasons = table_under(&text, "### Files under 30%");
    let named: Vec<&str> = reasons
        .iter()
        .flat_map(|row| row.split('|').nth(1).unwrap().split('`').skip(1).step_by(2))
        .collect();
    for file in &under {
        assert_eq!(
            named.iter().filter(|n| *n == file).count(),
            1,
            "docs/reach.md: {file} is under 30% and must be in one row of \"Files under 30%\""
        );
    }
    for file in &named {
        assert!(
            under.contains(file),
            "docs/reach.md: {file} is named under \"Files under 30%\" but is not under 30%"
        );
    }
}
