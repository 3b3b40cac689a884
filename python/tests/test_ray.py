"""`spear.ray.SpearPool` on a local Ray cluster of two nodes (`ray start --head`, then a second
node joined to it, both on loopback): 200 trajectories across both, each in a session of its own
on a template, none seeing another's work; a worker killed mid-run is reported and replaced, the
rest complete; and nothing is left after the pool's end (processes, cgroups, template copies,
sessions), nor of Ray after the cluster's."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray
import ray.cloudpickle

import spear
from spear.ray import SpearPool

# The trajectories below are defined here, which Ray's workers cannot import: send them by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

TRAJECTORIES = 200
#: The item whose worker kills itself in the middle of its trajectory.
KILLED = 57


PR_SET_CHILD_SUBREAPER = 36


def _set_subreaper(on: bool) -> None:
    """Makes this process the one orphans of its descendants are given to (`prctl(2)`), so that
    every process `ray start` leaves running (they detach, and Ray renames them) stays findable
    as a descendant of this one."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def _descendants() -> list[int]:
    """Every living process below this one."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    found: list[int] = []
    frontier = [os.getpid()]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return found


def _reap() -> None:
    """Collects the exit status of every ended child (orphans given to this process)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def _ray_start(ray_bin: str, args: list[str], env: dict[str, str]) -> None:
    """`ray start ARGS`, tried again while the machine is too busy for Ray's own deadlines; what
    Ray said when it never starts."""
    said = ""
    for _ in range(3):
        out = subprocess.run(
            [ray_bin, "start", *args], check=False, env=env, capture_output=True, text=True, timeout=180
        )
        if out.returncode == 0:
            return
        said = f"{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
        time.sleep(2)
    pytest.fail(f"ray start {' '.join(args)} failed three times:\n{said}")


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """Two Ray nodes on this machine, on loopback, torn down after the module: the address."""
    temp = tempfile.mkdtemp(prefix="spear-ray-")
    ray_bin = str(Path(sys.executable).parent / "ray")
    port = "6391"
    # A home of the cluster's own, for the driver too: Ray keeps state there (`~/.ray`, an auth
    # token a local `ray.init()` once made), which must neither steer this cluster nor be left.
    home = os.environ.get("HOME")
    os.environ["HOME"] = temp
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    common = ["--node-ip-address=127.0.0.1", "--num-cpus=2", f"--temp-dir={temp}", "--disable-usage-stats"]
    common += ["--object-store-memory=100000000"]
    before = set(_descendants())
    _set_subreaper(True)
    try:
        _ray_start(ray_bin, ["--head", f"--port={port}", "--include-dashboard=false", *common], env)
        _ray_start(ray_bin, [f"--address=127.0.0.1:{port}", *common], env)
        yield f"127.0.0.1:{port}"
    finally:
        if ray.is_initialized():
            ray.shutdown()
        # Only this cluster's processes (`ray stop` would end every Ray of the machine): all
        # that `ray start` left below this process.
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in set(_descendants()) - before:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + 10
            while set(_descendants()) - before and time.monotonic() < deadline:
                _reap()
                time.sleep(0.1)
        _reap()
        left = set(_descendants()) - before
        _set_subreaper(False)
        if home is None:
            del os.environ["HOME"]
        else:
            os.environ["HOME"] = home
        subprocess.run(["rm", "-rf", temp], check=False)
        assert not left, f"Ray processes left: {left}"


def trajectory(session: spear.Session, item: int) -> dict[str, Any]:
    """Leaves a mark in the copy, in /tmp and as a process, and says what it saw of others'."""
    seen = session.run(
        f"ls mark-*.txt 2>/dev/null | wc -l; cat /tmp/mark 2>/dev/null; echo {item} > mark-{item}.txt; "
        f"echo {item} > /tmp/mark; (sleep 600 &) ; ls notes.txt"
    )
    read = session.read_file(f"mark-{item}.txt")
    if item == KILLED:
        os.kill(os.getpid(), signal.SIGKILL)  # the worker dies with its session open
    return {
        "why": [seen.status.value, seen.reason, read.status.value, read.reason],
        "ok": seen.ok and read.ok,
        "before": seen.stdout.splitlines()[:2],
        "diff": session.diff(),
    }


def test_a_pool_runs_200_trajectories_on_two_nodes_apart_and_leaves_nothing(
    cluster: str, spear_bin: str, tmp_path: Path, template: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    before = {p: p.read_bytes() for p in template.rglob("*") if p.is_file()}
    ray.init(address=cluster)
    pool = SpearPool(8, template=template, spear=spear_bin, env={"XDG_STATE_HOME": str(state)})
    try:
        assert len(ray.nodes()) == 2  # type: ignore[no-untyped-call]
        start = time.perf_counter()
        results = pool.map(trajectory, range(TRAJECTORIES))
        took = time.perf_counter() - start
        assert [r.index for r in results] == list(range(TRAJECTORIES))
        failed = [r for r in results if not r.ok]
        assert [r.index for r in failed] == [KILLED], [(r.index, r.error) for r in failed][:3]
        assert "worker died" in (failed[0].error or "")
        done = [r for r in results if r.ok]
        assert len({r.ray_node for r in done}) == 2, "the trajectories did not use both nodes"
        for r in done:
            value = r.value
            assert value is not None and value["ok"], (r.index, value)
            # Nothing of another trajectory: no mark in its copy, nothing in its /tmp.
            assert value["before"] == ["0", "notes.txt"], (r.index, value)
            # Its patch is its own mark and nothing else.
            assert f"mark-{r.index}.txt" in value["diff"] and value["diff"].count("diff --git") == 1
            assert [a.tool for a in r.actions] == ["terminal", "read_file"]
            assert all(a.status is spear.Status.OK and a.elapsed_s > 0 for a in r.actions)
        assert len({r.session for r in done}) == len(done)
        # The dead worker's session was ended by its node's server, and its place filled.
        assert pool.held_sessions() == 0
        assert len(pool.actors) == 8
        rollouts = state.parent / "spear-rollouts"
        assert not rollouts.exists() or not any(rollouts.iterdir()), list(rollouts.iterdir())
        pids = [p for p in pool.spear_pids().values() if p is not None]
        assert len(pids) == 2
        print(f"\n{TRAJECTORIES} trajectories on 2 Ray nodes in {took:.1f} s: {TRAJECTORIES / took:.1f}/s")
    finally:
        pool.shutdown()
    # Nothing is left: the spear nodes, their commands (the trajectories' `sleep 600`), their
    # cgroups, the copies, the pool's workspaces.
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists(), f"spear node {pid} outlived the pool"
    sleepers = subprocess.run(["pgrep", "-x", "-f", "sleep 600"], capture_output=True, text=True, check=False)
    assert sleepers.stdout.strip() == "", "a trajectory's process outlived the pool"
    cgroups = subprocess.run(
        ["find", "/sys/fs/cgroup", "-maxdepth", "6", "-type", "d", "-name", "spear-*"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    assert not [c for c in cgroups if any(f"spear-{pid}-" in c for pid in pids)], cgroups
    assert not rollouts.exists() or not any(rollouts.iterdir())
    assert {p: p.read_bytes() for p in template.rglob("*") if p.is_file()} == before
    ray.shutdown()
