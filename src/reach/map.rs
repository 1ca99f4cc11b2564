//! The reach map: for one kernel tree and configuration, what each kept
//! workload's base kernel executes, and what each mm/ object defines.
//!
//! - Per workload (a campaign's kept counting-lane run): the kernel
//!   instructions per operation of each function, the mean over the base
//!   (variant `A`) samples of `profile[phase][symbol] / ops`. GCC's copies
//!   of a function (`foo.isra.0`, `foo.part.0`, `foo.cold`) count as
//!   `foo`; user space (`user`) is left out. A workload with no `ops`
//!   metric (a staged program, one window a run) counts per run.
//! - Per mm/ object of the build directory (`mm/*.o`, `mm/damon/*.o`): the
//!   functions it defines, read from its ELF symbol table, with those only
//!   in `.init.*` or `.exit.*` sections listed apart: they run at boot or
//!   never, so no workload's window can execute them.
//!
//! The map records what it was made from (the tree's origin and base
//! commit, the `.config`'s sha256, each results.json's sha256), so a stale
//! map can be told from its inputs. It is a document of its own, written
//! with sorted maps so that the same inputs give the same bytes.
//!
//! `of_inputs` and `of_object` are pure; `build` reads the files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::evidence::function_of_symbol;
use crate::results::Results;

/// The map's schema; a reader refuses any other.
pub const SCHEMA: u32 = 1;

/// The profile's name for user-space instructions.
const USER: &str = "user";

/// The whole map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReachMap {
    pub schema: u32,
    /// The kernel tree, as the results name it.
    pub tree: MapTree,
    /// The sha256 of the build's `.config`, which every source's base
    /// kernel was built from.
    pub config_sha256: String,
    /// The build directory the objects were read from (below the cache's
    /// `builds/`, so no machine's path is recorded).
    pub objects: String,
    /// The results each workload comes from, with their sha256.
    pub sources: Vec<SourceRecord>,
    /// Results found but not of this tree or configuration, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
    /// Campaign name → what its base kernel executes.
    pub workloads: BTreeMap<String, WorkloadReach>,
    /// Source file (`mm/ksm.c`) → the functions its object defines.
    pub files: BTreeMap<String, FileFunctions>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapTree {
    /// `tarball ... (sha256 ...)`, or a repository.
    pub origin: String,
    pub base_commit: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceRecord {
    /// The results.json, as found (`results/mm/ksm-merge-aa/results.json`).
    pub results: String,
    pub sha256: String,
    pub campaign: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skipped {
    pub results: String,
    pub why: String,
}

/// One workload's base kernel, per operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadReach {
    /// The workload kind (`ksm-merge`).
    pub kind: String,
    /// The results it comes from (a `sources` entry's `results`).
    pub results: String,
    /// The marked phase whose window was profiled (`ops`, `run`).
    pub phase: String,
    /// What one unit is: `op` (the `ops` metric) or `run` (a window).
    pub per: Per,
    /// How many base samples the means are over.
    pub samples: usize,
    /// All kernel instructions per unit (every function below, summed).
    pub kernel_insns: f64,
    /// Function → kernel instructions per unit; only those above zero.
    pub functions: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    /// Per operation: the window's figures over its `ops` metric.
    Op,
    /// Per window: a workload with no `ops` metric.
    Run,
    /// Per boot: kernel-boot, whose window (its `boot` phase) is the boot.
    Boot,
}

impl std::fmt::Display for Per {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Per::Op => "op",
            Per::Run => "run",
            Per::Boot => "boot",
        })
    }
}

/// The functions one object defines.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileFunctions {
    /// The object (`mm/ksm.o`).
    pub object: String,
    /// Built and executable: defined in the file's C (by the tree at the
    /// build's commit) and in its object outside `.init.*` and `.exit.*`.
    pub functions: BTreeSet<String>,
    /// Defined in the object but not in the file's C: a header's static
    /// functions the compiler did not inline (`pmd_flags`), or functions a
    /// macro makes. Another file's copy shares the name in a profile, so
    /// they are not counted as this file's.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub from_headers: BTreeSet<String>,
    /// Defined only in `.init.*` or `.exit.*` sections (`__init`,
    /// `__exit`): never counted as built and executable.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub init_exit: BTreeSet<String>,
}

/// Why a map cannot be built or read. Every variant names the file or
/// option at fault.
#[derive(Debug, thiserror::Error)]
pub enum MapError {
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the reach map {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not an ELF object", path.display())]
    NotElf {
        path: PathBuf,
        #[source]
        source: goblin::error::Error,
    },
    #[error("--objects {}: {message}", dir.display())]
    Objects { dir: PathBuf, message: String },
    #[error("--objects {}: cannot read {file} at {commit} in the tree it was built from ({})", dir.display(), tree.display())]
    Tree {
        dir: PathBuf,
        tree: PathBuf,
        file: String,
        commit: String,
        #[source]
        source: git2::Error,
    },
    #[error(transparent)]
    Results(#[from] crate::results::ResultsError),
    #[error("--results {}: {message}", path.display())]
    Source { path: PathBuf, message: String },
    #[error("{} is not a reach map", path.display())]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{} has reach map schema {found}; this patchbench reads schema {SCHEMA}", path.display())]
    Schema { path: PathBuf, found: u64 },
    #[error("{option} {value}: {message}")]
    Option {
        option: &'static str,
        value: String,
        message: String,
    },
}

impl MapError {
    /// Whether the fault is in what was given (exit 2), not in the host.
    pub fn is_usage(&self) -> bool {
        !matches!(self, MapError::Write { .. })
    }
}

/// The functions an ELF object defines: (built, init/exit only), each by
/// its function's name (GCC's copies folded).
pub fn of_object(
    bytes: &[u8],
) -> Result<(BTreeSet<String>, BTreeSet<String>), goblin::error::Error> {
    let elf = goblin::elf::Elf::parse(bytes)?;
    let mut built = BTreeSet::new();
    let mut init_exit = BTreeSet::new();
    for sym in elf.syms.iter() {
        let defined = sym.st_shndx != goblin::elf::section_header::SHN_UNDEF as usize
            && sym.st_shndx < goblin::elf::section_header::SHN_LORESERVE as usize;
        if sym.st_type() != goblin::elf::sym::STT_FUNC || !defined {
            continue;
        }
        let Some(name) = elf.strtab.get_at(sym.st_name).filter(|n| !n.is_empty()) else {
            continue;
        };
        let section = elf
            .section_headers
            .get(sym.st_shndx)
            .and_then(|s| elf.shdr_strtab.get_at(s.sh_name))
            .unwrap_or("");
        let function = function_of_symbol(name).to_string();
        if section.starts_with(".init.") || section.starts_with(".exit.") {
            init_exit.insert(function);
        } else {
            built.insert(function);
        }
    }
    // A function with a copy outside init/exit is built.
    init_exit.retain(|f| !built.contains(f));
    Ok((built, init_exit))
}

/// One results document, read, with what the map records of it.
#[derive(Debug)]
pub struct Source {
    /// As the map names it.
    pub shown: String,
    pub sha256: String,
    pub results: Results,
}

/// The build directory's identity, as read.
#[derive(Debug)]
pub struct Build {
    /// As the map names it.
    pub shown: String,
    pub commit: String,
    pub config_sha256: String,
    /// Object path relative to the build (`mm/ksm.o`) → its functions.
    pub objects: BTreeMap<String, ObjectFunctions>,
}

/// What one object defines, split by where the definition is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectFunctions {
    pub own: BTreeSet<String>,
    pub init_exit: BTreeSet<String>,
    pub from_headers: BTreeSet<String>,
}

/// Split an object's functions (`of_object`'s) by its C file's function
/// definitions (`cscan`'s names; `SYSCALL_DEFINE` as `sys_name`, whose
/// object symbols are `__x64_sys_name`, `__se_sys_name`...): the file's
/// own, and those from headers or macros.
pub fn split(
    built: BTreeSet<String>,
    init_exit: BTreeSet<String>,
    defined_in_c: &BTreeSet<String>,
) -> ObjectFunctions {
    let own_name = |f: &str| {
        if defined_in_c.contains(f) {
            return true;
        }
        [
            "__x64_sys_",
            "__ia32_sys_",
            "__se_sys_",
            "__do_sys_",
            "__x64_compat_sys_",
            "__ia32_compat_sys_",
            "__se_compat_sys_",
            "__do_compat_sys_",
        ]
        .iter()
        .filter_map(|p| f.strip_prefix(p))
        .any(|call| {
            defined_in_c.contains(&format!("sys_{call}"))
                || defined_in_c.contains(&format!("compat_sys_{call}"))
        })
    };
    let (own, from_headers) = built.into_iter().partition(|f| own_name(f));
    ObjectFunctions {
        own,
        init_exit,
        from_headers,
    }
}

/// What one base kernel's profiles say, per unit; `Err` says why the
/// results cannot give it.
pub fn of_results(results: &Results) -> Result<WorkloadReach, String> {
    let samples: Vec<_> = results
        .boots
        .iter()
        .filter(|b| b.complete && b.variant == "A")
        .flat_map(|b| b.samples_of(None))
        .collect();
    if samples.is_empty() {
        return Err("no complete boot of variant A with samples".into());
    }
    let phases: BTreeSet<&String> = samples.iter().flat_map(|s| s.profile.keys()).collect();
    let phase = match phases.iter().find(|p| p.as_str() == "ops") {
        Some(p) => (*p).clone(),
        None if phases.len() == 1 => (*phases.iter().next().unwrap()).clone(),
        None if phases.is_empty() => {
            return Err("its base samples carry no profile (not a counting-lane run)".into());
        }
        None => {
            return Err(format!(
                "its base samples profile several phases ({}) and none is `ops`",
                phases
                    .iter()
                    .map(|p| p.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    };
    let with_ops = samples
        .iter()
        .filter(|s| s.metrics.contains_key("ops"))
        .count();
    let per = match with_ops {
        0 if phase == "boot" => Per::Boot,
        0 => Per::Run,
        n if n == samples.len() => Per::Op,
        _ => return Err("some base samples have an `ops` metric and some do not".into()),
    };
    let mut sums: BTreeMap<String, f64> = BTreeMap::new();
    for (i, s) in samples.iter().enumerate() {
        let Some(window) = s.profile.get(&phase) else {
            return Err(format!("base sample {i} has no `{phase}` profile"));
        };
        let units = match per {
            Per::Op => s.metrics["ops"],
            Per::Run | Per::Boot => 1,
        };
        if units == 0 {
            return Err(format!("base sample {i} counted 0 ops"));
        }
        // Within a sample, a function's copies add up first.
        let mut here: BTreeMap<&str, u64> = BTreeMap::new();
        for (symbol, insns) in window {
            if symbol != USER {
                *here.entry(function_of_symbol(symbol)).or_default() += insns;
            }
        }
        for (function, insns) in here {
            *sums.entry(function.to_string()).or_default() += insns as f64 / units as f64;
        }
    }
    let n = samples.len() as f64;
    let functions: BTreeMap<String, f64> = sums
        .into_iter()
        .filter(|(_, v)| *v > 0.0)
        .map(|(f, v)| (f, round(v / n)))
        .collect();
    let kernel_insns = round(functions.values().sum());
    Ok(WorkloadReach {
        kind: results.workload.kind.clone(),
        results: String::new(),
        phase,
        per,
        samples: samples.len(),
        kernel_insns,
        functions,
    })
}

/// Two decimals: the figures are means of integers over a handful of
/// samples, and a stable, short file matters more than the last digit.
fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The map of `build` and `sources`, both already read. A source of
/// another tree or configuration is skipped, saying so; two of one
/// campaign, or a source that cannot give a profile, are errors.
pub fn of_inputs(build: &Build, sources: &[Source]) -> Result<ReachMap, MapError> {
    let mut tree: Option<MapTree> = None;
    let mut used = Vec::new();
    let mut skipped = Vec::new();
    let mut workloads: BTreeMap<String, WorkloadReach> = BTreeMap::new();
    for source in sources {
        let r = &source.results;
        let fault = |message: String| MapError::Source {
            path: PathBuf::from(&source.shown),
            message,
        };
        let base_config = r
            .variants
            .iter()
            .find(|v| v.name == "A")
            .map(|v| v.kernel.config_sha256.as_str());
        let why = if r.tree.base_commit != build.commit {
            Some(format!(
                "its tree is {} at {}, the objects' is at {}",
                r.tree.origin, r.tree.base_commit, build.commit
            ))
        } else if base_config != Some(build.config_sha256.as_str()) {
            Some(format!(
                "its base kernel's .config has sha256 {}, the objects' {}",
                base_config.unwrap_or("(no variant A)"),
                build.config_sha256
            ))
        } else {
            None
        };
        if let Some(why) = why {
            skipped.push(Skipped {
                results: source.shown.clone(),
                why,
            });
            continue;
        }
        let this_tree = MapTree {
            origin: r.tree.origin.clone(),
            base_commit: r.tree.base_commit.clone(),
        };
        match &tree {
            Some(t) if *t != this_tree => {
                return Err(fault(format!(
                    "its tree is {}, another source's is {}",
                    this_tree.origin, t.origin
                )));
            }
            _ => tree = Some(this_tree),
        }
        if let Some(other) = workloads.get(&r.campaign) {
            return Err(fault(format!(
                "a second run of campaign {} (the first is {}); keep one",
                r.campaign, other.results
            )));
        }
        let mut reach = of_results(r).map_err(fault)?;
        reach.results = source.shown.clone();
        workloads.insert(r.campaign.clone(), reach);
        used.push(SourceRecord {
            results: source.shown.clone(),
            sha256: source.sha256.clone(),
            campaign: r.campaign.clone(),
        });
    }
    let Some(tree) = tree else {
        return Err(MapError::Source {
            path: PathBuf::from("(every source)"),
            message: format!(
                "none is a run of the objects' tree ({}) and configuration ({})",
                build.commit, build.config_sha256
            ),
        });
    };
    used.sort_by(|a, b| a.results.cmp(&b.results));
    skipped.sort_by(|a, b| a.results.cmp(&b.results));
    let files = build
        .objects
        .iter()
        .map(|(object, f)| {
            (
                source_of(object),
                FileFunctions {
                    object: object.clone(),
                    functions: f.own.clone(),
                    from_headers: f.from_headers.clone(),
                    init_exit: f.init_exit.clone(),
                },
            )
        })
        .collect();
    Ok(ReachMap {
        schema: SCHEMA,
        tree,
        config_sha256: build.config_sha256.clone(),
        objects: build.shown.clone(),
        sources: used,
        skipped,
        workloads,
        files,
    })
}

/// `mm/ksm.o` → `mm/ksm.c`.
fn source_of(object: &str) -> String {
    match object.strip_suffix(".o") {
        Some(stem) => format!("{stem}.c"),
        None => object.to_string(),
    }
}

/// The sha256 of `bytes`, in hex.
pub fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn read(path: &Path) -> Result<Vec<u8>, MapError> {
    std::fs::read(path).map_err(|source| MapError::Read {
        path: path.to_owned(),
        source,
    })
}

/// Read a build directory: its `.config`, its `patchbench-build.json`
/// (the commit built), every object below its `mm/`, and each object's C
/// file at that commit in the tree the build's `source` link names.
pub fn read_build(dir: &Path) -> Result<Build, MapError> {
    let fault = |message: String| MapError::Objects {
        dir: dir.to_owned(),
        message,
    };
    if !dir.is_dir() {
        return Err(fault("not a directory".into()));
    }
    let config = dir.join(".config");
    if !config.is_file() {
        return Err(fault(
            "has no .config: give a kernel build directory of the cache (builds/<tree>/<key>)"
                .into(),
        ));
    }
    let config_sha256 = sha256(&read(&config)?);
    let stamp_path = dir.join("patchbench-build.json");
    #[derive(Deserialize)]
    struct Stamp {
        commit: String,
    }
    let stamp: Stamp = serde_json::from_slice(&read(&stamp_path)?).map_err(|e| {
        fault(format!(
            "patchbench-build.json does not name the commit built: {e}"
        ))
    })?;
    let tree_path = dir.join("source");
    let repo = git2::Repository::open(&tree_path).map_err(|e| {
        fault(format!(
            "its `source` link is not the tree's git repository: {}",
            e.message()
        ))
    })?;
    let tree_err = |file: &str| {
        let (dir, tree, file, commit) = (
            dir.to_owned(),
            tree_path.clone(),
            file.to_string(),
            stamp.commit.clone(),
        );
        move |source| MapError::Tree {
            dir,
            tree,
            file,
            commit,
            source,
        }
    };
    let tree = git2::Oid::from_str(&stamp.commit)
        .and_then(|oid| repo.find_commit(oid))
        .and_then(|c| c.tree())
        .map_err(tree_err("the commit"))?;
    let mm = dir.join("mm");
    let mut objects = BTreeMap::new();
    for entry in walkdir::WalkDir::new(&mm).sort_by_file_name() {
        let entry = entry.map_err(|e| fault(format!("cannot walk mm/: {e}")))?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy();
        if !entry.file_type().is_file() || !name.ends_with(".o") || name.ends_with(".mod.o") {
            continue;
        }
        let (built, init_exit) = of_object(&read(path)?).map_err(|source| MapError::NotElf {
            path: path.to_owned(),
            source,
        })?;
        let rel = path
            .strip_prefix(dir)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned();
        let c_file = source_of(&rel);
        let blob = tree
            .get_path(Path::new(&c_file))
            .and_then(|e| repo.find_blob(e.id()))
            .map_err(tree_err(&c_file))?;
        let defined: BTreeSet<String> = super::cscan::scan(blob.content())
            .function_names()
            .map(String::from)
            .collect();
        objects.insert(rel, split(built, init_exit, &defined));
    }
    if objects.is_empty() {
        return Err(fault(
            "has no mm/*.o: a build whose objects were cleaned?".into(),
        ));
    }
    Ok(Build {
        shown: crate::fsutil::portable(dir, None, "builds")
            .to_string_lossy()
            .into_owned(),
        commit: stamp.commit,
        config_sha256,
        objects,
    })
}

/// Every `*/results.json` directly below `dir`, read, in name order.
pub fn read_sources(dir: &Path) -> Result<Vec<Source>, MapError> {
    let list = |source| MapError::Read {
        path: dir.to_owned(),
        source,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(list)?
        .map(|e| e.map(|e| e.path().join("results.json")))
        .collect::<Result<_, _>>()
        .map_err(list)?;
    files.retain(|f| f.is_file());
    files.sort();
    if files.is_empty() {
        return Err(MapError::Source {
            path: dir.to_owned(),
            message: "holds no <run>/results.json".into(),
        });
    }
    let cwd = std::env::current_dir().ok();
    files
        .into_iter()
        .map(|path| {
            let bytes = read(&path)?;
            Ok(Source {
                shown: crate::fsutil::portable(&path, cwd.as_deref(), "results")
                    .to_string_lossy()
                    .into_owned(),
                sha256: sha256(&bytes),
                results: Results::load(&path)?,
            })
        })
        .collect()
}

/// Build the map from a build directory and a directory of kept runs.
pub fn build(objects: &Path, results: &Path) -> Result<ReachMap, MapError> {
    let build = read_build(objects)?;
    let sources = read_sources(results)?;
    of_inputs(&build, &sources)
}

impl ReachMap {
    /// The map as its file holds it: pretty JSON and a final newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("a reach map serializes");
        bytes.push(b'\n');
        bytes
    }

    /// Write it atomically (a temporary file renamed over `path`).
    pub fn write(&self, path: &Path) -> Result<(), MapError> {
        let write = |source| MapError::Write {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(write)?;
        }
        crate::fsutil::write_atomic(path, &self.to_bytes()).map_err(write)
    }

    /// Read a map, refusing another schema.
    pub fn load(path: &Path) -> Result<ReachMap, MapError> {
        let bytes = read(path)?;
        let parse = |source| MapError::Parse {
            path: path.to_owned(),
            source,
        };
        #[derive(Deserialize)]
        struct Version {
            schema: u64,
        }
        let version: Version = serde_json::from_slice(&bytes).map_err(parse)?;
        if version.schema != u64::from(SCHEMA) {
            return Err(MapError::Schema {
                path: path.to_owned(),
                found: version.schema,
            });
        }
        serde_json::from_slice(&bytes).map_err(parse)
    }

    /// The workload that executes `function` most: the largest share of
    /// its kernel instructions (units differ between workloads, shares do
    /// not), with its figure per unit and that share.
    pub fn most(&self, function: &str) -> Option<Most<'_>> {
        self.workloads
            .iter()
            .filter_map(|(name, w)| {
                w.functions.get(function).map(|&insns| Most {
                    campaign: name,
                    workload: w,
                    insns,
                    share: w.share(insns),
                })
            })
            .max_by(|a, b| {
                a.share
                    .total_cmp(&b.share)
                    .then_with(|| b.campaign.cmp(a.campaign))
            })
    }

    /// Adds what `other`, the map of a second kernel of the same tree (the
    /// library's debug kernel, kconfigs/mm-kmemleak.config), knows that
    /// this one does not: the files only its kernel builds, and its
    /// workloads, each answering for those files' functions alone (a
    /// debug kernel's figures for code both kernels build are not the
    /// library's). Returns the files added; an error names what does not
    /// fit (another tree, or a campaign both maps have).
    pub fn add_kernel(&mut self, other: ReachMap) -> Result<Vec<String>, String> {
        if other.tree.base_commit != self.tree.base_commit {
            return Err(format!(
                "is of {} at {}, not this map's tree",
                other.tree.origin, other.tree.base_commit
            ));
        }
        if let Some(name) = other
            .workloads
            .keys()
            .find(|n| self.workloads.contains_key(*n))
        {
            return Err(format!("has campaign {name}, which this map has too"));
        }
        let added: BTreeMap<String, FileFunctions> = other
            .files
            .into_iter()
            .filter(|(file, _)| !self.files.contains_key(file))
            .collect();
        let own: BTreeSet<&String> = added.values().flat_map(|f| &f.functions).collect();
        for (name, mut workload) in other.workloads {
            workload.functions.retain(|f, _| own.contains(f));
            self.workloads.insert(name, workload);
        }
        let files = added.keys().cloned().collect();
        self.files.extend(added);
        Ok(files)
    }
}

/// The workload that executes a function most.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Most<'a> {
    pub campaign: &'a str,
    pub workload: &'a WorkloadReach,
    /// Kernel instructions per unit in the function.
    pub insns: f64,
    /// Its share of the workload's kernel instructions, 0 to 1.
    pub share: f64,
}

/// A share (0 to 1) as people read it: a percentage to three decimals,
/// or, where those would read as zero though it is not, to two
/// significant digits (`3.1e-6%`).
pub fn percent(share: f64) -> String {
    let p = 100.0 * share;
    if p == 0.0 || p >= 0.001 {
        format!("{p:.3}%")
    } else {
        format!("{p:.1e}%")
    }
}

impl WorkloadReach {
    /// `insns` per unit as a share of the workload's kernel instructions.
    pub fn share(&self, insns: f64) -> f64 {
        if self.kernel_insns > 0.0 {
            insns / self.kernel_insns
        } else {
            0.0
        }
    }
}

#[cfg(test)]
#[path = "map_tests.rs"]
mod tests;
