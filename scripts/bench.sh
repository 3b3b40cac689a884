#!/usr/bin/env bash
# spear's benchmarks. Each prints its figures beside a baseline measured in the same run, pinned
# to one core when taskset is available. Set SPEAR_BENCH_MS to change the time per measurement.
#
# - sandbox: `spear exec --auto -- /bin/true` against bare bwrap running /bin/true, interleaved
#   and paced (50 ms between runs, SPEAR_BENCH_PACE); the ratio of medians one-shot and with a
#   `spear serve` running (started and stopped by the bench, in its own state directory); and,
#   for context, `spear --version` against /bin/true (what starting spear's binary costs by
#   itself).
# - network path: a networked `/bin/true` against a closed one through CommandRunner; the ratio.
# - tool router: read_file and write_file calls per second through the router (audit, checkpoints
#   and the result store on), beside the bare WorkspaceFs operation.
# - writable commands: `terminal touch a` through the router in AUTO in workspaces of 1,000,
#   10,000 and 100,000 files, beside bare bwrap running the same touch; medians, and each size's
#   difference from the smallest (aim: within 20 ms).
# - mcp: read_file and `terminal true` (SAFE) through `spear mcp` (release, stdio, one rmcp client)
#   against the same call made in process through the router, interleaved in blocks; calls per
#   second, median and p99 round trip, the ratio; and the server's VmRSS after 1,000 calls.
#   Client and server share the pinned core. Then the session ratio: `terminal true` through one
#   in-process router (the session's /tmp and home kept) beside bare bwrap running /bin/true,
#   interleaved and paced (50 ms before each run, as a model's calls come: the session sets the
#   next sandbox up between calls, and that work is charged to neither side); the ratio of
#   medians (aim: at most 1.0x).
# - node: `spear mcp --listen` (release) over HTTP on loopback: 64 sessions at once, each running
#   150 mixed actions (read_file, search_files, write_file, patch, terminal), against one session
#   running them alone; actions per second, p50 and p99 per kind; the time to open a session
#   (POST /mcp/sessions) on the workspace and on a 10,000-file, 100 MB template
#   (SPEAR_BENCH_TEMPLATE_FILES); resident memory per idle session; `terminal true` paced 50 ms
#   beside bare bwrap running /bin/true (SPEAR_BENCH_NODE=paced measures that alone, on a fresh
#   node; SPEAR_BENCH_NODE=load the two runs of sessions alone, for profiling). Not pinned: the 64
#   clients and the server share the cores.
# - ray pool: 200 short trajectories (look, read, write, patch, search, run the check, the diff)
#   on spear.ray.SpearPool (8 workers on a local Ray, each trajectory in a template session of its
#   own on the Ray node's spear node), beside the same trajectories run one after another on one
#   spear.Session; trajectories per second and every action's p50 and p99 round trip, and the
#   ratios (python/examples/ray_trajectories.py, with the Python package's test environment that
#   scripts/test-python.sh installs). Not pinned: Ray, the workers and spear share the cores.
# - classification: scripts per second of CommandPolicy::classify_script over the public red-team
#   cases, everyday agent commands and the tldr corpus, against brush-parser parsing alone.
# - search_files: spear's search engine against `rg -n --no-heading` on the same tree
#   (SPEAR_BENCH_TREE, default ~/.cargo/registry/src), interleaved; the ratio of medians per
#   pattern, with both match counts. Not pinned: both search with all cores.
# - credential files in the bound trees (`secret_masks`): on a made home of realistic shape and on
#   this host's own trees (`/usr` and the toolchains under $HOME), the first scan, a new process's
#   look (the scan read from its file, every directory's stamp checked), a new runner's look (the
#   scan in memory, every stamp checked), a command's look (the files found only), and in a
#   session the cost of watching every directory once and a command's look then; medians.
# - fetch_url: `Fetcher::fetch` of a page of the test network's public.test (scripts/test-host.sh;
#   needs root) beside a bare reqwest GET of it, interleaved; the ratio of medians, and a raw TCP
#   GET as the floor.
# - ordinary work: 400+ commands coding agents run every day (testdata/ordinary_work/commands.txt)
#   and a seeded sample of ../shared/corpora/agent-commands.jsonl, each run in a fresh copy of a
#   real project (Django, sympy, astropy, the itoa crate, the calc fixture) with plain bash and
#   through `spear exec --auto` (and `--safe` for those bash runs without changing anything); the
#   fraction with the same exit code and stdout in AUTO (aim: 99%), the fraction of the read-only
#   ones that run in SAFE (aim: 100%), and the time against bash. Projects are cached under
#   ~/.cache/spear-bench; SPEAR_BENCH_ORDINARY_ARGS passes options (`--corpus-sample 300`).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

pin=()
if command -v taskset >/dev/null 2>&1; then
    pin=(taskset -c 0)
fi

echo "== classification"
cargo bench --quiet -p spear-policy --bench classify --no-run
"${pin[@]}" cargo bench --quiet -p spear-policy --bench classify

echo
echo "== sandbox: spear exec --auto -- /bin/true, one-shot and served, beside bare bwrap running /bin/true"
cargo build --quiet --release -p spear-cli
bench_ws=$(mktemp -d)
bench_state=$(mktemp -d)
trap 'rm -rf "$bench_ws" "$bench_state"' EXIT
# spear exec audits and checkpoints each call like a terminal call: into a state directory of the
# benchmark's own, never the user's.
XDG_STATE_HOME="$bench_state" "${pin[@]}" python3 scripts/bench_exec.py target/release/spear \
    "$bench_ws" "${SPEAR_BENCH_RUNS:-100}"

echo
echo "== network path: a networked /bin/true beside a closed one, through CommandRunner"
cargo bench --quiet -p spear-runtime --bench network

echo
echo "== tool router: read_file and write_file calls per second"
"${pin[@]}" cargo bench --quiet -p spear-tools --bench router

echo
echo "== writable commands: terminal touch a in workspaces of 1,000, 10,000 and 100,000 files"
"${pin[@]}" cargo bench --quiet -p spear-tools --bench writable

echo
echo "== mcp: read_file and terminal true (SAFE) through spear mcp and one rmcp client, beside the in-process router; the session ratio"
cargo bench --quiet -p spear-cli --bench mcp --no-run
"${pin[@]}" cargo bench --quiet -p spear-cli --bench mcp

echo
echo "== node: 64 sessions of 150 mixed actions over HTTP against one; session open; memory per idle session"
cargo bench --quiet -p spear-cli --bench node

echo
echo "== ray pool: 200 trajectories on spear.ray.SpearPool beside the same run directly on one session"
python_venv="${SPEAR_TEST_CLIENTS:-$([ "$(id -u)" -eq 0 ] && echo /opt/spear-test-clients || echo "$HOME/.cache/spear-test-clients")}/python-venv"
if [ -x "$python_venv/bin/python" ]; then
    SPEAR_BIN="$PWD/target/release/spear" RAY_USAGE_STATS_ENABLED=0 "$python_venv/bin/python" \
        python/examples/ray_trajectories.py --mode both --trajectories 200 --size 8 2>&1 |
        grep -E "trajectories in|p50|pool /"
else
    echo "not measured: run scripts/test-python.sh first (it installs the package, Ray and pytest)"
fi

echo
echo "== search_files: spear's search engine beside rg -n --no-heading on the same tree"
SPEAR_BENCH_TREE="${SPEAR_BENCH_TREE:-$HOME/.cargo/registry/src}" \
    cargo bench --quiet -p spear-tools --bench search

echo
echo "== credential files in the bound trees: first scan, a new process's, a new runner's and a command's look, watched"
"${pin[@]}" cargo bench --quiet -p spear-sandbox --bench secret_scan

echo
echo "== fetch_url: the guarded fetch of a test-network page beside a bare reqwest GET of it"
if [ "$(id -u)" -eq 0 ]; then
    cargo bench --quiet -p spear-web --bench fetch --no-run
    "${pin[@]}" scripts/test-host.sh run cargo bench --quiet --offline -p spear-web --bench fetch
else
    echo "not measured: the test network (scripts/test-host.sh) needs root"
fi

echo
echo "== ordinary work: agent commands through spear exec (AUTO, SAFE) beside plain bash, in copies of real projects"
# shellcheck disable=SC2086 # the options are words
python3 scripts/ordinary_work.py "${CARGO_TARGET_DIR:-target}/release/spear" --quiet ${SPEAR_BENCH_ORDINARY_ARGS:-}
