#!/usr/bin/env bash
# The cost lane's slowdown against icount alone (issue 14). It boots the
# counter campaign's guest (ci/seeds/000-counter.yaml: 20 possible CPUs,
# 2 online, 1 GiB, TCG with -icount shift=0,sleep=off) N times without and
# N times with the cost-model plugin, each running the same command, and
# prints the median wall-clock and CPU time (user + sys, QEMU included) of
# each and their ratios. The host is shared with other work: CPU time is the
# steadier figure.
#   icount only: patchbench boot --campaign ci/seeds/000-counter.yaml --accel tcg KERNEL -- CMD
#   cost lane:   the same with --cost-model
# Two commands: `true` (the boot alone), then CMD, by default the
# zswap-pageout workers without a cgroup (`/init dev-workers --workers 2
# --mib 32`: fill, MADV_PAGEOUT into zswap, read back, on both vCPUs).
# Usage: ci/bench-cost.sh KERNEL [N] [CMD...]
# PATCHBENCH=path/to/patchbench skips the release build (the plugin must be
# next to it, or in PATCHBENCH_COST_PLUGIN).
set -euo pipefail
cd "$(dirname "$0")/.."
kernel=${1:?usage: ci/bench-cost.sh KERNEL [N] [CMD...]}
n=${2:-3}
shift $(( $# < 2 ? $# : 2 ))
if [ $# -gt 0 ]; then cmd=("$@"); else cmd=(/init dev-workers --workers 2 --mib 32); fi
if [ -z "${PATCHBENCH:-}" ]; then
  cargo build --release --workspace --locked
  PATCHBENCH=target/release/patchbench
fi
out=$(mktemp -d /tmp/bench-cost.XXXXXX)

# One boot; appends "wall cpu" (seconds) to $out/<name>.times.
measure() {
  local name=$1; shift
  /usr/bin/time -f '%e %U %S' -o "$out/time.txt" \
    "$PATCHBENCH" boot --campaign ci/seeds/000-counter.yaml --accel tcg \
      --out "$out/$name" "$@" >"$out/$name.log" 2>&1 || {
    echo "bench-cost: $name failed (log: $out/$name.log)" >&2; exit 1; }
  awk '{printf "%.2f %.2f\n", $1, $2 + $3}' "$out/time.txt" >>"$out/$name.times"
  rm -rf "${out:?}/$name"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

for label in boot command; do
  if [ $label = boot ]; then args=(-- true); else args=(-- "${cmd[@]}"); fi
  for i in $(seq "$n"); do
    measure "$label-icount" "$kernel" "${args[@]}"
    measure "$label-cost" --cost-model "$kernel" "${args[@]}"
  done
  wi=$(cut -d' ' -f1 "$out/$label-icount.times" | median)
  ci=$(cut -d' ' -f2 "$out/$label-icount.times" | median)
  wc=$(cut -d' ' -f1 "$out/$label-cost.times" | median)
  cc=$(cut -d' ' -f2 "$out/$label-cost.times" | median)
  echo "== $label (${args[*]:1}), $n boots each, medians"
  echo "icount only: wall $wi s, cpu $ci s   (all: $(tr '\n' ';' <"$out/$label-icount.times"))"
  echo "cost lane:   wall $wc s, cpu $cc s   (all: $(tr '\n' ';' <"$out/$label-cost.times"))"
  echo "slowdown:    wall x$(echo "scale=2; $wc / $wi" | bc), cpu x$(echo "scale=2; $cc / $ci" | bc)"
  eval "${label}_ci=$ci ${label}_cc=$cc"
done
# The command's own CPU time: the command boots minus the bare boots.
own_i=$(echo "$command_ci - $boot_ci" | bc)
own_c=$(echo "$command_cc - $boot_cc" | bc)
echo "== the command alone (command boots minus bare boots, CPU)"
echo "icount only: $own_i s, cost lane: $own_c s, slowdown x$(echo "scale=2; $own_c / $own_i" | bc)"
echo "bench-cost: logs in $out"
