//! Phase markers: how the guest tells the cost-model plugin where a phase
//! of a sample begins and ends, without registers (the v1 plugin API cannot
//! read them) and without I/O.
//!
//! A marker is one 8-byte multi-byte NOP, `nopl disp32(%rax,%rax,1)`
//! (`0f 1f 84 00` + a little-endian 32-bit displacement), whose
//! displacement carries [`MAGIC`] in its top 16 bits, the kind (begin, end,
//! model on) in the next 4 and the phase in the low 12. The CPU ignores the
//! displacement: on real hardware, under KVM and under TCG without the
//! plugin, a marker is a NOP. The plugin recognises it from the
//! instruction's bytes when it translates it. Compilers pad with the same
//! NOP, but only with displacement 0.
//!
//! The agent emits markers with inline assembly (its `mark` module); this
//! module is the encoding both sides share.

/// The first four bytes of every marker.
pub const OPCODE: [u8; 4] = [0x0f, 0x1f, 0x84, 0x00];
/// A marker's length in bytes.
pub const LEN: usize = 8;
/// The displacement's top 16 bits: "PB".
pub const MAGIC: u32 = 0x5042_0000;

/// What a marker says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// A phase starts.
    Begin(Phase),
    /// A phase ends.
    End(Phase),
    /// Start modelling caches: the agent says so once, after its setup and
    /// before any workload. Until then the plugin only watches for markers,
    /// so the boot runs at icount's speed; at this marker it has QEMU
    /// retranslate everything with the model's instrumentation.
    ModelOn,
}

/// The phases a workload marks. A phase's name prefixes its metrics
/// (`<name>_insns`, `<name>_modeled_cycles`...), so it matches the name of
/// the timed phase the workload already reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// zswap-pageout: a worker's whole timed body (`total_cpu_ns`).
    Total,
    /// zswap-pageout: the MADV_PAGEOUT call (`pageout_cpu_ns`).
    Pageout,
    /// zswap-pageout: reading back and checking every page (`verify_cpu_ns`).
    Verify,
    /// rstat-flush: the timed `pread()` loop (`read_loop_ns`).
    ReadLoop,
    /// reclaim-refault: every worker's write and read-back (`real_ns`);
    /// mm-selftest: the program, spawn to exit (`real_ns`).
    Run,
    /// kernel-build: the timed `make` (`real_ns`).
    Build,
    /// The agent's `marked-loop` developer command: a loop of a known
    /// instruction count, for testing the plugin.
    Probe,
    /// The mm benchmark library ([`crate::bench`]): every task's
    /// operations (`ops_ns`); stress-ng: its run, spawn to exit, whose
    /// bogo operations are its `ops` (`real_ns`).
    Ops,
    /// kernel-boot: the kernel's boot, from the plugin's install (QEMU's
    /// start, before the firmware) to the agent's first instruction as
    /// PID 1. The plugin opens this window itself when asked (`boot=on`);
    /// the agent only ends it, and a plugin not asked ignores that end.
    Boot,
}

impl Phase {
    pub const ALL: [Phase; 9] = [
        Phase::Total,
        Phase::Pageout,
        Phase::Verify,
        Phase::ReadLoop,
        Phase::Run,
        Phase::Build,
        Phase::Probe,
        Phase::Ops,
        Phase::Boot,
    ];

    /// The 12-bit id in the displacement (never 0).
    pub const fn id(self) -> u32 {
        match self {
            Phase::Total => 1,
            Phase::Pageout => 2,
            Phase::Verify => 3,
            Phase::ReadLoop => 4,
            Phase::Run => 5,
            Phase::Build => 6,
            Phase::Probe => 7,
            Phase::Ops => 8,
            Phase::Boot => 9,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Phase::Total => "total",
            Phase::Pageout => "pageout",
            Phase::Verify => "verify",
            Phase::ReadLoop => "read_loop",
            Phase::Run => "run",
            Phase::Build => "build",
            Phase::Probe => "probe",
            Phase::Ops => "ops",
            Phase::Boot => "boot",
        }
    }
}

/// The displacement of a marker.
pub const fn encode(marker: Marker) -> u32 {
    match marker {
        Marker::Begin(phase) => MAGIC | 1 << 12 | phase.id(),
        Marker::End(phase) => MAGIC | 2 << 12 | phase.id(),
        Marker::ModelOn => MAGIC | 3 << 12,
    }
}

/// The marker a displacement encodes, if it is one.
pub fn decode(displacement: u32) -> Option<Marker> {
    if displacement & 0xffff_0000 != MAGIC {
        return None;
    }
    let id = displacement & 0xfff;
    let phase = || Phase::ALL.into_iter().find(|p| p.id() == id);
    match (displacement >> 12) & 0xf {
        1 => phase().map(Marker::Begin),
        2 => phase().map(Marker::End),
        3 if id == 0 => Some(Marker::ModelOn),
        _ => None,
    }
}

/// The marker an instruction's bytes encode, if it is one.
pub fn decode_instruction(bytes: &[u8]) -> Option<Marker> {
    if bytes.len() != LEN || bytes[..4] != OPCODE {
        return None;
    }
    decode(u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_marker_decodes_to_itself() {
        let markers = Phase::ALL
            .into_iter()
            .flat_map(|p| [Marker::Begin(p), Marker::End(p)])
            .chain([Marker::ModelOn]);
        for marker in markers {
            let d = encode(marker);
            assert_eq!(decode(d), Some(marker), "{d:#x}");
            let mut bytes = OPCODE.to_vec();
            bytes.extend(d.to_le_bytes());
            assert_eq!(decode_instruction(&bytes), Some(marker));
        }
        assert_eq!(encode(Marker::Begin(Phase::Pageout)), 0x5042_1002);
        assert_eq!(encode(Marker::ModelOn), 0x5042_3000);
    }

    #[test]
    fn ordinary_nops_and_other_instructions_are_not_markers() {
        // The padding NOP compilers emit: displacement 0.
        assert_eq!(
            decode_instruction(&[0x0f, 0x1f, 0x84, 0x00, 0, 0, 0, 0]),
            None
        );
        // Magic, but no such kind or phase.
        assert_eq!(decode(MAGIC | 4 << 12 | 1), None);
        assert_eq!(decode(MAGIC | 3 << 12 | 1), None);
        assert_eq!(decode(MAGIC | 1 << 12 | 0xfff), None);
        // A marker's displacement on another opcode (a real load).
        let mut load = vec![0x48, 0x8b, 0x84, 0x00];
        load.extend(encode(Marker::Begin(Phase::Total)).to_le_bytes());
        assert_eq!(decode_instruction(&load), None);
        assert_eq!(decode_instruction(&OPCODE), None);
    }

    #[test]
    fn phase_names_are_unique_metric_prefixes() {
        let mut names: Vec<_> = Phase::ALL.iter().map(|p| p.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Phase::ALL.len());
        assert!(
            names
                .iter()
                .all(|n| n.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        );
    }
}
