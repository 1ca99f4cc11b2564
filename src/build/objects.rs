//! Which objects a build wrote, and why: because a file the series touched
//! is among their dependencies, because the final link always rewrites them,
//! or for no reason we can see (an unexpected rebuild, worth a warning:
//! it means the incremental build was not as incremental as it should be).
//!
//! Kbuild records every object's dependencies in `.<name>.o.cmd`
//! (`deps_<obj> := ...`), so the check is exact for headers as well as
//! for C files.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// `kconfigs/objects.tsv`: the objects a full build of a known
/// configuration compiles, by the sha256 of its final `.config`.
const KNOWN_CONFIGURATIONS: &str = include_str!("../../kconfigs/objects.tsv");

/// The objects a full build of the configuration whose `.config` has this
/// sha256 compiles, if `kconfigs/objects.tsv` lists it: the progress total
/// of a configuration's first build on a machine.
pub fn known_full_build(config_sha256: &str) -> Option<u64> {
    known_configurations(KNOWN_CONFIGURATIONS)
        .find(|(sha, _)| *sha == config_sha256)
        .map(|(_, objects)| objects)
}

/// The table's lines, comments and malformed lines left out.
fn known_configurations(text: &str) -> impl Iterator<Item = (&str, u64)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let mut fields = l.split('\t');
            let sha = fields.next()?;
            let objects = fields.next()?.parse().ok()?;
            Some((sha, objects))
        })
}

/// Why an object was rebuilt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// It depends on a file the series changed.
    Series,
    /// The link rewrites it on every build (kallsyms passes, the build
    /// timestamp, the compressed image and its boot wrapper).
    Link,
    /// Neither: make rebuilt it although nothing it depends on changed.
    Unexpected,
}

/// One object file a build wrote, relative to the build directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rebuilt {
    pub object: String,
    pub reason: Reason,
}

/// Objects rewritten on every link, whatever changed.
fn is_link_object(object: &str) -> bool {
    object == "vmlinux.o"
        || object.starts_with(".tmp_vmlinux")
        || object.starts_with(".vmlinux.")
        || object.starts_with("init/version")
        || object.starts_with("arch/x86/boot/")
}

/// Whether a kbuild `.cmd` file lists any of `touched` (paths relative to
/// the source tree) among the object's sources or dependencies. Entries are
/// relative to the source tree or absolute paths into it.
pub fn depends_on_any(cmd: &str, touched: &[PathBuf]) -> bool {
    cmd.lines()
        .filter(|l| !l.starts_with("savedcmd_"))
        .flat_map(|l| l.split_whitespace())
        .map(|t| t.trim_end_matches('\\'))
        .filter(|t| !t.is_empty() && !t.starts_with("$(") && *t != ":=")
        .any(|token| {
            touched.iter().any(|path| {
                let p = path.to_string_lossy();
                token == p
                    || token
                        .strip_suffix(p.as_ref())
                        .is_some_and(|head| head.ends_with('/'))
            })
        })
}

/// Classify one rebuilt object from its `.cmd` file's text, if it has one.
pub fn classify(object: &str, cmd: Option<&str>, touched: &[PathBuf]) -> Reason {
    if cmd.is_some_and(|c| depends_on_any(c, touched)) {
        Reason::Series
    } else if is_link_object(object) {
        Reason::Link
    } else {
        Reason::Unexpected
    }
}

/// The kbuild command file of an object: `dir/.name.o.cmd`.
fn cmd_file(dir: &Path, object: &str) -> PathBuf {
    let path = Path::new(object);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let parent = path.parent().unwrap_or(Path::new(""));
    dir.join(parent)
        .join(format!(".{}.cmd", name.unwrap_or_default()))
}

/// Whether a line of kbuild's output (`V=0`) reports one object compiled
/// or assembled: `  CC      mm/zswap.o`.
pub fn compiled_object(line: &str) -> bool {
    let mut words = line.split_whitespace();
    matches!(words.next(), Some("CC" | "AS"))
        && words.next().is_some_and(|w| w.ends_with(".o"))
        && words.next().is_none()
}

/// Every `.o` under `dir` written at or after `since`, sorted, with the
/// reason it was rebuilt.
pub fn rebuilt_since(
    dir: &Path,
    since: SystemTime,
    touched: &[PathBuf],
) -> std::io::Result<Vec<Rebuilt>> {
    let mut objects = Vec::new();
    for entry in walkdir::WalkDir::new(dir) {
        let entry = entry?;
        let path = entry.path();
        if !entry.file_type().is_dir()
            && path.extension().is_some_and(|x| x == "o")
            && entry.metadata()?.modified()? >= since
        {
            let rel = path.strip_prefix(dir).unwrap_or(path);
            objects.push(rel.to_string_lossy().into_owned());
        }
    }
    objects.sort();
    Ok(objects
        .into_iter()
        .map(|object| {
            let cmd = std::fs::read_to_string(cmd_file(dir, &object)).ok();
            let reason = classify(&object, cmd.as_deref(), touched);
            Rebuilt { object, reason }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_configuration_line_is_well_formed() {
        let lines: Vec<&str> = KNOWN_CONFIGURATIONS
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .collect();
        assert!(!lines.is_empty());
        for line in &lines {
            let fields: Vec<&str> = line.split('\t').collect();
            assert_eq!(fields.len(), 3, "{line:?}: sha256, objects, what it is");
            assert!(
                fields[0].len() == 64 && fields[0].bytes().all(|b| b.is_ascii_hexdigit()),
                "{line:?}"
            );
            assert!(fields[1].parse::<u64>().is_ok_and(|n| n > 0), "{line:?}");
        }
        assert_eq!(
            known_configurations(KNOWN_CONFIGURATIONS).count(),
            lines.len()
        );
        let (sha, objects) = known_configurations(KNOWN_CONFIGURATIONS).next().unwrap();
        assert_eq!(known_full_build(sha), Some(objects));
        assert_eq!(known_full_build(&"0".repeat(64)), None);
    }

    #[test]
    fn compile_lines_are_counted_and_nothing_else() {
        for line in [
            "  CC      mm/zswap.o",
            "  AS      arch/x86/entry/entry_64.o",
        ] {
            assert!(compiled_object(line), "{line}");
        }
        for line in [
            "  HOSTCC  scripts/basic/fixdep",
            "  LD      vmlinux.o",
            "  CC      mm/zswap.s",
            "mm/zswap.c:81:5: error: CC x.o",
            "  AR      mm/built-in.a",
            "",
        ] {
            assert!(!compiled_object(line), "{line}");
        }
    }

    const MEMCONTROL_CMD: &str = "savedcmd_mm/memcontrol.o := ccache gcc -Wp,-MMD,mm/.memcontrol.o.d -include /src/include/linux/kconfig.h -c -o mm/memcontrol.o /src/mm/memcontrol.c

source_mm/memcontrol.o := /src/mm/memcontrol.c

deps_mm/memcontrol.o := \\
    $(wildcard include/config/MEMCG) \\
  /src/include/linux/compiler-version.h \\
  include/linux/memcontrol.h \\
  arch/x86/include/generated/asm/rwonce.h \\

mm/memcontrol.o: $(deps_mm/memcontrol.o)
";

    fn paths(p: &[&str]) -> Vec<PathBuf> {
        p.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn a_changed_source_or_header_explains_the_rebuild() {
        assert!(depends_on_any(MEMCONTROL_CMD, &paths(&["mm/memcontrol.c"])));
        assert!(depends_on_any(
            MEMCONTROL_CMD,
            &paths(&["include/linux/memcontrol.h"])
        ));
        assert!(depends_on_any(
            MEMCONTROL_CMD,
            &paths(&["include/linux/compiler-version.h"])
        ));
    }

    #[test]
    fn a_suffix_that_is_not_a_path_component_does_not_match() {
        // `trol.c` is a suffix of the source's name but not a path of it.
        assert!(!depends_on_any(MEMCONTROL_CMD, &paths(&["trol.c"])));
        assert!(!depends_on_any(MEMCONTROL_CMD, &paths(&["mm/zswap.c"])));
        // The compiler command line names kconfig.h; it is not a dependency.
        assert!(!depends_on_any(
            MEMCONTROL_CMD,
            &paths(&["include/linux/kconfig.h"])
        ));
    }

    #[test]
    fn rebuilds_are_classified() {
        let touched = paths(&["mm/memcontrol.c"]);
        assert_eq!(
            classify("mm/memcontrol.o", Some(MEMCONTROL_CMD), &touched),
            Reason::Series
        );
        for link in [
            "vmlinux.o",
            ".tmp_vmlinux1.kallsyms.o",
            "init/version-timestamp.o",
            "arch/x86/boot/compressed/piggy.o",
        ] {
            assert_eq!(classify(link, None, &touched), Reason::Link, "{link}");
        }
        // objtool rebuilt because its recorded command line changed (a build
        // directory moved) is exactly what this check exists to catch.
        assert_eq!(
            classify("tools/objtool/check.o", None, &touched),
            Reason::Unexpected
        );
        assert_eq!(
            classify("mm/zswap.o", Some(MEMCONTROL_CMD), &paths(&["mm/zswap.c"])),
            Reason::Unexpected
        );
    }

    #[test]
    fn rebuilt_objects_are_found_by_mtime_with_their_cmd_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("mm")).unwrap();
        std::fs::write(dir.path().join("mm/old.o"), "").unwrap();
        let since = SystemTime::now() + std::time::Duration::from_secs(3600);
        let old = std::fs::File::options()
            .write(true)
            .open(dir.path().join("mm/old.o"))
            .unwrap();
        old.set_modified(since - std::time::Duration::from_secs(7200))
            .unwrap();
        for new in ["mm/memcontrol.o", "vmlinux.o"] {
            let f = std::fs::File::create(dir.path().join(new)).unwrap();
            f.set_modified(since).unwrap();
        }
        std::fs::write(dir.path().join("mm/.memcontrol.o.cmd"), MEMCONTROL_CMD).unwrap();
        let found = rebuilt_since(dir.path(), since, &paths(&["mm/memcontrol.c"])).unwrap();
        assert_eq!(
            found,
            vec![
                Rebuilt {
                    object: "mm/memcontrol.o".into(),
                    reason: Reason::Series
                },
                Rebuilt {
                    object: "vmlinux.o".into(),
                    reason: Reason::Link
                },
            ]
        );
    }
}
