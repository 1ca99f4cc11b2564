#!/usr/bin/env bash
# The build benchmark (issue 4): one real A/B pair, base and base +
# patches/zswap-counter, tiny config.
#   1. `--fresh` with ccache disabled: A is a full build from nothing, B an
#      incremental build from A's objects. patchbench prints both make times,
#      B's share of A's, and every object B recompiled with the reason.
#   2. The same command again: both kernels come from the build cache.
# Usage: ci/bench-build.sh [OUT_DIR]   (default /tmp/patchbench-bench-build)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/patchbench-bench-build}
mkdir -p "$out"
cargo build --release --workspace --locked
pb=target/release/patchbench

echo "== 1. fresh: full A, incremental B (CCACHE_DISABLE=1)"
CCACHE_DISABLE=1 "$pb" build --fresh --series patches/zswap-counter --out "$out/fresh" \
  | tee "$out/fresh.txt"

echo "== 2. again: both kernels from the cache"
"$pb" build --series patches/zswap-counter --out "$out/again" 2>&1 | tee "$out/again.txt"
if [ "$(grep -c '^kernel [AB]: commit .* reused from the build cache, no make run' "$out/again.txt")" -ne 2 ]; then
  echo "bench-build: the second run did not reuse both kernels" >&2
  exit 1
fi
echo "bench-build: manifests in $out/fresh/kernels.json and $out/again/kernels.json"
