//! Kconfig fragments: parse, merge with `merge_config.sh` semantics, and
//! verify that every option a fragment asked for survived `olddefconfig`.
//!
//! Pure functions only; the build module runs `make`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// Option name (without `CONFIG_`) → value (`y`, `m`, `n`, a number or a
/// quoted string). `# CONFIG_X is not set` reads as `n`.
pub type Values = BTreeMap<String, String>;

/// Parse `.config` or fragment text. Other comments and blank lines are skipped.
pub fn parse(text: &str) -> Values {
    let mut values = Values::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("# CONFIG_")
            && let Some(name) = rest.strip_suffix(" is not set")
        {
            values.insert(name.to_string(), "n".to_string());
        } else if let Some(rest) = line.strip_prefix("CONFIG_")
            && let Some((name, value)) = rest.split_once('=')
        {
            values.insert(name.to_string(), value.to_string());
        }
    }
    values
}

/// One option a fragment asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub option: String,
    pub value: String,
    pub fragment: PathBuf,
}

/// The options requested by fragments, in order; a later fragment overrides
/// an earlier one for the same option, as in `merge_config.sh`.
pub fn requests(fragments: &[(PathBuf, String)]) -> Vec<Request> {
    let mut by_option: BTreeMap<String, Request> = BTreeMap::new();
    for (path, text) in fragments {
        for (option, value) in parse(text) {
            by_option.insert(
                option.clone(),
                Request {
                    option,
                    value,
                    fragment: path.clone(),
                },
            );
        }
    }
    by_option.into_values().collect()
}

/// The base `.config` with every requested option replaced by its request,
/// ready for `olddefconfig`.
pub fn merge(base: &str, requests: &[Request]) -> String {
    let requested: BTreeMap<&str, &str> = requests
        .iter()
        .map(|r| (r.option.as_str(), r.value.as_str()))
        .collect();
    let mut out = String::new();
    for line in base.lines() {
        let parsed = parse(line);
        if parsed.keys().any(|k| requested.contains_key(k.as_str())) {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    for (option, value) in requested {
        if value == "n" {
            out.push_str(&format!("# CONFIG_{option} is not set\n"));
        } else {
            out.push_str(&format!("CONFIG_{option}={value}\n"));
        }
    }
    out
}

/// An option whose final value differs from what a fragment asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub request: Request,
    /// The value in the final `.config` (`n` when absent).
    pub got: String,
    /// Where the option is defined and what it depends on, read from the
    /// tree's Kconfig files: the usual reason a value does not stick.
    pub defined: Option<Definition>,
}

/// An option's definition in a Kconfig file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    /// The Kconfig file, relative to the tree.
    pub file: PathBuf,
    /// Its `depends on` and `select`-relevant lines, as written.
    pub depends: Vec<String>,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CONFIG_{}: {} asked for {}, the final .config has {}",
            self.request.option,
            self.request.fragment.display(),
            self.request.value,
            self.got
        )?;
        match &self.defined {
            Some(d) if !d.depends.is_empty() => write!(
                f,
                " ({} in {}; enable those in a fragment too)",
                d.depends.join(", "),
                d.file.display()
            ),
            Some(d) => write!(f, " (defined in {})", d.file.display()),
            None => Ok(()),
        }
    }
}

/// The `depends on` lines of `config OPTION` (or `menuconfig OPTION`) in
/// one Kconfig file's text, or `None` if the file does not define it.
pub fn depends_in(kconfig_text: &str, option: &str) -> Option<Vec<String>> {
    let mut lines = kconfig_text.lines().map(str::trim);
    fn header(l: &str) -> Option<&str> {
        l.strip_prefix("config ")
            .or_else(|| l.strip_prefix("menuconfig "))
            .map(str::trim)
    }
    lines.find(|l| header(l) == Some(option))?;
    const ENDS: [&str; 10] = [
        "config ",
        "menuconfig ",
        "menu ",
        "endmenu",
        "choice",
        "endchoice",
        "if ",
        "endif",
        "source ",
        "comment ",
    ];
    let mut depends = Vec::new();
    let mut continuing = false;
    for line in lines {
        if continuing {
            let last: &mut String = depends.last_mut().expect("continuing a line");
            last.push(' ');
            last.push_str(line.trim_end_matches('\\').trim());
            continuing = line.ends_with('\\');
        } else if ENDS.iter().any(|e| line.starts_with(e)) {
            break;
        } else if line.starts_with("depends on") {
            depends.push(line.trim_end_matches('\\').trim().to_string());
            continuing = line.ends_with('\\');
        }
    }
    Some(depends)
}

/// Every request whose value did not survive.
pub fn verify(final_config: &Values, requests: &[Request]) -> Vec<Mismatch> {
    requests
        .iter()
        .filter_map(|r| {
            let got = final_config
                .get(&r.option)
                .cloned()
                .unwrap_or_else(|| "n".to_string());
            (got != r.value).then(|| Mismatch {
                request: r.clone(),
                got,
                defined: None,
            })
        })
        .collect()
}

/// Read fragments from disk, keeping their paths for error messages.
pub fn read_fragments(paths: &[PathBuf]) -> std::io::Result<Vec<(PathBuf, String)>> {
    paths
        .iter()
        .map(|p| Ok((p.clone(), std::fs::read_to_string(p)?)))
        .collect()
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_definition_yields_its_depends_on_lines() {
        let mm = "menu \"Memory\"\n\nconfig SWAP\n\tbool \"Support for paging\"\n\tdepends on MMU && BLOCK && !ARCH_NO_SWAP\n\tdefault y\n\nconfig ZSWAP\n\tdepends on SWAP\n";
        assert_eq!(
            depends_in(mm, "SWAP").unwrap(),
            ["depends on MMU && BLOCK && !ARCH_NO_SWAP"]
        );
        // The block ends at the next `config`: ZSWAP's line is not SWAP's.
        assert_eq!(depends_in(mm, "ZSWAP").unwrap(), ["depends on SWAP"]);
        assert_eq!(depends_in(mm, "SWA"), None);
        let kasan = "menuconfig KASAN\n\tdepends on (A || \\\n\t\t    B) || \\\n\t\t   C\n\tdepends on SYSFS && !SLUB_TINY\n";
        assert_eq!(
            depends_in(kasan, "KASAN").unwrap(),
            ["depends on (A || B) || C", "depends on SYSFS && !SLUB_TINY"]
        );
        assert_eq!(depends_in(mm, "BLOCK"), None);
    }
    use super::*;
    use std::path::Path;

    #[test]
    fn parse_reads_values_and_not_set_lines() {
        let v = parse("CONFIG_SWAP=y\n# CONFIG_BLOCK is not set\n# a comment\nCONFIG_X=\"lzo\"\n");
        assert_eq!(v["SWAP"], "y");
        assert_eq!(v["BLOCK"], "n");
        assert_eq!(v["X"], "\"lzo\"");
        assert_eq!(v.len(), 3);
    }

    #[test]
    fn later_fragments_win_and_merge_replaces_base_lines() {
        let frags = vec![
            (
                PathBuf::from("a.config"),
                "CONFIG_SWAP=y\nCONFIG_ZSWAP=y\n".to_string(),
            ),
            (
                PathBuf::from("b.config"),
                "# CONFIG_ZSWAP is not set\n".to_string(),
            ),
        ];
        let reqs = requests(&frags);
        assert_eq!(reqs.len(), 2);
        let zswap = reqs.iter().find(|r| r.option == "ZSWAP").unwrap();
        assert_eq!(
            (zswap.value.as_str(), zswap.fragment.as_path()),
            ("n", Path::new("b.config"))
        );
        let merged = merge("CONFIG_64BIT=y\n# CONFIG_SWAP is not set\n", &reqs);
        assert_eq!(
            merged,
            "CONFIG_64BIT=y\nCONFIG_SWAP=y\n# CONFIG_ZSWAP is not set\n"
        );
    }

    #[test]
    fn a_dropped_option_is_reported_with_its_fragment() {
        // tinyconfig + SWAP without BLOCK: olddefconfig drops SWAP.
        let reqs = requests(&[(
            PathBuf::from("kconfigs/mm.config"),
            "CONFIG_SWAP=y\n".into(),
        )]);
        let final_config = parse("# CONFIG_BLOCK is not set\n");
        let bad = verify(&final_config, &reqs);
        assert_eq!(bad.len(), 1);
        assert_eq!(
            bad[0].to_string(),
            "CONFIG_SWAP: kconfigs/mm.config asked for y, the final .config has n"
        );
        assert!(verify(&parse("CONFIG_SWAP=y\n"), &reqs).is_empty());
    }

    /// Every shipped fragment's options each sit under a comment saying why
    /// (kconfigs/README.md), and the precise-CPU-time fragment sets exactly
    /// what the guest's check asks of a booted kernel.
    #[test]
    fn shipped_fragments_explain_every_option_and_cputime_sets_what_boots_check() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kconfigs");
        let mut fragments = 0;
        for entry in walkdir::WalkDir::new(&dir) {
            let path = entry.unwrap().into_path();
            if path.extension().is_none_or(|e| e != "config") {
                continue;
            }
            fragments += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            let mut commented = false;
            for line in text.lines() {
                let option = parse(line);
                if !option.is_empty() {
                    assert!(
                        commented,
                        "{}: {line} has no comment above it",
                        path.display()
                    );
                } else {
                    commented = line.starts_with('#');
                }
            }
        }
        assert!(
            fragments >= 9,
            "{fragments} fragments found in {}",
            dir.display()
        );
        let cputime = parse(&std::fs::read_to_string(dir.join("cputime.config")).unwrap());
        for option in patchbench_agent::cputime::PRECISE_OPTIONS {
            let name = option.strip_prefix("CONFIG_").unwrap();
            assert_eq!(cputime.get(name).map(String::as_str), Some("y"), "{option}");
        }
        let base = parse(&std::fs::read_to_string(dir.join("base.config")).unwrap());
        assert_eq!(base.get("IKCONFIG_PROC").map(String::as_str), Some("y"));
    }
}
