//! A developer mode, reachable only when the agent is not PID 1:
//! - `dev-workers` runs the ZswapPageout workers (fork, pinning, start
//!   barrier, fill, MADV_PAGEOUT, verify, report) without a VM, a cgroup or
//!   zswap, and prints their combined numbers; with `--marked` they mark
//!   their phases for the cost model as the timed pass does;
//! - `marked-loop N` runs a loop of exactly 2N instructions between the
//!   begin and end markers of the `probe` phase, for testing the cost-model
//!   plugin (`patchbench boot --cost-model KERNEL -- /init marked-loop N`);
//! - `true` exits 0 at once: the program the `fork-exec` benchmark
//!   executes (`patchbench_agent::kinds::fork_exec`).
//!
//! Exit codes: 0 success, 1 the workers failed, 2 usage error.

use crate::pageout;
use crate::setup;
use crate::spawn;

const USAGE: &str = "\
usage: patchbench-agent dev-workers [--workers N] [--mib M] [--marked]
       patchbench-agent marked-loop N
       patchbench-agent true

patchbench-agent is patchbench's guest agent: it runs as PID 1 (/init) inside
the benchmark VM. Off PID 1 it offers a smoke test of the zswap-pageout
workers, with no cgroup (so no zswap counters; defaults: 1 worker, 32 MiB;
--marked marks their total, pageout and verify phases for the cost model),
a loop of 2N instructions between the markers of the cost model's probe
phase, and `true`, which exits 0 at once (the fork-exec benchmark's program).";

/// A validated developer command line.
#[derive(Debug, PartialEq, Eq)]
enum Command {
    Help,
    Workers {
        workers: u32,
        mib: u64,
        marked: bool,
    },
    MarkedLoop {
        iterations: u64,
    },
    True,
}

fn parse_args(args: &[String]) -> Result<Command, String> {
    let mut args = args.iter().map(String::as_str);
    match args.next() {
        Some("dev-workers") => {}
        Some("marked-loop") => {
            let iterations = args
                .next()
                .and_then(|n| n.parse().ok())
                .filter(|&n: &u64| n > 0)
                .ok_or_else(|| "marked-loop takes a positive whole number".to_string())?;
            if let Some(extra) = args.next() {
                return Err(format!("unexpected argument {extra:?}"));
            }
            return Ok(Command::MarkedLoop { iterations });
        }
        Some("true") => {
            if let Some(extra) = args.next() {
                return Err(format!("unexpected argument {extra:?}"));
            }
            return Ok(Command::True);
        }
        Some("-h" | "--help") => return Ok(Command::Help),
        Some(other) => return Err(format!("unknown command {other:?}")),
        None => return Err("no command given".to_string()),
    }
    let (mut workers, mut mib, mut marked) = (1u32, 32u64, false);
    while let Some(flag) = args.next() {
        if flag == "--marked" {
            marked = true;
            continue;
        }
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
    Ok(Command::Workers {
        workers,
        mib,
        marked,
    })
}

/// Runs the developer mode and returns the process exit code.
pub fn main(args: Vec<String>) -> i32 {
    match parse_args(&args) {
        Ok(Command::Help) => {
            println!("{USAGE}");
            0
        }
        Ok(Command::True) => 0,
        Ok(Command::MarkedLoop { iterations }) => {
            crate::mark::marked_loop(iterations);
            println!("marked-loop: {iterations} iterations");
            0
        }
        Ok(Command::Workers {
            workers,
            mib,
            marked,
        }) => match run(workers, mib, marked) {
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

fn run(workers: u32, mib: u64, marked: bool) -> crate::error::Result<String> {
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
        crate::worker::measure(mib, 0, marked, &mut || gate.wait())
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
                mib: 32,
                marked: false
            })
        );
        assert_eq!(
            parse_args(&args("dev-workers --workers 2 --marked --mib 4")),
            Ok(Command::Workers {
                workers: 2,
                mib: 4,
                marked: true
            })
        );
        assert_eq!(parse_args(&args("--help")), Ok(Command::Help));
        assert_eq!(
            parse_args(&args("marked-loop 1000")),
            Ok(Command::MarkedLoop { iterations: 1000 })
        );
        assert_eq!(parse_args(&args("true")), Ok(Command::True));
    }

    #[test]
    fn rejects_bad_command_lines() {
        for (text, want) in [
            ("", "no command"),
            ("console=ttyS0", "unknown command"),
            ("dev-workers --mib", "needs a value"),
            ("dev-workers --mib x", "whole number"),
            ("dev-workers --bogus 1", "unknown flag"),
            ("marked-loop", "positive whole number"),
            ("marked-loop 0", "positive whole number"),
            ("marked-loop 5 6", "unexpected argument"),
            ("true 1", "unexpected argument"),
        ] {
            let err = parse_args(&args(text)).unwrap_err();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }
}
