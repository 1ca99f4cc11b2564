//! Kconfig fragments: parse, merge with `merge_config.sh` semantics, and
//! verify that every option a fragment asked for survived `olddefconfig`.
//!
//! Fragments are shared by trees of several kernel versions. An option
//! that only some versions define carries a marker comment, which applies
//! to the next option line of its fragment:
//!
//! ```text
//! # patchbench: since 6.12
//! CONFIG_ZRAM_BACKEND_LZO=y
//! ```
//!
//! (`before X.Y` for an option a later version removed; both may stand
//! above one option.) On a tree outside the range the line is neither
//! merged nor verified, as if the fragment did not have it. Without a
//! marker, an option the tree does not define fails the verification, as
//! any dropped option does: a fragment never loses an option silently.
//!
//! Pure functions only; the build module runs `make`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

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

/// A kernel version as far as Kconfig goes: major and minor (`6.12`);
/// options do not come and go in stable point releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
}

impl FromStr for Version {
    type Err = ();

    /// `6.12`; nothing else (no point release, no `-rc`).
    fn from_str(s: &str) -> Result<Self, ()> {
        let (major, minor) = s.split_once('.').ok_or(())?;
        let number = |n: &str| match n.bytes().all(|b| b.is_ascii_digit()) {
            true => n.parse::<u32>().map_err(|_| ()),
            false => Err(()),
        };
        Ok(Version {
            major: number(major)?,
            minor: number(minor)?,
        })
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// A tree's version, from its top Makefile's `VERSION =` and
/// `PATCHLEVEL =` lines.
pub fn tree_version(makefile: &str) -> Option<Version> {
    let field = |name: &str| {
        makefile.lines().find_map(|l| {
            let (key, value) = l.split_once('=')?;
            (key.trim() == name).then(|| value.trim().to_string())
        })
    };
    format!("{}.{}", field("VERSION")?, field("PATCHLEVEL")?)
        .parse()
        .ok()
}

/// The tree versions a fragment line applies to, from its markers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Versions {
    /// `# patchbench: since X.Y`: this version and later ones.
    pub since: Option<Version>,
    /// `# patchbench: before X.Y`: versions older than this one.
    pub before: Option<Version>,
}

impl Versions {
    pub fn contains(&self, tree: Version) -> bool {
        self.since.is_none_or(|v| tree >= v) && self.before.is_none_or(|v| tree < v)
    }
}

impl fmt::Display for Versions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.since, self.before) {
            (Some(s), Some(b)) => write!(f, "since {s}, before {b}"),
            (Some(s), None) => write!(f, "since {s}"),
            (None, Some(b)) => write!(f, "before {b}"),
            (None, None) => write!(f, "every version"),
        }
    }
}

/// The marker comments' prefix. Other `# patchbench:` lines (each
/// fragment's title) are plain comments.
const MARKER: &str = "# patchbench: ";

/// One option a fragment asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub option: String,
    pub value: String,
    pub fragment: PathBuf,
    /// The tree versions its line applies to.
    pub versions: Versions,
}

/// What the fragments ask of one tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requests {
    /// What to merge and then verify, one request per option.
    pub wanted: Vec<Request>,
    /// Lines whose markers leave this tree out, for options no line asks
    /// of it: neither merged nor verified.
    pub skipped: Vec<Request>,
}

/// A fragment whose version markers cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FragmentError {
    #[error(
        "{}:{line}: unknown marker `{text}`\n  write `# patchbench: since X.Y` or `# patchbench: before X.Y`",
        path.display()
    )]
    Marker {
        path: PathBuf,
        line: usize,
        text: String,
    },
    #[error(
        "{}:{line}: `{text}` marks no option\n  put it right above the option it is for",
        path.display()
    )]
    Dangling {
        path: PathBuf,
        line: usize,
        text: String,
    },
}

/// A marker line's meaning: `Some(Ok(..))` for `since X.Y` or
/// `before X.Y`, `Some(Err(()))` for a line that looks like a marker and is
/// not one (`sicne 6.12`, `since 6.12.3`), `None` for any other line, such
/// as a fragment's `# patchbench: mm.config` title.
fn marker(line: &str) -> Option<Result<Versions, ()>> {
    let (word, version) = line.trim().strip_prefix(MARKER)?.trim().split_once(' ')?;
    let version = version.trim();
    let looks_like_one =
        ["since", "before"].contains(&word) || version.starts_with(|c: char| c.is_ascii_digit());
    if !looks_like_one {
        return None;
    }
    let Ok(version) = version.parse::<Version>() else {
        return Some(Err(()));
    };
    Some(match word {
        "since" => Ok(Versions {
            since: Some(version),
            before: None,
        }),
        "before" => Ok(Versions {
            since: None,
            before: Some(version),
        }),
        _ => Err(()),
    })
}

/// The options the fragments ask of a tree of version `tree`, in order; a
/// later fragment overrides an earlier one for the same option, as in
/// `merge_config.sh`. A line whose markers leave the tree out overrides
/// nothing.
pub fn requests(fragments: &[(PathBuf, String)], tree: Version) -> Result<Requests, FragmentError> {
    let mut wanted: BTreeMap<String, Request> = BTreeMap::new();
    let mut skipped: BTreeMap<String, Request> = BTreeMap::new();
    for (path, text) in fragments {
        let mut pending: Option<(usize, String, Versions)> = None;
        for (n, line) in text.lines().enumerate() {
            if let Some(found) = marker(line) {
                let found = found.map_err(|()| FragmentError::Marker {
                    path: path.clone(),
                    line: n + 1,
                    text: line.trim().to_string(),
                })?;
                let mut versions = pending.take().map_or_else(Versions::default, |p| p.2);
                versions.since = found.since.or(versions.since);
                versions.before = found.before.or(versions.before);
                pending = Some((n + 1, line.trim().to_string(), versions));
                continue;
            }
            let Some((option, value)) = parse(line).pop_first() else {
                continue;
            };
            let versions = pending.take().map_or_else(Versions::default, |p| p.2);
            let request = Request {
                option: option.clone(),
                value,
                fragment: path.clone(),
                versions,
            };
            if versions.contains(tree) {
                skipped.remove(&option);
                wanted.insert(option, request);
            } else if !wanted.contains_key(&option) {
                skipped.insert(option, request);
            }
        }
        if let Some((line, text, _)) = pending {
            return Err(FragmentError::Dangling {
                path: path.clone(),
                line,
                text,
            });
        }
    }
    Ok(Requests {
        wanted: wanted.into_values().collect(),
        skipped: skipped.into_values().collect(),
    })
}

/// One line per skipped request, saying why the tree does not get it.
pub fn left_out(skipped: &[Request], tree: Version) -> String {
    skipped
        .iter()
        .map(|r| {
            format!(
                "patchbench: CONFIG_{} of {} left out: it is marked `{}` and the tree is {tree}\n",
                r.option,
                r.fragment.display(),
                r.versions,
            )
        })
        .collect()
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
    pub defined: Defined,
}

/// What the tree's Kconfig files say of a mismatched option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Defined {
    /// Not looked up yet.
    Unsearched,
    /// No Kconfig file of the tree defines it: the option is newer or
    /// older than the tree, or misspelt.
    Nowhere,
    /// Its definition.
    In(Definition),
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
            Defined::In(d) if !d.depends.is_empty() => write!(
                f,
                " ({} in {}; enable those in a fragment too)",
                d.depends.join(", "),
                d.file.display()
            ),
            Defined::In(d) => write!(f, " (defined in {})", d.file.display()),
            Defined::Nowhere => write!(
                f,
                " (no Kconfig file of this tree defines it; if the option is newer or older than \
                 the tree, mark it `# patchbench: since X.Y` or `before X.Y`)"
            ),
            Defined::Unsearched => Ok(()),
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
                defined: Defined::Unsearched,
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
        let reqs = requests(&frags, V6_12).unwrap().wanted;
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
        let reqs = requests(
            &[(
                PathBuf::from("kconfigs/mm.config"),
                "CONFIG_SWAP=y\n".into(),
            )],
            V6_12,
        )
        .unwrap()
        .wanted;
        let final_config = parse("# CONFIG_BLOCK is not set\n");
        let bad = verify(&final_config, &reqs);
        assert_eq!(bad.len(), 1);
        assert_eq!(
            bad[0].to_string(),
            "CONFIG_SWAP: kconfigs/mm.config asked for y, the final .config has n"
        );
        assert!(verify(&parse("CONFIG_SWAP=y\n"), &reqs).is_empty());
    }

    const V6_1: Version = Version { major: 6, minor: 1 };
    const V6_12: Version = Version {
        major: 6,
        minor: 12,
    };

    #[test]
    fn versions_read_from_markers_and_makefiles() {
        assert_eq!("6.12".parse(), Ok(V6_12));
        assert!(V6_1 < V6_12, "6.12 is newer than 6.1, not a decimal");
        for bad in ["6", "6.12.3", "6.x", "v6.1", "6.1-rc1", ".1", "6."] {
            assert_eq!(bad.parse::<Version>(), Err(()), "{bad}");
        }
        let makefile = "# SPDX-License-Identifier: GPL-2.0\nVERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 192\nEXTRAVERSION =\nNAME = Curry Ramen\n";
        assert_eq!(tree_version(makefile), Some(V6_1));
        assert_eq!(tree_version("VERSION = 6\n"), None);
        let range = Versions {
            since: Some(V6_1),
            before: Some(V6_12),
        };
        assert!(range.contains(V6_1) && !range.contains(V6_12));
        assert!(range.contains(Version { major: 6, minor: 4 }));
        assert_eq!(range.to_string(), "since 6.1, before 6.12");
        assert!(Versions::default().contains(V6_1));
    }

    /// mm.config's zram backend (6.12) on a 6.1 tree, and a 6.1-only
    /// option on 6.12: each line counts only where its markers say.
    #[test]
    fn a_marked_option_is_neither_merged_nor_verified_outside_its_versions() {
        let mm = "# patchbench: mm.config\n\n# zram's lzo backend.\n# patchbench: since 6.12\nCONFIG_ZRAM_BACKEND_LZO=y\n\n# zram.\nCONFIG_ZRAM=y\n";
        let old = "# SLOB, gone in 6.4.\n# patchbench: before 6.4\n# CONFIG_SLOB is not set\n# patchbench: since 6.1\n# patchbench: before 6.4\nCONFIG_SLUB=y\n";
        let frags = [
            (PathBuf::from("mm.config"), mm.to_string()),
            (PathBuf::from("old.config"), old.to_string()),
        ];
        let options = |rs: &[Request]| rs.iter().map(|r| r.option.clone()).collect::<Vec<_>>();
        let on_6_1 = requests(&frags, V6_1).unwrap();
        assert_eq!(options(&on_6_1.wanted), ["SLOB", "SLUB", "ZRAM"]);
        assert_eq!(options(&on_6_1.skipped), ["ZRAM_BACKEND_LZO"]);
        assert_eq!(
            left_out(&on_6_1.skipped, V6_1),
            "patchbench: CONFIG_ZRAM_BACKEND_LZO of mm.config left out: it is marked `since 6.12` and the tree is 6.1\n"
        );
        assert!(!merge("", &on_6_1.wanted).contains("ZRAM_BACKEND_LZO"));
        let on_6_12 = requests(&frags, V6_12).unwrap();
        assert_eq!(options(&on_6_12.wanted), ["ZRAM", "ZRAM_BACKEND_LZO"]);
        assert_eq!(options(&on_6_12.skipped), ["SLOB", "SLUB"]);
        let slub = &on_6_12.skipped[1].versions;
        assert_eq!(slub.to_string(), "since 6.1, before 6.4");
        // The title line is a comment; a marker applies to one line only.
        assert_eq!(on_6_12.wanted[0].versions, Versions::default());
    }

    #[test]
    fn a_skipped_line_overrides_nothing_and_an_applicable_one_unskips() {
        let frags = [
            (PathBuf::from("a.config"), "# why\nCONFIG_X=y\n".to_string()),
            (
                PathBuf::from("b.config"),
                "# patchbench: since 6.12\n# CONFIG_X is not set\n# patchbench: before 6.12\nCONFIG_Y=m\n".to_string(),
            ),
            (PathBuf::from("c.config"), "CONFIG_Y=y\n".to_string()),
        ];
        let got = requests(&frags, V6_1).unwrap();
        let x = &got.wanted[0];
        assert_eq!((x.option.as_str(), x.value.as_str()), ("X", "y"));
        assert_eq!(got.wanted[1].value, "y", "c.config comes later");
        assert!(got.skipped.is_empty(), "X is wanted from a.config");
        let got = requests(&frags, V6_12).unwrap();
        assert_eq!(got.wanted[0].value, "n");
        assert_eq!(got.wanted[1].value, "y");
        assert!(
            got.skipped.is_empty(),
            "c.config asks for Y on every version"
        );
    }

    #[test]
    fn a_misspelt_or_dangling_marker_is_an_error() {
        let one = |text: &str| requests(&[(PathBuf::from("f.config"), text.to_string())], V6_12);
        for bad in [
            "# patchbench: sicne 6.12\nCONFIG_X=y\n",
            "# patchbench: since 6.12.3\nCONFIG_X=y\n",
            "# patchbench: since six\nCONFIG_X=y\n",
        ] {
            let err = one(bad).unwrap_err();
            assert!(
                matches!(err, FragmentError::Marker { line: 1, .. }),
                "{bad}: {err}"
            );
        }
        let err = one("CONFIG_X=y\n# patchbench: before 6.4\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "f.config:2: `# patchbench: before 6.4` marks no option\n  put it right above the option it is for"
        );
        // Titles and prose that merely start like a marker are comments.
        for fine in [
            "# patchbench: mm.config\n",
            "# patchbench: the mm options\n",
        ] {
            assert_eq!(one(fine), Ok(Requests::default()), "{fine}");
        }
    }

    #[test]
    fn an_option_no_kconfig_file_defines_says_how_to_mark_it() {
        let request = Request {
            option: "ZRAM_BACKEND_LZO".into(),
            value: "y".into(),
            fragment: "kconfigs/mm.config".into(),
            versions: Versions::default(),
        };
        let mismatch = Mismatch {
            request,
            got: "n".into(),
            defined: Defined::Nowhere,
        };
        assert_eq!(
            mismatch.to_string(),
            "CONFIG_ZRAM_BACKEND_LZO: kconfigs/mm.config asked for y, the final .config has n (no Kconfig file of this tree defines it; if the option is newer or older than the tree, mark it `# patchbench: since X.Y` or `before X.Y`)"
        );
    }

    /// Every shipped fragment's options each sit under a comment saying why
    /// (kconfigs/README.md), its version markers read, and the precise-CPU-time fragment sets exactly
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
            if let Err(e) = requests(&[(path.clone(), text.clone())], V6_12) {
                panic!("{e}");
            }
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
