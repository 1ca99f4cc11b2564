#!/usr/bin/env bash
# Builds the project's own result site from the results kept with the code
# (results/smoke/ and results/seeds/*/): an index, a page per run, a trend
# page per campaign, viewable from the directory (open SITE/index.html).
#   ci/site.sh [SITE]      # default: site/
set -euo pipefail
cd "$(dirname "$0")/.."
site=${1:-site}
bin=${PATCHBENCH:-target/release/patchbench}
[ -x "$bin" ] || cargo build --release --locked
runs=()
for dir in results/smoke results/seeds/*/; do
    [ -f "$dir/results.json" ] && runs+=("$dir")
done
"$bin" publish "${runs[@]}" --pages "$site"
echo "site: $site/index.html"
