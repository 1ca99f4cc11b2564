//! The `mm-selftest` workload's run
//! (`patchbench_agent::kinds::mm_selftest`): a selftest the host built
//! statically from the tree under test and staged into the boot's
//! initramfs, run once per sample.
//!
//! Once per boot, untimed: `vm.overcommit_memory` is set to 1 for a
//! program that maps more than the guest has
//! ([`SelftestProgram::overcommits`]), and address-space randomization
//! is turned off ([`RANDOMIZE`]). Per sample, timed in the `run`
//! window: the program with its fixed arguments, from spawn to exit
//! ([`crate::program`]), in a scratch directory, its output to a log.
//! It must exit 0 (every case passed or failed as expected); then its
//! output gives the times it printed.

use std::path::{Path, PathBuf};

use patchbench_agent::kinds::mm_selftest::{MmSelftest, SelftestProgram};
use patchbench_agent::marker::Phase;
use patchbench_agent::staged::staged_root;

use crate::console;
use crate::error::{Context, Result, bail};
use crate::files;
use crate::hostio;
use crate::pageout::emit;
use crate::program;
use crate::report::Fields;
use crate::run::{Boot, Run};
use crate::sys;

/// The program's working directory and its log.
const SCRATCH: &str = "/run/mm-selftest";
/// The sysctl that randomizes where user mappings go. A selftest places
/// some mappings at addresses derived from its own earlier ones
/// (mremap_test's "40MB Preamble" case maps with MAP_FIXED_NOREPLACE and
/// fails with EEXIST when a randomly placed mapping is already there: the
/// second sample of the first boot of an A/A run on 6.12); with it at 0 every sample maps the same addresses,
/// so a case passes or fails the same way each time and the window's
/// page-table work repeats.
const RANDOMIZE: &str = "/proc/sys/kernel/randomize_va_space";
/// The sysctl that lets a mapping larger than memory and swap through.
const OVERCOMMIT: &str = "/proc/sys/vm/overcommit_memory";

impl Run for MmSelftest {
    fn run(&self, boot: Boot<'_>) -> Result<()> {
        let name = self.program.name();
        let program = Path::new(&staged_root(&self.archive)).join(name);
        if !program.is_file() {
            bail!(
                "the initramfs holds no staged {name} at {}: the host appends {} to every boot of this workload",
                program.display(),
                self.archive
            );
        }
        if self.program.overcommits() {
            files::write(OVERCOMMIT, "1")?;
        }
        files::write(RANDOMIZE, "0")?;
        std::fs::create_dir_all(SCRATCH).with_context(|| format!("creating {SCRATCH}"))?;
        let disks = hostio::Watch::disks()?;
        console::say(format!(
            "mm-selftest: {} {} (built from {})",
            program.display(),
            self.program.args().join(" "),
            self.commit
        ));
        let total = boot.warmups + boot.samples;
        for index in 0..total {
            let metrics = sample(self.program, &program, &disks)
                .with_context(|| format!("sample {index}"))?;
            emit(boot.port, index, boot.warmups, total, metrics)?;
        }
        Ok(())
    }
}

fn sample(which: SelftestProgram, program: &Path, disks: &hostio::Watch) -> Result<Fields> {
    let name = which.name();
    let log = PathBuf::from(SCRATCH).join(format!("{name}.log"));
    let log_file =
        std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let argv: Vec<String> = std::iter::once(program.display().to_string())
        .chain(which.args().iter().map(|a| a.to_string()))
        .collect();
    let env = [
        format!("PATH={}", patchbench_agent::HOST_PATH),
        "LC_ALL=C".to_string(),
    ];
    let start =
        || sys::spawn_in(None, Path::new(SCRATCH), &argv, &env, &log_file).and_then(sys::wait_for);
    let (exit, mut metrics) = program::run(start, Phase::Run, disks, name)?;
    program::check_exit(exit, &log, name)?;
    let output = files::read(&log)?;
    let reported = which
        .reported(&output)
        .map_err(|e| crate::error::Error::msg(format!("{name}'s output: {e}")))?;
    metrics.insert("reported".into(), reported.count);
    metrics.insert("reported_ns".into(), reported.ns);
    Ok(metrics)
}
