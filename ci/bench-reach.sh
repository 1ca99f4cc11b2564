#!/usr/bin/env bash
# The reach map's timings (issue 50), each as a user meets it:
#   1. building each map (`patchbench reach build`) from its kernel's
#      objects (the library kernel's, the kmemleak kernel's) and the kept
#      runs, written to a scratch file;
#   2. `plan --series` answering for each series of the upstream corpus
#      (tests/fixtures/upstream-mm, with --fuzz 2, which two need): the
#      median and the slowest, the tree imported and the map loaded each
#      time, as a user's call does;
#   3. with --suite, `run --suite mm` (every library campaign A/A on the
#      cached kernels; boots that repeat an earlier one replay, as by
#      default), its wall time against its 30 min budget, with
#      --suite-series SERIES the same with a series.
# Prints one Markdown line per figure.
#
#   ci/bench-reach.sh [--suite] [--suite-series SERIES] [--fresh-boots]
#
# It builds both kernels first, or finds them in the build cache.
# PATCHBENCH=path/to/patchbench skips the release build.
set -euo pipefail
cd "$(dirname "$0")/.."
suite=false series=none fresh=()
while [ $# -gt 0 ]; do
  case $1 in
    --suite) suite=true; shift ;;
    --suite-series) suite=true; series=$2; shift 2 ;;
    --fresh-boots) fresh=(--fresh-boots); shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "bench-reach: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "${PATCHBENCH:-}" ]; then
  cargo build --release --workspace --locked >&2
  PATCHBENCH=target/release/patchbench
fi
out=$(mktemp -d /tmp/bench-reach.XXXXXX)
now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc; }

# Each map's kernel build directory, the one `patchbench build` of its
# campaign names: the library kernel's (ci/mm-all.yaml) and the kmemleak
# kernel's (ci/mm/kmemleak-scan.yaml).
for pair in "ci/mm-all.yaml:library kernel" "ci/mm/kmemleak-scan.yaml:kmemleak kernel"; do
  campaign=${pair%%:*} what=${pair#*:}
  "$PATCHBENCH" build "$campaign" --series none >"$out/build.log" 2>&1 || {
    echo "bench-reach: $campaign did not build (log: $out/build.log)" >&2; exit 1; }
  objects=$(sed -n 's|^  bzImage \(.*\)/arch/x86/boot/bzImage .*|\1|p' "$out/build.log" | head -1)
  [ -d "$objects" ] || { echo "bench-reach: no build directory in $out/build.log" >&2; exit 1; }
  start=$(now)
  "$PATCHBENCH" reach build --objects "$objects" --results results/mm --out "$out/map.json" >"$out/map.log" 2>&1
  echo "| reach build, $what | $(printf '%.2f' "$(secs "$start" "$(now)")") s | $(tail -1 "$out/map.log" | sed 's/^wrote [^:]*: //') |"
done

times=()
for s in tests/fixtures/upstream-mm/*/; do
  start=$(now)
  "$PATCHBENCH" plan --fuzz 2 --series "$s" >"$out/plan.log" 2>&1 || {
    echo "bench-reach: plan --series $s failed (log: $out/plan.log)" >&2; exit 1; }
  times+=("$(secs "$start" "$(now)")")
done
sorted=$(printf '%s\n' "${times[@]}" | sort -n)
median=$(echo "$sorted" | sed -n "$(( (${#times[@]} + 1) / 2 ))p")
echo "| plan --series, ${#times[@]} upstream series | median $(printf '%.2f' "$median") s, slowest $(printf '%.2f' "$(echo "$sorted" | tail -1)") s | target 2 s |"

if $suite; then
  start=$(now)
  rc=0
  "$PATCHBENCH" run --suite mm --series "$series" --budget 2h "${fresh[@]}" --out "$out/suite" >"$out/suite.log" 2>&1 || rc=$?
  wall=$(secs "$start" "$(now)")
  ran=$(find "$out/suite" -name results.json | wc -l)
  echo "| run --suite mm --series $series${fresh:+ --fresh-boots} | $(printf '%.0f' "$wall") s ($(echo "$wall / 60" | bc) min), $ran campaigns, exit $rc | target 30 min |"
fi
echo "bench-reach: logs in $out" >&2
