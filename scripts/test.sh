#!/usr/bin/env bash
# Sets up the machine and runs every gate: formatting, clippy, the whole test suite as the
# current user, the security tests again as an unprivileged user (when run as root), and a build
# check of the fuzz targets. This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
# The MCP clients the server's tests use (the Python SDK, the Inspector).
scripts/setup-test-clients.sh
export PATH="$HOME/.cargo/bin:$PATH"
if [ "$(id -u)" -eq 0 ]; then
    # The network tests' "internet" (a host in its own namespace at 203.0.113.10:8080), taken down
    # again however the run ends: its route must not outlive the tests (it can hide the package
    # registries of the machine, and tests leave the host's routes as they found them).
    trap 'scripts/test-host.sh down' EXIT
    scripts/test-host.sh up
fi

step() { printf '\n== %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo test (as $(id -un))"
cargo test --workspace --locked

if [ "$(id -u)" -eq 0 ]; then
    step "security tests as the unprivileged user spear-test"
    scripts/test-unprivileged.sh
fi

if [ "$(id -u)" -eq 0 ]; then
    # The test host's route is not needed any more (and can hide the package registries the
    # fuzz build may need).
    scripts/test-host.sh down
fi

if [ -f fuzz/Cargo.toml ]; then
    step "the fuzz targets still build"
    cargo check --manifest-path fuzz/Cargo.toml --locked --quiet
fi

step "all gates passed"
