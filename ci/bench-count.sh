#!/usr/bin/env bash
# The counting lane's slowdown against icount alone (issue 38): one
# campaign run both ways, one after the other on this host. By default
# seed 000's counter.yaml (icount) and counter-count.yaml (the same
# campaign with vm.cost_model: count), both on the fixed protocol
# (protocol.sequential: off, so both take the same boots and samples) and
# one boot at a time (vm.parallel_boots: 1, so the wall time is the lane's
# and not the host's cores). The kernels are built first, outside the
# timing. Prints each run's wall and CPU time (user + sys, QEMU included)
# and the ratios.
# Usage: ci/bench-count.sh [ICOUNT.yaml COUNT.yaml]
# PATCHBENCH=path/to/patchbench skips the release build.
set -euo pipefail
cd "$(dirname "$0")/.."
icount=${1:-ci/seeds/000-counter.yaml}
count=${2:-ci/workloads/counter-count.yaml}
if [ -z "${PATCHBENCH:-}" ]; then
  cargo build --release --workspace --locked
  PATCHBENCH=target/release/patchbench
fi
out=$(mktemp -d /tmp/bench-count.XXXXXX)

# The campaign, fixed and one boot at a time, written beside the original
# (its relative paths are relative to its own directory) as .bench-NAME.
bench_file() { local src; src=$(readlink -f "$1"); echo "$(dirname "$src")/.bench-$(basename "$src")"; }
trap 'rm -f "$(bench_file "$icount")" "$(bench_file "$count")"' EXIT
for f in "$icount" "$count"; do
  sed -e '/^protocol:/a\  sequential: off' -e '/^vm:/a\  parallel_boots: 1' "$(readlink -f "$f")" >"$(bench_file "$f")"
done

"$PATCHBENCH" build "$(bench_file "$icount")" --out "$out/kernels" >"$out/build.log" 2>&1 || {
  echo "bench-count: the kernels did not build (log: $out/build.log)" >&2; exit 1; }
for lane in icount count; do
  file=$icount; [ $lane = count ] && file=$count
  /usr/bin/time -f '%e %U %S' -o "$out/$lane.time" \
    "$PATCHBENCH" run "$(bench_file "$file")" --out "$out/$lane" >"$out/$lane.log" 2>&1 || {
    rc=$?; [ $rc -eq 1 ] || { echo "bench-count: $lane run failed, exit $rc (log: $out/$lane.log)" >&2; exit 1; }; }
  read -r wall user sys <"$out/$lane.time"
  cpu=$(echo "$user + $sys" | bc)
  eval "${lane}_wall=$wall ${lane}_cpu=$cpu"
  echo "$lane: wall $wall s, cpu $cpu s ($(basename "$file"), fixed protocol, one boot at a time)"
done
echo "slowdown: wall x$(echo "scale=2; $count_wall / $icount_wall" | bc), cpu x$(echo "scale=2; $count_cpu / $icount_cpu" | bc)"
echo "bench-count: runs in $out"
