//! `kernel-build` (seeds 001 and 004): a kernel build with the host's
//! toolchain in a memory cgroup, from a staged root in the initramfs; its
//! spec is `workloads/kernel-build.yaml`, its run the agent's `kbuild`,
//! its tree prepared on the host by `patchbench::kbuild`.

use serde::{Deserialize, Serialize};

use crate::kind::{Kind, disk, is_disk};
use crate::memory::{Limit, SwapBackend};

/// Seeds 001 and 004: build `targets` of a kernel tree with the host's
/// toolchain, `make -j jobs` in a cgroup limited to `memory_max` with
/// `memory.zswap.max` at `zswap_max`, from the staged root the boot's
/// initramfs holds ([`kbuild_stage_archive`]). Each sample starts from
/// the same state: a fresh tmpfs overlay over that root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelBuild {
    /// The make target that configured the tree (`defconfig`...).
    pub config: String,
    /// How the build is driven.
    pub driver: BuildDriver,
    /// The kernel source tree: an absolute host path.
    pub src: String,
    /// The out-of-tree build directory (`O=`) the host configured and
    /// prepared, without the targets' outputs: an absolute host path.
    pub build: String,
    /// `make` targets relative to the build directory, such as
    /// `mm/zswap.o`; each must exist after every sample.
    pub targets: Vec<String>,
    /// `make -j`.
    pub jobs: u32,
    /// `memory.max` of the build's cgroup.
    pub memory_max: Limit,
    /// `memory.zswap.max` of the build's cgroup.
    pub zswap_max: Limit,
    /// The swap device: the job's disk, or zram (synchronous, so 6.12
    /// swaps large folios back in from it). Left out of the JSON for
    /// the disk, the only device before.
    #[serde(default = "disk", skip_serializing_if = "is_disk")]
    pub swap: SwapBackend,
}

impl Kind for KernelBuild {
    fn swap_backend(&self) -> SwapBackend {
        self.swap
    }

    /// Room for twice the build's limit: what is over the limit at any
    /// time is at most the build's peak, which a sensible limit sits just
    /// under.
    fn zram_bytes(&self) -> u64 {
        match self.memory_max {
            Limit::Bytes(b) => 2 * b,
            Limit::Max => 0,
        }
    }

    /// Its staged root: the guest reads no file of the build from the host
    /// (`patchbench::kbuild::stage`).
    fn initramfs_archives(&self) -> Vec<String> {
        vec![kbuild_stage_archive(&self.build)]
    }

    fn describe(&self) -> String {
        let KernelBuild {
            config,
            driver,
            src,
            build,
            targets,
            jobs,
            memory_max,
            zswap_max,
            swap,
        } = self;
        format!(
            "config={config} driver={driver:?} src={src} build={build} targets={targets:?} jobs={jobs} memory_max={} zswap_max={} swap={swap:?}",
            memory_max.cgroup_value(),
            zswap_max.cgroup_value()
        )
    }
}

/// How a [`KernelBuild`] sample builds its targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BuildDriver {
    /// `make O=<build> -j<jobs> <targets>` in the source tree: kbuild's
    /// whole machinery, as a developer types it.
    Kbuild,
    /// `make -f` [`RECORDED_MAKEFILE`] `-j<jobs>` in the build directory:
    /// only the compile commands kbuild recorded for the targets when the
    /// host built them. Under TCG kbuild's own start-up (its `$(shell)`
    /// probes, each a process) takes minutes; this runs just the compilers.
    Recorded,
}

/// The makefile the host writes into a prepared build directory for
/// [`BuildDriver::Recorded`].
pub const RECORDED_MAKEFILE: &str = "patchbench-targets.mk";

/// The staged root of the prepared build directory `build` (a host
/// path): every file a sample's build reads, toolchain and tree, under
/// their host paths, which the host writes beside the build directory and
/// the guest copies into its memory before the first sample.
pub fn kbuild_stage(build: &str) -> String {
    format!("{}.stage", build.trim_end_matches('/'))
}

/// The staged root of `build` as a newc cpio archive (a host path), its
/// members under [`KBUILD_STAGE_GUEST`]: the host appends it to every
/// boot's initramfs, so that the guest has the build's files in memory
/// from its first instruction and reads nothing over 9p.
pub fn kbuild_stage_archive(build: &str) -> String {
    format!("{}.cpio", kbuild_stage(build))
}

/// Where the kernel unpacks a kernel build's staged root in the guest.
pub const KBUILD_STAGE_GUEST: &str = "/kbuild-stage";

/// The command a kernel-build sample runs: its working directory and its
/// argv (`make` first), in host paths. The guest runs it in every sample;
/// the host runs it once, traced, to learn which files the build reads.
pub fn kbuild_command(
    driver: BuildDriver,
    src: &str,
    build: &str,
    jobs: u32,
    targets: &[String],
) -> (String, Vec<String>) {
    let jobs = format!("-j{jobs}");
    match driver {
        BuildDriver::Kbuild => {
            let mut argv = vec!["make".to_string(), format!("O={build}"), jobs];
            argv.extend(targets.iter().cloned());
            (src.to_string(), argv)
        }
        BuildDriver::Recorded => (
            build.to_string(),
            vec![
                "make".to_string(),
                "-f".to_string(),
                RECORDED_MAKEFILE.to_string(),
                jobs,
            ],
        ),
    }
}
