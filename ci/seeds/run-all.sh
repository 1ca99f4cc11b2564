#!/usr/bin/env bash
# Runs every seed campaign in ci/seeds/ (issue 16) and publishes one site
# with all of them: an index listing each seed's run, a page per run with
# its tables and plots, a trend page per campaign. Not part of CI (hours
# under TCG); see docs/seeds.md for what each one measured.
#
#   ci/seeds/run-all.sh [OUT [CAMPAIGN...]]
#
# OUT (default patchbench-out/seeds) gets one directory per campaign,
# OUT/<campaign file's stem>/ (results.json, report.md, boots/), and the
# site in OUT/site/. Each finished campaign is also kept with the code
# (ci/keep.sh: results/seeds/<stem>/, which docs/seeds.md quotes).
# CAMPAIGNs (file stems such as 004-swapin-margin-anon) pick some; by default every ci/seeds/*.yaml runs, in file order.
# Runs are resumable: an interrupted campaign, run again with the same OUT,
# keeps its complete boots. Campaigns run under `nice -n 10` (the machine
# is shared). A campaign that exits 1 (a metric regressed) is a result and
# is published; any other failure is reported, the rest still run, and the
# script exits non-zero at the end.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-patchbench-out/seeds}
shift || true
bin=${PATCHBENCH:-target/release/patchbench}
if [ ! -x "$bin" ]; then
    cargo build --release --workspace --locked || exit 3
fi
if [ "$#" -gt 0 ]; then
    campaigns=()
    for stem in "$@"; do
        campaigns+=("ci/seeds/$stem.yaml")
    done
else
    campaigns=(ci/seeds/*.yaml)
fi
mkdir -p "$out"
failed=()
for campaign in "${campaigns[@]}"; do
    stem=$(basename "$campaign" .yaml)
    echo "== $stem: $bin run $campaign --out $out/$stem"
    nice -n 10 "$bin" run "$campaign" --out "$out/$stem"
    code=$?
    case $code in
        0|1|5) ci/keep.sh "$out/$stem" "$campaign" ;;
    esac
    case $code in
        0) echo "== $stem: done" ;;
        1) echo "== $stem: done, a metric regressed (exit 1)" ;;
        5) echo "== $stem: a guest failure stopped a boot (exit 5); kept, with what was measured"; failed+=("$stem") ;;
        *) echo "== $stem: FAILED (exit $code)"; failed+=("$stem") ;;
    esac
done
# Every seed's run in OUT, whichever of them ran now (other directories in
# OUT, such as an earlier run moved aside, are not published).
results=()
for campaign in ci/seeds/*.yaml; do
    dir="$out/$(basename "$campaign" .yaml)"
    [ -f "$dir/results.json" ] && results+=("$dir")
done
if [ "${#results[@]}" -eq 0 ]; then
    echo "no campaign produced a results.json in $out" >&2
    exit 3
fi
"$bin" publish "${results[@]}" --pages "$out/site" || exit $?
echo "site: $out/site/index.html"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "failed: ${failed[*]}" >&2
    exit 3
fi
