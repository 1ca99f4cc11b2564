#!/usr/bin/env bash
# README command (1): install the host's needs, build patchbench, and run the
# smoke campaign (ci/smoke.yaml) end to end. Extra arguments go to `run`,
# e.g. `ci/smoke.sh --out /tmp/pb`.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/setup-host.sh
# Only what the smoke runs: the CLI and the guest agent (the cost-lane
# plugin, a crate of its own, builds with `cargo build --release --workspace`).
cargo build --release --locked -p patchbench -p patchbench-agent
exec target/release/patchbench run ci/smoke.yaml "$@"
