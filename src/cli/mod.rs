//! The command line: flags, their help, and one function per subcommand
//! that turns flags into a validated plan and runs the engine. Lives in the
//! library so that tests can check command lines (such as the CI
//! workflows') against the real parser.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::config::{self, AccelChoice, Campaign, Overrides, TreeSource};
use crate::events::Sink;
use crate::{campaign, ui};

mod boot;
mod build;
mod compare;
pub mod doctor;
mod plan;
mod publish;

#[derive(Parser)]
#[command(
    name = "patchbench",
    version,
    about = "What does this patch do to the kernel's performance?",
    long_about = "patchbench applies a patch series to a kernel tree, builds the base (A) and the \
patched kernel (B), boots each in QEMU in fresh A/B/A order, runs a memory-management workload \
inside the guest, and compares A with B.",
    after_help = "Exit codes:\n  0  the campaign ran and its results were written; no metric regressed\n  1  the campaign ran and a metric regressed, in the main workload or in any control condition\n  2  usage: a bad flag or campaign file; nothing ran\n  3  infrastructure: a missing tool, a failed build, QEMU or KVM trouble\n  4  the series does not apply or is malformed\n  5  a guest failed: panic, oops, warning, hang or workload error"
)]
pub struct Cli {
    /// Show no progress and no stage lines, only warnings and errors (the
    /// command's own output, such as the report, still goes to stdout).
    #[arg(long, short, global = true)]
    pub quiet: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run an A/B campaign: apply, build, boot, measure, report.
    #[command(
        after_help = "Examples:\n  patchbench run                         # the built-in smoke campaign (ci/smoke.yaml)\n  patchbench run ci/smoke.yaml\n  patchbench run --tree ~/linux --series ./my-series/   # try your own patch\n  patchbench run --accel tcg --out /tmp/pb ci/smoke.yaml\n  patchbench build --out /tmp/k && patchbench run --kernels /tmp/k   # boot kernels built elsewhere"
    )]
    Run(RunArgs),
    /// Apply a series to a tree and report, per patch, whether and how it
    /// applied. Nothing is built; the tree's working directory is untouched.
    #[command(
        after_help = "Examples:\n  patchbench apply --tree /usr/src/linux-source-6.12.tar.xz --series patches/zswap-counter\n  patchbench apply --tree ~/linux --rev v6.12 --series lore:20241023233548.23348-1-21cnbao@gmail.com"
    )]
    Apply(ApplyArgs),
    /// Import the tree, apply the series, and build both kernels (A, and B
    /// incrementally from A), without booting them. Prints how each was
    /// built, which objects B recompiled and why, and the stage times.
    #[command(
        after_help = "Examples:\n  patchbench build                          # the smoke campaign's kernels\n  patchbench build --series patches/zswap-counter\n  CCACHE_DISABLE=1 patchbench build --fresh --series patches/zswap-counter   # time a full build\n\nA second identical run reuses both kernels and says so."
    )]
    Build(BuildArgs),
    /// Boot one kernel with the guest agent and run one command in it (no
    /// shell; busybox applets by name). Its output and the console go to
    /// stdout; a failing command, a panic or a hang fail the boot. With
    /// --repeat, the median boot times (QEMU start to the agent's hello).
    #[command(
        after_help = "Examples:\n  patchbench boot ~/.cache/patchbench/builds/<tree>/<key>/arch/x86/boot/bzImage -- cat /proc/meminfo\n  patchbench boot --repeat 10 bzImage -- true      # boot-time benchmark\n  patchbench boot --campaign ci/smoke.yaml bzImage -- sh -c 'cat /sys/module/zswap/parameters/*'"
    )]
    Boot(boot::BootArgs),
    /// Re-render stored results without running anything: the terminal
    /// table (or --markdown) of each results.json. With --against, compare
    /// the B kernels of two runs: FIRST's B becomes A, the other's B is B.
    /// Exits 1 if a metric regressed, in the main workload or in any
    /// control condition (a control that regresses is a regression of the
    /// patch too).
    #[command(
        after_help = "Examples:\n  patchbench compare patchbench-out/smoke-20261130-031500/results.json\n  patchbench compare --markdown out/results.json > report.md\n  patchbench compare --against old/results.json new/results.json   # B of old vs B of new"
    )]
    Compare(compare::CompareArgs),
    /// Check this host: QEMU, KVM (and why not), the kernel toolchain,
    /// busybox, the kernel source, disk space. Prints what to install.
    /// Exits 0 when a campaign can run, 3 when something required is missing.
    Doctor {
        /// The cache directory whose free space matters.
        #[arg(long, value_name = "DIR", env = "PATCHBENCH_CACHE")]
        cache_dir: Option<PathBuf>,
    },
    /// Print what CI would run for some campaigns: with --matrix, the GitHub
    /// Actions matrix of the build jobs (one per kernel pair) or of the
    /// bench jobs (one per campaign).
    #[command(after_help = plan::AFTER_HELP)]
    Plan(plan::PlanArgs),
    /// Publish results: static pages, one PR comment and one commit status
    /// per campaign, and the GitHub Actions step summary.
    #[command(after_help = publish::AFTER_HELP)]
    Publish(publish::PublishArgs),
}

impl Cli {
    /// Run the chosen subcommand.
    pub async fn run(self) -> anyhow::Result<()> {
        ui::set_quiet(self.quiet);
        match self.command {
            Command::Run(args) => run(args).await,
            Command::Apply(args) => apply(args).await,
            Command::Build(args) => build::build(args).await,
            Command::Boot(args) => boot::boot(args).await,
            Command::Compare(args) => compare::compare(args),
            Command::Plan(args) => plan::plan(args),
            Command::Publish(args) => publish::publish(args).await,
            Command::Doctor { cache_dir } => {
                let dir = cache_dir.unwrap_or_else(default_cache_dir);
                let (text, ready) = doctor::render(&doctor::checks(&dir).await);
                print!("{text}");
                if ready {
                    Ok(())
                } else {
                    anyhow::bail!("this host is not ready to run campaigns")
                }
            }
        }
    }
}

#[derive(clap::Args)]
pub struct ApplyArgs {
    /// The kernel tree: a source tarball, a local git repository, or a git
    /// URL (fetched shallow).
    #[arg(long, value_name = "PATH|URL")]
    tree: PathBuf,
    /// With a git repository: the base commit or ref. Without it, the
    /// series' `base-commit:` trailer, then the repository's HEAD.
    #[arg(long, value_name = "REV")]
    rev: Option<String>,
    /// A directory of patches, an mbox, one patch file, or `lore:<message-id>`.
    #[arg(long, value_name = "PATH|lore:ID")]
    series: String,
    /// The public-inbox archive for `lore:` series.
    #[arg(long, value_name = "URL", env = "PATCHBENCH_LORE_URL", default_value = crate::series::lore::DEFAULT_BASE_URL)]
    lore_url: String,
    /// Imported trees, kept between runs.
    #[arg(long, value_name = "DIR", env = "PATCHBENCH_CACHE")]
    cache_dir: Option<PathBuf>,
}

/// Where the kernels come from: shared by `run` and `build`.
#[derive(clap::Args)]
pub struct CampaignArgs {
    /// The campaign file (YAML). Without one, the built-in smoke campaign runs.
    campaign: Option<PathBuf>,
    #[command(flatten)]
    sources: SourceArgs,
    /// Imported trees and kernel build directories, kept between runs
    /// [default: $XDG_CACHE_HOME/patchbench or ~/.cache/patchbench].
    #[arg(long, value_name = "DIR", env = "PATCHBENCH_CACHE")]
    cache_dir: Option<PathBuf>,
}

/// The tree and series flags that override a campaign's (`run`, `build`,
/// `plan`).
#[derive(clap::Args, Clone, Default)]
pub struct SourceArgs {
    /// The base kernel tree: a source tarball (.tar.xz/.tar.gz), a local git
    /// repository, or a git URL (fetched shallow). Overrides the campaign's `tree`.
    #[arg(long, value_name = "PATH|URL")]
    tree: Option<PathBuf>,
    /// With --tree pointing at a git repository: the base commit or ref
    /// (default: its HEAD).
    #[arg(long, value_name = "REV", requires = "tree")]
    rev: Option<String>,
    /// The patch series for variant B: a directory of `git format-patch`
    /// files (ordered by its `series` file if it has one), an mbox, one patch
    /// file, `lore:<message-id>`, or `none` (an A/A self-check: B is the
    /// base). Overrides the campaign's `series`.
    #[arg(long, value_name = "PATH|lore:ID")]
    series: Option<String>,
    /// The public-inbox archive for `lore:` series.
    #[arg(long, value_name = "URL", env = "PATCHBENCH_LORE_URL")]
    lore_url: Option<String>,
}

#[derive(clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    campaign: CampaignArgs,
    /// The accelerator: `auto` uses KVM only where it really works.
    #[arg(long, value_enum)]
    accel: Option<AccelArg>,
    /// Where results.json, report.md and the boot logs go
    /// [default: patchbench-out/<campaign>-<time>].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Boot the kernels `patchbench build --out DIR` wrote instead of
    /// building: DIR/kernels.json, DIR/bzImage-A and -B (and vmlinux-A and
    /// -B, which boot, when the kernels have PVH). Each image's sha256 must
    /// match the manifest, and their commits this campaign's base and
    /// series, or nothing boots.
    #[arg(long, value_name = "DIR")]
    kernels: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct BuildArgs {
    #[command(flatten)]
    campaign: CampaignArgs,
    /// Ignore cached builds: build A from nothing, then B incrementally from
    /// it (for timing a full build; ccache still applies unless
    /// CCACHE_DISABLE=1 is set).
    #[arg(long)]
    fresh: bool,
    /// Write the kernels' manifest (`kernels.json`) and a copy of each
    /// kernel (`bzImage-A`, `bzImage-B`, and `vmlinux-A`, `vmlinux-B` when
    /// they have PVH) into this directory, for `patchbench run --kernels
    /// DIR` here or on another machine.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum AccelArg {
    Auto,
    Kvm,
    Tcg,
}

impl From<AccelArg> for AccelChoice {
    fn from(a: AccelArg) -> Self {
        match a {
            AccelArg::Auto => AccelChoice::Auto,
            AccelArg::Kvm => AccelChoice::Kvm,
            AccelArg::Tcg => AccelChoice::Tcg,
        }
    }
}

/// `$XDG_CACHE_HOME/patchbench`, else `~/.cache/patchbench`.
pub fn default_cache_dir() -> PathBuf {
    if let Some(xdg) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(xdg).join("patchbench");
    }
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(".cache/patchbench"),
        None => PathBuf::from(".patchbench-cache"),
    }
}

fn tree_override(path: PathBuf, rev: Option<String>) -> TreeSource {
    let text = path.to_string_lossy();
    if ["https://", "http://", "git://", "ssh://"]
        .iter()
        .any(|p| text.starts_with(p))
    {
        return TreeSource::Url {
            url: text.into_owned(),
            rev,
        };
    }
    if path.is_dir() {
        TreeSource::Git { path, rev }
    } else {
        TreeSource::Tarball(path)
    }
}

/// Load the campaign (or the built-in one) and apply the flags to it.
fn load_plan(args: &CampaignArgs, accel: Option<AccelChoice>) -> anyhow::Result<config::Plan> {
    let s = &args.sources;
    let overrides = Overrides {
        tree: s.tree.clone().map(|t| tree_override(t, s.rev.clone())),
        series: s.series.clone(),
        accel,
        lore_url: s.lore_url.clone(),
    };
    load_plan_with(args.campaign.as_deref(), overrides)
}

/// Load a campaign file (or the built-in one) with only `accel` overridden.
fn load_plan_file(
    campaign: Option<&std::path::Path>,
    accel: Option<AccelChoice>,
) -> anyhow::Result<config::Plan> {
    let overrides = Overrides {
        accel,
        ..Overrides::default()
    };
    load_plan_with(campaign, overrides)
}

fn load_plan_with(
    campaign: Option<&std::path::Path>,
    overrides: Overrides,
) -> anyhow::Result<config::Plan> {
    let (campaign, origin, base_dir) = match campaign {
        Some(path) => {
            let campaign = Campaign::load(path)?;
            let base = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(std::path::Path::new("."))
                .to_owned();
            (campaign, path.to_owned(), base)
        }
        None => {
            let origin = PathBuf::from("(built-in smoke campaign)");
            (
                Campaign::parse(config::DEFAULT_CAMPAIGN, &origin)?,
                origin,
                config::default_campaign_dir(),
            )
        }
    };
    Ok(campaign.into_plan(&origin, &base_dir, overrides)?)
}

fn cache_dir(args: &CampaignArgs) -> PathBuf {
    args.cache_dir.clone().unwrap_or_else(default_cache_dir)
}

async fn run(args: RunArgs) -> anyhow::Result<()> {
    let plan = load_plan(&args.campaign, args.accel.map(Into::into))?;
    let out_dir = args.out.unwrap_or_else(|| {
        let stamp = jiff::ZonedDateTime::now()
            .strftime("%Y%m%d-%H%M%S")
            .to_string();
        PathBuf::from("patchbench-out").join(format!("{}-{stamp}", plan.name))
    });
    let opts = campaign::RunOptions {
        out_dir,
        cache_dir: cache_dir(&args.campaign),
        agent: crate::find_agent()?,
        kernels: args.kernels,
    };
    let sink = ui::Ui::new();
    let outcome = campaign::run(&plan, &opts, &sink).await?;
    print!(
        "{}",
        crate::report::terminal_of(&outcome.results, &outcome.rows)
    );
    eprintln!(
        "results: {}\nreport:  {}",
        outcome.results_path.display(),
        outcome.markdown_path.display()
    );
    compare::fail_on_regression(&outcome.rows)
}

async fn apply(args: ApplyArgs) -> anyhow::Result<()> {
    let tree_source = tree_override(args.tree, args.rev);
    let source = crate::series::SeriesSource::parse(&args.series, std::path::Path::new(""));
    let cache = args.cache_dir.unwrap_or_else(default_cache_dir);
    let sink = ui::Ui::new();
    sink.emit(crate::events::Event::Note(format!("tree: {tree_source}")));
    let tree = crate::tree::obtain(&tree_source, &cache, &|_, _| {}).await?;
    let repo = tree.open()?;
    let applied =
        campaign::apply_series(&repo, &tree, &tree_source, &source, &args.lore_url).await?;
    println!("{}", applied.summary());
    let total = applied.series.patches.len();
    for (i, (patch, how)) in applied
        .series
        .patches
        .iter()
        .zip(&applied.patches)
        .enumerate()
    {
        let warning = if how.has_fuzz() {
            "  WARNING: applied with fuzz"
        } else {
            ""
        };
        println!(
            "  {}/{total} {}  {}  [{}]{warning}\n      from {}",
            i + 1,
            &how.commit.to_string()[..12],
            patch.subject(),
            how.describe(),
            patch.origin
        );
    }
    println!("B = {}", applied.head);
    Ok(())
}
