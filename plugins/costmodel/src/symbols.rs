//! Kernel symbols from a `System.map`, for attributing instructions and
//! misses to the function that executed them, and the code addresses the
//! instruction cache sees.
//!
//! The kernel must be booted with `nokaslr`, so that `System.map`'s
//! addresses are the running kernel's. An address is attributed to the
//! nearest symbol at or below it when that symbol is code (`T`, `t`, `W`,
//! `w`); addresses in user space go to [`USER`], kernel addresses without a
//! code symbol to [`KERNEL_UNKNOWN`].

/// The symbol id of every user-space instruction.
pub const USER: u32 = 0;
/// The symbol id of kernel instructions outside any code symbol.
pub const KERNEL_UNKNOWN: u32 = 1;

/// The name windows give [`USER`]'s instructions.
pub const USER_NAME: &str = "user";
const KERNEL_UNKNOWN_NAME: &str = "kernel-unknown";

/// x86-64's kernel half of the address space starts here.
pub const KERNEL_SPACE: u64 = 0xffff_8000_0000_0000;
/// Where the kernel image is mapped (`__START_KERNEL_map`); its physical
/// address is the virtual one minus this (phys_base is 0 without KASLR).
pub const KERNEL_IMAGE_MAP: u64 = 0xffff_ffff_8000_0000;

/// A `System.map` line that is not `ADDRESS TYPE NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub text: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}: {:?} is not `ADDRESS TYPE NAME`",
            self.line, self.text
        )
    }
}

impl std::error::Error for ParseError {}

/// The kernel's symbols, sorted by address.
#[derive(Debug, Clone)]
pub struct Symbols {
    /// Kernel-space symbol addresses, ascending.
    addrs: Vec<u64>,
    /// The symbol id each address starts (a data symbol ends the code
    /// symbol before it and starts [`KERNEL_UNKNOWN`]).
    ids: Vec<u32>,
    /// Names by symbol id.
    names: Vec<String>,
}

impl Symbols {
    /// Parses a `System.map`. Symbols outside kernel space (per-CPU
    /// offsets, absolute values) are skipped.
    pub fn parse(text: &str) -> Result<Symbols, ParseError> {
        let mut entries = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let bad = || ParseError {
                line: i + 1,
                text: line.chars().take(200).collect(),
            };
            let mut fields = line.split_whitespace();
            let (Some(addr), Some(kind), Some(name), None) =
                (fields.next(), fields.next(), fields.next(), fields.next())
            else {
                return Err(bad());
            };
            let addr = u64::from_str_radix(addr, 16).map_err(|_| bad())?;
            if kind.len() != 1 {
                return Err(bad());
            }
            if addr >= KERNEL_SPACE {
                entries.push((addr, matches!(kind, "T" | "t" | "W" | "w"), name));
            }
        }
        // Stable: of several symbols at one address, the last in the file wins.
        entries.sort_by_key(|e| e.0);
        let mut symbols = Symbols {
            addrs: Vec::with_capacity(entries.len()),
            ids: Vec::with_capacity(entries.len()),
            names: vec![USER_NAME.to_string(), KERNEL_UNKNOWN_NAME.to_string()],
        };
        for (i, &(addr, code, name)) in entries.iter().enumerate() {
            if entries.get(i + 1).is_some_and(|next| next.0 == addr) {
                continue;
            }
            let id = if code {
                symbols.names.push(name.to_string());
                (symbols.names.len() - 1) as u32
            } else {
                KERNEL_UNKNOWN
            };
            symbols.addrs.push(addr);
            symbols.ids.push(id);
        }
        Ok(symbols)
    }

    /// The symbol id of the instruction at `vaddr`.
    pub fn lookup(&self, vaddr: u64) -> u32 {
        if vaddr < KERNEL_SPACE {
            return USER;
        }
        match self.addrs.partition_point(|&a| a <= vaddr) {
            0 => KERNEL_UNKNOWN,
            n => self.ids[n - 1],
        }
    }

    /// The number of symbol ids, [`USER`] and [`KERNEL_UNKNOWN`] included.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Never: [`USER`] and [`KERNEL_UNKNOWN`] are always there.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// How many code symbols the map had.
    pub fn code_symbols(&self) -> usize {
        self.names.len() - 2
    }

    pub fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }
}

/// The address the instruction cache sees for code at `vaddr`. The v1
/// plugin API gives no physical address for code, so: the kernel image's
/// physical address (fixed with `nokaslr`); user code's virtual address in
/// a space of its own (bit 62), so it never aliases data; other kernel code
/// (modules, trampolines) likewise in a space of its own (bit 61).
pub fn code_address(vaddr: u64) -> u64 {
    const LOW: u64 = (1 << 47) - 1;
    if vaddr >= KERNEL_IMAGE_MAP {
        vaddr - KERNEL_IMAGE_MAP
    } else if vaddr >= KERNEL_SPACE {
        (vaddr & LOW) | 1 << 61
    } else {
        (vaddr & LOW) | 1 << 62
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAP: &str = "\
0000000000000000 D __per_cpu_start
ffffffff81000000 T _stext
ffffffff81000000 T startup_64
ffffffff81000100 t do_flush_stats
ffffffff81000180 T cgroup_rstat_flush
ffffffff81000200 W weak_thing
ffffffff81000300 R __start_rodata
ffffffff81000400 t static_fn
ffffffff81000500 t static_fn
";

    #[test]
    fn addresses_go_to_the_code_symbol_at_or_below_them() {
        let s = Symbols::parse(MAP).unwrap();
        let name = |a| s.name(s.lookup(a)).to_string();
        assert_eq!(name(0xffff_ffff_8100_0000), "startup_64");
        assert_eq!(name(0xffff_ffff_8100_00ff), "startup_64");
        assert_eq!(name(0xffff_ffff_8100_0100), "do_flush_stats");
        assert_eq!(name(0xffff_ffff_8100_01a0), "cgroup_rstat_flush");
        assert_eq!(name(0xffff_ffff_8100_0210), "weak_thing");
        // Read-only data ends the code before it.
        assert_eq!(name(0xffff_ffff_8100_0300), "kernel-unknown");
        assert_eq!(name(0xffff_ffff_8000_0000), "kernel-unknown");
        assert_eq!(name(0x0000_5555_5555_0000), "user");
        assert_eq!(name(0x1000), "user");
        // Two static functions of one name stay two ids.
        let (a, b) = (
            s.lookup(0xffff_ffff_8100_0400),
            s.lookup(0xffff_ffff_8100_0500),
        );
        assert_ne!(a, b);
        assert_eq!(s.name(a), s.name(b));
        assert_eq!(s.code_symbols(), 6);
        assert_eq!(s.len(), 8);
    }

    #[test]
    fn malformed_lines_are_named() {
        let err = Symbols::parse("ffffffff81000000 T ok\nnot a map line at all\n").unwrap_err();
        assert_eq!(err.line, 2);
        let err = Symbols::parse("zzzz T name\n").unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.to_string().contains("ADDRESS TYPE NAME"), "{err}");
    }

    #[test]
    fn code_addresses_keep_kernel_physical_and_separate_user_code() {
        assert_eq!(code_address(0xffff_ffff_8100_0040), 0x100_0040);
        let user = code_address(0x40_1000);
        assert_eq!(user, 0x40_1000 | 1 << 62);
        assert_ne!(code_address(0xffff_c900_0000_1000) >> 61, 0);
        // The set index (low bits) is the virtual address's.
        assert_eq!(user & 0xfff, 0);
    }
}
