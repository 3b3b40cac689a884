#!/usr/bin/env python3
"""Times `spear exec --auto -- /bin/true` against bare bwrap running the same command.

Runs are interleaved (bwrap, spear, bwrap, spear, ...) so that both see the same machine state;
the figure is the ratio of medians. Usage: bench_exec.py SPEAR_BINARY WORKSPACE [RUNS]
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


for argv in (bare, ours):  # warm up caches
    once(argv)
times = {"bwrap": [], "spear": []}
for _ in range(runs):
    times["bwrap"].append(once(bare))
    times["spear"].append(once(ours))
b = statistics.median(times["bwrap"]) * 1000
s = statistics.median(times["spear"]) * 1000
print(f"bare bwrap /bin/true:            median {b:7.2f} ms  ({runs} runs)")
print(f"spear exec --auto -- /bin/true:  median {s:7.2f} ms  ({runs} runs)")
print(f"ratio of medians: {s / b:.2f}x (aim: at most 1.5x)")
