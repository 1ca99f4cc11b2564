//! The cost-model QEMU plugin: patchbench's deterministic, cache-aware cost
//! lane (docs/cost-model.md).
//!
//! Loaded with `-plugin libpatchbench_cost_plugin.so,out=W,system_map=M,icount=on`
//! into a QEMU running TCG single-threaded with `-icount shift=0,sleep=off`
//! (it refuses anything else), it:
//! - counts instructions per kernel symbol (and per vCPU with the cache
//!   model), resolved from `System.map` once per instruction at
//!   translation time; in the counting lane a block's instructions are
//!   added by code QEMU generates (an inline op), not by a call into the
//!   plugin, which was most of that lane's price, so its windows carry
//!   no per-vCPU split;
//! - with `model=cache`, runs every memory access, by physical address,
//!   and every instruction fetch through the cache model
//!   (`patchbench-costmodel`), and charges each instruction of the cost
//!   table's classes its cost, classified from its bytes at translation
//!   time (`costmodel::insn`); with `model=count` (the counting lane) it
//!   registers no memory callback at all and only counts;
//! - recognises the guest agent's phase markers from their bytes at
//!   translation time, and appends one JSON line per closed window to `W`,
//!   written before the guest runs on.
//!
//! Until the agent's model-on marker (after its setup, before any
//! workload) it only watches for markers, so the boot runs at icount's
//! speed; that marker resets the plugin (`qemu_plugin_reset`: QEMU drops
//! every translated block), and from then on every block is translated
//! with the model's callbacks. With `boot=on` (the kernel-boot workload)
//! it counts from the guest's first instruction instead, in a `boot`
//! window that the agent's first marker as PID 1 ends.
//!
//! Counting is per segment: a translation block's instructions up to and
//! including its first marker are counted when the block starts, and the
//! instructions after each marker when that marker executes, after it has
//! opened or closed its window. So a window holds the instructions after its
//! begin marker up to and including its end marker. A block left early by
//! an exception (a page fault) has its segment counted whole: a small,
//! deterministic overcount.
//!
//! The model's state belongs to the one thread that runs every vCPU here
//! (single-threaded TCG), so the hot paths (memory and block callbacks)
//! take no lock and allocate nothing; a second thread running guest code
//! stops QEMU. The window file, written rarely, sits behind a mutex.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use patchbench_agent::marker::{self, Marker, Phase};
use patchbench_costmodel::args::{ModelChoice, PluginArgs};
use patchbench_costmodel::cache::LINE_SHIFT;
use patchbench_costmodel::insn::{self, Insn};
use patchbench_costmodel::machine::{Access, COUNTING, MAX_VCPUS, Machine, Model, SKYLAKE_CLIENT};
use patchbench_costmodel::record::Line;
use patchbench_costmodel::symbols::{Symbols, code_address};
use patchbench_costmodel::window::{Tally, Windows};
use qemu_plugin_sys as sys;

const NAME: &str = "patchbench-cost-plugin";

/// The plugin API version this plugin speaks; QEMU refuses it unless its
/// own range includes it.
#[allow(non_upper_case_globals)]
#[unsafe(no_mangle)]
pub static qemu_plugin_version: c_int = sys::QEMU_PLUGIN_VERSION as c_int;

const _: () = assert!(sys::QEMU_PLUGIN_VERSION == patchbench_costmodel::PLUGIN_API_VERSION);

/// The instructions of one segment of a translation block, and the marker
/// that starts it (none for a block's first segment).
struct Segment {
    marker: Option<Marker>,
    /// (symbol id, instructions) runs, in order.
    runs: Vec<(u32, u64)>,
    /// (code address of a line, symbol id of its first instruction) for
    /// every line the segment's instructions occupy.
    lines: Vec<(u64, u32)>,
    /// (symbol id, instruction) of each instruction of the cost table's
    /// classes (cache model only; usually none).
    charges: Vec<(u32, Insn)>,
}

impl Segment {
    fn new(marker: Option<Marker>) -> Segment {
        Segment {
            marker,
            runs: Vec::new(),
            lines: Vec::new(),
            charges: Vec::new(),
        }
    }

    /// One instruction of symbol `sym`; with `fetches`, the cache lines
    /// it occupies too (the cache model's fetches).
    fn add(&mut self, sym: u32, vaddr: u64, size: u64, fetches: bool) {
        match self.runs.last_mut() {
            Some((s, n)) if *s == sym => *n += 1,
            _ => self.runs.push((sym, 1)),
        }
        if !fetches {
            return;
        }
        let first = code_address(vaddr) >> LINE_SHIFT;
        let last = code_address(vaddr + size.max(1) - 1) >> LINE_SHIFT;
        for line in first..=last {
            if self.lines.last().map(|l| l.0) != Some(line << LINE_SHIFT) {
                self.lines.push((line << LINE_SHIFT, sym));
            }
        }
    }
}

/// Segments by address. Boxed: a segment's address is a callback's user
/// data, so it must not move when the vector grows.
#[allow(clippy::vec_box)]
type Segments = Vec<Box<Segment>>;

/// What install prepares, shared read-only by every callback.
struct Config {
    model: &'static Model,
    /// Whether accesses and fetches go through the cache model (`model=cache`).
    caches: bool,
    symbols: Symbols,
    vcpus: usize,
    /// Counting from the guest's first instruction, in the `boot` window.
    boot: bool,
}

/// The window file, written when a window closes and at exit (rarely, so
/// a mutex costs nothing).
struct Output {
    file: File,
    path: String,
    /// Phases with an open window, for the exit check on QEMU's main thread.
    open: BTreeSet<&'static str>,
}

impl Output {
    /// One line, in one write: the host sees it before the guest goes on.
    fn write(&mut self, line: &Line) {
        if let Err(e) = self.file.write_all(line.to_json_line().as_bytes()) {
            eprintln!("{NAME}: cannot write to {}: {e}", self.path);
        }
    }
}

static CONFIG: OnceLock<Config> = OnceLock::new();
/// QEMU's id for this plugin (for `qemu_plugin_reset`).
static PLUGIN_ID: AtomicU64 = AtomicU64::new(0);
/// Whether blocks are translated with the model's instrumentation: from
/// the reset that the agent's model-on marker asks for.
static ACTIVE: AtomicBool = AtomicBool::new(false);
static RESET_ASKED: AtomicBool = AtomicBool::new(false);
static OUTPUT: Mutex<Option<Output>> = Mutex::new(None);
/// How many threads have executed guest code: more than one is MTTCG.
static TCG_THREADS: AtomicUsize = AtomicUsize::new(0);

fn output() -> MutexGuard<'static, Option<Output>> {
    OUTPUT.lock().unwrap_or_else(|e| e.into_inner())
}

/// The model's state, owned by the one thread that runs every vCPU
/// (single-threaded TCG): the hot paths touch it with no lock and no
/// atomic operation.
struct State {
    config: &'static Config,
    /// The caches; `None` in the counting lane.
    machine: Option<Machine>,
    tally: Tally,
    windows: Windows,
    /// What the callbacks' user data point at, kept until QEMU flushes its
    /// code cache (then no block refers to them any more).
    segments: Segments,
}

impl State {
    fn mark(&mut self, marker: Marker) {
        self.tally.settle();
        let mut output = output();
        let Some(output) = output.as_mut() else {
            return;
        };
        let active = ACTIVE.load(Ordering::Relaxed);
        match marker {
            // The agent ends the boot window in every boot; only a plugin
            // asked to count the boot (`boot=on`) opened it.
            Marker::End(Phase::Boot) if !output.open.contains(Phase::Boot.name()) => {}
            Marker::ModelOn => {
                if !active && !RESET_ASKED.swap(true, Ordering::Relaxed) {
                    // SAFETY: our id; the reset runs after this callback,
                    // between blocks, and then calls `on_reset`.
                    unsafe {
                        sys::qemu_plugin_reset(PLUGIN_ID.load(Ordering::Relaxed), Some(on_reset))
                    };
                }
            }
            Marker::Begin(phase) | Marker::End(phase) if !active => output.write(&Line::Error {
                message: format!(
                    "a marker of phase {} came before the agent switched the model on",
                    phase.name()
                ),
            }),
            Marker::Begin(phase) => {
                self.windows.begin(phase.name(), &self.tally);
                output.open.insert(phase.name());
            }
            Marker::End(phase) => {
                let closed = self.windows.end(
                    phase.name(),
                    &self.tally,
                    &self.config.symbols,
                    self.config.model,
                );
                match closed {
                    Ok(Some(record)) => {
                        output.open.remove(phase.name());
                        output.write(&Line::Window(record))
                    }
                    Ok(None) => {}
                    Err(e) => output.write(&Line::Error {
                        message: e.to_string(),
                    }),
                }
            }
        }
    }
}

thread_local! {
    static STATE: RefCell<Option<State>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread's state, creating it on the first call from the
/// TCG thread; a second thread running guest code means multi-threaded
/// TCG, whose counts do not repeat: QEMU is stopped, saying why.
fn with_state(f: impl FnOnce(&mut State)) {
    STATE.with(|cell| {
        let mut state = cell.borrow_mut();
        if state.is_none() {
            let Some(config) = CONFIG.get() else { return };
            if TCG_THREADS.fetch_add(1, Ordering::SeqCst) > 0 {
                eprintln!(
                    "{NAME}: vCPUs run on more than one thread (multi-threaded TCG); the cost \
                     model needs -accel tcg,thread=single with -icount shift=0,sleep=off"
                );
                std::process::abort();
            }
            let mut created = State {
                config,
                machine: config
                    .caches
                    .then(|| Machine::new(config.model, config.vcpus)),
                tally: if config.caches {
                    Tally::new(config.symbols.len(), config.vcpus)
                } else {
                    Tally::counting_inline(config.symbols.len())
                },
                windows: Windows::default(),
                segments: Vec::new(),
            };
            if config.boot {
                // The guest's first instruction: the boot window opens
                // on an empty tally.
                let boot = Phase::Boot.name();
                created.windows.begin(boot, &created.tally);
                if let Some(output) = output().as_mut() {
                    output.open.insert(boot);
                }
            }
            *state = Some(created);
        }
        f(state.as_mut().expect("just created"))
    })
}

/// QEMU's entry point.
///
/// # Safety
/// QEMU calls it once, with valid `info` and `argc` strings in `argv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn qemu_plugin_install(
    id: sys::qemu_plugin_id_t,
    info: *const sys::qemu_info_t,
    argc: c_int,
    argv: *mut *mut c_char,
) -> c_int {
    // SAFETY: QEMU's contract for the install function.
    let (info, args) = unsafe {
        let args = (0..argc.max(0) as usize)
            .map(|i| CStr::from_ptr(*argv.add(i)).to_string_lossy().into_owned())
            .collect::<Vec<_>>();
        (&*info, args)
    };
    match install(info, &args) {
        Ok((config, out)) => {
            if CONFIG.set(config).is_err() {
                eprintln!("{NAME}: installed twice");
                return -1;
            }
            *output() = Some(out);
            PLUGIN_ID.store(id, Ordering::Relaxed);
            // Counting the boot: every block is instrumented from the
            // first, and the model-on marker has nothing left to switch.
            if CONFIG.get().is_some_and(|c| c.boot) {
                ACTIVE.store(true, Ordering::Relaxed);
            }
            register(id);
            0
        }
        Err(message) => {
            eprintln!("{NAME}: {message}");
            -1
        }
    }
}

/// Our callbacks (at install, and again after the reset, which drops them).
fn register(id: sys::qemu_plugin_id_t) {
    // SAFETY: registering our callbacks with our id.
    unsafe {
        sys::qemu_plugin_register_vcpu_tb_trans_cb(id, Some(on_translate));
        sys::qemu_plugin_register_flush_cb(id, Some(on_flush));
        sys::qemu_plugin_register_atexit_cb(id, Some(on_exit), std::ptr::null_mut());
    }
}

/// The reset the model-on marker asked for is done: every block was
/// dropped, so from now on each is translated with the model's callbacks.
unsafe extern "C" fn on_reset(id: sys::qemu_plugin_id_t) {
    ACTIVE.store(true, Ordering::Relaxed);
    STATE.with(|cell| {
        if let Ok(mut state) = cell.try_borrow_mut()
            && let Some(state) = state.as_mut()
        {
            state.segments.clear();
        }
    });
    register(id);
}

fn install(info: &sys::qemu_info_t, args: &[String]) -> Result<(Config, Output), String> {
    let args = PluginArgs::parse(args)?;
    if !args.icount {
        return Err(
            "refusing to run without icount=on: the cost model's counts repeat only \
             under TCG single-threaded with -icount shift=0,sleep=off (-accel tcg,thread=single), \
             and icount=on says QEMU runs so"
                .into(),
        );
    }
    if !info.system_emulation {
        return Err("the cost model needs system emulation (qemu-system-*)".into());
    }
    // SAFETY: `system` is the union's member in system emulation.
    let vcpus = unsafe { info.__bindgen_anon_1.system.max_vcpus };
    let vcpus = usize::try_from(vcpus)
        .ok()
        .filter(|v| (1..=MAX_VCPUS).contains(v))
        .ok_or_else(|| format!("the cost model tracks 1 to {MAX_VCPUS} vCPUs, QEMU has {vcpus}"))?;
    let map_path = args.system_map.display().to_string();
    let map = std::fs::read_to_string(&args.system_map)
        .map_err(|e| format!("cannot read the System.map {map_path}: {e}"))?;
    let symbols = Symbols::parse(&map).map_err(|e| format!("{map_path}: {e}"))?;
    if symbols.code_symbols() == 0 {
        return Err(format!("{map_path} has no kernel code symbols"));
    }
    let path = args.out.display().to_string();
    let file = File::create(&args.out)
        .map_err(|e| format!("cannot create the window file {path}: {e}"))?;
    let (model, caches) = match args.model {
        ModelChoice::Cache => (&SKYLAKE_CLIENT, true),
        ModelChoice::Count => (&COUNTING, false),
    };
    Ok((
        Config {
            model,
            caches,
            symbols,
            vcpus,
            boot: args.boot,
        },
        Output {
            file,
            path,
            open: BTreeSet::new(),
        },
    ))
}

/// A block is translated: resolve each instruction's symbol, find the
/// markers, and attach the callbacks.
unsafe extern "C" fn on_translate(_id: sys::qemu_plugin_id_t, tb: *mut sys::qemu_plugin_tb) {
    let active = ACTIVE.load(Ordering::Relaxed);
    with_state(|state| {
        let symbols = &state.config.symbols;
        let caches = state.config.caches;
        // SAFETY: `tb` and its instructions are valid during this callback.
        unsafe {
            let n = sys::qemu_plugin_tb_n_insns(tb);
            if !active {
                // Before the model is on, only markers are watched.
                for i in 0..n {
                    let insn = sys::qemu_plugin_tb_get_insn(tb, i);
                    let bytes = std::slice::from_raw_parts(
                        sys::qemu_plugin_insn_data(insn).cast::<u8>(),
                        sys::qemu_plugin_insn_size(insn),
                    );
                    if let Some(found) = marker::decode_instruction(bytes) {
                        attach(state, tb, Some(insn), Segment::new(Some(found)));
                    }
                }
                return;
            }
            let mut segment = Segment::new(None);
            let mut anchor: Option<*mut sys::qemu_plugin_insn> = None;
            for i in 0..n {
                let insn = sys::qemu_plugin_tb_get_insn(tb, i);
                let vaddr = sys::qemu_plugin_insn_vaddr(insn);
                let size = sys::qemu_plugin_insn_size(insn);
                let bytes =
                    std::slice::from_raw_parts(sys::qemu_plugin_insn_data(insn).cast::<u8>(), size);
                let sym = symbols.lookup(vaddr);
                segment.add(sym, vaddr, size as u64, caches);
                if caches {
                    match insn::classify(bytes) {
                        Insn::Other => {}
                        classified => segment.charges.push((sym, classified)),
                    }
                }
                match marker::decode_instruction(bytes) {
                    // Counting alone: no memory callback.
                    None if !caches => {}
                    None => sys::qemu_plugin_register_vcpu_mem_cb(
                        insn,
                        Some(on_mem),
                        sys::qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                        sys::qemu_plugin_mem_rw::QEMU_PLUGIN_MEM_RW,
                        sym as usize as *mut c_void,
                    ),
                    Some(found) => {
                        let done = std::mem::replace(&mut segment, Segment::new(Some(found)));
                        attach(state, tb, anchor, done);
                        anchor = Some(insn);
                    }
                }
            }
            attach(state, tb, anchor, segment);
        }
    })
}

/// Runs `segment` when the block starts (no anchor) or when its marker
/// instruction executes. A block's first segment in the counting lane has
/// nothing to do but add, so QEMU adds its runs inline, with no call into
/// the plugin; a segment that starts at a marker calls in, so that the
/// marker acts before its instructions count.
unsafe fn attach(
    state: &mut State,
    tb: *mut sys::qemu_plugin_tb,
    anchor: Option<*mut sys::qemu_plugin_insn>,
    segment: Segment,
) {
    // Only a counting tally has inline counters, and its segments have no
    // fetches or charges to model.
    if anchor.is_none()
        && segment.marker.is_none()
        && let Some(counters) = state.tally.inline_counters()
    {
        for &(sym, n) in &segment.runs {
            // SAFETY: `tb` is valid during translation; the counter is the
            // tally's, which lives as long as the plugin and never moves.
            unsafe {
                sys::qemu_plugin_register_vcpu_tb_exec_inline(
                    tb,
                    sys::qemu_plugin_op::QEMU_PLUGIN_INLINE_ADD_U64,
                    counters[sym as usize].as_ptr().cast::<c_void>(),
                    n,
                )
            };
        }
        return;
    }
    let segment = Box::new(segment);
    let data = (&*segment as *const Segment).cast_mut().cast::<c_void>();
    state.segments.push(segment);
    let flags = sys::qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS;
    // SAFETY: the handles are valid during translation; `data` lives in
    // `segments` until the code cache is flushed.
    unsafe {
        match anchor {
            None => sys::qemu_plugin_register_vcpu_tb_exec_cb(tb, Some(on_segment), flags, data),
            Some(insn) => {
                sys::qemu_plugin_register_vcpu_insn_exec_cb(insn, Some(on_segment), flags, data)
            }
        }
    }
}

/// A segment starts executing: its marker acts, then its instructions and
/// fetches are counted.
unsafe extern "C" fn on_segment(vcpu: c_uint, data: *mut c_void) {
    // SAFETY: `data` is a segment kept alive in `State::segments`.
    let segment = unsafe { &*data.cast::<Segment>() };
    with_state(|state| {
        let v = vcpu as usize;
        if let Some(found) = segment.marker {
            state.mark(found);
        }
        for &(sym, n) in &segment.runs {
            state.tally.insns(v, sym, n);
        }
        for &(sym, classified) in &segment.charges {
            state.tally.charge(v, sym, classified, 1);
        }
        if let Some(machine) = state.machine.as_mut() {
            for &(addr, sym) in &segment.lines {
                let outcome = machine.access(v, addr, Access::Fetch);
                state.tally.access(v, sym, Access::Fetch, outcome);
            }
        }
    })
}

/// One memory access, after it happened.
unsafe extern "C" fn on_mem(
    vcpu: c_uint,
    info: sys::qemu_plugin_meminfo_t,
    vaddr: u64,
    data: *mut c_void,
) {
    // SAFETY: QEMU's contract: `info` and `vaddr` describe this access.
    let (paddr, size, store) = unsafe {
        let hw = sys::qemu_plugin_get_hwaddr(info, vaddr);
        if hw.is_null() || sys::qemu_plugin_hwaddr_is_io(hw) {
            return; // device memory: not cached
        }
        (
            sys::qemu_plugin_hwaddr_phys_addr(hw),
            1u64 << sys::qemu_plugin_mem_size_shift(info),
            sys::qemu_plugin_mem_is_store(info),
        )
    };
    let kind = if store { Access::Write } else { Access::Read };
    let sym = data as usize as u32;
    with_state(|state| {
        let v = vcpu as usize;
        let Some(machine) = state.machine.as_mut() else {
            return;
        };
        // An access that straddles two lines touches both.
        for line in (paddr >> LINE_SHIFT)..=((paddr + size - 1) >> LINE_SHIFT) {
            let outcome = machine.access(v, line << LINE_SHIFT, kind);
            state.tally.access(v, sym, kind, outcome);
        }
    })
}

/// QEMU flushed its code cache: no block refers to a segment any more.
/// (It runs on the TCG thread; elsewhere there is nothing to free.)
unsafe extern "C" fn on_flush(_id: sys::qemu_plugin_id_t) {
    STATE.with(|cell| {
        if let Some(state) = cell.borrow_mut().as_mut() {
            state.segments.clear();
        }
    })
}

/// QEMU exits (on its main thread, the vCPUs stopped): a window still open
/// means a phase never ended.
unsafe extern "C" fn on_exit(_id: sys::qemu_plugin_id_t, _data: *mut c_void) {
    if let Some(output) = output().as_mut() {
        for phase in std::mem::take(&mut output.open) {
            output.write(&Line::Error {
                message: format!("the window of phase {phase} was still open when QEMU exited"),
            });
        }
    }
}
