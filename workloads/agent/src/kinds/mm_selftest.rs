//! `mm-selftest`: a program of the kernel tree's own
//! `tools/testing/selftests/mm` (`vm` before 6.2) that times itself,
//! built by the host from the tree under test (its base commit, with that
//! tree's own uapi headers), statically, so that it matches the kernel's
//! version and needs nothing of the guest. The host stages it into the
//! boot's initramfs ([`crate::staged`]); each sample runs it once, in one
//! window from spawn to exit (the `run` phase), and reads the times it
//! printed. Spec: `workloads/mm-selftest.yaml`.

use serde::{Deserialize, Serialize};

use crate::kind::Kind;

/// A selftest program, built from the tree under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MmSelftest {
    pub program: SelftestProgram,
    /// The archive (a host path) holding the built program, appended to
    /// every boot's initramfs.
    pub archive: String,
    /// The tree it was built from: the base commit, as the host names it.
    pub commit: String,
}

impl Kind for MmSelftest {
    fn initramfs_archives(&self) -> Vec<String> {
        vec![self.archive.clone()]
    }

    fn describe(&self) -> String {
        format!(
            "{} {} (built from {}, staged from {})",
            self.program.name(),
            self.program.args().join(" "),
            self.commit,
            self.archive
        )
    }
}

/// The selftests the kind knows: each prints times of its own, which only
/// a parser for its output reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SelftestProgram {
    /// `mremap_test`: moves regions of 8 KiB to 2 GiB between source and
    /// destination alignments (page, 1 MiB, PMD, PUD), checks the moved
    /// bytes, and prints each move's time where the whole region was
    /// faulted in (`mremap time: <n>ns`; the same line in 6.1's `vm/` and
    /// 6.12's `mm/`).
    MremapTest,
}

impl SelftestProgram {
    pub const ALL: [SelftestProgram; 1] = [SelftestProgram::MremapTest];

    /// Its name in the selftests' directory (its `.c` file's stem).
    pub const fn name(self) -> &'static str {
        match self {
            SelftestProgram::MremapTest => "mremap_test",
        }
    }

    /// Its arguments. mremap_test: `-p 1`, a fixed seed for the pattern
    /// it fills its regions with (it seeds from the clock otherwise), and
    /// its default threshold (4 MiB of each region faulted in and checked).
    pub const fn args(self) -> &'static [&'static str] {
        match self {
            SelftestProgram::MremapTest => &["-p", "1"],
        }
    }

    /// Whether it maps more than a 1 GiB guest has: mremap_test maps 2 GiB
    /// shared regions (and touches only its threshold of each), which the
    /// kernel's default overcommit heuristic refuses where memory and swap
    /// are smaller; the guest sets `vm.overcommit_memory` to 1 for it.
    pub const fn overcommits(self) -> bool {
        match self {
            SelftestProgram::MremapTest => true,
        }
    }

    /// The times it printed: how many, and their sum in ns.
    pub fn reported(self, output: &str) -> Result<Reported, String> {
        match self {
            SelftestProgram::MremapTest => {
                let mut reported = Reported { count: 0, ns: 0 };
                for line in output.lines() {
                    let Some(rest) = line.trim().strip_prefix("mremap time:") else {
                        continue;
                    };
                    let digits = rest.trim().strip_suffix("ns").unwrap_or("").trim();
                    let ns: u64 = digits
                        .parse()
                        .map_err(|_| format!("a time that is not `<n>ns`: {line:?}"))?;
                    reported.count += 1;
                    reported.ns += ns;
                }
                if reported.count == 0 {
                    return Err("it printed no `mremap time`".into());
                }
                Ok(reported)
            }
        }
    }
}

/// The times a selftest printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reported {
    pub count: u64,
    pub ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mremap_tests_times_are_summed() {
        let output = "# Test configs:\n\tthreshold_mb=4\n\tpattern_seed=1\n\n1..19\n\
            ok 3 # XFAIL mremap - Source Address Misaligned (1KB-aligned)\n\
            \tExpected mremap failure\n\
            ok 4 8KB mremap - Source PTE-aligned, Destination PTE-aligned\n\
            \tmremap time:        31827ns\n\
            ok 5 2MB mremap - Source 1MB-aligned, Destination PTE-aligned\n\
            \tmremap time:        24807ns\n\
            ok 10 2GB mremap - Source PUD-aligned, Destination PTE-aligned\n";
        let got = SelftestProgram::MremapTest.reported(output).unwrap();
        assert_eq!(
            got,
            Reported {
                count: 2,
                ns: 56634
            }
        );
        let err = SelftestProgram::MremapTest
            .reported("\tmremap time: soon\n")
            .unwrap_err();
        assert!(err.contains("soon"), "{err}");
        assert!(SelftestProgram::MremapTest.reported("ok 1\n").is_err());
    }

    #[test]
    fn a_program_is_named_on_the_wire_as_in_the_tree() {
        for program in SelftestProgram::ALL {
            let json = serde_json::to_value(program).unwrap();
            assert_eq!(json, program.name());
        }
    }
}
