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
mod layout;
mod mark;
mod pageout;
mod parse;
mod pattern;
mod port;
mod profiler;
mod refault;
mod report;
mod rstat;
mod setup;
mod spawn;
mod stage;
mod swapstat;
mod sys;
mod worker;

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use patchbench_agent::{
    Fault, JOB_PATH, Job, Limit, Message, PORT_NAME, PROTOCOL_VERSION, SwapBackend, Workload,
};

use crate::error::{Context, Result, bail};
use crate::port::Port;
use crate::profiler::Profiler;

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
        describe(&job.workload)
    ));
    let conditions = job.conditions();
    match job.workload.swap_backend() {
        SwapBackend::Disk => setup::swap(&job.swap),
        SwapBackend::Ram => setup::ram(),
        SwapBackend::Zram => setup::zram(
            conditions
                .iter()
                .map(|c| zram_bytes(c.1))
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
            console::say(format!("control {name}: {}", describe(workload)));
        }
        port.set_condition(condition);
        let profiler = profiler
            .as_ref()
            .filter(|_| !workload.profile_candidates().is_empty());
        let outcome = run_workload(
            workload.clone(),
            job.warmups,
            job.samples,
            job.host_root,
            profiler,
            port,
        );
        match condition {
            Some(name) => outcome.with_context(|| format!("control {name}"))?,
            None => outcome?,
        }
    }
    Ok(())
}

/// One condition's warm-ups and samples.
fn run_workload(
    workload: Workload,
    warmups: u32,
    samples: u32,
    host_root: bool,
    profiler: Option<&Profiler>,
    port: &mut Port,
) -> Result<()> {
    match workload {
        Workload::ZswapPageout {
            workers,
            mib_per_worker,
            random_percent,
            zswap_max,
            memory_max,
            swap_max,
            count_flushes: _,
            swap: _,
            compact,
            settle,
        } => {
            let params = pageout::Params {
                workers,
                mib_per_worker,
                random_percent,
                zswap_max,
                memory_max,
                swap_max,
                compact,
                settle,
            };
            pageout::run(&params, warmups, samples, profiler, port).context("zswap-pageout")
        }
        Workload::RstatFlush {
            cgroups,
            dirty_kib,
            dirty_pause,
            reads,
            swap: _,
            lockstep,
        } => {
            let params = rstat::Params {
                cgroups,
                dirty_kib,
                dirty_pause,
                reads,
                lockstep,
            };
            let profiler = profiler.expect("rstat-flush always profiles");
            rstat::run(&params, warmups, samples, profiler, port).context("rstat-flush")
        }
        Workload::ReclaimRefault {
            cgroups,
            file_mib,
            memory,
            limit_percent,
            reread,
            ..
        } => {
            let params = refault::Params {
                cgroups,
                file_mib,
                memory,
                limit_percent,
                reread,
            };
            refault::run(&params, warmups, samples, port).context("reclaim-refault")
        }
        Workload::GuestFault { fault } => fault::run(fault),
        Workload::Exec { argv } => exec::run(&argv, host_root),
        Workload::KernelBuild {
            driver,
            src,
            build,
            targets,
            jobs,
            memory_max,
            zswap_max,
            swap,
            ..
        } => {
            let params = kbuild::Params {
                swap,
                driver,
                src,
                build,
                targets,
                jobs,
                memory_max,
                zswap_max,
            };
            kbuild::run(&params, warmups, samples, port).context("kernel-build")
        }
    }
}

/// The size of `/dev/zram0`: the workload's whole data set, as seed 003's
/// script sizes it.
fn zram_bytes(workload: &Workload) -> u64 {
    match workload {
        Workload::ReclaimRefault {
            cgroups, file_mib, ..
        } => (u64::from(*cgroups) * file_mib) << 20,
        // Room for twice the build's limit: what is over the limit at any
        // time is at most the build's peak, which a sensible limit sits just
        // under.
        Workload::KernelBuild {
            memory_max: Limit::Bytes(b),
            ..
        } => 2 * b,
        // Room for every worker's memory, should zswap refuse or write
        // back all of it.
        Workload::ZswapPageout {
            workers,
            mib_per_worker,
            ..
        } => (u64::from(*workers) * mib_per_worker) << 20,
        // Room for what every dirtier holds at once: its anonymous region
        // and its tmpfs file.
        Workload::RstatFlush {
            cgroups, dirty_kib, ..
        } => (2 * u64::from(*cgroups) * dirty_kib) << 10,
        _ => 0,
    }
}

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

/// The workload and its parameters on one console line.
fn describe(workload: &Workload) -> String {
    match workload {
        Workload::ZswapPageout {
            workers,
            mib_per_worker,
            random_percent,
            zswap_max,
            memory_max,
            swap_max,
            count_flushes,
            swap,
            compact,
            settle,
        } => format!(
            "zswap-pageout workers={workers} mib_per_worker={mib_per_worker} random_percent={random_percent} zswap_max={} memory_max={} swap_max={} count_flushes={count_flushes} swap={swap:?} compact={compact} settle={settle}",
            zswap_max.cgroup_value(),
            memory_max.cgroup_value(),
            swap_max.cgroup_value()
        ),
        Workload::Exec { argv } => format!("exec {argv:?}"),
        Workload::RstatFlush {
            cgroups,
            dirty_kib,
            dirty_pause,
            reads,
            swap,
            lockstep,
        } => format!(
            "rstat-flush cgroups={cgroups} dirty_kib={dirty_kib} dirty_pause={dirty_pause:?} reads={reads} swap={swap:?} lockstep={lockstep}"
        ),
        Workload::ReclaimRefault {
            cgroups,
            file_mib,
            swap,
            memory,
            limit_percent,
            reread,
        } => format!(
            "reclaim-refault cgroups={cgroups} file_mib={file_mib} swap={swap:?} memory={memory:?} limit_percent={limit_percent} reread={reread:?}"
        ),
        Workload::KernelBuild {
            config,
            driver,
            src,
            build,
            targets,
            jobs,
            memory_max,
            zswap_max,
            swap,
        } => format!(
            "kernel-build config={config} driver={driver:?} src={src} build={build} targets={targets:?} jobs={jobs} memory_max={} zswap_max={} swap={swap:?}",
            memory_max.cgroup_value(),
            zswap_max.cgroup_value()
        ),
        Workload::GuestFault { fault } => format!(
            "guest-fault {}",
            match fault {
                Fault::ExitInit => "exit-init",
                Fault::Hang => "hang",
                Fault::Fail => "fail",
                Fault::HostIo => "host-io",
            }
        ),
    }
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
