//! Emitting phase markers ([`patchbench_agent::marker`]) with inline
//! assembly: one 8-byte NOP each, which the cost-model plugin recognises and
//! everything else executes as a NOP.

use patchbench_agent::marker::{Marker, Phase, encode};

#[cfg(not(target_arch = "x86_64"))]
compile_error!("the agent runs in x86-64 guests: its phase markers are x86-64 NOPs");

/// One marker, its displacement a constant in the instruction.
#[inline(always)]
fn emit<const DISPLACEMENT: u32>() {
    // SAFETY: `nopl disp32(%rax,%rax,1)` reads no memory and changes no
    // register or flag. It is not `nomem`, so the compiler keeps it in
    // order with the memory accesses and calls around it.
    unsafe {
        std::arch::asm!(
            ".byte 0x0f, 0x1f, 0x84, 0x00",
            ".long {d}",
            d = const DISPLACEMENT,
            options(nostack, preserves_flags),
        );
    }
}

macro_rules! markers {
    ($marker:expr, $($p:ident),+) => {
        match $marker {
            $(
                Marker::Begin(Phase::$p) => emit::<{ encode(Marker::Begin(Phase::$p)) }>(),
                Marker::End(Phase::$p) => emit::<{ encode(Marker::End(Phase::$p)) }>(),
            )+
            Marker::ModelOn => emit::<{ encode(Marker::ModelOn) }>(),
        }
    };
}

fn mark(marker: Marker) {
    markers!(
        marker, Total, Pageout, Verify, ReadLoop, Run, Build, Probe, Ops, Boot
    )
}

/// Marks the start of `phase`.
pub fn begin(phase: Phase) {
    mark(Marker::Begin(phase))
}

/// Marks the end of `phase`.
pub fn end(phase: Phase) {
    mark(Marker::End(phase))
}

/// Tells the cost model to start modelling (once, before the workload).
pub fn model_on() {
    mark(Marker::ModelOn)
}

/// Between a begin and an end marker of [`Phase::Probe`], in one block of
/// assembly so that the compiler adds nothing: `iterations` rounds of
/// `dec; jnz`. The plugin counts 2 × `iterations` + 1 user instructions in
/// the window: the loop and the end marker (a window counts from after its
/// begin marker to its end marker, inclusive).
pub fn marked_loop(iterations: u64) {
    assert!(iterations > 0, "the loop runs at least once");
    // SAFETY: the loop only counts a register down to zero; the markers
    // are NOPs.
    unsafe {
        std::arch::asm!(
            ".byte 0x0f, 0x1f, 0x84, 0x00",
            ".long {begin}",
            "2:",
            "dec {n}",
            "jnz 2b",
            ".byte 0x0f, 0x1f, 0x84, 0x00",
            ".long {end}",
            n = inout(reg) iterations => _,
            begin = const encode(Marker::Begin(Phase::Probe)),
            end = const encode(Marker::End(Phase::Probe)),
            options(nostack, nomem),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On the host (no plugin) markers are NOPs: every phase's markers run.
    #[test]
    fn markers_are_harmless_nops() {
        model_on();
        for phase in Phase::ALL {
            begin(phase);
            end(phase);
        }
        marked_loop(1000);
    }
}
