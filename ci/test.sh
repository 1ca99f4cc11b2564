#!/usr/bin/env bash
# README command (2): the whole test suite, including the real end-to-end
# smoke run (a real kernel build, real QEMU boots, real samples).
set -euo pipefail
cd "$(dirname "$0")/.."
ci/setup-host.sh
# Incremental state doubles target/ and buys nothing on a clean clone.
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=0; fi
df -h . | sed 's/^/test.sh: disk: /'
trap 'df -h . | sed "s/^/test.sh: disk at exit: /"; du -sh target 2>/dev/null | sed "s/^/test.sh: /"' EXIT
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The end-to-end tests boot the guest agent binary, so build every binary first.
cargo build --workspace --locked
cargo test --workspace --locked --no-run
# Every test target, in two lanes side by side: the end-to-end binaries
# that build kernels of their own (the kernel-build workload's host-root
# kernel, the hunt's seven prefixes) in one, everything else in the other.
# Each end-to-end test mostly waits on one single-threaded QEMU, so two
# lanes share the two cores where one left one idle; each lane's lines are
# prefixed with its name, and both must pass.
own_kernels=(e2e_host_root e2e_bisect e2e_cost build)
rest=()
for f in tests/*.rs; do
  name=$(basename "$f" .rs)
  [[ " ${own_kernels[*]} " == *" $name "* ]] || rest+=(--test "$name")
done
lane() {
  local name=$1
  shift
  ( "$@" 2>&1 | sed -u "s/^/[$name] /"; exit "${PIPESTATUS[0]}" )
}
lane kernels cargo test --locked --no-fail-fast -p patchbench $(printf -- '--test %s ' "${own_kernels[@]}") &
kernels=$!
lane rest bash -c 'cargo test --locked --no-fail-fast -p patchbench --lib --bins "$@" \
  && cargo test --locked -p patchbench-agent -p patchbench-costmodel \
  && cargo test --locked --workspace --doc' _ "${rest[@]}" &
rest_pid=$!
status=0
wait "$kernels" || { echo "test.sh: the kernels lane failed"; status=1; }
wait "$rest_pid" || { echo "test.sh: the rest lane failed"; status=1; }
exit "$status"
