#!/usr/bin/env python3
"""Times `spear exec --auto -- /bin/true` against bare bwrap running the same command.

Runs are interleaved (bwrap, spear, bwrap, spear, ...) so that both see the same machine state;
the figure is the ratio of medians. Beside it, the cost of starting spear's binary at all
(`spear --version` against /bin/true), the part of the difference that is process start.

Usage: bench_exec.py SPEAR_BINARY WORKSPACE [RUNS]
"""
import statistics
import subprocess
import sys
import time

spear, workspace = sys.argv[1], sys.argv[2]
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 100

bare = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all",
        "--die-with-parent", "--new-session", "--cap-drop", "ALL", "/bin/true"]
ours = [spear, "exec", "--auto", "--workspace", workspace, "--", "/bin/true"]


def once(argv):
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{argv[0]} failed ({done.returncode}): {done.stderr.decode()}")
    return elapsed


# Context for the ratio: what starting spear's binary costs by itself (`spear --version`: the
# loader, relocations, the runtime, argument parsing) beside starting /bin/true, interleaved too.
start = [spear, "--version"]
floor = ["/bin/true"]
runs_of = {"bwrap": bare, "spear": ours, "start": start, "floor": floor}
for argv in runs_of.values():  # warm up caches
    once(argv)
times = {name: [] for name in runs_of}
for _ in range(runs):
    for name, argv in runs_of.items():
        times[name].append(once(argv))
med = {name: statistics.median(t) * 1000 for name, t in times.items()}
b, s = med["bwrap"], med["spear"]
print(f"bare bwrap /bin/true:            median {b:7.2f} ms  ({runs} runs)")
print(f"spear exec --auto -- /bin/true:  median {s:7.2f} ms  ({runs} runs)")
print(f"ratio of medians: {s / b:.2f}x (aim: at most 1.5x)")
print(
    f"of the difference, starting spear's binary: spear --version {med['start']:.2f} ms "
    f"against /bin/true {med['floor']:.2f} ms (+{med['start'] - med['floor']:.2f} ms)"
)
