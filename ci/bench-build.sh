#!/usr/bin/env bash
# The build benchmark (issues 4 and 18), on the smoke campaign's kernel
# configuration, with patches/zswap-counter as the series. Every step prints
# the host's load, and `/usr/bin/time` CPU times next to wall times: run it
# on a quiet machine, and read the CPU times when it was not.
#   1. cold:     `--fresh` with ccache disabled: A from nothing, B
#                incrementally from A (stage times, objects, B's rebuilds).
#   2. again:    the same command: both kernels come from the build cache.
#   3. one file: a new one-line patch to mm/zswap.c with A cached: B alone
#                (issue 18's target: at most 90 s).
#   4. ccache:   `--fresh` twice with a private, empty ccache: the first
#                fills it (a first run's cost with ccache on), the second
#                hits it (a rebuild of the same tree and configuration).
#   5. per-dir:  (with --per-dir) the same configuration built once more by
#                hand, with every compile timed: objects and CPU seconds per
#                top-level directory, and per second-level directory.
# Usage: ci/bench-build.sh [--per-dir] [OUT_DIR]   (default /tmp/patchbench-bench-build)
set -euo pipefail
cd "$(dirname "$0")/.."
per_dir=false
if [ "${1:-}" = "--per-dir" ]; then
  per_dir=true
  shift
fi
out=${1:-/tmp/patchbench-bench-build}
mkdir -p "$out"
cargo build --release --workspace --locked
pb=$PWD/target/release/patchbench
# The build cache of this benchmark only, so "cold" means cold.
cache=$out/cache
series=patches/zswap-counter

load() { echo "   host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"; }
timed() { # timed NAME CMD...: run CMD, keep its output in $out/NAME.txt, print CPU and wall times
  local name=$1
  shift
  load
  /usr/bin/time -f "%U %S %e" -o "$out/$name.time" "$@" >"$out/$name.txt" 2>&1 || {
    cat "$out/$name.txt" >&2
    exit 1
  }
  read -r user sys wall <"$out/$name.time"
  grep -E '^(kernel [AB]:|  (import|apply|build A|build B) )|took' "$out/$name.txt" || true
  echo "   $name: CPU ${user} s user + ${sys} s system, wall ${wall} s"
  load
}

echo "== 1. cold: full A, incremental B (CCACHE_DISABLE=1)"
CCACHE_DISABLE=1 timed cold "$pb" build --cache-dir "$cache" --fresh --series "$series" --out "$out/cold"

echo "== 2. again: both kernels from the cache"
timed again "$pb" build --cache-dir "$cache" --series "$series" --out "$out/again"
if [ "$(grep -c '^kernel [AB]: commit .* reused from the build cache, no make run' "$out/again.txt")" -ne 2 ]; then
  echo "bench-build: the second run did not reuse both kernels" >&2
  exit 1
fi

echo "== 3. one file: a new patch to mm/zswap.c, A cached"
nonce=$(date +%s%N)
mkdir -p "$out/one-file"
cat >"$out/one-file/0001-comment.patch" <<EOF
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: patchbench bench-build <bench@patchbench.invalid>
Date: Mon, 30 Nov 2026 00:00:00 +0000
Subject: [PATCH] mm/zswap: a comment ($nonce)

---
 mm/zswap.c | 1 +
 1 file changed, 1 insertion(+)

diff --git a/mm/zswap.c b/mm/zswap.c
--- a/mm/zswap.c
+++ b/mm/zswap.c
@@ -1,3 +1,4 @@
 // SPDX-License-Identifier: GPL-2.0-or-later
+/* bench-build $nonce */
 /*
  * zswap.c - zswap driver file
-- 
2.39.5
EOF
timed one-file "$pb" build --cache-dir "$cache" --series "$out/one-file" --out "$out/one-file-kernels"

echo "== 4. ccache: fill a private ccache, then hit it"
export CCACHE_DIR=$out/ccache
rm -rf "$CCACHE_DIR"
timed ccache-cold "$pb" build --cache-dir "$cache" --fresh --series "$series" --out "$out/ccache-cold"
ccache --show-stats | grep -Ei 'hits|misses' || true
ccache --zero-stats >/dev/null
timed ccache-warm "$pb" build --cache-dir "$cache" --fresh --series "$series" --out "$out/ccache-warm"
ccache --show-stats | grep -Ei 'hits|misses' || true
unset CCACHE_DIR

if $per_dir; then
  echo "== 5. per directory: the same .config, every compile timed (no ccache)"
  config=$(jq -r '.[0].build_dir' "$out/cold/kernels.json")/.config
  src=$(find "$cache/trees" -mindepth 1 -maxdepth 1 -type d | head -n 1)
  git -C "$src" checkout --quiet --force "$(jq -r '.[0].commit' "$out/cold/kernels.json")"
  obj=$out/per-dir
  rm -rf "$obj"
  mkdir -p "$obj"
  cp "$config" "$obj/.config"
  # A compiler wrapper: logs user, system and wall seconds per output file.
  cat >"$out/timecc" <<'EOF'
#!/bin/bash
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out=$a; prev=$a; done
case "$out" in *.o) exec /usr/bin/time -f "%U %S %e $out" -a -o "$TIMECC_LOG" "$@" ;; esac
exec "$@"
EOF
  chmod +x "$out/timecc"
  load
  TIMECC_LOG=$obj/cc-times.log /usr/bin/time -f "%U %S %e" -o "$obj/make.time" \
    make -s -C "$src" O="$obj" -j"$(nproc)" KBUILD_BUILD_USER=patchbench KBUILD_BUILD_HOST=patchbench \
    "CC=$out/timecc gcc" bzImage >"$obj/make.log" 2>&1
  read -r user sys wall <"$obj/make.time"
  echo "   make: CPU ${user} s user + ${sys} s system, wall ${wall} s"
  load
  for depth in 1 2; do
    echo "   compile CPU by directory (depth $depth): objects, CPU seconds, share"
    grep -v '/\.tmp_' "$obj/cc-times.log" | awk -v depth="$depth" '
      NF == 4 && $4 ~ /\.o$/ {
        n = split($4, p, "/"); key = p[1]
        for (i = 2; i <= depth && i < n; i++) key = key "/" p[i]
        cpu[key] += $1 + $2; count[key]++; total += $1 + $2; objects++
      }
      END {
        for (k in cpu) printf "     %-28s %5d %8.1f %5.1f%%\n", k, count[k], cpu[k], 100 * cpu[k] / total
        printf "     %-28s %5d %8.1f\n", "(all)", objects, total
      }' | sort -k3 -n -r | head -n 25
  done
fi
echo "bench-build: outputs in $out"
