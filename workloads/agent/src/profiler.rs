//! ftrace's function profiler, for one kernel function: hit counts and time.
//!
//! Setup (outside any timed region): pick the first candidate listed in
//! `available_filter_functions`, make it the only entry of
//! `set_ftrace_filter`, and set `options/sleep-time` and `options/graph-time`
//! to 0 so a call's time is its own running time (see the domain notes'
//! "Function profiler gotchas"). Per measurement: [`Profiler::start`] writes 0
//! then 1 to `function_profile_enabled` (enabling resets every CPU's table),
//! [`Profiler::stop`] writes 0 (the tables stay readable), and
//! [`Profiler::read`] sums the function's line over every
//! `trace_stat/function<N>` file.

use std::path::{Path, PathBuf};

use crate::console;
use crate::error::{Context, Error, Result, bail};
use crate::files;

pub const TRACEFS: &str = "/sys/kernel/tracing";

/// The profiler, set up for one function.
#[derive(Debug)]
pub struct Profiler {
    dir: PathBuf,
    symbol: String,
}

/// What the profiler counted for the function, summed over CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stat {
    pub hits: u64,
    /// Total time in the function, in ns (the kernel prints microseconds
    /// with at most 7 significant digits, so large totals lose their ns).
    pub time_ns: u64,
}

impl Stat {
    /// Mean time per call in ns; `None` without calls (a mean over no
    /// calls is no measurement, not 0).
    pub fn mean_ns(self) -> Option<u64> {
        self.time_ns.checked_div(self.hits)
    }
}

impl Profiler {
    /// Sets the profiler up for the first of `candidates` the kernel can trace.
    pub fn setup(candidates: &[&str]) -> Result<Profiler> {
        let dir = Path::new(TRACEFS);
        let available = dir.join("available_filter_functions");
        if !available.exists() {
            bail!(
                "{} is missing: is tracefs mounted and the kernel built with FUNCTION_PROFILER (kconfigs/profile.config)?",
                available.display()
            );
        }
        let text = files::read(&available)?;
        let Some(symbol) = choose(candidates, &text) else {
            bail!(
                "none of {} is in {}",
                candidates.join(", "),
                available.display()
            );
        };
        let profiler = Profiler {
            dir: dir.to_owned(),
            symbol: symbol.to_string(),
        };
        profiler.write("function_profile_enabled", "0")?;
        profiler.write("set_ftrace_filter", symbol)?;
        let filter = files::read_value(dir.join("set_ftrace_filter"))?;
        if filter != symbol {
            bail!("set_ftrace_filter reads {filter:?} after writing {symbol:?}");
        }
        for option in ["options/sleep-time", "options/graph-time"] {
            profiler.write(option, "0")?;
            let got = files::read_value(dir.join(option))?;
            if got != "0" {
                bail!("{TRACEFS}/{option} reads {got:?} after writing \"0\"");
            }
        }
        console::say(format!(
            "function profiler on {symbol} (sleep-time=0 graph-time=0)"
        ));
        Ok(profiler)
    }

    /// The function counted.
    pub fn symbol(&self) -> &str {
        &self.symbol
    }

    fn write(&self, file: &str, value: &str) -> Result<()> {
        files::write(self.dir.join(file), value)
    }

    /// Resets every CPU's table and starts counting.
    pub fn start(&self) -> Result<()> {
        self.write("function_profile_enabled", "0")?;
        self.write("function_profile_enabled", "1")
    }

    /// Stops counting; what was counted stays readable.
    pub fn stop(&self) -> Result<()> {
        self.write("function_profile_enabled", "0")
    }

    /// The function's hits and time, summed over every CPU's table.
    pub fn read(&self) -> Result<Stat> {
        let stat_dir = self.dir.join("trace_stat");
        let entries = std::fs::read_dir(&stat_dir)
            .with_context(|| format!("listing {}", stat_dir.display()))?;
        let mut total = Stat::default();
        let mut tables = 0;
        for entry in entries {
            let entry = entry.with_context(|| format!("listing {}", stat_dir.display()))?;
            let name = entry.file_name();
            let Some(cpu) = name.to_str().and_then(|n| n.strip_prefix("function")) else {
                continue;
            };
            if cpu.parse::<u32>().is_err() {
                continue;
            }
            tables += 1;
            let text = files::read(entry.path())?;
            let stat = parse_table(&text, &self.symbol)
                .map_err(Error::msg)
                .with_context(|| format!("parsing {}", entry.path().display()))?;
            total.hits += stat.hits;
            total.time_ns += stat.time_ns;
        }
        if tables == 0 {
            bail!("{} has no function<N> tables", stat_dir.display());
        }
        Ok(total)
    }
}

/// The first candidate that is a whole line (or the first word of a line,
/// before a `[module]` tag) of `available_filter_functions`.
pub fn choose<'a>(candidates: &[&'a str], available: &str) -> Option<&'a str> {
    candidates.iter().copied().find(|c| {
        available
            .lines()
            .any(|line| line.split_whitespace().next() == Some(*c))
    })
}

/// The function's line in one `trace_stat/function<N>` table: `name hits`
/// then, with the graph tracer, `time us avg us s^2 us`. A function without
/// a line was not hit on that CPU.
pub fn parse_table(text: &str, symbol: &str) -> std::result::Result<Stat, String> {
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some(symbol) {
            continue;
        }
        let hits = words
            .next()
            .ok_or_else(|| format!("no hit count in {line:?}"))?;
        let hits = hits
            .parse::<u64>()
            .map_err(|_| format!("hit count {hits:?} is not a number in {line:?}"))?;
        let time_ns = match words.next() {
            None => 0,
            Some(time) => {
                if words.next() != Some("us") {
                    return Err(format!("time {time:?} has no `us` unit in {line:?}"));
                }
                micros_to_ns(time).ok_or_else(|| format!("bad time {time:?} in {line:?}"))?
            }
        };
        return Ok(Stat { hits, time_ns });
    }
    Ok(Stat::default())
}

/// `1234.567` (microseconds, as `trace_print_graph_duration` prints them,
/// with 0 to 3 decimals) in nanoseconds.
fn micros_to_ns(text: &str) -> Option<u64> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let us: u64 = whole.parse().ok()?;
    let frac_ns: u64 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<3}").parse().ok()?
    };
    us.checked_mul(1000)?.checked_add(frac_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str =
        "  Function                               Hit    Time            Avg             s^2
  --------                               ---    ----            ---             ---
  do_flush_stats                          8193    12345.67 us     1.506 us        0.120 us    
  mem_cgroup_css_rstat_flush                40    52.100 us       1.302 us        0.004 us    
";

    #[test]
    fn the_symbols_line_gives_hits_and_time() {
        assert_eq!(
            parse_table(TABLE, "do_flush_stats"),
            Ok(Stat {
                hits: 8193,
                time_ns: 12_345_670
            })
        );
        assert_eq!(
            parse_table(TABLE, "mem_cgroup_css_rstat_flush"),
            Ok(Stat {
                hits: 40,
                time_ns: 52_100
            })
        );
    }

    #[test]
    fn a_function_not_hit_has_no_line() {
        assert_eq!(
            parse_table(TABLE, "cgroup_rstat_flush"),
            Ok(Stat::default())
        );
        assert_eq!(parse_table("", "do_flush_stats"), Ok(Stat::default()));
    }

    #[test]
    fn without_the_graph_tracer_there_are_only_hits() {
        let table = "  Function    Hit\n  --------    ---\n  do_flush_stats   7\n";
        assert_eq!(
            parse_table(table, "do_flush_stats"),
            Ok(Stat {
                hits: 7,
                time_ns: 0
            })
        );
    }

    #[test]
    fn garbled_lines_are_errors() {
        assert!(parse_table("do_flush_stats many", "do_flush_stats").is_err());
        assert!(parse_table("do_flush_stats 3 1.2 ms", "do_flush_stats").is_err());
        assert!(parse_table("do_flush_stats 3 1.2345 us", "do_flush_stats").is_err());
    }

    #[test]
    fn microseconds_with_few_or_no_decimals() {
        assert_eq!(micros_to_ns("12345678"), Some(12_345_678_000));
        assert_eq!(micros_to_ns("123456.7"), Some(123_456_700));
        assert_eq!(micros_to_ns("1.506"), Some(1_506));
        assert_eq!(micros_to_ns("x"), None);
    }

    #[test]
    fn the_first_traceable_candidate_wins() {
        let available = "cgroup_rstat_flush\nobj_cgroup_may_zswap\nfoo [zram]\n";
        assert_eq!(
            choose(&["do_flush_stats", "cgroup_rstat_flush"], available),
            Some("cgroup_rstat_flush")
        );
        assert_eq!(choose(&["foo"], available), Some("foo"));
        assert_eq!(choose(&["cgroup_rstat"], available), None);
        assert_eq!(
            Stat {
                hits: 4,
                time_ns: 10
            }
            .mean_ns(),
            Some(2)
        );
        assert_eq!(Stat::default().mean_ns(), None);
    }
}
