#!/usr/bin/env bash
# The boot benchmark (issue 5): boot one tiny kernel N times (default 10)
# with patchbench and with virtme-ng, side by side, under TCG, and report
# the median of each and their ratio.
#   patchbench: `patchbench boot --repeat N --accel tcg KERNEL -- true`,
#               timed from QEMU's start to the agent's hello (its readiness
#               signal) and to QEMU's exit.
#   virtme-ng:  `vng --run KERNEL --disable-kvm --exec true`, timed by wall
#               clock (start to exit): vng has no readiness signal to time.
# Compare exit with exit. vng runs from a venv (pip install virtme-ng),
# created under $VNG_VENV (default ~/.cache/patchbench/vng-venv).
# Usage: ci/bench-boot.sh KERNEL [N]
set -euo pipefail
cd "$(dirname "$0")/.."
kernel=${1:?usage: ci/bench-boot.sh KERNEL [N]}
n=${2:-10}
venv=${VNG_VENV:-$HOME/.cache/patchbench/vng-venv}
if [ ! -x "$venv/bin/vng" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q virtme-ng
fi
cargo build --release --workspace --locked
pb=target/release/patchbench

echo "== patchbench: $n boots"
"$pb" boot --repeat "$n" --accel tcg "$kernel" -- true | tee /tmp/bench-boot-pb.txt
pb_exit=$(sed -n 's/.*median QEMU start → exit: \([0-9.]*\) s.*/\1/p' /tmp/bench-boot-pb.txt)

echo "== virtme-ng: $n boots"
times=()
for i in $(seq "$n"); do
  start=$(date +%s.%N)
  # vng exits 255 on this kernel although the command ran ("cannot find
  # script I/O ports", it falls back to the console and loses the status),
  # so success is read from its verbose console: "script exited with code 0".
  PATH="$venv/bin:$PATH" timeout 300 vng --run "$kernel" --disable-kvm --exec true -v \
      >/tmp/bench-boot-vng.log 2>&1 </dev/null || true
  if ! grep -q "script exited with code 0" /tmp/bench-boot-vng.log; then
    echo "bench-boot: vng failed on boot $i (log: /tmp/bench-boot-vng.log)" >&2
    exit 1
  fi
  end=$(date +%s.%N)
  times+=("$(echo "$end - $start" | bc)")
done
vng_median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
echo "virtme-ng start → exit (s): ${times[*]}"
echo "median start → exit: patchbench ${pb_exit} s, virtme-ng ${vng_median} s, ratio patchbench/vng $(echo "scale=2; $pb_exit / $vng_median" | bc)"
