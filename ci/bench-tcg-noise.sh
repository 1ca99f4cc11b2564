#!/usr/bin/env bash
# Plain-TCG noise (issue 18, item 4): the smoke campaign's A/B/A without
# icount, under each of four settings -- MTTCG (`vm.tcg_threads: multi`) or
# one host thread for all vCPUs (`single`), with 2 or 1 online vCPUs -- and,
# for each, the within-boot CV of PAGEOUT CPU beside the host's own noise
# floor measured in the same run (results.json's host.noise). The settings
# run interleaved, ROUNDS times (default 1), so a change in the host's load
# reaches all of them. Not a test: its figures depend on the host.
# Usage: ci/bench-tcg-noise.sh [ROUNDS] [OUT_DIR]
# PATCHBENCH=path/to/patchbench skips the release build (the guest agent is
# optimised in every profile, so a debug patchbench measures the same).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-1}
out=${2:-/tmp/patchbench-tcg-noise}
pb=${PATCHBENCH:-}
if [ -z "$pb" ]; then
  cargo build --release --workspace --locked
  pb=target/release/patchbench
fi
mkdir -p "$out"
root=$(pwd)
for round in $(seq 1 "$rounds"); do
  for threads in multi single; do
    for online in 2 1; do
      name="$threads-$online-r$round"
      campaign="$out/$name.yaml"
      # The smoke campaign, absolute paths, no icount, the setting under test,
      # more samples per boot for a CV worth the name.
      sed -e "s|\.\./|$root/|g" \
          -e "s|^  icount: true$|  tcg_threads: $threads|" \
          -e "s|{possible: 20, online: 2}|{possible: 20, online: $online}|" \
          -e "s|^  accel: auto$|  accel: tcg|" \
          -e "s|^  samples: 3$|  samples: 8|" \
          ci/smoke.yaml > "$campaign"
      grep -q "tcg_threads: $threads" "$campaign" || { echo "bench-tcg-noise: ci/smoke.yaml changed shape" >&2; exit 1; }
      rm -rf "${out:?}/$name"
      "$pb" run --quiet "$campaign" --out "$out/$name" > "$out/$name.log" 2>&1 || {
        code=$?; [ "$code" -le 1 ] || { echo "bench-tcg-noise: $name failed (exit $code), see $out/$name.log" >&2; exit "$code"; }
      }
    done
  done
done
python3 - "$out" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
print("| setting | round | within-boot CV of pageout_cpu_ns (A, B, A') | max | host loop CV | max / host |")
print("|---|---|---|---|---|---|")
for path in sorted(glob.glob(os.path.join(out, "*-r*/results.json"))):
    name = os.path.basename(os.path.dirname(path))
    setting, rnd = name.rsplit("-r", 1)
    doc = json.load(open(path))
    cvs = []
    for boot in doc["boots"]:
        v = [s["metrics"]["pageout_cpu_ns"] for s in boot["samples"]]
        cvs.append(100 * statistics.stdev(v) / statistics.mean(v))
    noise = doc["host"].get("noise") or {}
    ms = noise.get("samples_ms", [])
    host = 100 * statistics.stdev(ms) / statistics.mean(ms) if len(ms) > 1 else float("nan")
    threads, online = setting.split("-")
    print(f"| {threads}, {online} online | {rnd} | {', '.join(f'{c:.1f}%' for c in cvs)} | {max(cvs):.1f}% | {host:.1f}% | {max(cvs)/host:.1f}x |")
PY
