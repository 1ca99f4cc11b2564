//! A selftest's staged root: the program built from the campaign's base
//! commit, the tree under test, so that it is the version that tree's
//! kernel ships with. The selftests' directory is `tools/testing/selftests/
//! mm` (`vm` before 6.2). The tree's uapi headers come from its own `make
//! headers`, out of tree (`make O=<dir>` writes nothing into the
//! checkout), and the program is compiled as the directory's Makefile
//! compiles it (its CFLAGS and LDLIBS), plus `-static`, so that the guest
//! needs none of its libraries, with any helper `.c` of the directory
//! whose header it includes. The compiler is called directly rather than
//! through the Makefile, whose `check_config.sh` writes into the
//! checkout, which kernel-build shares.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository};
use patchbench_agent::kinds::mm_selftest::SelftestProgram;
use sha2::{Digest, Sha256};

use super::archive::{archive_name, write};
use super::error::{StageError, io_err};
use crate::events::{Event, Sink};
use crate::process::{self, Cmd};
use crate::workload::StagedArchive;

/// The selftests' directories, newest name first.
const SELFTEST_DIRS: [&str; 2] = ["tools/testing/selftests/mm", "tools/testing/selftests/vm"];
/// Marks a complete headers directory.
const HEADERS_DONE: &str = ".patchbench-headers";

/// `program`, built from `commit` and staged (unless the cache holds it).
pub(super) async fn stage(
    program: SelftestProgram,
    repo: &Repository,
    commit: Oid,
    cache_dir: &Path,
    dir: &Path,
    sink: &dyn Sink,
) -> Result<StagedArchive, StageError> {
    let name = program.name();
    let tree = repo
        .workdir()
        .unwrap_or(repo.path())
        .display()
        .to_string()
        .trim_end_matches('/')
        .to_string();
    let compiler = crate::build::compiler_version()
        .await
        .map_err(|e| StageError::Compiler(Box::new(e)))?;
    let mut h = Sha256::new();
    for part in [commit.to_string().as_str(), name, &compiler] {
        h.update(part.as_bytes());
        h.update(b"\0");
    }
    let archive = dir.join(archive_name("mm-selftest", &h.finalize()));
    let staged = StagedArchive {
        archive: archive.clone(),
        source: commit.to_string(),
    };
    if archive.is_file() {
        return Ok(staged);
    }
    let src = crate::kbuild::export(repo.path(), commit, &cache_dir.join("kbuild"), sink)
        .await
        .map_err(|source| StageError::Export {
            commit: commit.to_string(),
            source: Box::new(source),
        })?;
    let Some((selftests, c_file)) = SELFTEST_DIRS
        .iter()
        .map(|d| (src.join(d), src.join(d).join(format!("{name}.c"))))
        .find(|(_, c)| c.is_file())
    else {
        return Err(StageError::NoSelftest {
            program: name,
            tree,
            commit: commit.to_string(),
            tried: SELFTEST_DIRS
                .iter()
                .map(|d| format!("{d}/{name}.c"))
                .collect(),
        });
    };
    let headers = headers(&src, dir, commit, &tree, sink).await?;
    let text = std::fs::read_to_string(&c_file).map_err(io_err(&c_file))?;
    let mut sources = vec![c_file.clone()];
    sources.extend(
        local_sources(&text)
            .into_iter()
            .map(|c| selftests.join(c))
            .filter(|c| c.is_file()),
    );
    sink.emit(Event::Progress {
        stage: "mm-selftest".into(),
        detail: format!("building {name} from {tree} at {commit}"),
    });
    let out = tempfile::Builder::new()
        .prefix(".mm-selftest-")
        .tempdir_in(dir)
        .map_err(io_err(dir))?;
    let cmd = compile(&src, &headers, &sources, &out.path().join(name)).cwd(&selftests);
    process::run(&cmd).await.map_err(|e| StageError::Build {
        program: name,
        tree: tree.clone(),
        commit: commit.to_string(),
        source_file: c_file
            .strip_prefix(&src)
            .unwrap_or(&c_file)
            .display()
            .to_string(),
        first_error: match &e {
            process::ProcessError::Failed { tail, .. } => crate::build::first_error(tail),
            _ => None,
        },
        source: Box::new(e),
    })?;
    write(out.path(), &archive).await?;
    Ok(staged)
}

/// The compiler command that builds `sources` into `output`, as the
/// selftests' Makefile does (`-Wall -O2 -I <tree>`, the tree's uapi
/// headers and `tools/include/uapi` as system headers,
/// `-U_FORTIFY_SOURCE`, `-lrt -lpthread -lm`), statically.
pub fn compile(src: &Path, headers: &Path, sources: &[PathBuf], output: &Path) -> Cmd {
    Cmd::new("gcc", crate::build::CONFIG_DEADLINE)
        .args(["-static", "-Wall", "-O2", "-U_FORTIFY_SOURCE", "-I"])
        .arg(src)
        .arg("-isystem")
        .arg(headers)
        .arg("-isystem")
        .arg(src.join("tools/include/uapi"))
        .args(sources)
        .args(["-lrt", "-lpthread", "-lm", "-o"])
        .arg(output)
}

/// The helper sources a selftest's text asks for: for each local header
/// it includes from its own directory (`#include "vm_util.h"`), the `.c`
/// of the same name (the caller keeps those that exist).
pub fn local_sources(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let wanted = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("#include"))
        .filter_map(|rest| rest.trim().strip_prefix('"')?.split('"').next())
        .filter(|h| !h.contains('/'))
        .filter_map(|h| h.strip_suffix(".h"))
        .map(|stem| format!("{stem}.c"));
    for c in wanted {
        if !found.contains(&c) {
            found.push(c);
        }
    }
    found
}

/// The tree's uapi headers (`<dir>/headers-<commit>/usr/include`),
/// made with its own `make headers` unless the cache holds them.
async fn headers(
    src: &Path,
    dir: &Path,
    commit: Oid,
    tree: &str,
    sink: &dyn Sink,
) -> Result<PathBuf, StageError> {
    let done = dir.join(format!("headers-{}", &commit.to_string()[..16]));
    let include = done.join("usr/include");
    if done.join(HEADERS_DONE).is_file() {
        return Ok(include);
    }
    sink.emit(Event::Progress {
        stage: "mm-selftest".into(),
        detail: format!("making the uapi headers of {tree} at {commit}"),
    });
    let scratch = tempfile::Builder::new()
        .prefix(".headers-")
        .tempdir_in(dir)
        .map_err(io_err(dir))?;
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cmd = Cmd::new("make", crate::build::CONFIG_DEADLINE)
        .arg(format!("-j{jobs}"))
        .arg(format!("O={}", scratch.path().display()))
        .arg("headers")
        .cwd(src);
    process::run(&cmd).await.map_err(|e| StageError::Headers {
        tree: tree.to_string(),
        commit: commit.to_string(),
        source: Box::new(e),
    })?;
    let marker = scratch.path().join(HEADERS_DONE);
    std::fs::write(&marker, commit.to_string()).map_err(io_err(&marker))?;
    let made = scratch.keep();
    if std::fs::rename(&made, &done).is_err() {
        // Another run made them first: theirs are the same.
        std::fs::remove_dir_all(&made).map_err(io_err(&made))?;
    }
    Ok(include)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository of one commit holding `files` (path, text).
    fn tree_of(dir: &Path, files: &[(&str, &str)]) -> (Repository, Oid) {
        let repo = Repository::init(dir).unwrap();
        let mut index = repo.index().unwrap();
        for (path, text) in files {
            let full = dir.join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(&full, text).unwrap();
            index.add_path(Path::new(path)).unwrap();
        }
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::new("t", "t@t", &git2::Time::new(0, 0)).unwrap();
        let commit = repo.commit(None, &sig, &sig, "tree", &tree, &[]).unwrap();
        drop(tree);
        (repo, commit)
    }

    /// mremap_test staged from `commit` of `repo`, with its cache under
    /// `work`.
    async fn stage_mremap_test(
        work: &Path,
        repo: &Repository,
        commit: Oid,
    ) -> Result<StagedArchive, StageError> {
        let cache = work.join("cache");
        let dir = cache.join("staged");
        std::fs::create_dir_all(&dir).unwrap();
        let sink = crate::events::Recorder::default();
        stage(
            SelftestProgram::MremapTest,
            repo,
            commit,
            &cache,
            &dir,
            &sink,
        )
        .await
    }

    /// A tree whose `make headers` makes an empty include directory.
    const MAKEFILE: &str = "headers:\n\tmkdir -p $(O)/usr/include\n";

    #[tokio::test]
    async fn a_selftest_that_does_not_build_is_named_with_its_tree_and_commit() {
        let work = tempfile::tempdir().unwrap();
        let (repo, commit) = tree_of(
            &work.path().join("linux"),
            &[
                ("Makefile", MAKEFILE),
                (
                    "tools/testing/selftests/mm/mremap_test.c",
                    "int main(void) { return not_declared; }\n",
                ),
            ],
        );
        let err = stage_mremap_test(work.path(), &repo, commit)
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("mm-selftest: mremap_test does not build in the tree"),
            "{text}"
        );
        assert!(text.contains(&commit.to_string()), "{text}");
        assert!(
            text.contains("(tools/testing/selftests/mm/mremap_test.c): ")
                && text.contains("not_declared"),
            "the compiler's first error: {text}"
        );
    }

    #[tokio::test]
    async fn a_tree_without_the_selftest_says_where_it_looked() {
        let work = tempfile::tempdir().unwrap();
        let (repo, commit) = tree_of(&work.path().join("linux"), &[("Makefile", MAKEFILE)]);
        let err = stage_mremap_test(work.path(), &repo, commit)
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("has no selftest mremap_test"), "{text}");
        assert!(
            text.contains("tools/testing/selftests/vm/mremap_test.c"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_selftest_is_built_static_and_staged_under_its_archives_name() {
        let work = tempfile::tempdir().unwrap();
        let (repo, commit) = tree_of(
            &work.path().join("linux"),
            &[
                ("Makefile", MAKEFILE),
                (
                    "tools/testing/selftests/vm/mremap_test.c",
                    "#include \"helper.h\"\nint main(void) { return helper(); }\n",
                ),
                ("tools/testing/selftests/vm/helper.h", "int helper(void);\n"),
                (
                    "tools/testing/selftests/vm/helper.c",
                    "int helper(void) { return 0; }\n",
                ),
            ],
        );
        let staged = stage_mremap_test(work.path(), &repo, commit).await.unwrap();
        assert_eq!(staged.source, commit.to_string());
        let name = staged.archive.file_stem().unwrap().to_str().unwrap();
        assert!(name.starts_with("mm-selftest-"), "{name}");
        let bytes = std::fs::read(&staged.archive).unwrap();
        let members = crate::staged::archive::members(&bytes);
        let program = format!("staged/{name}/mremap_test");
        let (_, data) = members
            .iter()
            .find(|(n, _)| *n == program)
            .unwrap_or_else(|| {
                panic!(
                    "{program} in {:?}",
                    members.iter().map(|m| &m.0).collect::<Vec<_>>()
                )
            });
        let elf = goblin::elf::Elf::parse(data).unwrap();
        assert!(elf.interpreter.is_none(), "a static program has no loader");
        // The second time, the cache's.
        let again = stage_mremap_test(work.path(), &repo, commit).await.unwrap();
        assert_eq!(again, staged);
    }

    #[test]
    fn a_local_header_brings_its_source_and_others_do_not() {
        let text = "#include <stdio.h>\n#include \"../kselftest.h\"\n\
            #include \"vm_util.h\"\n  #include \"thp_settings.h\"\n#include \"vm_util.h\"\n";
        assert_eq!(local_sources(text), ["vm_util.c", "thp_settings.c"]);
    }

    #[test]
    fn the_compiler_is_asked_for_a_static_program() {
        let cmd = compile(
            Path::new("/t"),
            Path::new("/h/usr/include"),
            &[PathBuf::from("/t/s/mremap_test.c")],
            Path::new("/o/mremap_test"),
        );
        let argv: Vec<String> = cmd.argv().map(|a| a.to_string_lossy().into()).collect();
        assert_eq!(
            argv.join(" "),
            "gcc -static -Wall -O2 -U_FORTIFY_SOURCE -I /t -isystem /h/usr/include \
             -isystem /t/tools/include/uapi /t/s/mremap_test.c -lrt -lpthread -lm -o /o/mremap_test"
        );
    }
}
