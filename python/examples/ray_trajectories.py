"""200 short trajectories on a Ray pool of spear sessions, and the same trajectories run directly
on one session, side by side.

    python examples/ray_trajectories.py [--trajectories 200] [--size 8] [--mode pool|direct|both]
                                        [--template DIR] [--spear PATH] [--address RAY_ADDRESS]

Each trajectory is what an agent's short episode does: look at the tree, read a file, write one,
patch it, search, run the check, take the session's diff (both ways run on a template). `pool` runs
them on `spear.ray.SpearPool` (each in a copy of its own of the template, on the Ray node's spear
node); `direct` runs them one after another on one `spear.Session` of a local node, as a single
agent would (its changes, and so its diff, grow with each). It prints trajectories per second and
each action's p50 and p99 round trip, and for `both` the ratios (pool / direct). `scripts/bench.sh`
runs it with `--mode both`.

Without `--address` it starts a local Ray on loopback (`ray.init()`); with `--spear` (or `$SPEAR_BIN`) it uses
that spear binary, else `spear` on PATH. spear's state goes to a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import spear


def trajectory(session: spear.Session, item: int) -> bool:
    """One short episode: every action must succeed."""
    steps = [
        session.run("ls && git --version >/dev/null 2>&1; true"),
        session.read_file("src/app.py"),
        session.write_file(f"notes/{item}.md", f"trajectory {item}\n"),
        session.patch(
            "*** Begin Patch\n*** Update File: src/app.py\n@@\n def answer():\n"
            f"-    return 41\n+    return {item}\n*** End Patch\n"
        ),
        session.search("def answer", path="src"),
        session.run(f"python3 -B -c 'import src.app as a; assert a.answer() == {item}'"),
    ]
    session.diff()  # the session's patch, as a rollout keeps it
    # Undo the patch so that the next trajectory on a shared session starts alike.
    session.patch(
        "*** Begin Patch\n*** Update File: src/app.py\n@@\n def answer():\n"
        f"-    return {item}\n+    return 41\n*** End Patch\n"
    )
    return all(step.ok for step in steps)


def make_template(root: Path) -> Path:
    template = root / "repo"
    (template / "src").mkdir(parents=True)
    (template / "src" / "__init__.py").write_text("")
    (template / "src" / "app.py").write_text("def answer():\n    return 41\n")
    for i in range(50):
        (template / "src" / f"mod{i}.py").write_text(f"VALUE = {i}\n" * 20)
    (template / "README.md").write_text("a small project\n")
    return template


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def summary(name: str, took: float, count: int, actions: list[spear.Action]) -> dict[str, Any]:
    by_tool: dict[str, list[float]] = defaultdict(list)
    for action in actions:
        by_tool[action.tool].append(action.elapsed_s * 1000)
    every = [a.elapsed_s * 1000 for a in actions]
    print(f"{name}: {count} trajectories in {took:.2f} s, {count / took:.1f}/s; {len(actions)} actions")
    print(f"  every action: p50 {percentile(every, 50):.1f} ms, p99 {percentile(every, 99):.1f} ms")
    for tool, times in sorted(by_tool.items()):
        print(f"  {tool:<12} p50 {percentile(times, 50):6.1f} ms  p99 {percentile(times, 99):6.1f} ms  ({len(times)})")
    return {"rate": count / took, "p50": percentile(every, 50), "p99": percentile(every, 99)}


def run_pool(args: argparse.Namespace, template: Path, env: dict[str, str], work: Path) -> dict[str, Any]:
    import ray

    from spear.ray import SpearPool

    if args.address:
        ray.init(address=args.address)
    else:
        # Loopback only: nothing of the example listens on the machine's own address.
        ray.init(
            num_cpus=max(2, os.cpu_count() or 2),
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            _temp_dir=str(work / "ray"),  # Ray's session files go with the example's scratch
        )
    try:
        with SpearPool(args.size, template=template, spear=args.spear, env=env) as pool:
            start = time.perf_counter()
            results = pool.map(trajectory, range(args.trajectories))
            took = time.perf_counter() - start
        failed = [r for r in results if not (r.ok and r.value)]
        if failed:
            raise SystemExit(f"{len(failed)} trajectories failed; the first: {failed[0].error or failed[0]}")
        return summary(f"pool of {args.size}", took, len(results), [a for r in results for a in r.actions])
    finally:
        ray.shutdown()


def run_direct(args: argparse.Namespace, template: Path, env: dict[str, str], work: Path) -> dict[str, Any]:
    workspace = work / "direct-ws"
    workspace.mkdir()
    with (
        spear.Node(workspace, templates=[template], mode="auto", spear=args.spear, env=env) as node,
        spear.Session(node, template=template.name) as session,
    ):
        start = time.perf_counter()
        oks = [trajectory(session, i) for i in range(args.trajectories)]
        took = time.perf_counter() - start
        if not all(oks):
            raise SystemExit(f"{oks.count(False)} trajectories failed on the direct session")
        return summary("one session, direct", took, len(oks), session.actions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trajectories", type=int, default=200)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--mode", choices=["pool", "direct", "both"], default="pool")
    parser.add_argument("--template", type=Path)
    parser.add_argument("--spear", default=os.environ.get("SPEAR_BIN"))
    parser.add_argument("--address", default=os.environ.get("RAY_ADDRESS"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="spear-example-") as scratch:
        work = Path(scratch)
        template = args.template or make_template(work)
        state = work / "state"
        state.mkdir()
        env = {"XDG_STATE_HOME": str(state)}
        figures: dict[str, dict[str, Any]] = {}
        if args.mode in ("direct", "both"):
            figures["direct"] = run_direct(args, template, {**os.environ, **env}, work)
        if args.mode in ("pool", "both"):
            figures["pool"] = run_pool(args, template, env, work)
        if args.mode == "both":
            pool, direct = figures["pool"], figures["direct"]
            print(
                f"pool / direct: trajectories per second {pool['rate'] / direct['rate']:.2f}x, "
                f"action p50 {pool['p50'] / direct['p50']:.2f}x, p99 {pool['p99'] / direct['p99']:.2f}x"
            )


if __name__ == "__main__":
    main()
