//! `patchbench plan`: what a CI run of some campaigns consists of, as the
//! GitHub Actions matrices its build and bench jobs fan out over.
//!
//! The wire format (`--matrix`) is a matrix object, `{"include":[...]}`,
//! printed on one line so that a step can write it to `$GITHUB_OUTPUT`:
//!
//! - `--jobs build`: one entry per distinct kernel pair. Campaigns whose tree,
//!   series and kernel configuration agree share one build (A, then B
//!   incrementally from A's objects; `patchbench build` always builds both).
//!   Fields: `build` (the build key: 16 hex digits of a sha256 over the kernel
//!   inputs, for artifact and cache names), `campaign` (the name of the first
//!   campaign needing it) and `file` (its campaign file).
//! - `--jobs bench` (the default): one entry per campaign, each run on one
//!   runner in its A/B/A order. Fields: `campaign` (its name), `file`,
//!   `build` (the key of its kernel pair), `workload` (the workload kind) and
//!   `slug` (`[a-z0-9-]`, distinct, for artifact names).
//!
//! `file` is empty for the built-in smoke campaign (plan given no file).

use crate::events::{Event, Sink};
use crate::variants::{Patches, VariantSet};
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::args::{CampaignArgs, SourceArgs, load_plan};
use crate::config::{BaseConfig, Plan, TreeSource};
use crate::series::SeriesSource;

#[derive(clap::Args)]
pub struct PlanArgs {
    /// Campaign files (YAML). Without any, the built-in smoke campaign.
    campaigns: Vec<PathBuf>,
    /// Print the GitHub Actions matrix of `--jobs` as one line of JSON,
    /// `{"include":[...]}`, instead of the plan for people.
    #[arg(long)]
    matrix: bool,
    /// Which jobs the matrix is for: `build` (one entry per distinct kernel
    /// pair) or `bench` (one entry per campaign).
    #[arg(long, value_enum, default_value = "bench")]
    jobs: PlanJobs,
    /// With `--jobs shards`: how many runners share each campaign's boots.
    #[arg(long, value_name = "N", default_value_t = 2)]
    shards: u32,
    /// Overrides every campaign's tree and series, as for `run`. With
    /// --series and no campaign file, the series chooses the campaigns.
    #[command(flatten)]
    sources: SourceArgs,
    /// Imported trees, kept between runs (a series that chooses its
    /// campaigns is applied to the tree to see what it changes)
    /// [default: $XDG_CACHE_HOME/patchbench or ~/.cache/patchbench].
    #[arg(long, value_name = "DIR", env = "PATCHBENCH_CACHE")]
    cache_dir: Option<PathBuf>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum PlanJobs {
    /// One entry per distinct kernel pair: `build`, `campaign`, `file`.
    Build,
    /// One entry per campaign: `campaign`, `file`, `build`, `workload`, `slug`.
    Bench,
    /// One entry per campaign and shard (`--shards N`): the bench fields
    /// and `shard` (`I/N`); only campaigns whose figures do not depend on
    /// the host (icount, the cost lane).
    Shards,
}

/// The `after_help` of `patchbench plan`: the matrix wire format.
pub(super) const AFTER_HELP: &str = "\
Matrix format (--matrix), one line of JSON for $GITHUB_OUTPUT:
  {\"include\":[ENTRY,...]}
  --jobs build: one ENTRY per distinct kernel pair (campaigns whose tree,
    series and kernel config agree share one `patchbench build`, which builds
    A and then B incrementally from A):
      build     the build key: 16 hex digits of a sha256 of the kernel inputs
                (series, base config and fragments by content; tree by name)
      campaign  the first campaign that needs it
      file      its campaign file (empty for the built-in campaign)
  --jobs bench: one ENTRY per campaign (run A/B/A on one runner):
      campaign, file, build (its kernel pair's key),
      workload  the workload kind, e.g. zswap-pageout
      slug      [a-z0-9-], distinct per campaign, for artifact names
  --jobs shards --shards N: N ENTRYs per campaign (its boots split over N
    runners, `run --shard I/N`, then `patchbench merge`), only for campaigns
    in icount or the cost lane: the bench fields, a slug per shard, and
      shard     I/N

Campaigns chosen by the series (--series without a campaign file): the
series is applied to the tree (--tree, else the built-in campaign's) and
each function whose lines it changes is found in the tree's C; the
campaigns of ci/seeds/ whose `reaches:` block declares that function, or
whose committed runs saw the base kernel execute it, are chosen, and the
plan says which function each executes and how that is known. A series
that changes nothing any campaign executes is told so: `run` would run the
smoke campaign as a sanity check only. Nothing is built or booted.
When the series is read at the tree of the reach map
(results/reach/linux-6.12-mm-all.json, `patchbench reach`), the plan also
ranks the mm library (ci/mm/) by the share of each workload's kernel
instructions the changed functions take on the base kernel, and names for
each changed function the workload that runs it most, or why none does
(init-only, not built, or built but run in no workload's window). `run
--series` runs those workloads after the ci/seeds campaigns.

Examples:
  patchbench plan --series patches/memcg-dfl-local-skip      # which campaigns, and why
  patchbench plan ci/smoke.yaml
  patchbench plan --matrix --jobs build ci/smoke.yaml
  echo \"bench=$(patchbench plan --matrix --jobs bench ci/*.yaml)\" >> \"$GITHUB_OUTPUT\"";

/// `plan`'s checks before it chooses or loads anything slow: the series'
/// local paths when it chooses the campaigns, else every campaign loads
/// with the flags applied, and a matrix has no hunt.
pub(super) fn check(args: &PlanArgs) -> anyhow::Result<()> {
    if super::choose::wanted(args.campaigns.len(), &args.sources) {
        return super::args::sources_paths(&args.sources);
    }
    let plans = load_all(&args.campaigns, &args.sources)?;
    refuse_matrix_hunts(args, &plans)
}

/// A CI matrix's build jobs build fixed kernels: no hunt in one.
fn refuse_matrix_hunts(args: &PlanArgs, plans: &[Planned]) -> anyhow::Result<()> {
    if args.matrix {
        for p in plans {
            super::args::refuse_bisect(
                &p.plan,
                "a CI matrix (its build jobs build fixed kernels)",
            )?;
        }
    }
    Ok(())
}

pub(super) async fn plan(args: PlanArgs, sink: &dyn Sink) -> anyhow::Result<()> {
    check(&args)?;
    let (files, chose) = if super::choose::wanted(args.campaigns.len(), &args.sources) {
        let cache = args
            .cache_dir
            .clone()
            .unwrap_or_else(super::args::default_cache_dir);
        let chose = super::choose::choose(&args.sources, &cache, sink).await?;
        let files = chose.files();
        (files, Some(chose))
    } else {
        (args.campaigns.clone(), None)
    };
    let plans = load_all(&files, &args.sources)?;
    refuse_matrix_hunts(&args, &plans)?;
    let text = if args.matrix {
        let matrix = match args.jobs {
            PlanJobs::Build => build_matrix(&plans)?,
            PlanJobs::Bench => bench_matrix(&plans)?,
            PlanJobs::Shards => shard_matrix(&plans, args.shards)?,
        };
        format!("{matrix}\n")
    } else {
        match &chose {
            Some(chose) => format!("{}\n{}", chose.text, describe(&plans)?),
            None => describe(&plans)?,
        }
    };
    sink.emit(Event::Output(text));
    Ok(())
}

/// A campaign as the plan sees it: its file (None: the built-in one) and
/// its validated plan.
pub(super) struct Planned {
    file: Option<PathBuf>,
    plan: Plan,
}

/// The plans of `campaigns` (none: the built-in one) with `sources` applied.
fn load_all(campaigns: &[PathBuf], sources: &SourceArgs) -> anyhow::Result<Vec<Planned>> {
    let files: Vec<Option<PathBuf>> = if campaigns.is_empty() {
        vec![None]
    } else {
        campaigns.iter().cloned().map(Some).collect()
    };
    let mut planned: Vec<Planned> = Vec::new();
    for file in files {
        let campaign_args = CampaignArgs {
            campaign: file.clone(),
            sources: sources.clone(),
            cache_dir: None,
            cache_max: crate::build::cache::DEFAULT_BUDGET,
        };
        let plan = load_plan(&campaign_args, None)?;
        if let Some(other) = planned.iter().find(|p| p.plan.name == plan.name) {
            anyhow::bail!(
                "campaigns {} and {} are both named {:?}; their PR comments and statuses would overwrite each other",
                shown(other.file.as_deref()),
                shown(file.as_deref()),
                plan.name
            );
        }
        planned.push(Planned { file, plan });
    }
    Ok(planned)
}

fn shown(file: Option<&Path>) -> String {
    file.map_or("built-in".into(), |f| f.display().to_string())
}

fn file_field(file: Option<&Path>) -> String {
    file.map_or(String::new(), |f| f.display().to_string())
}

/// The build key of a plan: what decides its kernels (the tree, the
/// series, the configuration, and which prefix and fragments each variant
/// builds with). Files are hashed by content, so the key does not depend
/// on where they are.
pub(super) fn build_key(plan: &Plan) -> anyhow::Result<String> {
    let mut h = Sha256::new();
    let mut field = |name: &str, value: &[u8]| {
        h.update(name.as_bytes());
        h.update((value.len() as u64).to_le_bytes());
        h.update(value);
    };
    match &plan.tree {
        TreeSource::Tarball(path) => field("tarball", path.to_string_lossy().as_bytes()),
        TreeSource::Git { path, rev } => {
            field("git", path.to_string_lossy().as_bytes());
            field("rev", rev.as_deref().unwrap_or("HEAD").as_bytes());
        }
        TreeSource::Url { url, rev } => {
            field("url", url.as_bytes());
            field("rev", rev.as_deref().unwrap_or("HEAD").as_bytes());
        }
    }
    match &plan.series {
        SeriesSource::Lore { message_id } => {
            field("lore", message_id.as_bytes());
            field("lore-url", plan.lore_url.as_bytes());
        }
        SeriesSource::Path(path) if path.is_dir() => {
            // The patches the series is made of, in order, wherever its
            // `series` file finds them.
            let entries = crate::series::directory_files(path)
                .with_context(|| format!("cannot list series {}", path.display()))?;
            for entry in entries {
                let name = entry.file_name().unwrap_or_default().to_string_lossy();
                field("series-file", name.as_bytes());
                field("content", &read(&entry)?);
            }
        }
        SeriesSource::Path(path) => field("series", &read(path)?),
        SeriesSource::None => field("series", b"none"),
    }
    match &plan.base_config {
        BaseConfig::File(path) => field("base-file", &read(path)?),
        other => field("base", other.to_string().as_bytes()),
    }
    for fragment in &plan.fragments {
        field("fragment", &read(fragment)?);
    }
    match &plan.variants {
        VariantSet::PerPatch => field("per-patch", b""),
        VariantSet::Bisect => field("bisect", b""),
        VariantSet::Listed(variants) => {
            for v in variants {
                let patches = match v.patches {
                    Patches::None => "none".to_string(),
                    Patches::All => "all".to_string(),
                    Patches::First(n) => n.to_string(),
                };
                field("variant-patches", patches.as_bytes());
                for fragment in &v.fragments {
                    field("variant-fragment", &read(fragment)?);
                }
            }
        }
    }
    Ok(hex::encode(h.finalize())[..16].to_string())
}

fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

fn workload_kind(plan: &Plan) -> &'static str {
    plan.workload.kind()
}

/// One entry per distinct kernel pair, in the order campaigns first need them.
pub(super) fn build_matrix(plans: &[Planned]) -> anyhow::Result<Value> {
    let mut include: Vec<Value> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for p in plans {
        let key = build_key(&p.plan)?;
        if seen.insert(key.clone()) {
            include.push(json!({
                "build": key,
                "campaign": p.plan.name,
                "file": file_field(p.file.as_deref()),
            }));
        }
    }
    Ok(json!({ "include": include }))
}

/// One entry per campaign.
pub(super) fn bench_matrix(plans: &[Planned]) -> anyhow::Result<Value> {
    let mut taken = std::collections::BTreeSet::new();
    let mut include = Vec::new();
    for p in plans {
        let base = crate::html::view::slugify(&p.plan.name);
        let mut slug = base.clone();
        let mut n = 1;
        while !taken.insert(slug.clone()) {
            n += 1;
            slug = format!("{base}-{n}");
        }
        include.push(json!({
            "campaign": p.plan.name,
            "file": file_field(p.file.as_deref()),
            "build": build_key(&p.plan)?,
            "workload": workload_kind(&p.plan),
            "lane": planned_lane(&p.plan)?.name(),
            "slug": slug,
        }));
    }
    Ok(json!({ "include": include }))
}

/// `--jobs shards`: every bench entry once per shard, with `shard` (`I/N`)
/// and a slug of its own. A campaign on the host's clock is refused: its
/// boots on different machines would measure the machines.
pub(super) fn shard_matrix(plans: &[Planned], shards: u32) -> anyhow::Result<Value> {
    anyhow::ensure!(shards >= 1, "--shards must be at least 1");
    for p in plans {
        let lane = planned_lane(&p.plan)?;
        if !lane.deterministic() {
            return Err(crate::model::shard::ShardError::TimingLane {
                lane: format!(
                    "campaign {} runs in {} where KVM runs, as it sets neither vm.icount nor vm.cost_model",
                    p.plan.name,
                    lane.label()
                ),
            }
            .into());
        }
    }
    let bench = bench_matrix(plans)?;
    let mut include = Vec::new();
    for entry in bench["include"].as_array().into_iter().flatten() {
        for i in 1..=shards {
            let mut e = entry.clone();
            e["shard"] = json!(format!("{i}/{shards}"));
            e["slug"] = json!(format!("{}-shard{i}", entry["slug"].as_str().unwrap_or("")));
            include.push(e);
        }
    }
    Ok(json!({ "include": include }))
}

/// The lane a campaign runs in on a runner whose KVM runs a guest (the
/// workflows open /dev/kvm for the entries whose lane is `kvm`, and fail a
/// bench job whose results.json says another): the lane decision's own
/// answer, so a lane the campaign cannot have is refused here.
fn planned_lane(plan: &crate::config::Plan) -> anyhow::Result<crate::model::Lane> {
    plan.vm
        .lane_request()
        .lane_where_kvm_runs()
        .map_err(|e| anyhow::Error::new(e).context(format!("campaign {}", plan.name)))
}

/// The lane in the plan's words: a lane the campaign names holds on any
/// host; KVM's depends on the host's trial.
fn lane_words(plan: &crate::config::Plan) -> anyhow::Result<String> {
    use crate::model::{AccelChoice, Lane};
    let lane = planned_lane(plan)?;
    Ok(match (lane, plan.vm.accel) {
        (Lane::Kvm, AccelChoice::Kvm) => {
            "KVM (refused, exit 3, where no guest runs under it)".into()
        }
        (Lane::Kvm, _) => "KVM where a guest runs under it, else plain TCG".into(),
        (lane, _) => format!("{} on any host", lane.label()),
    })
}

/// The plan for people: each campaign, its build key and what it runs.
fn describe(plans: &[Planned]) -> anyhow::Result<String> {
    use std::fmt::Write;
    let mut s = String::new();
    for p in plans {
        let _ = writeln!(
            s,
            "campaign {} ({})\n  lane: {}\n  build {}: tree {}, series {}, {} + {} fragment(s)\n  bench: {} boots {}, {} warm-up(s) + {} sample(s) per boot{}",
            p.plan.name,
            shown(p.file.as_deref()),
            lane_words(&p.plan)?,
            build_key(&p.plan)?,
            p.plan.tree,
            p.plan.series,
            p.plan.base_config,
            p.plan.fragments.len(),
            workload_kind(&p.plan),
            p.plan.variants.describe_boots(p.plan.order),
            p.plan.warmups,
            p.plan.samples,
            p.plan
                .controls
                .iter()
                .map(|c| format!(", then control {} ({})", c.name, c.describe_set()))
                .collect::<String>(),
        );
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn smoke() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/smoke.yaml")
    }

    fn planned(argv: &[&str]) -> Vec<Planned> {
        let cli = Cli::try_parse_from(argv).unwrap();
        let Command::Plan(args) = cli.command else {
            panic!("not plan")
        };
        load_all(&args.campaigns, &args.sources).unwrap()
    }

    #[test]
    fn the_smoke_campaign_plans_one_build_and_one_bench() {
        let smoke = smoke();
        let file = smoke.to_str().unwrap();
        let plans = planned(&["patchbench", "plan", "--matrix", file]);
        let build = build_matrix(&plans).unwrap();
        let key = build_key(&plans[0].plan).unwrap();
        assert_eq!(key.len(), 16);
        assert!(key.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(
            build,
            json!({"include": [{"build": key, "campaign": "smoke", "file": file}]})
        );
        let bench = bench_matrix(&plans).unwrap();
        assert_eq!(
            bench,
            json!({"include": [{
                "campaign": "smoke",
                "file": file,
                "build": key,
                "lane": "icount",
                "workload": "zswap-pageout",
                "slug": "smoke",
            }]})
        );
        // One line, so a step can write `matrix=<json>` to $GITHUB_OUTPUT.
        assert!(!bench.to_string().contains('\n'));
    }

    #[test]
    fn the_build_key_follows_the_series_not_the_path_it_is_reached_by() {
        let smoke = smoke();
        let file = smoke.to_str().unwrap();
        let built_in = planned(&["patchbench", "plan", "--matrix"]);
        let by_file = planned(&["patchbench", "plan", "--matrix", file]);
        assert_eq!(built_in[0].file, None);
        assert_eq!(
            build_key(&built_in[0].plan).unwrap(),
            build_key(&by_file[0].plan).unwrap()
        );
        // Not the smoke's own series (patches/zswap-counter).
        let other_series = Path::new(env!("CARGO_MANIFEST_DIR")).join("patches/swapin-margin");
        let other = planned(&[
            "patchbench",
            "plan",
            "--matrix",
            "--series",
            other_series.to_str().unwrap(),
            file,
        ]);
        assert_ne!(
            build_key(&other[0].plan).unwrap(),
            build_key(&by_file[0].plan).unwrap()
        );
    }

    #[test]
    fn campaigns_with_one_name_are_refused() {
        let smoke = smoke();
        let file = smoke.to_str().unwrap();
        let cli = Cli::try_parse_from(["patchbench", "plan", "--matrix", file, file]).unwrap();
        let Command::Plan(args) = cli.command else {
            panic!("not plan")
        };
        let err = load_all(&args.campaigns, &args.sources)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("both named \"smoke\""), "{err}");
    }

    #[test]
    fn the_human_plan_names_the_build_and_the_boots() {
        let smoke = smoke();
        let plans = planned(&["patchbench", "plan", smoke.to_str().unwrap()]);
        let text = describe(&plans).unwrap();
        assert!(text.starts_with("campaign smoke ("), "{text}");
        assert!(text.contains("bench: zswap-pageout boots A/B/A, 1 warm-up(s) + 3 sample(s)"));
    }
}
