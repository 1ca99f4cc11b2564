#!/usr/bin/env bash
# The mm benchmark library's timings and repeatability (issue 49): runs each
# library campaign (ci/mm/*.yaml, or the names given) as an A/A self-check
# on one tree, one campaign at a time, and prints one Markdown row each
# (ci/mm-timings.py, which also tabulates a `run --suite mm` directory):
# the run's wall time (kernels cached after the first), the host seconds
# per sample (a boot's time after the agent's hello over its warm-ups and
# samples, the mean over boots), and the counting lane's figures: the mean
# kernel instructions per operation and the largest within-boot CV of
# ops_kernel_insns (the target is 0.1%). A campaign whose kernel lacks a
# feature the benchmark needs is refused by name (exit 2) and says so.
#
#   ci/mm-library.sh [--tree TARBALL] [--online N] [--keep SUFFIX] [NAME...]
#   ci/mm-library.sh --tree /usr/src/linux-source-6.1.tar.xz --online 1 page-fault-anon
#
# --online N runs each campaign with N vCPUs online (`run --online`):
# under icount, QEMU before 8.1 never brings up 6.1's second vCPU
# (ci/smoke-6.1.yaml).
# --keep SUFFIX keeps each run as results/mm/NAME-SUFFIX (ci/keep.sh).
# PATCHBENCH=path/to/patchbench skips the release build.
set -euo pipefail
cd "$(dirname "$0")/.."
tree=() keep="" online=() cpus=""
while [ $# -gt 0 ]; do
  case $1 in
    --tree) tree=(--tree "$2"); shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --online) cpus=$2; online=(--online "$2"); shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
if [ $# -gt 0 ]; then names=("$@"); else
  names=(); for f in ci/mm/*.yaml; do names+=("$(basename "$f" .yaml)"); done
fi
if [ -z "${PATCHBENCH:-}" ]; then
  cargo build --release --workspace --locked >&2
  PATCHBENCH=target/release/patchbench
fi
out=$(mktemp -d /tmp/mm-library.XXXXXX)
python3 ci/mm-timings.py header
failed=0
for name in "${names[@]}"; do
  file=ci/mm/$name.yaml
  [ -f "$file" ] || { echo "mm-library: no campaign $file" >&2; exit 2; }
  start=$(date +%s)
  rc=0
  "$PATCHBENCH" run "$file" "${tree[@]}" "${online[@]}" --series none --out "$out/$name" >"$out/$name.log" 2>&1 || rc=$?
  wall=$(( $(date +%s) - start ))
  if [ ! -f "$out/$name/results.json" ]; then
    echo "| $name | $rc | ${wall} s | | | | $(grep -m1 -i 'error' "$out/$name.log" | cut -c1-160) |"
    failed=1; continue
  fi
  python3 ci/mm-timings.py row "$out/$name/results.json" "$name" "$rc" "$wall"
  # Exit 1 is an A/A run that called a difference: kept, and said.
  [ "$rc" -le 1 ] || failed=1
  if [ -n "$keep" ]; then
    ci/keep.sh "$out/$name" "$file" HEAD "results/mm/$name-$keep" >/dev/null
    # The campaign as run: --online's CPUs in its copy and its manifest.
    if [ -n "$cpus" ]; then
      sed -i "s/online: [0-9]*}/online: $cpus}/" "results/mm/$name-$keep/campaign.yaml"
      sed -i "s|\"ci/mm/$name.yaml\"|\"ci/mm/$name.yaml (vm.cpus.online: $cpus)\"|" "results/mm/$name-$keep/manifest.json"
    fi
  fi
done
echo "mm-library: runs and logs in $out" >&2
exit $failed
