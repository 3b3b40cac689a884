#!/usr/bin/env bash
# The Python package's suite (python/): installs the package, pinned test tools, Ray and the
# harnesses its adapters plug into in a virtual environment of its own, checks it (ruff, mypy
# --strict), and runs its pytest suite against the workspace's spear build: as the current user,
# and as root also again as the unprivileged user spear-test (as scripts/test-unprivileged.sh
# does for the Rust tests), both inside the test network (scripts/test-host.sh).
#
# The environment is $SPEAR_TEST_CLIENTS/python-venv (default /opt/spear-test-clients as root,
# ~/.cache/spear-test-clients otherwise), readable by every user; a stamp of the pinned versions
# makes a second run install only the package itself again.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

mcp_version=2.3.0
pytest_version=9.2.0
mypy_version=2.4.1
ruff_version=0.17.6
ray_version=2.60.0
mini_swe_agent_version=2.4.6
inspect_ai_version=0.3.285

if [ "$(id -u)" -eq 0 ]; then
    default_dir=/opt/spear-test-clients
else
    default_dir="$HOME/.cache/spear-test-clients"
fi
dir="${SPEAR_TEST_CLIENTS:-$default_dir}"
venv="$dir/python-venv"
want="mcp=$mcp_version pytest=$pytest_version mypy=$mypy_version ruff=$ruff_version ray=$ray_version mini-swe-agent=$mini_swe_agent_version inspect-ai=$inspect_ai_version layout=1"
say() { printf 'test-python: %s\n' "$*"; }

if [ "${SPEAR_TEST_NETWORK:-}" != 1 ]; then
    # With the machine's own network: install, then build what the tests run.
    if [ ! -f "$venv/.versions" ] || [ "$(cat "$venv/.versions")" != "$want" ]; then
        say "installing into $venv: $want"
        rm -rf "$venv"
        mkdir -p "$dir"
        /usr/bin/python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check \
            "mcp==$mcp_version" "pytest==$pytest_version" "mypy==$mypy_version" "ruff==$ruff_version" \
            "ray==$ray_version" "mini-swe-agent==$mini_swe_agent_version" "inspect-ai==$inspect_ai_version"
        echo "$want" >"$venv/.versions"
    fi
    # The package itself, every time (it is what is under test); its dependencies are pinned above.
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --force-reinstall ./python
    # Inspect's plugin entry point is the package's: a reinstall must not leave a stale one.
    "$venv/bin/python" -c 'import importlib.metadata as m; assert any(p.name == "spear" for p in m.entry_points(group="inspect_ai"))' 
    chmod -R a+rX "$venv"
    cargo build --locked --quiet -p spear-cli
    say "ruff and mypy --strict"
    (cd python && "$venv/bin/ruff" check src tests examples &&
        "$venv/bin/ruff" format --check src tests examples && "$venv/bin/mypy" src tests examples)
    if [ "$(id -u)" -eq 0 ]; then
        exec scripts/test-host.sh run "$0" "$@"
    fi
fi

spear_bin="$PWD/target/debug/spear"
pytest=("$venv/bin/python" -m pytest -q -p no:cacheprovider "$PWD/python/tests" "$@")

say "pytest as $(id -un)"
PYTHONDONTWRITEBYTECODE=1 SPEAR_BIN="$spear_bin" "${pytest[@]}"

if [ "$(id -u)" -eq 0 ]; then
    user=spear-test
    id "$user" >/dev/null
    scratch=$(mktemp -d)
    chown "$user" "$scratch"
    trap 'rm -rf "$scratch"' EXIT
    # The user's commands are limited through cgroups of a subtree delegated to them (what
    # systemd gives each user session), undone on exit.
    scripts/delegate-cgroup.sh "$user" $$
    trap 'scripts/delegate-cgroup.sh --undo "$user" $$ || say "could not remove the delegated cgroups"; rm -rf "$scratch"' EXIT
    say "pytest as $user"
    (cd "$scratch" && setpriv --reuid="$user" --regid="$user" --init-groups \
        env -i PATH=/usr/bin:/bin HOME="$scratch" TMPDIR="$scratch" PYTHONDONTWRITEBYTECODE=1 \
        SPEAR_BIN="$spear_bin" "${pytest[@]}")
fi
