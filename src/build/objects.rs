//! Which objects a build wrote, and why: because a file the series touched
//! is among their dependencies, because the final link always rewrites them,
//! or for no reason we can see (an unexpected rebuild, worth a warning:
//! it means the incremental build was not as incremental as it should be).
//!
//! Kbuild records every object's dependencies in `.<name>.o.cmd`
//! (`deps_<obj> := ...`), so the check is exact for headers as well as
//! for C files.
//!
//! Also how many objects a full build compiles: counted in make's output,
//! and known ahead for the configurations `kconfigs/objects.tsv` lists, by
//! a digest of the `.config` that two machines building the same
//! configuration agree on ([`config_digest`]).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// `kconfigs/objects.tsv`: the objects a full build of a known
/// configuration compiles, by its [`config_digest`].
const KNOWN_CONFIGURATIONS: &str = include_str!("../../kconfigs/objects.tsv");

/// The objects a full build of the configuration whose `.config` has this
/// [`config_digest`] compiles, if `kconfigs/objects.tsv` lists it: the
/// progress total of a configuration's first build on a machine.
pub fn known_full_build(config_digest: &str) -> Option<u64> {
    known_configurations(KNOWN_CONFIGURATIONS)
        .find(|(digest, _)| *digest == config_digest)
        .map(|(_, objects)| objects)
}

/// The table's lines, comments and malformed lines left out.
fn known_configurations(text: &str) -> impl Iterator<Item = (&str, u64)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let mut fields = l.split('\t');
            let digest = fields.next()?;
            let objects = fields.next()?.parse().ok()?;
            Some((digest, objects))
        })
}

/// Symbols whose `.config` lines differ between machines that build the
/// same configuration from the same tree, left out of [`config_digest`],
/// each with the reason that leaves the objects a build compiles as they
/// are. A name ending in `_` stands for every symbol it begins. Where a
/// tool's version decides an option (`GCC_ASM_GOTO_OUTPUT_BROKEN`, the
/// `CC_HAS_*` tests), that option has a line of its own, which is kept: a
/// compiler release that changes one gets no total rather than a wrong
/// one. The readers named are those of Linux 6.12.118.
const MACHINE_SPECIFIC: &[(&str, &str)] = &[
    (
        "CC_VERSION_TEXT",
        "the compiler's --version line, which a distribution's point update \
         changes (Debian's gcc-12 is \"12.2.0-14+deb12u1\"); only the \
         build's banner and a check that the compiler did not change read it",
    ),
    (
        "GCC_VERSION",
        "the compiler's version: on x86 with gcc the Makefiles test it for \
         compiler flags (scripts/Makefile.compiler's gcc-min-version), \
         never to choose an object",
    ),
    (
        "CLANG_VERSION",
        "0 with gcc; with clang, its version, read as GCC_VERSION is",
    ),
    (
        "AS_VERSION",
        "the assembler's version (binutils), read for flags as GCC_VERSION is",
    ),
    (
        "LD_VERSION",
        "the linker's version (binutils), read for flags as GCC_VERSION is",
    ),
    (
        "LLD_VERSION",
        "0 with GNU ld; with lld, its version, read for flags",
    ),
    (
        "RUSTC_VERSION",
        "the rustc on PATH, which on a machine that builds patchbench is \
         the one building it, and rustup moves it every six weeks; only \
         Rust code reads it, and CONFIG_RUST, which is kept, decides that",
    ),
    (
        "RUSTC_LLVM_VERSION",
        "the LLVM of that rustc, read only by Rust code",
    ),
    (
        "RUSTC_HAS_",
        "what that rustc can do (UNNECESSARY_TRANSMUTES from 1.88, \
         SUSPICIOUS_RUNTIME_SYMBOL_DEFINITIONS from 1.98): read only in rust/",
    ),
    (
        "RUST_IS_AVAILABLE",
        "whether the machine has rustc, bindgen and the Rust sources: it \
         only lets CONFIG_RUST be chosen, and CONFIG_RUST is kept",
    ),
    (
        "BINDGEN_VERSION_TEXT",
        "bindgen's version, present only with CONFIG_RUST",
    ),
    (
        "PAHOLE_VERSION",
        "pahole's version (0 without dwarves): only BTF reads it, which \
         CONFIG_DEBUG_INFO_BTF, kept, decides",
    ),
    (
        "PAHOLE_HAS_",
        "what that pahole can do: read only with CONFIG_DEBUG_INFO_BTF",
    ),
];

/// Whether a `.config` symbol (without `CONFIG_`) is in [`MACHINE_SPECIFIC`].
fn machine_specific(symbol: &str) -> bool {
    MACHINE_SPECIFIC
        .iter()
        .any(|(name, _)| match name.strip_suffix('_') {
            Some(_) => symbol.starts_with(name),
            None => symbol == *name,
        })
}

/// The lines of a `.config` its digest covers: every option set
/// (`CONFIG_X=value`) except the [`MACHINE_SPECIFIC`] ones, in the file's
/// order. What else a `.config` holds is left out:
/// - comments: the header names the tree's point release (Debian's security
///   update from 6.12.117 to 6.12.118 changed that line and none of the
///   smoke configuration's options), the others are menu titles;
/// - `# CONFIG_X is not set`: it builds exactly what no line at all builds
///   (make reads include/config/auto.conf, which lists neither), and
///   whether kconfig writes it depends on the option being visible, which
///   tests of the toolchain decide (CONFIG_RUST is visible only with
///   RUST_IS_AVAILABLE);
/// - blank lines.
fn digested_lines(config: &str) -> impl Iterator<Item = &str> {
    config.lines().filter(|line| {
        line.strip_prefix("CONFIG_")
            .and_then(|rest| rest.split_once('='))
            .is_some_and(|(symbol, _)| !machine_specific(symbol))
    })
}

/// The sha256 of a `.config`'s [`digested_lines`], each ended by a
/// newline: equal for two machines that build the same configuration of
/// the same tree, whatever their compiler's version string, and different
/// as soon as an option that can change what is compiled differs. The key
/// of `kconfigs/objects.tsv`.
pub fn config_digest(config: &str) -> String {
    let mut hasher = Sha256::new();
    for line in digested_lines(config) {
        hasher.update(line.as_bytes());
        hasher.update(b"\n");
    }
    hex::encode(hasher.finalize())
}

/// The kernel release a `.config`'s header names
/// (`# Linux/x86 6.12.118 Kernel Configuration`), if it has that header.
pub fn config_kernel_release(config: &str) -> Option<&str> {
    config.lines().take(8).find_map(|line| {
        let rest = line.strip_prefix("# Linux/")?;
        let rest = rest.strip_suffix(" Kernel Configuration")?;
        rest.split_once(' ').map(|(_arch, release)| release)
    })
}

/// Objects compiled, by kbuild's lines in a build's output.
pub fn count_compiled(log: &str) -> u64 {
    log.lines().filter(|l| compiled_object(l)).count() as u64
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
        let mut digests = std::collections::BTreeSet::new();
        for line in &lines {
            let fields: Vec<&str> = line.split('\t').collect();
            assert_eq!(fields.len(), 3, "{line:?}: digest, objects, what it is");
            assert!(
                fields[0].len() == 64
                    && fields[0]
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
                "{line:?}: a digest is 64 lowercase hex digits, as config_digest writes it"
            );
            assert!(fields[1].parse::<u64>().is_ok_and(|n| n > 0), "{line:?}");
            assert!(!fields[2].trim().is_empty(), "{line:?}: say what it is");
            assert!(digests.insert(fields[0]), "{line:?}: listed twice");
        }
        assert_eq!(
            known_configurations(KNOWN_CONFIGURATIONS).count(),
            lines.len()
        );
        let (digest, objects) = known_configurations(KNOWN_CONFIGURATIONS).next().unwrap();
        assert_eq!(known_full_build(digest), Some(objects));
        assert_eq!(known_full_build(&"0".repeat(64)), None);
    }

    /// The head of the smoke configuration's `.config` as this machine
    /// wrote it (Linux 6.12.118, Debian 12's gcc, rustc 1.95), with a few
    /// of its options further down.
    const SMOKE_CONFIG: &str = "#
# Automatically generated file; DO NOT EDIT.
# Linux/x86 6.12.118 Kernel Configuration
#
CONFIG_CC_VERSION_TEXT=\"gcc (Debian 12.2.0-14+deb12u1) 12.2.0\"
CONFIG_CC_IS_GCC=y
CONFIG_GCC_VERSION=120200
CONFIG_CLANG_VERSION=0
CONFIG_AS_IS_GNU=y
CONFIG_AS_VERSION=24000
CONFIG_LD_IS_BFD=y
CONFIG_LD_VERSION=24000
CONFIG_LLD_VERSION=0
CONFIG_RUSTC_VERSION=109500
CONFIG_RUSTC_LLVM_VERSION=220102
CONFIG_CC_CAN_LINK=y
CONFIG_GCC_ASM_GOTO_OUTPUT_BROKEN=y
CONFIG_CC_HAS_ASM_INLINE=y
CONFIG_RUSTC_HAS_UNNECESSARY_TRANSMUTES=y
CONFIG_PAHOLE_VERSION=0
CONFIG_IRQ_WORK=y

#
# General setup
#
CONFIG_LOCALVERSION=\"\"
# CONFIG_LOCALVERSION_AUTO is not set
CONFIG_VIRT_CPU_ACCOUNTING_GEN=y
CONFIG_IKCONFIG=y
# CONFIG_HZ_250 is not set
CONFIG_HZ_1000=y
CONFIG_HZ=1000
";

    fn edited(edits: &[(&str, &str)]) -> String {
        edits
            .iter()
            .fold(SMOKE_CONFIG.to_string(), |text, (from, to)| {
                assert!(text.contains(from), "{from}");
                text.replacen(from, to, 1)
            })
    }

    #[test]
    fn the_config_digest_ignores_what_differs_between_machines() {
        let smoke = config_digest(SMOKE_CONFIG);
        for edits in [
            // Another Debian 12 point update of gcc, or another distribution's.
            &[(
                "gcc (Debian 12.2.0-14+deb12u1) 12.2.0",
                "gcc (Debian 12.2.0-14+deb12u2) 12.2.0",
            )][..],
            &[("CONFIG_GCC_VERSION=120200", "CONFIG_GCC_VERSION=120300")],
            // binutils, rustc and pahole as another machine has them.
            &[
                ("CONFIG_AS_VERSION=24000", "CONFIG_AS_VERSION=24100"),
                ("CONFIG_LD_VERSION=24000", "CONFIG_LD_VERSION=24100"),
            ],
            &[
                ("CONFIG_RUSTC_VERSION=109500", "CONFIG_RUSTC_VERSION=109800"),
                (
                    "CONFIG_RUSTC_LLVM_VERSION=220102",
                    "CONFIG_RUSTC_LLVM_VERSION=210107",
                ),
                (
                    "CONFIG_RUSTC_HAS_UNNECESSARY_TRANSMUTES=y\n",
                    "CONFIG_RUSTC_HAS_UNNECESSARY_TRANSMUTES=y\n\
                     CONFIG_RUSTC_HAS_SUSPICIOUS_RUNTIME_SYMBOL_DEFINITIONS=y\n",
                ),
            ],
            // No rustc at all, and a pahole where there was none.
            &[
                ("CONFIG_RUSTC_VERSION=109500", "CONFIG_RUSTC_VERSION=0"),
                ("CONFIG_RUSTC_HAS_UNNECESSARY_TRANSMUTES=y\n", ""),
                (
                    "CONFIG_PAHOLE_VERSION=0",
                    "CONFIG_PAHOLE_VERSION=125\nCONFIG_PAHOLE_HAS_SPLIT_BTF=y",
                ),
            ],
            // A full Rust toolchain makes CONFIG_RUST visible, not chosen.
            &[(
                "CONFIG_CC_CAN_LINK=y\n",
                "CONFIG_RUST_IS_AVAILABLE=y\nCONFIG_CC_CAN_LINK=y\n",
            )],
            &[(
                "CONFIG_IRQ_WORK=y\n",
                "CONFIG_IRQ_WORK=y\n# CONFIG_RUST is not set\n",
            )],
            // Debian's point release of the tree (the 2026-12-01 table's
            // line was of 6.12.117), and the menu titles.
            &[("6.12.118 Kernel", "6.12.117 Kernel")],
            &[("# General setup\n", "")],
        ] {
            assert_eq!(config_digest(&edited(edits)), smoke, "{edits:?}");
        }
    }

    #[test]
    fn the_config_digest_changes_with_any_option_that_is_set() {
        let smoke = config_digest(SMOKE_CONFIG);
        for edits in [
            // kernel.cputime: tick instead of precise.
            &[
                ("CONFIG_VIRT_CPU_ACCOUNTING_GEN=y\n", ""),
                ("# CONFIG_HZ_250 is not set", "CONFIG_HZ_250=y"),
                ("CONFIG_HZ_1000=y", "# CONFIG_HZ_1000 is not set"),
                ("CONFIG_HZ=1000", "CONFIG_HZ=250"),
            ][..],
            &[("CONFIG_IKCONFIG=y\n", "")],
            &[("CONFIG_LOCALVERSION=\"\"", "CONFIG_LOCALVERSION=\"-pb\"")],
            &[(
                "# CONFIG_LOCALVERSION_AUTO is not set",
                "CONFIG_LOCALVERSION_AUTO=y",
            )],
            // Which tools, and what the compiler can do, are kept.
            &[("CONFIG_CC_IS_GCC=y\n", "CONFIG_CC_IS_CLANG=y\n")],
            &[("CONFIG_CC_HAS_ASM_INLINE=y\n", "")],
            &[("CONFIG_GCC_ASM_GOTO_OUTPUT_BROKEN=y\n", "")],
        ] {
            assert_ne!(config_digest(&edited(edits)), smoke, "{edits:?}");
        }
    }

    #[test]
    fn only_the_listed_toolchain_symbols_are_left_out() {
        for symbol in ["GCC_VERSION", "RUSTC_HAS_ANYTHING", "PAHOLE_HAS_BTF_TAG"] {
            assert!(machine_specific(symbol), "{symbol}");
        }
        // Exact names are not prefixes.
        for symbol in ["GCC_VERSION_X", "GCC_PLUGINS", "LD_IS_BFD", "RUSTC", "RUST"] {
            assert!(!machine_specific(symbol), "{symbol}");
        }
    }

    #[test]
    fn the_config_digest_is_the_sha256_of_the_set_lines_each_ended_by_a_newline() {
        // So `grep` of the kept lines piped to `sha256sum` gives it too.
        let config = "#\n# Linux/x86 6.12.118 Kernel Configuration\nCONFIG_GCC_VERSION=1\n\
                      CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=\"x\"";
        assert_eq!(
            config_digest(config),
            hex::encode(Sha256::digest(b"CONFIG_A=y\nCONFIG_C=\"x\"\n"))
        );
    }

    #[test]
    fn the_kernel_release_is_read_from_the_config_header() {
        assert_eq!(config_kernel_release(SMOKE_CONFIG), Some("6.12.118"));
        assert_eq!(config_kernel_release("CONFIG_A=y\n"), None);
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
        let log = "  HOSTCC  scripts/basic/fixdep\n  CC      mm/zswap.o\n  AS      arch/x86/entry/entry_64.o\n  LD      vmlinux.o\n";
        assert_eq!(count_compiled(log), 2);
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
