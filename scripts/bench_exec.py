#!/usr/bin/env python3
"""Times `spear exec --auto -- /bin/true` against bare bwrap running the same command.

Two figures, each a ratio of medians against bare bwrap measured in the same run:
- one-shot: spear exec in a process of its own, nothing kept from one call to the next;
- served: the same command line with the user's `spear serve` running (started here, with the
  same state directory), which decides each call afresh and keeps the next one's sandbox set up.

Runs are interleaved (bwrap, spear, ...) so that all see the same machine state, and paced: each
run starts PACE seconds after the previous one ended, as an agent's calls come (a model thinks
between them), so that what a server does after a call (setting the next sandbox up) is not
charged to the next run of another kind on the pinned core. Beside them, the cost of starting
spear's binary at all (`spear --version` against /bin/true), the part of the difference that is
process start.

Usage: bench_exec.py SPEAR_BINARY WORKSPACE [RUNS]
"""
import os
import statistics
import subprocess
import sys
import time

spear, workspace = sys.argv[1], sys.argv[2]
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 100
PACE = float(os.environ.get("SPEAR_BENCH_PACE", "0.05"))

bare = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all",
        "--die-with-parent", "--new-session", "--cap-drop", "ALL", "/bin/true"]
ours = [spear, "exec", "--auto", "--workspace", workspace, "--", "/bin/true"]


def once(argv):
    start = time.perf_counter()
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{argv[0]} failed ({done.returncode}): {done.stderr.decode()}")
    time.sleep(PACE)
    return elapsed


def measure(runs_of):
    for argv in runs_of.values():  # warm up caches
        once(argv)
    times = {name: [] for name in runs_of}
    for _ in range(runs):
        for name, argv in runs_of.items():
            times[name].append(once(argv))
    return {name: statistics.median(t) * 1000 for name, t in times.items()}


# One-shot, with the context of what starting spear's binary costs by itself (`spear
# --version`: the loader, relocations, the runtime, argument parsing) beside /bin/true.
med = measure({"bwrap": bare, "spear": ours, "start": [spear, "--version"],
               "floor": ["/bin/true"]})
b, s = med["bwrap"], med["spear"]
print(f"bare bwrap /bin/true:                      median {b:7.2f} ms  ({runs} runs)")
print(f"spear exec --auto -- /bin/true, one-shot:  median {s:7.2f} ms  ({runs} runs)")
print(f"one-shot ratio of medians: {s / b:.2f}x")
print(
    f"  of the difference, starting spear's binary: spear --version {med['start']:.2f} ms "
    f"against /bin/true {med['floor']:.2f} ms (+{med['start'] - med['floor']:.2f} ms)"
)

server = subprocess.Popen([spear, "serve"], stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
try:
    line = server.stderr.readline().decode()
    if "serving" not in line:
        sys.exit(f"spear serve did not start: {line}")
    med = measure({"bwrap": bare, "spear": ours})
finally:
    server.terminate()
    server.wait(timeout=30)
b, s = med["bwrap"], med["spear"]
print(f"bare bwrap /bin/true:                      median {b:7.2f} ms  ({runs} runs)")
print(f"spear exec --auto -- /bin/true, served:    median {s:7.2f} ms  ({runs} runs)")
print(f"served ratio of medians: {s / b:.2f}x (aim: at most 1.5x, 1.25x)")
