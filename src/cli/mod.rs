//! The command line: flags, their help, and one function per subcommand
//! that turns flags into a validated plan and runs the engine. Lives in the
//! library so that tests can check command lines (such as the CI
//! workflows') against the real parser.

use std::fmt::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::campaign;
use crate::events::{Event, Sink};
pub use args::default_cache_dir;
use args::{AccelArg, CampaignArgs, cache_dir};

mod args;
mod boot;
mod build;
mod cache;
mod choose;
mod compare;
pub mod doctor;
mod judge;
mod merge;
mod plan;
mod publish;
mod reach;
mod runs;
mod watch;

#[derive(Parser)]
#[command(
    name = "patchbench",
    version,
    about = "What does this patch do to the kernel's performance?",
    long_about = "patchbench applies a patch series to a kernel tree, builds the base (A) and the \
patched kernel (B), boots each in QEMU in fresh A/B/A order, runs a memory-management workload \
inside the guest, and compares A with B.",
    after_help = "Exit codes:\n  0  the campaign ran and its results were written; no metric regressed\n  1  the campaign ran and a metric regressed, in the main workload or in any control condition\n  2  usage: a bad flag, campaign file or results.json; nothing ran\n  3  infrastructure: a missing tool, a failed build, QEMU or KVM trouble, a full disk\n  4  the series does not apply or is malformed\n  5  a guest failed: panic, oops, warning, hang or workload error"
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
        after_help = "Examples:\n  patchbench run                         # the built-in smoke campaign (ci/smoke.yaml)\n  patchbench run ci/smoke.yaml\n  patchbench run --tree ~/linux --series ./my-series/   # try your own patch: the campaigns that execute what it changes\n  patchbench plan --series ./my-series/                 # which campaigns, and why, without running\n  patchbench run --accel tcg --out /tmp/pb ci/smoke.yaml\n  patchbench build --out /tmp/k && patchbench run --kernels /tmp/k   # boot kernels built elsewhere\n  patchbench run --bisect --series ./my-series/ --out /tmp/hunt   # which patch of the series did it?\n  patchbench run --suite mm --series ./my-series/ --budget 45m --out /tmp/suite   # the whole mm library"
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
    Build(build::BuildArgs),
    /// Boot one kernel with the guest agent and run one command in it (no
    /// shell; busybox applets by name). Its output and the console go to
    /// stdout; a failing command, a panic or a hang fail the boot. With
    /// --repeat, the median boot times (QEMU start to the agent's hello).
    #[command(
        after_help = "Examples:\n  patchbench boot ~/.cache/patchbench/builds/<tree>/<key>/arch/x86/boot/bzImage -- cat /proc/meminfo\n  patchbench boot --repeat 10 bzImage -- true      # boot-time benchmark\n  patchbench boot --campaign ci/smoke.yaml bzImage -- sh -c 'cat /sys/module/zswap/parameters/*'\n  patchbench boot --cost-model --out /tmp/pb bzImage -- /init marked-loop 1000000   # the cost lane"
    )]
    Boot(boot::BootArgs),
    /// Re-render stored results without running anything: the terminal
    /// table (or --markdown) of each results.json, as it was judged
    /// (--rejudge: under today's rule). With --against, compare the B
    /// kernels of two runs: FIRST's B becomes A, the other's B is B.
    /// Exits 1 if a metric regressed, in the main workload or in any
    /// control condition (a control that regresses is a regression of the
    /// patch too).
    #[command(
        after_help = "Examples:\n  patchbench compare patchbench-out/smoke-20261130-031500/results.json\n  patchbench compare --markdown out/results.json > report.md\n  patchbench compare --against old/results.json new/results.json   # B of old vs B of new"
    )]
    Compare(compare::CompareArgs),
    /// Judge kept runs again under today's verdict rule, without running
    /// anything: each results.json gets its new judgement and report.md
    /// beside it is rendered again; the verdicts that changed are listed.
    #[command(after_help = judge::AFTER_HELP)]
    Judge(judge::JudgeArgs),
    /// Combine the results of a campaign's shards (`run --shard I/N`, one
    /// per runner) into one run, judged as if one runner had run every boot.
    /// Only shards of one experiment merge: the same campaign, kernels,
    /// protocol and lane.
    #[command(after_help = merge::AFTER_HELP)]
    Merge(merge::MergeArgs),
    /// Check this host: QEMU, KVM (and why not), the cost lane's QEMU
    /// plugin API and plugin, the kernel toolchain, busybox, the kernel
    /// source, disk space. Prints what to install.
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
    /// See and trim the build cache: `cache list` shows every entry (size,
    /// last use, what it is) against the budget; `cache gc` evicts the
    /// least recently used kernels until the builds fit; `cache objects`
    /// prints the kconfigs/objects.tsv lines of the full builds it holds.
    #[command(after_help = cache::AFTER_HELP)]
    Cache(cache::CacheArgs),
    /// Follow a branch night after night: measure its new head against the
    /// head before, find the change points of the history, hunt each new
    /// one across its commits, and write a report per change point.
    #[command(after_help = watch::AFTER_HELP)]
    Watch(watch::WatchArgs),
    /// The reach map: what each mm library workload's base kernel executes
    /// and what each mm/ file defines. Alone, the coverage per mm/ file
    /// (functions built, executed in some workload's window, %); with
    /// --file, per function, with the workload that runs it most; `reach
    /// build` makes the map.
    #[command(after_help = reach::AFTER_HELP)]
    Reach(reach::ReachArgs),
}

impl Cli {
    /// Run the chosen subcommand. Its output and its progress go to `sink`
    /// as events: nothing here prints.
    pub async fn run(self, sink: std::sync::Arc<dyn Sink>) -> anyhow::Result<()> {
        let events = sink.as_ref();
        match self.command {
            Command::Run(args) => run(args, events).await,
            Command::Apply(args) => apply(args, events).await,
            Command::Build(args) => build::build(args, events).await,
            Command::Boot(args) => boot::boot(args, events).await,
            Command::Compare(args) => compare::compare(args, events),
            Command::Judge(args) => judge::judge(args, events),
            Command::Merge(args) => merge::merge(args, events),
            Command::Plan(args) => plan::plan(args, events).await,
            Command::Publish(args) => publish::publish(args, sink.clone()).await,
            Command::Cache(args) => cache::cache(args, events).await,
            Command::Watch(args) => watch::watch(args, events).await,
            Command::Reach(args) => reach::reach(args, events),
            Command::Doctor { cache_dir } => {
                let dir = cache_dir.unwrap_or_else(default_cache_dir);
                let (text, ready) = doctor::render(&doctor::checks(&dir).await);
                events.emit(Event::Output(text));
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
    /// URL (fetched shallow) [default: the built-in smoke campaign's tree,
    /// as for `run` and `plan`].
    #[arg(long, value_name = "PATH|URL")]
    tree: Option<PathBuf>,
    /// With a git repository: the base commit or ref. Without it, the
    /// series' `base-commit:` trailer, then the repository's HEAD.
    #[arg(long, value_name = "REV", requires = "tree")]
    rev: Option<String>,
    /// A directory of patches, an mbox, one patch file, or `lore:<message-id>`.
    #[arg(long, value_name = "PATH|lore:ID")]
    series: String,
    /// Let a hunk apply with up to N context lines at each end that differ
    /// from the tree, as patch(1) does. By default (0) a hunk applies as
    /// `git am` applies it: exactly, 3-way, or whole at another line.
    #[arg(long, value_name = "N", default_value_t = 0)]
    fuzz: u32,
    /// The public-inbox archive for `lore:` series.
    #[arg(long, value_name = "URL", env = "PATCHBENCH_LORE_URL", default_value = crate::series::lore::DEFAULT_BASE_URL)]
    lore_url: String,
    /// Imported trees, kept between runs.
    #[arg(long, value_name = "DIR", env = "PATCHBENCH_CACHE")]
    cache_dir: Option<PathBuf>,
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
    /// Run only shard I of N of the campaign's boots (`2/4`), for a runner
    /// of a matrix: a round's boots are dealt out in turn, and `patchbench
    /// merge` combines the shards' results.json. Only in a lane whose
    /// figures do not depend on the host (icount, the cost lane).
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// With --shard: the round of a sequential campaign whose boots to run
    /// (merge says when another round is needed).
    #[arg(long, value_name = "K", default_value_t = 1, requires = "shard")]
    round: u32,
    /// Hunt the first patch of the series that makes the change, by
    /// bisection: base against the whole series first, in the campaign's
    /// protocol; then, if its primary metrics regressed (else improved,
    /// else changed), base against the prefix halfway between the last
    /// one without the change and the first with it, until one patch is
    /// left: 1 + log2(N) kernel pairs at most (4 for 7 patches) where
    /// --per-patch boots N + 1 kernels. A step that is neither the change
    /// nor "no clear difference" stops the hunt, saying why. The patch
    /// found gets its own interval against the prefix before it: across
    /// the two steps' boots under icount (where the base, booted in both,
    /// must agree with itself), in a step of its own elsewhere. Each step
    /// is a campaign in OUT/bisect/p<K>/ (results.json, report.md); the
    /// hunt is OUT/bisect.json and OUT/report.md, written after each step,
    /// and the same --out resumes. Exit code: that of the whole series'
    /// run (1 if it regressed). (A campaign's `per_patch: bisect` does the
    /// same.) With --series and no campaign file, each campaign the series
    /// chooses hunts, into OUT/<campaign>/.
    #[arg(long, conflicts_with_all = ["per_patch", "kernels", "shard"])]
    bisect: bool,
    /// Boot every kernel. Without it, under icount (and in the cost and
    /// counting lanes) a boot whose exact inputs ran before (QEMU and its
    /// firmware, the arguments, the kernel's and initramfs's bytes) is
    /// replayed from the cache, since it would repeat instruction for
    /// instruction; the report marks it. A warm verdict then boots only B.
    #[arg(long, env = "PATCHBENCH_FRESH_BOOTS")]
    fresh_boots: bool,
    /// Run a whole suite of campaigns, one after another, each into
    /// OUT/<name>/: `mm`, every campaign of the mm library (ci/mm/), or a
    /// directory of your own campaign files; an A/A self-check each, or
    /// with --series the series on every one. No campaign starts once
    /// --budget is spent; the same --out runs those left.
    #[arg(long, value_name = "mm|DIR", conflicts_with_all = ["campaign", "kernels", "shard", "bisect", "per_patch"])]
    suite: Option<runs::Suite>,
    /// With --suite: the time within which campaigns start (`45m`,
    /// `1h30m`); the one running when it is spent finishes, and those not
    /// started are listed as NOT RUN (the exit code is still the measured
    /// campaigns') [default: 30m].
    #[arg(long, value_name = "DURATION", requires = "suite", value_parser = humantime::parse_duration)]
    budget: Option<std::time::Duration>,
    /// Bring N of the guest's CPUs online instead of the campaign's
    /// `vm.cpus.online` (up to its `possible`), in every campaign it runs:
    /// `--online 1` for a tree whose second CPU QEMU before 8.1 never
    /// runs under icount (Linux before 6.5). With --suite, a campaign whose
    /// workload needs more CPUs is named as refused and the next runs.
    #[arg(long, value_name = "N")]
    online: Option<u32>,
}

impl RunArgs {
    /// What `run` over several campaigns takes of the command line.
    fn many(self) -> runs::Many {
        runs::Many {
            campaign: self.campaign,
            accel: self.accel.map(Into::into),
            out: self.out,
            bisect: self.bisect,
            fresh_boots: self.fresh_boots,
            budget: self.budget,
            online: self.online,
        }
    }
}

async fn run(args: RunArgs, sink: &dyn Sink) -> anyhow::Result<()> {
    let (plan, shard) = match check_run(&args)? {
        RunCheck::Chosen => return runs::run_chosen(args.many(), sink).await,
        RunCheck::Suite(suite) => return runs::run_suite(args.many(), suite, sink).await,
        RunCheck::Plan { plan, shard } => (*plan, shard),
    };
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
        cache_max: args.campaign.cache_max,
        kernels: args.kernels,
        shard,
        reach: None,
        replay: !args.fresh_boots,
    };
    if plan.variants == crate::variants::VariantSet::Bisect {
        return runs::hunt(&plan, &opts, sink).await;
    }
    let outcome = campaign::run(&plan, &opts, sink).await?;
    if let Some(shard) = outcome.results.shard {
        sink.emit(Event::Output(format!(
            "shard {shard}: boots {} measured; combine every shard with `patchbench merge`\n",
            outcome
                .results
                .boots
                .iter()
                .map(|b| b.label.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
        sink.emit(Event::Note(format!(
            "results: {}",
            outcome.results_path.display()
        )));
        return Ok(());
    }
    sink.emit(Event::Output(crate::report::terminal(&outcome.results)));
    compare::written(&outcome, sink)
}

async fn apply(args: ApplyArgs, sink: &dyn Sink) -> anyhow::Result<()> {
    let tree_source = apply_tree(&args)?;
    let source = crate::series::SeriesSource::parse(&args.series, std::path::Path::new(""));
    let cache = args.cache_dir.unwrap_or_else(default_cache_dir);
    sink.emit(Event::Note(format!("tree: {tree_source}")));
    let tree = crate::tree::obtain(&tree_source, &cache).await?;
    let repo = tree.open()?;
    let applied = campaign::apply_series(
        &repo,
        &tree,
        &tree_source,
        &source,
        &args.lore_url,
        args.fuzz,
        sink,
    )
    .await?;
    let mut text = format!("{}\n", applied.summary());
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
        let _ = writeln!(
            text,
            "  {}/{total} {}  {}  [{}]{warning}\n      from {}",
            i + 1,
            &how.commit.to_string()[..12],
            patch.subject(),
            how.describe(),
            patch.origin
        );
    }
    let _ = writeln!(text, "B = {}", applied.head);
    sink.emit(Event::Output(text));
    Ok(())
}

/// What `run` goes on with once its flags are checked.
enum RunCheck {
    /// `--series` without a campaign file: the series chooses the campaigns.
    Chosen,
    /// `--suite`: every campaign of the suite.
    Suite(runs::Suite),
    /// One campaign (or the built-in smoke campaign), with its shard.
    Plan {
        plan: Box<crate::config::Plan>,
        shard: Option<crate::model::Shard>,
    },
}

impl Cli {
    /// What a command checks before its first slow step: the campaign file
    /// and its overrides, flags that cannot go together, and that every
    /// local path it names (tree, series, kernel, results) is there and
    /// readable. Each command calls its check first, so a mistake costs no
    /// import or build; this runs them alone, which is how tests/docs.rs
    /// holds every documented command to what the CLI accepts.
    ///
    /// Every check the command makes before it imports, builds, boots or
    /// fetches anything. `Ok` means the command would start its work.
    pub fn check(&self) -> anyhow::Result<()> {
        match &self.command {
            Command::Run(a) => check_run(a).map(drop),
            Command::Apply(a) => apply_tree(a).map(drop),
            Command::Build(a) => build::check(a).map(drop),
            Command::Boot(a) => boot::check(a).map(drop),
            Command::Plan(a) => plan::check(a),
            Command::Compare(a) => results_paths(a.results.iter().chain(&a.against)),
            Command::Judge(a) => results_paths(&a.results),
            Command::Merge(a) => results_paths(&a.shards),
            Command::Publish(a) => results_paths(&a.results),
            Command::Watch(a) => watch::check(a),
            Command::Reach(a) => reach::check(a),
            Command::Cache(_) | Command::Doctor { .. } => Ok(()),
        }
    }
}

/// `run`'s checks: with `--series` and no campaign file the series chooses
/// the campaigns (no `--kernels` or `--shard` then); else the campaign with
/// its overrides, its shard, and the local paths it names.
fn check_run(a: &RunArgs) -> anyhow::Result<RunCheck> {
    if let Some(suite) = &a.suite {
        args::sources_paths(&a.campaign.sources)?;
        return Ok(RunCheck::Suite(suite.clone()));
    }
    if choose::wanted(
        usize::from(a.campaign.campaign.is_some()),
        &a.campaign.sources,
    ) {
        for (flag, given) in [
            ("--kernels", a.kernels.is_some()),
            ("--shard", a.shard.is_some()),
        ] {
            if given {
                return Err(crate::config::ConfigError::Invalid {
                    path: PathBuf::from(flag),
                    message: "needs a campaign file: with --series alone the series chooses the campaigns, each with kernels and boots of its own".into(),
                }
                .into());
            }
        }
        args::sources_paths(&a.campaign.sources)?;
        return Ok(RunCheck::Chosen);
    }
    let shard = a
        .shard
        .as_deref()
        .map(|text| crate::model::Shard::parse(text, a.round))
        .transpose()
        .map_err(|message| crate::config::ConfigError::Invalid {
            path: PathBuf::from("--shard"),
            message,
        })?;
    let plan = args::load_run_plan(&a.campaign, a.accel.map(Into::into), a.bisect, a.online)?;
    if a.kernels.is_none() {
        args::plan_paths(&plan)?;
    }
    Ok(RunCheck::Plan {
        plan: Box::new(plan),
        shard,
    })
}

/// `apply`'s tree: `--tree` (with `--rev`), else the built-in smoke
/// campaign's, as `run` and `plan` default to; and its series, read.
fn apply_tree(a: &ApplyArgs) -> anyhow::Result<crate::config::TreeSource> {
    let tree = match &a.tree {
        Some(t) => args::tree_override(t.clone(), a.rev.clone()),
        None => args::load_plan_file(None, None)?.tree,
    };
    args::tree_exists(&tree)?;
    args::series_readable(&crate::series::SeriesSource::parse(
        &a.series,
        std::path::Path::new(""),
    ))?;
    Ok(tree)
}

/// Results a command reads: each a results.json or a directory with one.
fn results_paths<'a>(given: impl IntoIterator<Item = &'a PathBuf>) -> anyhow::Result<()> {
    for path in given {
        anyhow::ensure!(
            args::results_file(path).is_file(),
            "{} is not a results.json or a directory holding one",
            path.display()
        );
    }
    Ok(())
}
