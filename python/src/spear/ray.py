"""`spear.ray`: trajectories on a Ray cluster, each in a spear session of its own.

```python
import ray, spear.ray

ray.init()
def trajectory(session: spear.Session, task: dict) -> bool:
    session.write_file("answer.txt", task["answer"])
    return session.run("make check", timeout=300).ok

with spear.ray.SpearPool(32, template="/srv/templates/repo", mode="auto") as pool:
    for t in pool.map(trajectory, tasks):
        print(t.ok, t.value, t.error, [a.elapsed_s for a in t.actions])
```

- **One spear node per Ray node.** The pool places one server actor on every Ray node its
  workers land on (pinned there, `num_cpus=0`); it starts `spear mcp --listen` on loopback there
  at its first use, with a token of its own, and every worker on that Ray node uses it. The pool's
  end stops them, which ends every session (jobs killed, copies unmounted and removed).
- **A session per trajectory.** A worker asks its node's server for a session on the template (a
  copy-on-write copy of its own, ready at once), runs `fn(session, item)` with a blocking
  `spear.Session`, and ends the session; no trajectory sees another's files, processes or `/tmp`.
- **Nothing is lost.** A trajectory whose `fn` raised is a failed `Trajectory` with the error. One
  whose worker died (killed, crashed, its Ray node lost) is a failed `Trajectory` saying so: the
  server closes the sessions that worker held, and the pool puts a new worker in its place.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx2
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ._node import Mode, Node
from ._results import Action
from ._session import Session

I = TypeVar("I")  # noqa: E741 - an item
V = TypeVar("V")


@dataclass
class Trajectory(Generic[V]):
    """What one trajectory came to."""

    index: int
    """Its item's place in `map`'s items."""
    ok: bool
    """`fn` returned (its value is `value`); false when it raised or its worker died."""
    value: V | None = None
    error: str | None = None
    """Why it failed: `fn`'s exception with its traceback, or the worker's death."""
    ray_node: str | None = None
    """The Ray node it ran on."""
    session: str | None = None
    """Its spear session's id."""
    actions: list[Action] = field(default_factory=list)
    """Every call its session made, with the round trip and the node's own time of each."""
    elapsed_s: float = 0.0
    """From the worker's start on it to its end, session made and ended included."""


class _NodeServer:
    """One per Ray node (an actor pinned there): the spear node of that Ray node, started at its
    first use, and the sessions each worker holds on it."""

    def __init__(self, node_kwargs: dict[str, Any]) -> None:
        self._kwargs = node_kwargs
        self._node: Node | None = None
        self._own_workspace: str | None = None
        self._held: dict[str, set[str]] = {}
        self._lock = threading.Lock()
        self._http = httpx2.Client(timeout=httpx2.Timeout(60.0, connect=10.0))

    def address(self) -> tuple[str, str]:
        """The node's URL and token, starting it first if it is not running."""
        with self._lock:
            if self._node is None:
                kwargs = dict(self._kwargs)
                if kwargs.get("workspace") is None and not kwargs.get("templates"):
                    # No template and no workspace: an empty directory of its own, never the
                    # actor's working directory (with templates, the node makes one itself).
                    self._own_workspace = tempfile.mkdtemp(prefix="spear-pool-")
                    kwargs["workspace"] = self._own_workspace
                env = kwargs.pop("env_overrides", None) or {}
                kwargs["env"] = {**os.environ, **env}
                self._node = Node(**kwargs)
            return self._node.url, self._node.token

    def open_session(self, worker: str, body: dict[str, str]) -> str:
        """Makes a session for `worker` (recorded, so that its death can end it): its URL."""
        url, token = self.address()
        answer = self._http.post(f"{url}/mcp/sessions", json=body, headers={"Authorization": f"Bearer {token}"})
        if answer.status_code != 201:
            raise RuntimeError(f"the spear node made no session ({answer.status_code}): {answer.text[:500]}")
        session_url = str(answer.json()["url"])
        with self._lock:
            self._held.setdefault(worker, set()).add(session_url)
        return session_url

    def forget(self, worker: str, session_url: str) -> None:
        """`worker` ended that session itself."""
        with self._lock:
            self._held.get(worker, set()).discard(session_url)

    def end_sessions_of(self, worker: str) -> int:
        """Ends every session `worker` held (it died): how many."""
        with self._lock:
            urls = self._held.pop(worker, set())
            token = self._node.token if self._node is not None else ""
        for url in urls:
            # 404: the session ended already; no answer: the node is gone, and its sessions
            # with it. Neither may stop the pool from replacing the worker.
            with contextlib.suppress(httpx2.HTTPError):
                self._http.delete(url, headers={"Authorization": f"Bearer {token}"})
        return len(urls)

    def held(self) -> int:
        """Sessions workers hold now."""
        with self._lock:
            return sum(len(urls) for urls in self._held.values())

    def pid(self) -> int | None:
        """The spear node's process id, when it runs."""
        process = self._node._process if self._node is not None else None
        return None if process is None else process.pid

    def stop(self) -> None:
        """Stops the spear node (every session on it ends) and removes what the server made."""
        with self._lock:
            if self._node is not None:
                self._node.stop()
                self._node = None
            if self._own_workspace is not None:
                shutil.rmtree(self._own_workspace, ignore_errors=True)
                self._own_workspace = None
            self._held.clear()
        self._http.close()


class _Worker:
    """A pool's actor: runs one trajectory at a time, each in a session of its own."""

    def __init__(self, key: str) -> None:
        self._key = key
        self._server: Any = None
        self._node: Node | None = None

    def ray_node(self) -> str:
        return str(ray.get_runtime_context().get_node_id())

    def bind(self, server: Any) -> None:
        """Takes its Ray node's server (and so starts it at the pool's first use)."""
        self._server = server
        url, token = ray.get(server.address.remote())
        self._node = Node.attach(url, token)

    def run(self, fn: Callable[[Session, Any], Any], index: int, item: Any, body: dict[str, str]) -> Trajectory[Any]:
        assert self._node is not None
        start = time.perf_counter()
        ray_node = self.ray_node()
        try:
            url = ray.get(self._server.open_session.remote(self._key, body))
        except Exception as error:
            return Trajectory(index, False, error=f"no session: {error}", ray_node=ray_node)
        session: Session | None = None
        try:
            session = Session(self._node, url=url)
            value = fn(session, item)
            outcome = Trajectory(index, True, value=value)
        except Exception:
            outcome = Trajectory(index, False, error=traceback.format_exc())
        finally:
            if session is not None:
                session.close()
            ray.get(self._server.forget.remote(self._key, url))
        outcome.ray_node = ray_node
        outcome.session = url.rsplit("/", 1)[-1]
        outcome.actions = list(session.actions) if session is not None else []
        outcome.elapsed_s = time.perf_counter() - start
        return outcome


@dataclass
class _Member:
    handle: Any
    key: str
    ray_node: str


class SpearPool:
    """`size` Ray actors running trajectories in spear sessions (see the module's text).

    Needs `ray.init()` first (or calls it, for a local cluster).
    """

    def __init__(
        self,
        size: int,
        *,
        template: str | os.PathLike[str] | None = None,
        workspace: str | os.PathLike[str] | None = None,
        mode: Mode = "auto",
        no_network: bool = False,
        node_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        spear: str | os.PathLike[str] | None = None,
        num_cpus: float = 0.25,
    ) -> None:
        """A pool of `size` workers.

        Args:
            size: workers, so trajectories at once.
            template: the template every trajectory's session copies (a directory at the same
                path on every Ray node). Without one, sessions work in `workspace` itself.
            workspace: the nodes' workspace (default: an empty directory of each node's own).
            mode: what sessions may do (`"auto"` by default: what the sandbox contains runs).
            no_network: sessions have no network.
            node_args: more flags for every `spear mcp` (`--memory 2G`, `--max-sessions 128`).
            env: variables to set in the spear nodes' environment (the server actors' own, plus
                these).
            spear: the spear binary on every Ray node (default: `$SPEAR_BIN`, else on `PATH`).
            num_cpus: the Ray CPUs each worker takes (spear's commands run outside Ray's
                accounting, in their own cgroups).
        """
        if size < 1:
            raise ValueError("a pool has at least one worker")
        if not ray.is_initialized():
            ray.init()
        self._node_kwargs: dict[str, Any] = {
            "workspace": None if workspace is None else os.fspath(workspace),
            "templates": [os.fspath(template)] if template is not None else [],
            "mode": mode,
            "no_network": no_network,
            "args": list(node_args),
            "env_overrides": dict(env or {}),
            "spear": None if spear is None else os.fspath(spear),
            "max_sessions": max(64, size * 2),
        }
        self._body = {"template": os.fspath(template)} if template is not None else {}
        self._num_cpus = num_cpus
        self._servers: dict[str, Any] = {}
        self._members: list[_Member] = []
        self._made = 0
        self._closed = False
        handles = [self._new_actor() for _ in range(size)]
        self._members = self._join(handles)

    @property
    def actors(self) -> list[Any]:
        """The workers' actor handles, now."""
        return [m.handle for m in self._members]

    @property
    def ray_nodes(self) -> list[str]:
        """The Ray nodes that have a spear node of the pool's."""
        return sorted(self._servers)

    def spear_pids(self) -> dict[str, int | None]:
        """Each Ray node's spear node's process id (none before its first use)."""
        return {node: ray.get(server.pid.remote()) for node, server in self._servers.items()}

    def held_sessions(self) -> int:
        """Sessions the pool's workers hold now, over every node."""
        return sum(ray.get([s.held.remote() for s in self._servers.values()]))

    def map(self, fn: Callable[[Session, I], V], items: Iterable[I]) -> list[Trajectory[V]]:
        """Runs `fn(session, item)` for every item, each in a session of its own on the pool's
        template, as many at once as the pool has workers; their trajectories in the items'
        order. Never raises for a trajectory: a failure is a `Trajectory` with `ok` false."""
        if self._closed:
            raise RuntimeError("the pool is shut down")
        work = list(items)
        results: list[Trajectory[V] | None] = [None] * len(work)
        pending = deque(range(len(work)))
        idle = deque(self._members)
        running: dict[Any, tuple[_Member, int]] = {}
        while pending or running:
            while pending and idle:
                member, index = idle.popleft(), pending.popleft()
                ref = member.handle.run.remote(fn, index, work[index], self._body)
                running[ref] = (member, index)
            done, _ = ray.wait(list(running), num_returns=1)
            for ref in done:
                member, index = running.pop(ref)
                try:
                    results[index] = ray.get(ref)
                    idle.append(member)
                except ray.exceptions.RayActorError as error:
                    results[index] = Trajectory(
                        index,
                        False,
                        error=f"its worker died: {type(error).__name__}: {error}",
                        ray_node=member.ray_node,
                    )
                    idle.append(self._replace(member))
        return [r for r in results if r is not None]

    def shutdown(self) -> None:
        """Ends the workers, then every spear node (their sessions with them). A second call
        does nothing."""
        if self._closed:
            return
        self._closed = True
        for member in self._members:
            ray.kill(member.handle)
        self._members = []
        stops = [server.stop.remote() for server in self._servers.values()]
        try:
            ray.get(stops, timeout=120)
        finally:
            for server in self._servers.values():
                ray.kill(server)
            self._servers = {}

    def __enter__(self) -> SpearPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def _new_actor(self) -> tuple[Any, str]:
        self._made += 1
        key = f"worker-{self._made}"
        actor = ray.remote(_Worker).options(num_cpus=self._num_cpus, scheduling_strategy="SPREAD")
        return actor.remote(key), key

    def _join(self, handles: list[tuple[Any, str]]) -> list[_Member]:
        """Each new worker bound to its Ray node's server (made there at the first worker)."""
        nodes = ray.get([h.ray_node.remote() for h, _ in handles])
        for node in nodes:
            if node not in self._servers:
                server = ray.remote(_NodeServer).options(
                    num_cpus=0,
                    max_concurrency=64,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
                )
                self._servers[node] = server.remote(self._node_kwargs)
        ray.get([h.bind.remote(self._servers[node]) for (h, _), node in zip(handles, nodes, strict=True)])
        return [_Member(h, key, node) for (h, key), node in zip(handles, nodes, strict=True)]

    def _replace(self, dead: _Member) -> _Member:
        """Ends the sessions a dead worker held, and puts a new worker in its place."""
        server = self._servers.get(dead.ray_node)
        if server is not None:
            ray.get(server.end_sessions_of.remote(dead.key))
        fresh = self._join([self._new_actor()])[0]
        self._members = [fresh if m is dead else m for m in self._members]
        return fresh
