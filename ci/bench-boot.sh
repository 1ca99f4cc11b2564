#!/usr/bin/env bash
# The boot benchmark (issues 5 and 18): build one tiny kernel
# (ci/bench-boot.yaml: the smoke campaign's kernel plus what virtme-ng
# needs), boot it N times (default 10) with patchbench and with virtme-ng,
# side by side, under TCG, and report the median of each and their ratio.
#   patchbench: `patchbench boot --repeat N --accel tcg vmlinux -- true`: the
#               kernel's vmlinux through its PVH entry point, as campaigns
#               boot it; timed from QEMU's start to the agent's hello (its
#               readiness signal) and to QEMU's exit.
#   virtme-ng:  `vng --run bzImage --disable-kvm --exec true`, the same
#               build's bzImage, timed by wall clock (start to exit): vng has
#               no readiness signal to time.
# Compare exit with exit. Where patchbench's boot time goes is printed from
# its console logs' printk timestamps (kernel start to /init, to the reboot).
# vng runs from a venv (pip install virtme-ng), created under $VNG_VENV
# (default ~/.cache/patchbench/vng-venv). Run it on a quiet machine: both
# tools' times include the host's load.
# Usage: ci/bench-boot.sh [N] [OUT_DIR]   (default 10, /tmp/patchbench-bench-boot)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10}
out=${2:-/tmp/patchbench-bench-boot}
venv=${VNG_VENV:-$HOME/.cache/patchbench/vng-venv}
if [ ! -x "$venv/bin/vng" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q virtme-ng
fi
cargo build --release --workspace --locked
pb=target/release/patchbench
mkdir -p "$out"

echo "== the kernel (ci/bench-boot.yaml)"
"$pb" build --series none --out "$out/kernels" ci/bench-boot.yaml
vmlinux=$out/kernels/vmlinux-A
bzimage=$out/kernels/bzImage-A
[ -f "$vmlinux" ] || { echo "bench-boot: $vmlinux is missing (no CONFIG_PVH?)" >&2; exit 1; }

echo "== patchbench: $n boots of $vmlinux"
rm -rf "$out/boots"
"$pb" boot --repeat "$n" --accel tcg --campaign ci/bench-boot.yaml --out "$out/boots" "$vmlinux" -- true \
  | tee "$out/patchbench.txt"
pb_exit=$(sed -n 's/.*median QEMU start → exit: \([0-9.]*\) s.*/\1/p' "$out/patchbench.txt")
# Kernel time (printk) at /init and at the reboot, per boot; their medians.
for log in "$out"/boots/boot*/console.log; do
  awk -F'[][]' '/Run \/init as init process/ {i = $2 + 0} /reboot: Restarting system/ {r = $2 + 0}
    END {printf "%.3f %.3f\n", i, r}' "$log"
done > "$out/printk.txt"
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
init_med=$(cut -d' ' -f1 "$out/printk.txt" | median)
reboot_med=$(cut -d' ' -f2 "$out/printk.txt" | median)
echo "patchbench boots, printk time (median): kernel start → /init ${init_med} s, → reboot ${reboot_med} s;" \
  "QEMU start → exit ${pb_exit} s, so QEMU, firmware and the reboot's exit take the other" \
  "$(echo "$pb_exit - $reboot_med" | bc) s"

echo "== virtme-ng: $n boots of $bzimage"
times=()
for i in $(seq "$n"); do
  start=$(date +%s.%N)
  # vng exits 255 on this kernel although the command ran ("cannot find
  # script I/O ports", it falls back to the console and loses the status),
  # so success is read from its verbose console: "script exited with code 0".
  PATH="$venv/bin:$PATH" timeout 300 vng --run "$bzimage" --disable-kvm --exec true -v \
      >"$out/vng.log" 2>&1 </dev/null || true
  if ! grep -q "script exited with code 0" "$out/vng.log"; then
    echo "bench-boot: vng failed on boot $i (log: $out/vng.log)" >&2
    exit 1
  fi
  end=$(date +%s.%N)
  times+=("$(echo "$end - $start" | bc)")
done
vng_median=$(printf '%s\n' "${times[@]}" | median)
echo "virtme-ng start → exit (s): ${times[*]}"
echo "median start → exit: patchbench ${pb_exit} s, virtme-ng ${vng_median} s, ratio patchbench/vng $(echo "scale=2; $pb_exit / $vng_median" | bc)"
