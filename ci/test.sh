#!/usr/bin/env bash
# README command (2): the test suite, in three tiers.
#
#   ci/test.sh            every tier (what .ci/run runs)
#   ci/test.sh hermetic   unit tests, and the campaign engine against fake
#                         make and QEMU (tests/fakes): no kernel tree, QEMU,
#                         KVM or root; the seconds-long loop
#   ci/test.sh host       tests that need the host's tools: Debian's kernel
#                         tarball, Chromium, actionlint, tar
#   ci/test.sh e2e        real kernel builds and QEMU boots
#
# Every tests/*.rs belongs to exactly one tier; a file in none fails here.
set -euo pipefail
cd "$(dirname "$0")/.."
tier=${1:-all}
case $tier in
  all | hermetic | host | e2e) ;;
  *) echo "usage: ci/test.sh [all|hermetic|host|e2e]" >&2; exit 2 ;;
esac

hermetic=(hermetic apply_fixtures exit_codes html_pages kept layers prebuilt publish report_snapshot seeds)
host=(docs pasted reach screenshot signals workflows)
# The end-to-end binaries that build kernels of their own (the kernel-build
# workload's host-root kernel, the hunt's seven prefixes, the cost lane's)
# and those that share the smoke's kernels.
e2e_own=(e2e_host_root e2e_bisect e2e_cost build)
e2e_shared=(e2e e2e_faults e2e_rounds e2e_workloads)

listed=" ${hermetic[*]} ${host[*]} ${e2e_own[*]} ${e2e_shared[*]} "
for f in tests/*.rs; do
  name=$(basename "$f" .rs)
  if [[ $listed != *" $name "* ]]; then
    echo "ci/test.sh: tests/$name.rs is in no tier: add it to one" >&2
    exit 2
  fi
done

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

targets() { printf -- '--test %s ' "$@"; }
# The hermetic tier: every crate's unit tests and doc tests, and the
# engine's paths against the fakes.
# tests/hermetic.rs, every kind through the fakes, is the tier's longest
# binary (about 3 min): `all` runs it in the lane of the end-to-end tests
# that build their own kernels, so that the two lanes take about as long.
engine_tier() { cargo test --locked --no-fail-fast -p patchbench --test hermetic; }
hermetic_rest_tier() {
  local s=0 rest=()
  for t in "${hermetic[@]}"; do [ "$t" = hermetic ] || rest+=("$t"); done
  cargo test --locked --no-fail-fast -p patchbench --lib --bins $(targets "${rest[@]}") || s=1
  cargo test --locked -p patchbench-agent -p patchbench-costmodel -p patchbench-fakes || s=1
  cargo test --locked --workspace --doc || s=1
  return "$s"
}
hermetic_tier() {
  local s=0
  hermetic_rest_tier || s=1
  engine_tier || s=1
  return "$s"
}
host_tier() { cargo test --locked --no-fail-fast -p patchbench $(targets "${host[@]}"); }
e2e_own_tier() { cargo test --locked --no-fail-fast -p patchbench $(targets "${e2e_own[@]}"); }
e2e_shared_tier() { cargo test --locked --no-fail-fast -p patchbench $(targets "${e2e_shared[@]}"); }

# Two lanes side by side, each line prefixed with its lane's name; both
# must pass. Each end-to-end test mostly waits on one single-threaded QEMU,
# so two lanes share the two cores where one left one idle.
lane() {
  local name=$1
  shift
  ( "$@" 2>&1 | sed -u "s/^/[$name] /"; exit "${PIPESTATUS[0]}" )
}
two_lanes() {
  local first=$1 second=$2 status=0
  lane "$first" "$first" &
  local a=$!
  lane "$second" "$second" &
  local b=$!
  wait "$a" || { echo "test.sh: $first failed"; status=1; }
  wait "$b" || { echo "test.sh: $second failed"; status=1; }
  return "$status"
}
own_and_engine() {
  local s=0
  e2e_own_tier || s=1
  engine_tier || s=1
  return "$s"
}
rest_tiers() {
  local s=0
  hermetic_rest_tier || s=1
  host_tier || s=1
  e2e_shared_tier || s=1
  return "$s"
}

case $tier in
  hermetic) hermetic_tier ;;
  host) host_tier ;;
  e2e) two_lanes e2e_own_tier e2e_shared_tier ;;
  all) two_lanes own_and_engine rest_tiers ;;
esac
