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
cargo test --workspace --locked
