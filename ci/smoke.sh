#!/usr/bin/env bash
# README command (1): install the host's needs, build patchbench, and run the
# smoke campaign (ci/smoke.yaml) end to end. Extra arguments go to `run`,
# e.g. `ci/smoke.sh --out /tmp/pb`.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/setup-host.sh
# Only what the smoke runs: the CLI and the guest agent (the cost-lane
# plugin, a crate of its own, builds with `cargo build --release --workspace`).
# The dev profile: it built in 110 s on a fresh 2-core machine where
# release took 203 s, and what a smoke measures does not change. The guest
# agent, whose code is the workload, is optimised in every profile, and so
# are the host's hot paths (sha2, libgit2, zlib: Cargo.toml); the test
# suite (ci/test.sh) builds this same profile and reuses it.
cargo build --locked -p patchbench -p patchbench-agent
exec target/debug/patchbench run ci/smoke.yaml "$@"
