//! The fake `make`: what patchbench's kernel build (src/build) asks of
//! kbuild, out of tree, deterministically.
//!
//! Understood: `-C SRC O=OUT -jN KBUILD_BUILD_USER=.. KBUILD_BUILD_HOST=..
//! KBUILD_BUILD_TIMESTAMP=.. KBUILD_BUILD_VERSION=N [CC=..] TARGET`,
//! TARGET one of `tinyconfig`, `defconfig`, `olddefconfig`, `bzImage`.
//! Anything else is refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use crate::{FakeKernel, Refused, refuse};

/// One parsed command line.
#[derive(Debug, PartialEq)]
pub struct Invocation {
    pub src: PathBuf,
    pub out: PathBuf,
    pub target: String,
}

/// Parse make's arguments as patchbench gives them.
pub fn parse(args: &[String]) -> Result<Invocation, Refused> {
    let (mut src, mut out, mut target) = (None, None, None);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "-C" => {
                src = Some(PathBuf::from(
                    it.next()
                        .ok_or_else(|| Refused("-C without a directory".into()))?,
                ))
            }
            a if a.starts_with("O=") => out = Some(PathBuf::from(&a[2..])),
            a if a.starts_with("-j") && a[2..].parse::<u32>().is_ok_and(|n| n > 0) => {}
            "KBUILD_BUILD_USER=patchbench" | "KBUILD_BUILD_HOST=patchbench" => {}
            a if a
                .strip_prefix("KBUILD_BUILD_TIMESTAMP=")
                .is_some_and(|t| !t.is_empty()) => {}
            a if a
                .strip_prefix("KBUILD_BUILD_VERSION=")
                .is_some_and(|n| n.parse::<u32>().is_ok()) => {}
            a if a.starts_with("CC=") => {}
            "tinyconfig" | "defconfig" | "olddefconfig" | "bzImage" if target.is_none() => {
                target = Some(arg.clone())
            }
            other => refuse!(
                "does not understand the argument {other:?} (in: make {})",
                args.join(" ")
            ),
        }
    }
    match (src, out, target) {
        (Some(src), Some(out), Some(target)) => Ok(Invocation { src, out, target }),
        _ => refuse!(
            "patchbench always gives -C SRC, O=OUT and one target; got: make {}",
            args.join(" ")
        ),
    }
}

pub fn main(args: &[String]) -> Result<(), Refused> {
    let inv = parse(args)?;
    if !inv.src.join("Makefile").is_file() {
        refuse!("no Makefile in {}", inv.src.display());
    }
    if !inv.out.is_dir() {
        refuse!("the build directory {} does not exist", inv.out.display());
    }
    crate::log(&format!("make {} {}", inv.target, inv.out.display()))?;
    let kconfig = Kconfig::read(&inv.src)?;
    match inv.target.as_str() {
        "tinyconfig" => kconfig.write(&inv.out, &BTreeMap::new(), false),
        "defconfig" => kconfig.write(&inv.out, &BTreeMap::new(), true),
        "olddefconfig" => {
            let path = inv.out.join(".config");
            let text = std::fs::read_to_string(&path)
                .map_err(|e| Refused(format!("olddefconfig needs {}: {e}", path.display())))?;
            kconfig.write(&inv.out, &parse_config(&text), true)
        }
        "bzImage" => build(&inv.src, &inv.out),
        _ => unreachable!("parse accepts only these targets"),
    }
}

/// One `config NAME` block of a Kconfig file.
#[derive(Debug, Clone)]
struct Symbol {
    name: String,
    boolean: bool,
    default: Option<String>,
    /// Symbols that must be `y`.
    depends: Vec<String>,
}

/// Every symbol the tree's `Kconfig*` files declare, in name order.
struct Kconfig(Vec<Symbol>);

impl Kconfig {
    fn read(src: &Path) -> Result<Kconfig, Refused> {
        let mut symbols: BTreeMap<String, Symbol> = BTreeMap::new();
        for path in files(src, &|name| name.starts_with("Kconfig"))? {
            let text = std::fs::read_to_string(src.join(&path))?;
            let mut current: Option<Symbol> = None;
            for line in text.lines().map(str::trim) {
                let words: Vec<&str> = line.split_whitespace().collect();
                match words[..] {
                    ["config", name] | ["menuconfig", name] => {
                        if let Some(s) = current.take() {
                            symbols.insert(s.name.clone(), s);
                        }
                        current = Some(Symbol {
                            name: name.to_string(),
                            boolean: true,
                            default: None,
                            depends: Vec::new(),
                        });
                    }
                    _ => {
                        let Some(s) = current.as_mut() else { continue };
                        match words.first().copied() {
                            Some("bool" | "tristate") => s.boolean = true,
                            Some("int" | "string" | "hex") => s.boolean = false,
                            Some("default") => s.default = Some(words[1..].join(" ")),
                            Some("depends") if words.get(1) == Some(&"on") => s.depends.extend(
                                words[2..]
                                    .join(" ")
                                    .split("&&")
                                    .map(|d| d.trim().to_string()),
                            ),
                            _ => {}
                        }
                    }
                }
            }
            if let Some(s) = current.take() {
                symbols.insert(s.name.clone(), s);
            }
        }
        if symbols.is_empty() {
            refuse!("no Kconfig file in {} declares a symbol", src.display());
        }
        Ok(Kconfig(symbols.into_values().collect()))
    }

    /// Write `out/.config`: each symbol's value in `set` (an explicit
    /// value, or `None` for "is not set"), else its default when
    /// `defaults`, dependencies enforced; symbols no Kconfig declares are
    /// dropped, as kconfig drops them.
    fn write(
        &self,
        out: &Path,
        set: &BTreeMap<String, Option<String>>,
        defaults: bool,
    ) -> Result<(), Refused> {
        let mut values: BTreeMap<&str, Option<String>> = self
            .0
            .iter()
            .map(|s| {
                let value = match set.get(&s.name) {
                    Some(v) => v.clone(),
                    None if defaults => s.default.clone(),
                    None => None,
                };
                (s.name.as_str(), value)
            })
            .collect();
        // Until nothing changes: a symbol whose dependency is off goes off.
        loop {
            let off: Vec<&str> = self
                .0
                .iter()
                .filter(|s| values[s.name.as_str()].is_some())
                .filter(|s| {
                    s.depends
                        .iter()
                        .any(|d| values.get(d.as_str()).and_then(|v| v.as_deref()) != Some("y"))
                })
                .map(|s| s.name.as_str())
                .collect();
            if off.is_empty() {
                break;
            }
            for name in off {
                values.insert(name, None);
            }
        }
        let mut text = String::from(
            "#\n# Automatically generated file; DO NOT EDIT.\n# Linux/x86 (patchbench fake) Kernel Configuration\n#\n",
        );
        for s in &self.0 {
            match &values[s.name.as_str()] {
                Some(v) => text.push_str(&format!("CONFIG_{}={v}\n", s.name)),
                None if s.boolean => text.push_str(&format!("# CONFIG_{} is not set\n", s.name)),
                None => {}
            }
        }
        std::fs::write(out.join(".config"), text)?;
        Ok(())
    }
}

/// A `.config`'s settings: `CONFIG_X=v` and `# CONFIG_X is not set`.
fn parse_config(text: &str) -> BTreeMap<String, Option<String>> {
    let mut set = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if let Some(name) = line
            .strip_prefix("# CONFIG_")
            .and_then(|l| l.strip_suffix(" is not set"))
        {
            set.insert(name.to_string(), None);
        } else if let Some((name, value)) =
            line.strip_prefix("CONFIG_").and_then(|l| l.split_once('='))
        {
            set.insert(name.to_string(), Some(value.to_string()));
        }
    }
    set
}

/// Files below `src` (`.git` aside) whose name passes `keep`, relative,
/// sorted.
fn files(src: &Path, keep: &dyn Fn(&str) -> bool) -> Result<Vec<PathBuf>, Refused> {
    let mut found = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(rel) = dirs.pop() {
        for entry in std::fs::read_dir(src.join(&rel))? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == ".git" {
                continue;
            }
            let kind = entry.file_type()?;
            if kind.is_dir() {
                dirs.push(rel.join(&name));
            } else if kind.is_file() && keep(&name) {
                found.push(rel.join(&name));
            }
        }
    }
    found.sort();
    Ok(found)
}

fn mtime(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The release the top Makefile names: `VERSION.PATCHLEVEL.SUBLEVEL` and
/// `EXTRAVERSION`.
fn release(src: &Path) -> Result<String, Refused> {
    let text = std::fs::read_to_string(src.join("Makefile"))?;
    let var = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    match (var("VERSION"), var("PATCHLEVEL"), var("SUBLEVEL")) {
        (Some(v), Some(p), Some(s)) => Ok(format!(
            "{v}.{p}.{s}{}",
            var("EXTRAVERSION").unwrap_or_default()
        )),
        _ => refuse!(
            "the top Makefile of {} names no VERSION, PATCHLEVEL and SUBLEVEL",
            src.display()
        ),
    }
}

/// `make bzImage`: compile each `.c` whose object is missing or older than
/// it (or than the `.config`), then link the kernel.
fn build(src: &Path, out: &Path) -> Result<(), Refused> {
    let config_path = out.join(".config");
    let config = std::fs::read_to_string(&config_path).map_err(|e| {
        Refused(format!(
            "bzImage needs a configured {}: {e}",
            config_path.display()
        ))
    })?;
    let config_time = mtime(&config_path);
    let release = release(src)?;
    // Real make parses its makefiles for seconds before its first object.
    // Without a pause, an object written within a jiffy of the build's
    // start gets a file time (the kernel's coarse clock) before the start
    // patchbench read from the fine one, and is not counted as rebuilt.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut digest = Sha256::new();
    let mut effects = Vec::new();
    for rel in files(src, &|name| name.ends_with(".c"))? {
        let source = src.join(&rel);
        let object_rel = rel.with_extension("o");
        let object = out.join(&object_rel);
        let text = std::fs::read_to_string(&source)?;
        let stale = match mtime(&object) {
            None => true,
            Some(built) => {
                mtime(&source).is_none_or(|s| s > built) || config_time.is_none_or(|c| c > built)
            }
        };
        if stale {
            compile(src, &rel, &text, out)?;
            println!("  CC      {}", object_rel.display());
        }
        let object_text = std::fs::read_to_string(&object)?;
        for line in object_text.lines() {
            if let Some(effect) = line.strip_prefix("effect ") {
                let (metric, pct) = effect
                    .split_once(' ')
                    .ok_or_else(|| Refused(format!("bad object {}", object.display())))?;
                effects.push((metric.to_string(), pct.parse::<f64>()?));
            }
        }
        digest.update(object_rel.to_string_lossy().as_bytes());
        digest.update(b"\0");
        digest.update(object_text.as_bytes());
    }
    digest.update(config.as_bytes());
    let kernel = FakeKernel {
        release,
        digest: hex::encode(digest.finalize()),
        effects,
        config,
    };
    let image = kernel.render();
    println!("  LD      vmlinux");
    std::fs::write(out.join("vmlinux"), &image)?;
    std::fs::write(out.join("System.map"), "ffffffff81000000 T _stext\n")?;
    let boot = out.join("arch/x86/boot");
    std::fs::create_dir_all(&boot)?;
    std::fs::write(boot.join("bzImage"), &image)?;
    println!("Kernel: arch/x86/boot/bzImage is ready  (#1)");
    Ok(())
}

/// Compile one source: its object holds the source's hash and effects,
/// and its `.cmd` file the dependency kbuild records.
fn compile(src: &Path, rel: &Path, text: &str, out: &Path) -> Result<(), Refused> {
    let mut object = format!(
        "fake object of {}\nsha256 {}\n",
        rel.display(),
        hex::encode(Sha256::digest(text.as_bytes()))
    );
    for (n, line) in text.lines().enumerate() {
        if line.contains(crate::ERROR_MARKER) {
            eprintln!(
                "{}:{}:1: error: {} asked for a failed build",
                rel.display(),
                n + 1,
                crate::ERROR_MARKER
            );
            refuse!("*** [{}] Error 1", rel.with_extension("o").display());
        }
        if let Some(effect) = crate::effect_in(line) {
            let (metric, pct) = effect?;
            object.push_str(&format!("effect {metric} {pct}\n"));
        }
    }
    let object_rel = rel.with_extension("o");
    let path = out.join(&object_rel);
    std::fs::create_dir_all(path.parent().expect("an object has a directory"))?;
    std::fs::write(&path, object)?;
    let name = object_rel
        .file_name()
        .expect("an object has a name")
        .to_string_lossy();
    let cmd = path.with_file_name(format!(".{name}.cmd"));
    let o = object_rel.display();
    let s = src.join(rel);
    std::fs::write(
        cmd,
        format!(
            "savedcmd_{o} := gcc -c -o {o} {s}\n\nsource_{o} := {s}\n\ndeps_{o} := \\\n  {s} \\\n\n{o}: $(deps_{o})\n",
            s = s.display()
        ),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn patchbench_s_command_lines_parse_and_others_are_refused() {
        let inv = parse(&args(&[
            "-C",
            "/src",
            "O=/out",
            "-j2",
            "KBUILD_BUILD_USER=patchbench",
            "KBUILD_BUILD_HOST=patchbench",
            "KBUILD_BUILD_TIMESTAMP=Wed Jan  1 00:00:00 UTC 2020",
            "KBUILD_BUILD_VERSION=1",
            "CC=ccache gcc",
            "olddefconfig",
        ]))
        .unwrap();
        assert_eq!(
            inv,
            Invocation {
                src: "/src".into(),
                out: "/out".into(),
                target: "olddefconfig".into()
            }
        );
        for bad in [
            &["-C", "/src", "O=/out", "modules"][..],
            &["-C", "/src", "O=/out", "bzImage", "bzImage"],
            &["-C", "/src", "bzImage"],
            &["-C", "/src", "O=/out", "V=1", "bzImage"],
        ] {
            let err = parse(&args(bad)).unwrap_err();
            assert!(!err.0.is_empty(), "{bad:?}");
        }
    }

    #[test]
    fn olddefconfig_drops_undeclared_symbols_and_follows_dependencies() {
        let dir = std::env::temp_dir().join(format!("fake-make-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("mm")).unwrap();
        std::fs::write(
            dir.join("Kconfig"),
            "config SWAP\n\tbool \"swap\"\n\tdefault y\nconfig HZ\n\tint\n\tdefault 250\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("mm/Kconfig"),
            "config ZSWAP\n\tbool \"zswap\"\n\tdepends on SWAP\n",
        )
        .unwrap();
        let k = Kconfig::read(&dir).unwrap();
        let set = parse_config("CONFIG_ZSWAP=y\n# CONFIG_SWAP is not set\nCONFIG_NOWHERE=y\n");
        k.write(&dir, &set, true).unwrap();
        let text = std::fs::read_to_string(dir.join(".config")).unwrap();
        assert!(text.contains("# CONFIG_SWAP is not set\n"), "{text}");
        assert!(text.contains("# CONFIG_ZSWAP is not set\n"), "{text}");
        assert!(text.contains("CONFIG_HZ=250\n"), "{text}");
        assert!(!text.contains("NOWHERE"), "{text}");
        let set = parse_config("CONFIG_ZSWAP=y\n");
        k.write(&dir, &set, true).unwrap();
        let text = std::fs::read_to_string(dir.join(".config")).unwrap();
        assert!(text.contains("CONFIG_SWAP=y\nCONFIG_ZSWAP=y\n"), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
