//! Instruction classes and their cost on the modelled machine, decoded from
//! an instruction's bytes as the plugin sees them at translation time.
//!
//! The table and the rules its figures were taken by are in
//! docs/cost-model.md ("Instruction costs"): Agner Fog's Skylake sheet,
//! PAUSE from Intel's optimization manual, 1 where neither gives a figure.
//! Never change a figure after seeing a result.
//!
//! The decoder reads what a class needs and no more: legacy prefixes (66,
//! 67, F0, F2, F3, segment overrides), a REX prefix, the 0F escape, and the
//! ModRM byte for memory operands and `/reg` forms. It assumes 64-bit mode
//! (the guest kernel's and its user space's): bytes 40-4F are REX, not
//! INC/DEC. Anything it does not recognise is [`Insn::Other`], one cycle.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Operand size of an integer divide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Size {
    B8,
    B16,
    B32,
    B64,
}

/// Which REP string instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rep {
    Movs,
    Stos,
    Lods,
    Scas,
    Cmps,
}

/// One instruction, as far as its cost goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Insn {
    Pause,
    /// A LOCK-prefixed read-modify-write of memory other than the two below.
    LockedRmw,
    LockedCmpxchg8b,
    LockedCmpxchg16b,
    /// XCHG with a memory operand: locked without a prefix.
    XchgMemory,
    Mfence,
    Lfence,
    Sfence,
    Cpuid,
    Iret,
    Wrmsr,
    MovToCr,
    Invlpg,
    Cli,
    Sti,
    Pushf,
    Popf,
    Rdtsc,
    Rdtscp,
    Div(Size),
    Idiv(Size),
    /// One iteration (one execution under TCG) of a REP string instruction.
    Rep(Rep),
    Syscall,
    Sysret,
    Swapgs,
    Other,
}

/// The classes counted in every window (everything else is the rest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    Pause,
    Locked,
    Fence,
    Serializing,
    InterruptFlag,
    TimeStamp,
    Divide,
    RepString,
    SystemCall,
}

impl Class {
    /// Every class, in the order of [`ClassCounts`]'s fields.
    pub const ALL: [Class; 9] = [
        Class::Pause,
        Class::Locked,
        Class::Fence,
        Class::Serializing,
        Class::InterruptFlag,
        Class::TimeStamp,
        Class::Divide,
        Class::RepString,
        Class::SystemCall,
    ];

    /// The class's name in window records and metric names.
    pub const fn name(self) -> &'static str {
        match self {
            Class::Pause => "pause",
            Class::Locked => "locked",
            Class::Fence => "fence",
            Class::Serializing => "serializing",
            Class::InterruptFlag => "interrupt_flag",
            Class::TimeStamp => "time_stamp",
            Class::Divide => "divide",
            Class::RepString => "rep_string",
            Class::SystemCall => "system_call",
        }
    }

    /// Index into [`Class::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl Insn {
    /// Its class; `None` for everything else.
    pub const fn class(self) -> Option<Class> {
        Some(match self {
            Insn::Pause => Class::Pause,
            Insn::LockedRmw | Insn::LockedCmpxchg8b | Insn::LockedCmpxchg16b | Insn::XchgMemory => {
                Class::Locked
            }
            Insn::Mfence | Insn::Lfence | Insn::Sfence => Class::Fence,
            Insn::Cpuid | Insn::Iret | Insn::Wrmsr | Insn::MovToCr | Insn::Invlpg => {
                Class::Serializing
            }
            Insn::Cli | Insn::Sti | Insn::Pushf | Insn::Popf => Class::InterruptFlag,
            Insn::Rdtsc | Insn::Rdtscp => Class::TimeStamp,
            Insn::Div(_) | Insn::Idiv(_) => Class::Divide,
            Insn::Rep(_) => Class::RepString,
            Insn::Syscall | Insn::Sysret | Insn::Swapgs => Class::SystemCall,
            Insn::Other => return None,
        })
    }

    /// Cycles one execution costs on the Skylake client (i7-6700), from
    /// the table in docs/cost-model.md ([A] Agner Fog's Skylake sheet,
    /// [I] Intel's optimization manual); 1 where neither gives a figure.
    pub const fn cycles(self) -> u64 {
        match self {
            Insn::Pause => 140,           // [I] "as many as 140 cycles"
            Insn::LockedRmw => 18,        // [A] LOCK ADD/XADD/CMPXCHG m,r: throughput 18
            Insn::LockedCmpxchg8b => 19,  // [A] LOCK CMPXCHG8B: throughput 19
            Insn::LockedCmpxchg16b => 26, // [A] LOCK CMPXCHG16B: throughput 26
            Insn::XchgMemory => 23,       // [A] XCHG r,m: latency 23
            Insn::Mfence => 33,           // [A] throughput 33
            Insn::Lfence => 4,            // [A] throughput 4
            Insn::Sfence => 6,            // [A] throughput 6
            Insn::Cpuid => 100,           // [A] throughput 100-250: lower end
            Insn::Iret | Insn::Wrmsr | Insn::MovToCr | Insn::Invlpg => 1, // not in [A]
            Insn::Cli | Insn::Sti => 1,   // not in [A]
            Insn::Pushf => 1,             // [A] PUSHF(D/Q): throughput 1
            Insn::Popf => 20,             // [A] POPF(D/Q): throughput 20
            Insn::Rdtsc => 25,            // [A] throughput 25
            Insn::Rdtscp => 32,           // [A] throughput 32
            Insn::Div(Size::B8 | Size::B16) => 23, // [A] latency 23
            Insn::Div(Size::B32) => 26,   // [A] latency 26
            Insn::Div(Size::B64) => 35,   // [A] latency 35-88: lower end
            Insn::Idiv(Size::B8) => 24,   // [A] latency 24
            Insn::Idiv(Size::B16) => 23,  // [A] latency 23
            Insn::Idiv(Size::B32) => 26,  // [A] latency 26
            Insn::Idiv(Size::B64) => 42,  // [A] latency 42-95: lower end
            Insn::Rep(Rep::Movs) => 1,    // [A] throughput <1n: rounded up
            Insn::Rep(Rep::Stos) => 1,    // [A] throughput ~0.5n: rounded up
            Insn::Rep(Rep::Lods) => 2,    // [A] throughput ~2n
            Insn::Rep(Rep::Scas | Rep::Cmps) => 2, // [A] throughput >=2n
            Insn::Syscall | Insn::Sysret | Insn::Swapgs => 1, // not in [A]
            Insn::Other => 1,
        }
    }
}

/// How many instructions of each class ran (one per execution; a REP
/// string instruction once per iteration, see docs/cost-model-design.md).
/// In a window record: an object of the classes that ran, by name
/// (`{"pause":20,"locked":40}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    try_from = "BTreeMap<String, u64>",
    into = "BTreeMap<&'static str, u64>"
)]
pub struct ClassCounts(pub [u64; Class::ALL.len()]);

impl From<ClassCounts> for BTreeMap<&'static str, u64> {
    fn from(counts: ClassCounts) -> Self {
        Class::ALL
            .into_iter()
            .filter(|&c| counts.get(c) != 0)
            .map(|c| (c.name(), counts.get(c)))
            .collect()
    }
}

impl TryFrom<BTreeMap<String, u64>> for ClassCounts {
    type Error = String;

    fn try_from(map: BTreeMap<String, u64>) -> Result<Self, String> {
        let mut counts = ClassCounts::default();
        for (name, n) in map {
            let class = Class::ALL
                .into_iter()
                .find(|c| c.name() == name)
                .ok_or_else(|| format!("unknown instruction class {name:?}"))?;
            counts.add(class, n);
        }
        Ok(counts)
    }
}

impl ClassCounts {
    pub fn get(&self, class: Class) -> u64 {
        self.0[class.index()]
    }

    pub fn add(&mut self, class: Class, n: u64) {
        self.0[class.index()] += n;
    }

    pub fn merge(&mut self, other: &ClassCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }

    /// What happened between `earlier` and `self` (counts only grow).
    pub fn since(&self, earlier: &ClassCounts) -> ClassCounts {
        let mut d = *self;
        for (a, b) in d.0.iter_mut().zip(earlier.0) {
            *a -= b;
        }
        d
    }

    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|&n| n == 0)
    }
}

/// The legacy prefixes and REX seen before the opcode.
#[derive(Debug, Default, Clone, Copy)]
struct Prefixes {
    lock: bool,
    /// F2 or F3: REP for string instructions.
    rep: bool,
    /// F3 alone (PAUSE is `f3 90`).
    repz: bool,
    operand_size: bool,
    rex_w: bool,
    rex_b: bool,
}

/// The instruction that `bytes` (one whole instruction, as
/// `qemu_plugin_insn_data` gives it) encodes, as far as its cost goes.
pub fn classify(bytes: &[u8]) -> Insn {
    let mut p = Prefixes::default();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            0xf0 => p.lock = true,
            0xf2 => p.rep = true,
            0xf3 => {
                p.rep = true;
                p.repz = true;
            }
            0x66 => p.operand_size = true,
            // Address size and segment overrides change no class.
            0x67 | 0x26 | 0x2e | 0x36 | 0x3e | 0x64 | 0x65 => {}
            0x40..=0x4f => {
                p.rex_w = b & 0x08 != 0;
                p.rex_b = b & 0x01 != 0;
                i += 1;
                // REX counts only right before the opcode; a legacy
                // prefix after it makes the processor ignore it.
                return match bytes.get(i) {
                    Some(&op) => opcode(op, &bytes[i + 1..], p),
                    None => Insn::Other,
                };
            }
            _ => return opcode(b, &bytes[i + 1..], p),
        }
        i += 1;
        if i > 14 {
            return Insn::Other;
        }
    }
    Insn::Other
}

/// ModRM's fields: (mod, reg).
fn modrm(rest: &[u8]) -> Option<(u8, u8)> {
    rest.first().map(|&m| (m >> 6, (m >> 3) & 7))
}

fn memory(rest: &[u8]) -> bool {
    matches!(modrm(rest), Some((m, _)) if m != 3)
}

fn size(op: u8, p: Prefixes) -> Size {
    if op & 1 == 0 {
        Size::B8
    } else if p.rex_w {
        Size::B64
    } else if p.operand_size {
        Size::B16
    } else {
        Size::B32
    }
}

/// A one-byte opcode `op`, `rest` the bytes after it.
fn opcode(op: u8, rest: &[u8], p: Prefixes) -> Insn {
    let locked = p.lock && memory(rest);
    match op {
        0x0f => two_byte(rest, p),
        // ADD OR ADC SBB AND SUB XOR to memory (r/m, r forms).
        0x00 | 0x01 | 0x08 | 0x09 | 0x10 | 0x11 | 0x18 | 0x19 | 0x20 | 0x21 | 0x28 | 0x29
        | 0x30 | 0x31
            if locked =>
        {
            Insn::LockedRmw
        }
        // Group 1 with an immediate: /7 is CMP, which LOCK does not take.
        0x80 | 0x81 | 0x83 if locked && !matches!(modrm(rest), Some((_, 7))) => Insn::LockedRmw,
        0x86 | 0x87 if memory(rest) => Insn::XchgMemory,
        0x90 if p.repz && !p.rex_b => Insn::Pause,
        0x9c => Insn::Pushf,
        0x9d => Insn::Popf,
        0xa4 | 0xa5 if p.rep => Insn::Rep(Rep::Movs),
        0xa6 | 0xa7 if p.rep => Insn::Rep(Rep::Cmps),
        0xaa | 0xab if p.rep => Insn::Rep(Rep::Stos),
        0xac | 0xad if p.rep => Insn::Rep(Rep::Lods),
        0xae | 0xaf if p.rep => Insn::Rep(Rep::Scas),
        0xcf => Insn::Iret,
        0xf6 | 0xf7 => match modrm(rest) {
            Some((_, 2 | 3)) if locked => Insn::LockedRmw, // NOT, NEG
            Some((_, 6)) => Insn::Div(size(op, p)),
            Some((_, 7)) => Insn::Idiv(size(op, p)),
            _ => Insn::Other,
        },
        0xfa => Insn::Cli,
        0xfb => Insn::Sti,
        // INC, DEC.
        0xfe | 0xff if locked && matches!(modrm(rest), Some((_, 0 | 1))) => Insn::LockedRmw,
        _ => Insn::Other,
    }
}

/// An opcode after the 0F escape; `rest` starts at its byte.
fn two_byte(rest: &[u8], p: Prefixes) -> Insn {
    let Some((&op, rest)) = rest.split_first() else {
        return Insn::Other;
    };
    let locked = p.lock && memory(rest);
    // The fences take no 66/F2/F3 (those make other instructions).
    let plain = !p.operand_size && !p.rep;
    match op {
        0x01 => match rest.first() {
            Some(0xf8) => Insn::Swapgs,
            Some(0xf9) => Insn::Rdtscp,
            Some(_) if memory(rest) && matches!(modrm(rest), Some((_, 7))) => Insn::Invlpg,
            _ => Insn::Other,
        },
        0x05 => Insn::Syscall,
        0x07 => Insn::Sysret,
        0x22 => Insn::MovToCr,
        0x30 => Insn::Wrmsr,
        0x31 => Insn::Rdtsc,
        0xa2 => Insn::Cpuid,
        0xae if plain => match modrm(rest) {
            Some((3, 5)) => Insn::Lfence,
            Some((3, 6)) => Insn::Mfence,
            Some((3, 7)) => Insn::Sfence,
            _ => Insn::Other,
        },
        // BTS, BTR, BTC r; CMPXCHG; XADD.
        0xab | 0xb3 | 0xbb | 0xb0 | 0xb1 | 0xc0 | 0xc1 if locked => Insn::LockedRmw,
        // BT group with an immediate: /5 BTS, /6 BTR, /7 BTC (/4 BT reads).
        0xba if locked && matches!(modrm(rest), Some((_, 5..=7))) => Insn::LockedRmw,
        0xc7 if locked && matches!(modrm(rest), Some((_, 1))) => {
            if p.rex_w {
                Insn::LockedCmpxchg16b
            } else {
                Insn::LockedCmpxchg8b
            }
        }
        _ => Insn::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes, what they are, and the cycles the table gives them.
    const CASES: &[(&[u8], Insn, u64)] = &[
        (&[0xf3, 0x90], Insn::Pause, 140),
        (&[0x90], Insn::Other, 1),             // NOP
        (&[0xf3, 0x41, 0x90], Insn::Other, 1), // xchg r8,rax with F3: not PAUSE
        // lock cmpxchg %ecx,(%rdi); with REX.W; with a segment override
        (&[0xf0, 0x0f, 0xb1, 0x0f], Insn::LockedRmw, 18),
        (&[0xf0, 0x48, 0x0f, 0xb1, 0x0f], Insn::LockedRmw, 18),
        (&[0x65, 0xf0, 0x0f, 0xb1, 0x0f], Insn::LockedRmw, 18),
        (&[0x0f, 0xb1, 0x0f], Insn::Other, 1), // cmpxchg without LOCK
        (&[0xf0, 0x0f, 0xc1, 0x07], Insn::LockedRmw, 18), // lock xadd
        (&[0xf0, 0x83, 0x07, 0x01], Insn::LockedRmw, 18), // lock addl $1,(%rdi)
        (&[0xf0, 0x48, 0x09, 0x07], Insn::LockedRmw, 18), // lock or %rax,(%rdi)
        (&[0xf0, 0xff, 0x07], Insn::LockedRmw, 18), // lock incl (%rdi)
        (&[0xf0, 0xf7, 0x1f], Insn::LockedRmw, 18), // lock negl (%rdi)
        (&[0xf0, 0x0f, 0xba, 0x2f, 0x03], Insn::LockedRmw, 18), // lock btsl $3,(%rdi)
        (&[0xf0, 0x0f, 0xab, 0x07], Insn::LockedRmw, 18), // lock bts %eax,(%rdi)
        (&[0xf0, 0x0f, 0xc7, 0x0f], Insn::LockedCmpxchg8b, 19),
        (&[0xf0, 0x48, 0x0f, 0xc7, 0x0f], Insn::LockedCmpxchg16b, 26),
        (&[0x87, 0x07], Insn::XchgMemory, 23), // xchg %eax,(%rdi)
        (&[0x48, 0x87, 0x07], Insn::XchgMemory, 23), // xchg %rax,(%rdi)
        (&[0x86, 0x47, 0x08], Insn::XchgMemory, 23), // xchg %al,8(%rdi)
        (&[0x87, 0xc8], Insn::Other, 1),       // xchg %ecx,%eax
        (&[0x0f, 0xae, 0xf0], Insn::Mfence, 33),
        (&[0x0f, 0xae, 0xe8], Insn::Lfence, 4),
        (&[0x0f, 0xae, 0xf8], Insn::Sfence, 6),
        (&[0x0f, 0xae, 0x38], Insn::Other, 1), // clflush (%rax)
        (&[0x66, 0x0f, 0xae, 0x30], Insn::Other, 1), // clwb (%rax)
        (&[0x0f, 0xa2], Insn::Cpuid, 100),
        (&[0x48, 0xcf], Insn::Iret, 1), // iretq
        (&[0x0f, 0x30], Insn::Wrmsr, 1),
        (&[0x0f, 0x32], Insn::Other, 1),         // rdmsr
        (&[0x0f, 0x22, 0xd8], Insn::MovToCr, 1), // mov %rax,%cr3
        (&[0x0f, 0x20, 0xd8], Insn::Other, 1),   // mov %cr3,%rax
        (&[0x0f, 0x01, 0x38], Insn::Invlpg, 1),  // invlpg (%rax)
        (&[0xfa], Insn::Cli, 1),
        (&[0xfb], Insn::Sti, 1),
        (&[0x9c], Insn::Pushf, 1),
        (&[0x9d], Insn::Popf, 20),
        (&[0x0f, 0x31], Insn::Rdtsc, 25),
        (&[0x0f, 0x01, 0xf9], Insn::Rdtscp, 32),
        (&[0xf6, 0xf1], Insn::Div(Size::B8), 23),
        (&[0x66, 0xf7, 0xf1], Insn::Div(Size::B16), 23),
        (&[0xf7, 0xf1], Insn::Div(Size::B32), 26),
        (&[0x48, 0xf7, 0xf1], Insn::Div(Size::B64), 35),
        (&[0x48, 0xf7, 0x37], Insn::Div(Size::B64), 35), // divq (%rdi)
        (&[0x66, 0x48, 0xf7, 0xf1], Insn::Div(Size::B64), 35), // REX.W wins over 66
        (&[0xf6, 0xf9], Insn::Idiv(Size::B8), 24),
        (&[0x66, 0xf7, 0xf9], Insn::Idiv(Size::B16), 23),
        (&[0xf7, 0xf9], Insn::Idiv(Size::B32), 26),
        (&[0x48, 0xf7, 0xf9], Insn::Idiv(Size::B64), 42),
        (&[0x48, 0xf7, 0xe1], Insn::Other, 1), // mul %rcx
        (&[0xf3, 0x48, 0xa5], Insn::Rep(Rep::Movs), 1),
        (&[0xf3, 0xa4], Insn::Rep(Rep::Movs), 1),
        (&[0xf3, 0x48, 0xab], Insn::Rep(Rep::Stos), 1),
        (&[0xf3, 0xac], Insn::Rep(Rep::Lods), 2),
        (&[0xf2, 0xae], Insn::Rep(Rep::Scas), 2), // repne scasb
        (&[0xf3, 0xa6], Insn::Rep(Rep::Cmps), 2), // repe cmpsb
        (&[0x48, 0xa5], Insn::Other, 1),          // movsq without REP
        (&[0xf3, 0xc3], Insn::Other, 1),          // rep ret
        (&[0xf3, 0x0f, 0x1e, 0xfa], Insn::Other, 1), // endbr64
        (&[0x0f, 0x05], Insn::Syscall, 1),
        (&[0x48, 0x0f, 0x07], Insn::Sysret, 1), // sysretq
        (&[0x0f, 0x01, 0xf8], Insn::Swapgs, 1),
        (&[0x0f, 0x01, 0xd0], Insn::Other, 1), // xgetbv
        (&[0xc5, 0xf8, 0x77], Insn::Other, 1), // vzeroupper (VEX)
        (&[0x48, 0x89, 0xc8], Insn::Other, 1), // mov %rcx,%rax
        (&[], Insn::Other, 1),
        (&[0xf0], Insn::Other, 1),
        (&[0x0f], Insn::Other, 1),
    ];

    #[test]
    fn each_class_is_decoded_from_its_bytes_with_the_cited_cost() {
        for &(bytes, want, cycles) in CASES {
            let got = classify(bytes);
            assert_eq!(got, want, "{bytes:02x?}");
            assert_eq!(got.cycles(), cycles, "{bytes:02x?} ({got:?})");
        }
    }

    #[test]
    fn every_class_has_a_case_and_other_has_no_class() {
        let seen: Vec<Class> = CASES.iter().filter_map(|c| c.1.class()).collect();
        for class in Class::ALL {
            assert!(seen.contains(&class), "no case for {class:?}");
            assert_eq!(Class::ALL[class.index()], class);
        }
        assert_eq!(Insn::Other.class(), None);
        assert_eq!(Insn::Div(Size::B64).class(), Some(Class::Divide));
        assert_eq!(Insn::XchgMemory.class(), Some(Class::Locked));
        assert_eq!(Insn::Popf.class(), Some(Class::InterruptFlag));
    }

    #[test]
    fn class_counts_add_merge_and_subtract() {
        let mut a = ClassCounts::default();
        assert!(a.is_zero());
        a.add(Class::Pause, 3);
        a.add(Class::SystemCall, 1);
        let mut b = a;
        b.merge(&a);
        assert_eq!((b.get(Class::Pause), b.get(Class::SystemCall)), (6, 2));
        assert_eq!(b.since(&a), a);
        assert!(a.since(&a).is_zero());
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(json, r#"{"pause":3,"system_call":1}"#);
        assert_eq!(serde_json::from_str::<ClassCounts>(&json).unwrap(), a);
        let err = serde_json::from_str::<ClassCounts>(r#"{"halt":1}"#).unwrap_err();
        assert!(err.to_string().contains("halt"), "{err}");
    }
}
