//! `patchbench build`: the kernel stage alone, with a timing report.

use std::fmt::Write;
use std::path::PathBuf;

use super::args::{CampaignArgs, cache_dir, load_plan};
use crate::build::KernelArtifact;
use crate::build::objects::Reason;
use crate::campaign::{self, BuildOutcome};
use crate::events::{Event, Sink};

#[derive(clap::Args)]
pub struct BuildArgs {
    #[command(flatten)]
    campaign: CampaignArgs,
    /// Ignore cached builds: build A from nothing, then B incrementally from
    /// it (for timing a full build; ccache still applies unless
    /// CCACHE_DISABLE=1 is set).
    #[arg(long)]
    fresh: bool,
    /// Write the kernels' manifest (`kernels.json`) into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// `build`'s checks: the campaign loads with its flags, is no hunt, and
/// its local tree and series are there.
pub(super) fn check(args: &BuildArgs) -> anyhow::Result<crate::config::Plan> {
    let plan = load_plan(&args.campaign, None)?;
    super::args::refuse_bisect(&plan, "`patchbench build`")?;
    super::args::plan_paths(&plan)?;
    Ok(plan)
}

pub(super) async fn build(args: BuildArgs, sink: &dyn Sink) -> anyhow::Result<()> {
    let plan = check(&args)?;
    let outcome = campaign::build_only(
        &plan,
        &cache_dir(&args.campaign),
        args.fresh,
        args.campaign.cache_max,
        sink,
    )
    .await?;
    if let Some(out) = &args.out {
        let path = campaign::export(&outcome.kernels, out)?;
        sink.emit(Event::Note(format!(
            "manifest: {} (with the kernels; boot them with `patchbench run --kernels {}`)",
            path.display(),
            out.display()
        )));
    }
    sink.emit(Event::Output(render(&outcome)));
    Ok(())
}

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

/// The build report: each kernel, B's recompiled objects with reasons, and
/// the stage times with B's share of a full build.
pub fn render(outcome: &BuildOutcome) -> String {
    let mut s = String::new();
    for k in &outcome.kernels {
        let a: &KernelArtifact = &k.artifact;
        let _ = writeln!(
            s,
            "kernel {}: commit {}  {}\n  bzImage {} (sha256 {})\n  .config sha256 {}  compiler {}{}",
            k.variant,
            short(&a.commit),
            campaign::describe(a),
            a.bzimage.display(),
            short(&a.bzimage_sha256),
            short(&a.config_sha256),
            a.compiler,
            a.series_sha256
                .as_deref()
                .map(|h| format!("  series sha256 {}", short(h)))
                .unwrap_or_default(),
        );
        if !a.rebuilt.is_empty() {
            let count = |r: Reason| a.rebuilt.iter().filter(|o| o.reason == r).count();
            let _ = writeln!(
                s,
                "  recompiled: {} for the series, {} for the link, {} unexpected",
                count(Reason::Series),
                count(Reason::Link),
                count(Reason::Unexpected)
            );
            for o in &a.rebuilt {
                let why = match o.reason {
                    Reason::Series => "series",
                    Reason::Link => "link",
                    Reason::Unexpected => "UNEXPECTED",
                };
                let _ = writeln!(s, "    {why:<10} {}", o.object);
            }
        }
    }
    let _ = writeln!(s, "stage times:");
    for t in &outcome.timings {
        let _ = writeln!(s, "  {:<8} {:>8.1} s", t.stage, t.seconds);
    }
    if let [a, b] = outcome.kernels.as_slice()
        && !a.artifact.reused
        && !a.artifact.incremental
        && !b.artifact.reused
        && a.artifact.build_seconds > 0.0
    {
        let _ = writeln!(
            s,
            "B's incremental make took {:.1}% of A's full make ({:.1} s vs {:.1} s)",
            b.artifact.build_seconds / a.artifact.build_seconds * 100.0,
            b.artifact.build_seconds,
            a.artifact.build_seconds
        );
    }
    s
}
