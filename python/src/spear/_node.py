"""`spear.Node`: a spear server (`spear mcp --listen`) to open sessions on.

`Node(...)` starts one on a free loopback port with a token made for it alone, handed to the
server on its standard input (never in its arguments, where `ps` would show it, nor in the
operator's token store); `Node.attach(url, token)` uses one that runs already. `stop()` ends a
node this process started: SIGTERM, which ends every session (jobs killed, copies unmounted),
then SIGKILL if it has not ended in time.
"""

from __future__ import annotations

import collections
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import httpx2

from ._errors import NodeError

Mode = Literal["safe", "ask", "auto"]

#: How much of the server's stderr a `NodeError` quotes.
_LOG_LINES = 40


def find_spear(spear: str | os.PathLike[str] | None = None) -> str:
    """The spear binary: `spear` if given, else `$SPEAR_BIN`, else `spear` on `PATH`.

    Raises:
        NodeError: none is found.
    """
    for candidate in (spear, os.environ.get("SPEAR_BIN")):
        if candidate:
            path = Path(candidate)
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
            raise NodeError(f"{path} is not an executable spear binary")
    found = shutil.which("spear")
    if found is None:
        raise NodeError(
            "no spear binary: put `spear` on PATH (cargo install --path crates/spear-cli), "
            "set SPEAR_BIN, or pass spear=PATH"
        )
    return found


def _stop_process(process: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds; waits for the end."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class Node:
    """A spear server to open sessions on.

    `Node(workspace=..., templates=[...], mode="auto")` starts `spear mcp --listen 127.0.0.1:0`
    serving `workspace` and the template directories (without a workspace: an empty directory of
    its own when it serves templates, which sessions on them never need, else the current
    directory), in
    `mode` (`"safe"`, the default, runs nothing that writes; `"auto"` runs what the sandbox
    contains without asking). `Node.attach(url, token)` uses a node that runs already.

    Use it as a context manager, or call `stop()`: a node this process started is also stopped
    when the process exits.
    """

    url: str
    """The node's base URL (`http://127.0.0.1:PORT`): sessions are made at `{url}/mcp/sessions`."""
    token: str
    """The bearer token every request carries."""

    def __init__(
        self,
        workspace: str | os.PathLike[str] | None = None,
        *,
        templates: Sequence[str | os.PathLike[str]] = (),
        mode: Mode = "safe",
        no_network: bool = False,
        max_sessions: int | None = None,
        session_idle: int | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        spear: str | os.PathLike[str] | None = None,
        listen: str = "127.0.0.1:0",
        token: str | None = None,
        start_timeout: float = 60.0,
        stop_timeout: float = 30.0,
    ) -> None:
        """Starts a node and waits until it listens.

        Args:
            workspace: the directory its sessions work in (default: with templates, an empty
                directory of the node's own, removed when it stops; without, the current one).
            templates: directories each template session gets a copy-on-write copy of.
            mode: the most its sessions may do.
            no_network: no session has a network.
            max_sessions: sessions open at once (the server's default: 64).
            session_idle: seconds after which a session with no request ends.
            args: more flags for `spear mcp` (`--memory 2G`, `--timeout 60`, ...).
            env: the server's environment (default: this process's).
            spear: the spear binary (default: `$SPEAR_BIN`, else `spear` on PATH).
            listen: where it listens (default: a free loopback port); anything but loopback
                needs TLS flags in `args`.
            token: the token it accepts (default: a fresh one, 43 characters from the system's
                random source); give one to restart a node its clients keep using.
            start_timeout: seconds to wait for it to listen.
            stop_timeout: seconds `stop()` gives it to end its sessions before SIGKILL.

        Raises:
            NodeError: it could not be started; the message quotes what it printed.
        """
        if mode not in ("safe", "ask", "auto"):
            raise ValueError(f"mode must be 'safe', 'ask' or 'auto', not {mode!r}")
        if token is not None and (len(token) < 32 or not token.isascii() or not token.isprintable() or " " in token):
            raise ValueError("a node's token is at least 32 printable ASCII characters without spaces")
        self.token = token if token is not None else secrets.token_urlsafe(32)
        self._stop_timeout = stop_timeout
        self._log: collections.deque[str] = collections.deque(maxlen=_LOG_LINES)
        argv = [
            find_spear(spear),
            "mcp",
            "--listen",
            listen,
            "--token-file",
            "-",
            f"--{mode}",
            "--workspace",
            str(self._workspace(workspace, templates)),
        ]
        for template in templates:
            argv += ["--template", str(template)]
        if no_network:
            argv.append("--no-network")
        if max_sessions is not None:
            argv += ["--max-sessions", str(max_sessions)]
        if session_idle is not None:
            argv += ["--session-idle", str(session_idle)]
        argv += list(args)
        self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
        )
        # A node this process started ends with it, whatever becomes of this object.
        self._finalizer: weakref.finalize[[subprocess.Popen[bytes], float], Node] | None = weakref.finalize(
            self, _stop_process, self._process, stop_timeout
        )
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(f"{self.token}\n".encode())
            self._process.stdin.close()
        except BrokenPipeError:
            pass  # it ended already: said below, with what it printed
        self.url = self._wait_listening(start_timeout)

    def _workspace(self, workspace: str | os.PathLike[str] | None, templates: Sequence[str | os.PathLike[str]]) -> Path:
        """The directory to serve: `workspace`, or for a node of templates an empty one of its own
        (the current directory could be a home, which spear refuses to serve, or hold what no
        template session should be near), else the current directory."""
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        if workspace is not None:
            return Path(workspace)
        if templates:
            self._scratch = tempfile.TemporaryDirectory(prefix="spear-node-")
            return Path(self._scratch.name)
        return Path.cwd()

    @classmethod
    def attach(cls, url: str, token: str | None = None) -> Node:
        """A node that runs already, at `url` (`http://HOST:PORT`, with or without `/mcp`),
        reached with `token` (default: `$SPEAR_TOKEN`). `stop()` does not stop it.

        Raises:
            ValueError: no token is given and `$SPEAR_TOKEN` is not set.
        """
        token = token or os.environ.get("SPEAR_TOKEN")
        if not token:
            raise ValueError(f"the node at {url} needs its token: pass token= or set SPEAR_TOKEN")
        node = cls.__new__(cls)
        node.url = url.rstrip("/").removesuffix("/mcp")
        node.token = token
        node._process = None
        node._log = collections.deque(maxlen=_LOG_LINES)
        node._stop_timeout = 0.0
        node._finalizer = None
        node._scratch = None
        return node

    @property
    def started(self) -> bool:
        """This process started the node (and `stop()` stops it)."""
        return self._process is not None

    @property
    def running(self) -> bool:
        """A node this process started has not ended (an attached one: whether it answers)."""
        if self._process is not None:
            return self._process.poll() is None
        return self.healthy()

    @property
    def exit_status(self) -> int | None:
        """How a node this process started ended (its exit status), or None while it runs and
        for an attached node."""
        return None if self._process is None else self._process.poll()

    @property
    def log(self) -> list[str]:
        """The last lines the server printed (for a node this process started)."""
        return list(self._log)

    def healthy(self, timeout: float = 5.0) -> bool:
        """The node answers `GET /healthz`."""
        try:
            response = httpx2.get(f"{self.url}/healthz", timeout=timeout)
        except httpx2.HTTPError:
            return False
        return response.status_code == 200

    def stop(self) -> None:
        """Stops a node this process started (SIGTERM, then SIGKILL after `stop_timeout`), ending
        every session on it. Does nothing for an attached node, or a second time."""
        if self._finalizer is not None:
            self._finalizer()
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    def __enter__(self) -> Node:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        how = "started" if self.started else "attached"
        return f"Node({self.url!r}, {how})"

    def _wait_listening(self, timeout: float) -> str:
        """Reads the server's stderr until it says where it listens; keeps draining it after, so
        that it never blocks on a full pipe."""
        process = self._process
        assert process is not None and process.stderr is not None
        found = threading.Event()
        url: list[str] = []
        log = self._log  # not `self`: the thread must not keep the node alive

        def drain() -> None:
            assert process.stderr is not None
            for raw in process.stderr:
                line = raw.decode(errors="replace").rstrip("\n")
                log.append(line)
                if not found.is_set() and "listening on " in line:
                    # "spear mcp: listening on http://127.0.0.1:PORT/mcp (...)"
                    url.append(line.split("listening on ", 1)[1].split()[0].removesuffix("/mcp"))
                    found.set()
            found.set()

        threading.Thread(target=drain, name="spear-node-stderr", daemon=True).start()
        if not found.wait(timeout) or not url:
            ended = process.poll()
            self.stop()
            why = f"it exited with status {ended}" if ended is not None else f"it did not listen within {timeout:g} s"
            raise NodeError(f"the spear node could not be started: {why}:\n" + "\n".join(self._log))
        return url[0]
