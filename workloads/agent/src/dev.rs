//! A developer mode for the build host, reachable only when the agent is not
//! PID 1: it runs the ZswapPageout workers (fork, pinning, start barrier,
//! fill, MADV_PAGEOUT, verify, report) without a VM, a cgroup or zswap, and
//! prints their combined numbers.
//!
//! Exit codes: 0 success, 1 the workers failed, 2 usage error.

use crate::pageout;
use crate::setup;
use crate::spawn;

const USAGE: &str = "\
usage: patchbench-agent dev-workers [--workers N] [--mib M]

patchbench-agent is patchbench's guest agent: it runs as PID 1 (/init) inside
the benchmark VM. Off PID 1 it only offers this smoke test of the zswap-pageout
workers, with no cgroup (so no zswap counters). Defaults: 1 worker, 32 MiB.";

/// A validated developer command line.
#[derive(Debug, PartialEq, Eq)]
enum Command {
    Help,
    Workers { workers: u32, mib: u64 },
}

fn parse_args(args: &[String]) -> Result<Command, String> {
    let mut args = args.iter().map(String::as_str);
    match args.next() {
        Some("dev-workers") => {}
        Some("-h" | "--help") => return Ok(Command::Help),
        Some(other) => return Err(format!("unknown command {other:?}")),
        None => return Err("no command given".to_string()),
    }
    let (mut workers, mut mib) = (1u32, 32u64);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag {
            "--workers" => {
                workers = value?
                    .parse()
                    .map_err(|_| "--workers takes a whole number".to_string())?
            }
            "--mib" => {
                mib = value?
                    .parse()
                    .map_err(|_| "--mib takes a whole number".to_string())?
            }
            "-h" | "--help" => return Ok(Command::Help),
            other => return Err(format!("unknown flag {other:?}")),
        }
    }
    Ok(Command::Workers { workers, mib })
}

/// Runs the developer mode and returns the process exit code.
pub fn main(args: Vec<String>) -> i32 {
    match parse_args(&args) {
        Ok(Command::Help) => {
            println!("{USAGE}");
            0
        }
        Ok(Command::Workers { workers, mib }) => match run(workers, mib) {
            Ok(line) => {
                println!("{line}");
                0
            }
            Err(e) => {
                eprintln!("patchbench-agent: {e}");
                1
            }
        },
        Err(e) => {
            eprintln!("patchbench-agent: {e}\n\n{USAGE}");
            2
        }
    }
}

fn run(workers: u32, mib: u64) -> crate::error::Result<String> {
    let online = setup::online_cpus()?;
    let cpus = pageout::worker_cpus(&online, workers)?;
    let slots: Vec<spawn::Slot> = cpus
        .iter()
        .map(|&cpu| spawn::Slot {
            cpu: Some(cpu),
            cgroup_procs: None,
        })
        .collect();
    let body = |_: usize, gate: &mut spawn::Gate| {
        crate::worker::measure(mib, 0, &mut || gate.wait())
            .map(crate::report::WorkerResult::to_fields)
    };
    let results = spawn::run_workers(&slots, &body, &mut |_| Ok(()))?
        .iter()
        .map(|f| crate::report::WorkerResult::from_fields(f).map_err(crate::error::Error::msg))
        .collect::<crate::error::Result<Vec<_>>>()?;
    let t = pageout::totals(&results);
    Ok(format!(
        "workers={workers} mib_per_worker={mib} pageout_cpu_ns={} verify_cpu_ns={} total_cpu_ns={} elapsed_ns={}",
        t.pageout_cpu_ns, t.verify_cpu_ns, t.total_cpu_ns, t.elapsed_ns
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_the_developer_command() {
        assert_eq!(
            parse_args(&args("dev-workers")),
            Ok(Command::Workers {
                workers: 1,
                mib: 32
            })
        );
        assert_eq!(
            parse_args(&args("dev-workers --workers 2 --mib 4")),
            Ok(Command::Workers { workers: 2, mib: 4 })
        );
        assert_eq!(parse_args(&args("--help")), Ok(Command::Help));
    }

    #[test]
    fn rejects_bad_command_lines() {
        for (text, want) in [
            ("", "no command"),
            ("console=ttyS0", "unknown command"),
            ("dev-workers --mib", "needs a value"),
            ("dev-workers --mib x", "whole number"),
            ("dev-workers --bogus 1", "unknown flag"),
        ] {
            let err = parse_args(&args(text)).unwrap_err();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }
}
