//! A campaign's `reaches:` block: the kernel code its workload executes,
//! as the campaign's author declares it, with the reason for each entry and
//! the committed runs that back it. `patchbench plan --series` and `run
//! --series` without a campaign file choose the campaigns whose block
//! reaches what a series changes (`reach`). Typed and checked here, once,
//! when the campaign is read; what it means is `reach`'s.
//!
//! ```yaml
//! reaches:
//!   kconfig: [MEMCG, ZSWAP]          # options the code below needs built in
//!   functions:
//!     - name: obj_cgroup_may_zswap
//!       file: mm/memcontrol.c
//!       why: every page MADV_PAGEOUT stores goes through zswap_store() ...
//!       # optional: why a profile listed in evidence cannot show it
//!       unprofiled: static inline, no symbol of its own
//!   evidence:
//!     - results: ../../results/seeds/000-counter/results.json
//!       calls: pageout_flushes      # the metric that counts facts.profiled_symbol
//!     - results: ../../results/seeds/003-reclaim-refault-cost/results.json
//! ```
//!
//! A campaign that runs another's workload on the same kernels in another
//! lane shares its block: `reaches: {same_as: 003-reclaim-refault-cost.yaml}`.

use std::path::PathBuf;

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Reaches {
    /// Kconfig options (without `CONFIG_`) the declared code needs; each
    /// must be set `=y` by the campaign's fragments.
    #[serde(default)]
    pub kconfig: Vec<String>,
    /// Another campaign file (relative to this one) whose block this
    /// campaign shares, whole: the same workload on the same kernels in
    /// another lane (checked when the map is read, `reach::candidates`).
    #[serde(default)]
    pub same_as: Option<PathBuf>,
    /// The functions the workload executes.
    #[serde(default)]
    pub functions: Vec<DeclaredFunction>,
    /// Committed runs of this campaign that witness what it executes.
    #[serde(default)]
    pub evidence: Vec<Evidence>,
}

/// One function the campaign's workload executes, and why that is known.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeclaredFunction {
    /// Its name, as the definition in the tree spells it.
    pub name: String,
    /// The file of the tree it is defined in.
    pub file: PathBuf,
    /// The reason: the workload code or seed thread that makes it run.
    pub why: String,
    /// Why a profile in `evidence` cannot witness it (inlined, no symbol),
    /// if one cannot.
    #[serde(default)]
    pub unprofiled: Option<String>,
}

/// A committed results document of this campaign.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// The results.json, relative to the campaign file.
    pub results: PathBuf,
    /// The metric counting calls of its boots' `facts.profiled_symbol`
    /// (the function profiler); absent when it has none. A cost-lane run's
    /// per-symbol profiles are read without being named.
    #[serde(default)]
    pub calls: Option<String>,
}

impl Reaches {
    /// Every value that can be checked without the tree: names are C
    /// identifiers, files relative, reasons given, options bare.
    pub fn check(&self) -> Result<(), String> {
        if let Some(other) = &self.same_as {
            if !self.functions.is_empty() || !self.kconfig.is_empty() || !self.evidence.is_empty() {
                return Err(format!(
                    "reaches.same_as: {} shares that campaign's block whole; declare nothing beside it",
                    other.display()
                ));
            }
            return Ok(());
        }
        if self.functions.is_empty() {
            return Err("reaches.functions is empty: declare what the workload executes, or leave reaches out".into());
        }
        for f in &self.functions {
            let ident = !f.name.is_empty()
                && !f.name.as_bytes()[0].is_ascii_digit()
                && f.name
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'_');
            if !ident {
                return Err(format!(
                    "reaches.functions: {:?} is not a C function name",
                    f.name
                ));
            }
            if f.file.is_absolute() || f.file.as_os_str().is_empty() {
                return Err(format!(
                    "reaches.functions {}: file {:?} must be a path inside the kernel tree, like mm/memcontrol.c",
                    f.name,
                    f.file.display()
                ));
            }
            if f.why.trim().is_empty() {
                return Err(format!(
                    "reaches.functions {}: `why` is empty; say what in the workload runs it",
                    f.name
                ));
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for f in &self.functions {
            if !seen.insert((&f.file, &f.name)) {
                return Err(format!(
                    "reaches.functions: {} in {} is declared twice",
                    f.name,
                    f.file.display()
                ));
            }
        }
        for option in &self.kconfig {
            let bare = !option.is_empty()
                && !option.starts_with("CONFIG_")
                && option
                    .bytes()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_');
            if !bare {
                return Err(format!(
                    "reaches.kconfig: {option:?} is not an option name (write MEMCG, not CONFIG_MEMCG)"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Reaches, String> {
        let r: Reaches = yaml_serde::from_str(text).map_err(|e| e.to_string())?;
        r.check().map(|()| r)
    }

    #[test]
    fn a_block_parses_with_its_evidence() {
        let r = parsed(
            "kconfig: [MEMCG]\nfunctions:\n  - {name: do_flush_stats, file: mm/memcontrol.c, why: the limit check}\nevidence:\n  - {results: r.json, calls: pageout_flushes}\n",
        )
        .unwrap();
        assert_eq!(r.functions[0].name, "do_flush_stats");
        assert_eq!(r.evidence[0].calls.as_deref(), Some("pageout_flushes"));
    }

    #[test]
    fn bad_entries_are_refused_naming_them() {
        for (text, needle) in [
            ("functions: []\n", "is empty"),
            (
                "functions:\n  - {name: foo(), file: mm/x.c, why: y}\n",
                "\"foo()\" is not a C function name",
            ),
            (
                "functions:\n  - {name: foo, file: /mm/x.c, why: y}\n",
                "must be a path inside the kernel tree",
            ),
            (
                "functions:\n  - {name: foo, file: mm/x.c, why: ' '}\n",
                "`why` is empty",
            ),
            (
                "kconfig: [CONFIG_MEMCG]\nfunctions:\n  - {name: foo, file: mm/x.c, why: y}\n",
                "write MEMCG",
            ),
            (
                "functions:\n  - {name: foo, file: mm/x.c, why: y}\n  - {name: foo, file: mm/x.c, why: z}\n",
                "declared twice",
            ),
            (
                "functions:\n  - {name: foo, file: mm/x.c, why: y, because: z}\n",
                "unknown field `because`",
            ),
            (
                "same_as: x.yaml\nfunctions:\n  - {name: foo, file: mm/x.c, why: y}\n",
                "declare nothing beside it",
            ),
        ] {
            let err = parsed(text).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
