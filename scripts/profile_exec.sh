#!/usr/bin/env bash
# Where the time of a one-shot `spear exec --auto -- /bin/true` goes, phase by phase: uprobes on
# spear's own functions (entry and return) and the scheduler's exec, fork and exit tracepoints,
# read through tracefs, over RUNS runs pinned to one core; prints the median of each step
# between two events, in the order they happen, and the median of the whole.
#
# Needs root (tracefs, uprobes) and a release build with symbols (the default profile keeps
# line tables). The probes are removed, and tracing is put back as it was, whatever happens.
# Not a benchmark: the probes cost a few microseconds each; use scripts/bench.sh for figures
# against bare bwrap.
#
# Usage: scripts/profile_exec.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
runs=${1:-40}
[ "$(id -u)" = 0 ] || { echo "profile_exec: needs root (uprobes)" >&2; exit 2; }
trace=/sys/kernel/tracing
[ -w "$trace/uprobe_events" ] || { echo "profile_exec: no writable $trace" >&2; exit 2; }

cargo build --quiet --release -p spear-cli
bin=$PWD/target/release/spear
work=$(mktemp -d)
tracing_was=$(cat "$trace/tracing_on")
cleanup() {
    echo "$tracing_was" > "$trace/tracing_on" || true
    echo 0 > "$trace/events/spear_profile/enable" 2> /dev/null || true
    for e in sched_process_exec sched_process_fork sched_process_exit; do
        echo 0 > "$trace/events/sched/$e/enable" || true
    done
    # Only this script's probes: their group is spear_profile.
    local event
    for event in $(grep -o '^[pr]:spear_profile/[A-Za-z_0-9]*' "$trace/uprobe_events" 2> /dev/null |
        cut -d: -f2); do
        echo "-:$event" >> "$trace/uprobe_events" || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

# Each probe: a short name and the mangled prefix of the function (crate, path, name).
probes=(
    main:5spear4main
    ctx:5spear7context7Context13open_with_env
    fromhost:13spear_runtime6runner12RunnerConfig9from_host
    discover:13spear_runtime6runner9HostOffer8discover
    runnerNew:13spear_runtime6runner13CommandRunner3new
    cgroupDetect:13spear_sandbox6cgroup6detect6detect
    registry:11spear_tools8registry12ToolRegistry6coding
    classify:12spear_policy6policy13CommandPolicy8classify
    sandboxRun:13spear_sandbox7sandbox7Sandbox3run
    prepare:13spear_sandbox7sandbox8Launcher7prepare
    cgroupCreate:13spear_sandbox7sandbox8Launcher13create_cgroup
    spawn:13spear_sandbox7sandbox8Launcher5spawn
    killAll:13spear_sandbox6cgroup2v18kill_all
    removeDirs:13spear_sandbox6cgroup3ops11remove_dirs
)
# The file offset of a symbol is its address less the text segment's address-to-offset shift.
shift_hex=$(readelf -lW "$bin" | awk '$1 == "LOAD" && / R E / {print $3, $2; exit}')
read -r vaddr offset <<< "$shift_hex"
nm "$bin" > "$work/nm"
for probe in "${probes[@]}"; do
    name=${probe%%:*}
    prefix=${probe#*:}
    addr=$(grep -E " [tT] _ZN${prefix}17h[0-9a-f]+E$" "$work/nm" | head -1 | cut -d' ' -f1 || true)
    if [ -z "$addr" ]; then
        echo "profile_exec: $name not found (inlined or renamed), skipped" >&2
        continue
    fi
    at=$(printf '0x%x' $((0x$addr - vaddr + offset)))
    echo "p:spear_profile/a_$name $bin:$at" >> "$trace/uprobe_events"
    echo "r:spear_profile/z_$name $bin:$at" >> "$trace/uprobe_events"
done

echo 0 > "$trace/tracing_on"
echo > "$trace/trace"
echo 1 > "$trace/events/spear_profile/enable"
for e in sched_process_exec sched_process_fork sched_process_exit; do
    echo 1 > "$trace/events/sched/$e/enable"
done
mkdir -p "$work/ws" "$work/state"
pin=()
command -v taskset > /dev/null && pin=(taskset -c 0)
XDG_STATE_HOME=$work/state "$bin" exec --auto --workspace "$work/ws" -- /bin/true  # preflight
echo 1 > "$trace/tracing_on"
for _ in $(seq "$runs"); do
    XDG_STATE_HOME=$work/state "${pin[@]}" "$bin" exec --auto --workspace "$work/ws" -- /bin/true
done
echo 0 > "$trace/tracing_on"
cp "$trace/trace" "$work/trace"

python3 - "$work/trace" <<'EOF'
import collections, re, statistics, sys

events = []
for line in open(sys.argv[1]):
    m = re.search(r'^\s*(\S+)-(\d+)\s.*?(\d+\.\d+):\s+(\S+):', line)
    if m and not line.startswith('#'):
        comm, _, t, ev = m.groups()
        name = f"{comm}:{ev[len('sched_process_'):]}" if ev.startswith('sched_process_') else ev
        events.append((float(t), name))
# A run starts when spear's binary is executed and ends when that process exits.
runs, current = [], None
for t, name in events:
    if name == 'spear:exec':
        current = []
        runs.append(current)
    if current is not None:
        current.append((t, name))
        if name == 'spear:exit' and any(n == 'z_main' for _, n in current):
            current = None
runs = [r for r in runs if r[-1][1] == 'spear:exit']
steps = collections.defaultdict(list)
for run in runs:
    for (t1, a), (t2, b) in zip(run, run[1:]):
        steps[(a, b)].append((t2 - t1) * 1000)
print(f"{len(runs)} runs; median of each step (a_X: X entered, z_X: X returned)")
# In the order of the last run.
for (t1, a), (t2, b) in zip(runs[-1], runs[-1][1:]):
    ms = steps[(a, b)]
    print(f"{statistics.median(ms):8.3f} ms  {a} -> {b}  ({len(ms)} runs)")
whole = [(r[-1][0] - r[0][0]) * 1000 for r in runs]
print(f"{statistics.median(whole):8.3f} ms  spear exec, exec to exit")
EOF
