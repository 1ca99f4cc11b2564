#!/usr/bin/env bash
# Keeps a campaign's run with the code: copies OUT's results.json and
# report.md, and the campaign file as run, into DEST, with a
# manifest.json giving the patchbench commit the run was made at, the date,
# and the host (the results file holds the kernels' sha256 and the host's
# own facts). Console logs stay out: samples, not logs. The copy is judged
# again (`patchbench judge`), so it names no path of one machine.
#
#   ci/keep.sh OUT CAMPAIGN.yaml [COMMIT [DEST]]
#   ci/keep.sh /tmp/pb-smoke ci/smoke.yaml HEAD results/smoke
#
# COMMIT defaults to this checkout's HEAD; DEST to results/seeds/STEM, STEM
# being the campaign file's stem.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: keep.sh OUT CAMPAIGN.yaml [COMMIT [DEST]]}
campaign=${2:?usage: keep.sh OUT CAMPAIGN.yaml [COMMIT [DEST]]}
commit=$(git rev-parse "${3:-HEAD}")
dest=${4:-results/seeds/$(basename "$campaign" .yaml)}
[ -f "$out/results.json" ] || { echo "keep.sh: $out/results.json does not exist" >&2; exit 2; }
mkdir -p "$dest"
cp "$out/results.json" "$dest/results.json"
[ -f "$out/report.md" ] && cp "$out/report.md" "$dest/report.md"
cp "$campaign" "$dest/campaign.yaml"
python3 - "$dest/manifest.json" "$campaign" "$commit" "$dest/results.json" <<'PY'
import json, sys, datetime
path, campaign, commit, results = sys.argv[1:]
r = json.load(open(results))
json.dump({
    "campaign_file": campaign,
    "patchbench_commit": commit,
    "started_at": r["started_at"],
    "kernels": {v["name"]: v["kernel"]["bzimage_sha256"] for v in r["variants"]},
    "host": {k: r["host"].get(k) for k in ("cpu_model", "cores", "lane", "cost_model", "parallel_boots")},
}, open(path, "w"), indent=2)
open(path, "a").write("\n")
PY
# Judged under today's rule, with portable paths, and report.md rendered
# from that judgement (tests/kept.rs holds every kept run to both). A
# regression found is not a failure here: exit 1 is the verdict.
bin=target/release/patchbench
[ -x "$bin" ] || cargo build --release --locked -q -p patchbench
"$bin" judge "$dest/results.json" || [ $? -eq 1 ]
echo "kept: $dest"
