//! The flags `run`, `build`, `boot` and `plan` share, and turning them
//! into a validated plan.

use std::path::{Path, PathBuf};

use clap::ValueEnum;

use crate::config::{self, AccelChoice, Campaign, ConfigError, Overrides, TreeSource};

/// Where the kernels come from: shared by `run` and `build`.
#[derive(clap::Args)]
pub struct CampaignArgs {
    /// The campaign file (YAML). Without one and with --series, the series
    /// chooses the campaigns that execute what it changes: those of
    /// ci/seeds/, and from the mm library (ci/mm/) the workload that runs
    /// each changed function most (see `patchbench plan --series`);
    /// without either, the built-in smoke campaign runs.
    pub campaign: Option<PathBuf>,
    #[command(flatten)]
    pub sources: SourceArgs,
    /// Imported trees and kernel build directories, kept between runs
    /// [default: $XDG_CACHE_HOME/patchbench or ~/.cache/patchbench].
    #[arg(long, value_name = "DIR", env = "PATCHBENCH_CACHE")]
    pub cache_dir: Option<PathBuf>,
    /// The size budget of the kernel builds in the cache: after building,
    /// the least recently used kernels that no running campaign holds are
    /// evicted until the builds fit (source trees are not counted).
    #[arg(long, value_name = "SIZE", env = "PATCHBENCH_CACHE_MAX", default_value_t = crate::build::cache::DEFAULT_BUDGET)]
    pub cache_max: bytesize::ByteSize,
}

/// The tree and series flags that override a campaign's (`run`, `build`,
/// `plan`).
#[derive(clap::Args, Clone, Default)]
pub struct SourceArgs {
    /// The base kernel tree: a source tarball (.tar.xz/.tar.gz), a local git
    /// repository, or a git URL (fetched shallow). Overrides the campaign's `tree`.
    #[arg(long, value_name = "PATH|URL")]
    pub tree: Option<PathBuf>,
    /// With --tree pointing at a git repository: the base commit or ref
    /// (default: its HEAD).
    #[arg(long, value_name = "REV", requires = "tree")]
    pub rev: Option<String>,
    /// The patch series for variant B: a directory of `git format-patch`
    /// files (ordered by its `series` file if it has one), an mbox, one patch
    /// file, `lore:<message-id>`, or `none` (an A/A self-check: B is the
    /// base). Overrides the campaign's `series`.
    #[arg(long, value_name = "PATH|lore:ID")]
    pub series: Option<String>,
    /// The public-inbox archive for `lore:` series.
    #[arg(long, value_name = "URL", env = "PATCHBENCH_LORE_URL")]
    pub lore_url: Option<String>,
    /// One variant per prefix of the series: the base, the base + patch 1,
    /// ..., the base + the whole series. The report adds a waterfall of
    /// what each patch did. (A campaign's `per_patch: true` does the same.)
    /// To find one patch in a long series in fewer kernels, see `run
    /// --bisect`.
    #[arg(long)]
    pub per_patch: bool,
    /// Let a hunk apply with up to N context lines at each end that differ
    /// from the tree, as patch(1) does (its default is 2). Without it
    /// (0, the campaign's `fuzz:` default), a hunk applies as `git am`
    /// applies it: exactly, 3-way, or whole at another line.
    #[arg(long, value_name = "N")]
    pub fuzz: Option<u32>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum AccelArg {
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

pub fn tree_override(path: PathBuf, rev: Option<String>) -> TreeSource {
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
pub fn load_plan(args: &CampaignArgs, accel: Option<AccelChoice>) -> anyhow::Result<config::Plan> {
    load_run_plan(args, accel, false, None)
}

/// [`load_plan`] for `patchbench run`, which may also be told to hunt
/// (`--bisect`) and how many CPUs to bring online (`--online`).
pub fn load_run_plan(
    args: &CampaignArgs,
    accel: Option<AccelChoice>,
    bisect: bool,
    online: Option<u32>,
) -> anyhow::Result<config::Plan> {
    let s = &args.sources;
    let overrides = Overrides {
        tree: s.tree.clone().map(|t| tree_override(t, s.rev.clone())),
        series: s.series.clone(),
        accel,
        lore_url: s.lore_url.clone(),
        per_patch: s.per_patch,
        bisect,
        fuzz: s.fuzz,
        online,
    };
    load_plan_with(args.campaign.as_deref(), overrides)
}

/// Refuse a hunt (`per_patch: bisect`) where a command needs fixed
/// variants: `what` says what cannot take it.
pub fn refuse_bisect(plan: &config::Plan, what: &str) -> Result<(), config::ConfigError> {
    if plan.variants != crate::variants::VariantSet::Bisect {
        return Ok(());
    }
    Err(config::ConfigError::Invalid {
        path: plan
            .source
            .clone()
            .unwrap_or_else(|| PathBuf::from("(built-in smoke campaign)")),
        message: format!(
            "per_patch: bisect (or --bisect) chooses the prefixes it builds as the hunt goes, so {what} cannot take it: run the hunt with `patchbench run`, or use per_patch: true for every prefix"
        ),
    })
}

/// Load a campaign file (or the built-in one) with only `accel` overridden.
pub fn load_plan_file(
    campaign: Option<&std::path::Path>,
    accel: Option<AccelChoice>,
) -> anyhow::Result<config::Plan> {
    let overrides = Overrides {
        accel,
        ..Overrides::default()
    };
    load_plan_with(campaign, overrides)
}

pub fn load_plan_with(
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

pub fn cache_dir(args: &CampaignArgs) -> PathBuf {
    args.cache_dir.clone().unwrap_or_else(default_cache_dir)
}

/// The tree and series a plan names, where they are local.
pub fn plan_paths(plan: &config::Plan) -> anyhow::Result<()> {
    tree_exists(&plan.tree)?;
    series_readable(&plan.series)
}

/// `--tree` and `--series` as given, where they are local.
pub fn sources_paths(s: &SourceArgs) -> anyhow::Result<()> {
    if let Some(t) = &s.tree {
        tree_exists(&tree_override(t.clone(), s.rev.clone()))?;
    }
    if let Some(text) = &s.series {
        series_readable(&crate::series::SeriesSource::parse(text, Path::new("")))?;
    }
    Ok(())
}

/// A tarball that is a file, a repository that git opens; a URL is fetched
/// later and is not checked here.
pub fn tree_exists(tree: &TreeSource) -> anyhow::Result<()> {
    match tree {
        TreeSource::Tarball(p) if !p.is_file() => Err(ConfigError::Invalid {
            path: p.clone(),
            message: "no such tarball or directory: --tree takes a source tarball, a git repository or a git URL".into(),
        }
        .into()),
        TreeSource::Git { path, .. } => match git2::Repository::open(path) {
            Ok(_) => Ok(()),
            Err(e) => Err(ConfigError::Invalid {
                path: path.clone(),
                message: format!("is a directory but not a git repository git can open: {}", e.message()),
            }
            .into()),
        },
        _ => Ok(()),
    }
}

/// A local series, read and parsed as the run will (a `lore:` thread is
/// fetched later).
pub fn series_readable(source: &crate::series::SeriesSource) -> anyhow::Result<()> {
    if let crate::series::SeriesSource::Path(p) = source {
        crate::series::load_path(p)?;
    }
    Ok(())
}

/// The results.json a command is given: the file itself, or the one in
/// the run directory given.
pub fn results_file(given: &Path) -> PathBuf {
    if given.is_dir() {
        given.join("results.json")
    } else {
        given.to_owned()
    }
}
