//! patchbench's guest agent: PID 1 (`/init`) inside the benchmark VM.
//!
//! As PID 1 it mounts the kernel file systems, opens the virtio-serial port,
//! says hello, reads the job, sets up swap, zswap and THP (each read back),
//! reports the guest's facts, runs the workload, reports each sample, says
//! done and reboots, which ends QEMU (run with `-no-reboot`). Any failure
//! after the port is open, a panic included, is reported as one `error`
//! message before the reboot. PID 1 never exits by accident: only the
//! `exit-init` fault does, on purpose.
//!
//! Run as any other process it offers only a developer mode (see [`dev`]).
//! The mode is chosen by PID, never by argv, since PID 1's argv comes from
//! the kernel command line.

mod cgroup;
mod console;
mod cpustat;
mod dev;
mod error;
mod exec;
mod fault;
mod files;
mod gate;
mod hostio;
mod hostroot;
mod kbuild;
mod kernel_boot;
mod layout;
mod mark;
mod mm_selftest;
mod ops;
mod pageout;
mod parse;
mod pattern;
mod port;
mod profiler;
mod program;
mod refault;
mod report;
mod rstat;
mod run;
mod settle;
mod setup;
mod spawn;
mod stage;
mod stress_ng;
mod swapstat;
mod sys;
mod worker;

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use patchbench_agent::{
    JOB_PATH, Job, Message, PORT_NAME, PROTOCOL_VERSION, SwapBackend, Workload,
};

use crate::error::{Context, Result, bail};
use crate::port::Port;
use crate::profiler::Profiler;
use crate::run::{Boot, Run};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// How long the virtio-serial port may take to appear after boot.
const PORT_DEADLINE: Duration = Duration::from_secs(10);

fn main() {
    if sys::getpid() != 1 {
        std::process::exit(dev::main(std::env::args().skip(1).collect()));
    }
    init()
}

/// PID 1's whole life.
fn init() -> ! {
    kernel_boot::started();
    console::say(format!("version {VERSION} starting"));
    if let Err(e) = setup::mount_early() {
        console::say(format!("error: {e}"));
        shutdown();
    }
    let mut port = match Port::open(PORT_DEADLINE) {
        Ok(port) => port,
        Err(e) => {
            console::say(format!("error: {e}"));
            shutdown();
        }
    };
    console::say(format!("port {PORT_NAME} is {}", port.path().display()));

    let failure = match std::panic::catch_unwind(AssertUnwindSafe(|| run(&mut port))) {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e.to_string()),
        Err(payload) => Some(format!("agent panicked: {}", panic_text(&*payload))),
    };
    let (line, message) = match failure {
        None => ("done, rebooting".to_string(), Message::Done),
        Some(message) => (format!("error: {message}"), Message::Error { message }),
    };
    console::say(line);
    if let Err(e) = port.send(&message) {
        console::say(format!("could not tell the host: {e}"));
    }
    shutdown()
}

/// Everything after the port is open.
fn run(port: &mut Port) -> Result<()> {
    port.send(&Message::Hello {
        protocol: PROTOCOL_VERSION,
        agent_version: VERSION.to_string(),
    })?;
    setup::mount_late()?;
    let job = read_job()?;
    if job.host_root {
        hostroot::mount_all().context("mounting the host root")?;
    }
    console::say(format!(
        "job boot={} warmups={} samples={} workload {}",
        job.boot_label,
        job.warmups,
        job.samples,
        job.workload.describe()
    ));
    let conditions = job.conditions();
    match job.workload.swap_backend() {
        SwapBackend::Disk => setup::swap(&job.swap),
        SwapBackend::Ram => setup::ram(),
        SwapBackend::None => Ok(()),
        SwapBackend::Zram => setup::zram(
            conditions
                .iter()
                .map(|c| c.1.zram_bytes())
                .max()
                .unwrap_or(0),
        ),
    }
    .context("setting up swap")?;
    setup::zswap(&job.zswap).context("setting up zswap")?;
    setup::thp(job.thp).context("setting up THP")?;
    if let Some(n) = job.layout {
        console::say(format!("memory layout {n}"));
        layout::scatter(n).with_context(|| format!("setting up memory layout {n}"))?;
    }
    let settings = setup::settings(&job.settings).context("writing the variant's settings")?;
    let candidates = job.workload.profile_candidates();
    let profiler = if candidates.is_empty() {
        None
    } else {
        Some(Profiler::setup(candidates).context("setting up the function profiler")?)
    };
    let mut facts = setup::facts().context("reading guest facts")?;
    facts.profiled_symbol = profiler.as_ref().map(|p| p.symbol().to_string());
    facts.settings = settings;
    facts.cputime = Some(cpustat::facts().context("reading how the kernel accounts CPU time")?);
    port.send(&Message::Facts(Box::new(facts)))?;

    // The cost model (if the boot runs in the cost lane) starts here: the
    // boot and the setup ran at icount's speed; the workload is modelled.
    mark::model_on();

    // The main workload, then each control, in this same boot; the port tags
    // each sample with its condition. Every condition is the main one's
    // kind, so the profiler set up above serves them all.
    for (condition, workload) in conditions {
        if let Some(name) = condition {
            console::say(format!("control {name}: {}", workload.describe()));
        }
        port.set_condition(condition);
        let profiler = profiler
            .as_ref()
            .filter(|_| !workload.profile_candidates().is_empty());
        let outcome = run_workload(
            workload,
            Boot {
                warmups: job.warmups,
                samples: job.samples,
                host_root: job.host_root,
                profiler,
                port,
            },
        );
        match condition {
            Some(name) => outcome.with_context(|| format!("control {name}"))?,
            None => outcome?,
        }
    }
    Ok(())
}

/// Runs one kind: a benchmark of the library through the harness
/// ([`ops::run`]), any other kind through its own [`run::Run`].
macro_rules! run_kind {
    (bench, $name:literal, $kind:expr, $boot:expr) => {
        ops::run($kind, $boot).context($name)
    };
    ($spec:ident, $name:literal, $kind:expr, $boot:expr) => {
        $kind.run($boot)
    };
}

/// Generates [`run_workload`] from the one list of kinds.
macro_rules! run_dispatch {
    ($($variant:ident($name:literal, $module:ident::$ty:ident, $spec:ident)),* $(,)?) => {
        /// One condition's warm-ups and samples.
        fn run_workload(workload: &Workload, boot: Boot<'_>) -> Result<()> {
            match workload {
                $(Workload::$variant(kind) => run_kind!($spec, $name, kind, boot),)*
                Workload::Exec(exec) => exec.run(boot),
            }
        }
    };
}

patchbench_agent::with_kinds!(run_dispatch);

fn read_job() -> Result<Job> {
    let text = files::read(JOB_PATH)?;
    let job: Job =
        serde_json::from_str(&text).with_context(|| format!("parsing the job {JOB_PATH}"))?;
    if job.protocol != PROTOCOL_VERSION {
        bail!(
            "the job {JOB_PATH} is for protocol {}, this agent speaks {PROTOCOL_VERSION}",
            job.protocol
        );
    }
    Ok(job)
}

fn panic_text(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

/// Syncs and reboots; with `-no-reboot` QEMU exits. Should the kernel refuse,
/// PID 1 must still not exit, so it waits for the host's deadline.
fn shutdown() -> ! {
    sys::sync();
    let e = sys::reboot();
    console::say(format!(
        "reboot failed: {e}; waiting for the host to stop the VM"
    ));
    sys::pause_forever()
}
