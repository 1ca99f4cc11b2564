//! The `patchbench` command line: parse flags into a validated plan, run
//! the engine, print the report, and exit with a documented code.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use patchbench::config::{self, AccelChoice, Campaign, Overrides, TreeSource};
use patchbench::events::Sink;
use patchbench::{campaign, exit, ui};

#[derive(Parser)]
#[command(
    name = "patchbench",
    version,
    about = "What does this patch do to the kernel's performance?",
    long_about = "patchbench applies a patch series to a kernel tree, builds the base (A) and the \
patched kernel (B), boots each in QEMU in fresh A/B/A order, runs a memory-management workload \
inside the guest, and compares A with B.",
    after_help = "Exit codes:\n  0  the campaign ran and its results were written\n  2  usage: a bad flag or campaign file; nothing ran\n  3  infrastructure: a missing tool, a failed build, QEMU or KVM trouble\n  4  the series does not apply or is malformed\n  5  a guest failed: panic, oops, warning, hang or workload error\n  (1 is reserved for \"the patch regressed\")"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run an A/B campaign: apply, build, boot, measure, report.
    #[command(
        after_help = "Examples:\n  patchbench run                         # the built-in smoke campaign (ci/smoke.yaml)\n  patchbench run ci/smoke.yaml\n  patchbench run --tree ~/linux --series ./my-series/   # try your own patch\n  patchbench run --accel tcg --out /tmp/pb ci/smoke.yaml"
    )]
    Run(RunArgs),
    /// Apply a series to a tree and report, per patch, whether and how it
    /// applied. Nothing is built; the tree's working directory is untouched.
    #[command(
        after_help = "Examples:\n  patchbench apply --tree /usr/src/linux-source-6.12.tar.xz --series patches/zswap-counter\n  patchbench apply --tree ~/linux --rev v6.12 --series lore:20241023233548.23348-1-21cnbao@gmail.com"
    )]
    Apply(ApplyArgs),
}

#[derive(clap::Args)]
struct ApplyArgs {
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
    #[arg(long, value_name = "URL", env = "PATCHBENCH_LORE_URL", default_value = patchbench::series::lore::DEFAULT_BASE_URL)]
    lore_url: String,
    /// Imported trees, kept between runs.
    #[arg(long, value_name = "DIR", env = "PATCHBENCH_CACHE")]
    cache_dir: Option<PathBuf>,
}

#[derive(clap::Args)]
struct RunArgs {
    /// The campaign file (YAML). Without one, the built-in smoke campaign runs.
    campaign: Option<PathBuf>,
    /// The base kernel tree: a source tarball (.tar.xz/.tar.gz), a local git
    /// repository, or a git URL (fetched shallow). Overrides the campaign's `tree`.
    #[arg(long, value_name = "PATH")]
    tree: Option<PathBuf>,
    /// With --tree pointing at a git repository: the base commit or ref
    /// (default: its HEAD).
    #[arg(long, value_name = "REV", requires = "tree")]
    rev: Option<String>,
    /// The patch series for variant B: a directory of `git format-patch`
    /// files (ordered by its `series` file if it has one), an mbox, one patch
    /// file, or `lore:<message-id>`. Overrides the campaign's `series`.
    #[arg(long, value_name = "PATH|lore:ID")]
    series: Option<String>,
    /// The public-inbox archive for `lore:` series.
    #[arg(long, value_name = "URL", env = "PATCHBENCH_LORE_URL")]
    lore_url: Option<String>,
    /// The accelerator: `auto` uses KVM only where it really works.
    #[arg(long, value_enum)]
    accel: Option<AccelArg>,
    /// Where results.json, report.md and the boot logs go
    /// [default: patchbench-out/<campaign>-<time>].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Imported trees and kernel build directories, kept between runs.
    #[arg(long, value_name = "DIR", env = "PATCHBENCH_CACHE")]
    cache_dir: Option<PathBuf>,
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

fn default_cache_dir() -> PathBuf {
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

async fn run(args: RunArgs) -> anyhow::Result<()> {
    let (campaign, origin, base_dir) = match &args.campaign {
        Some(path) => {
            let campaign = Campaign::load(path)?;
            let base = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(std::path::Path::new("."))
                .to_owned();
            (campaign, path.clone(), base)
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
    let overrides = Overrides {
        tree: args.tree.map(|t| tree_override(t, args.rev)),
        series: args.series,
        accel: args.accel.map(Into::into),
        lore_url: args.lore_url,
    };
    let plan = campaign.into_plan(&origin, &base_dir, overrides)?;
    let out_dir = args.out.unwrap_or_else(|| {
        let stamp = jiff::ZonedDateTime::now()
            .strftime("%Y%m%d-%H%M%S")
            .to_string();
        PathBuf::from("patchbench-out").join(format!("{}-{stamp}", plan.name))
    });
    let opts = campaign::RunOptions {
        out_dir,
        cache_dir: args.cache_dir.unwrap_or_else(default_cache_dir),
        agent: patchbench::find_agent()?,
    };
    let sink = ui::Ui::new();
    let outcome = campaign::run(&plan, &opts, &sink).await?;
    println!("{}", outcome.markdown);
    eprintln!(
        "results: {}\nreport:  {}",
        outcome.results_path.display(),
        outcome.markdown_path.display()
    );
    Ok(())
}

async fn apply(args: ApplyArgs) -> anyhow::Result<()> {
    let tree_source = tree_override(args.tree, args.rev);
    let source = patchbench::series::SeriesSource::parse(&args.series, std::path::Path::new(""));
    let cache = args.cache_dir.unwrap_or_else(default_cache_dir);
    let sink = ui::Ui::new();
    sink.emit(patchbench::events::Event::Note(format!(
        "tree: {tree_source}"
    )));
    let tree = patchbench::tree::obtain(&tree_source, &cache).await?;
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(exit::INFRASTRUCTURE as u8);
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Run(args) => run(args).await,
            Command::Apply(args) => apply(args).await,
        }
    });
    match result {
        Ok(()) => ExitCode::from(exit::OK as u8),
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(exit::code_for(&err) as u8)
        }
    }
}
