"""Sessions on a node: `AsyncSession` (asyncio or trio, through anyio) and `Session` (blocking).

A session is a spear session of its own on the node (its own turns, jobs, `/tmp` and home,
cgroup budget), on the node's workspace, a directory within it, or a copy of its own of a
template. It is named in its URL (`POST /mcp/sessions`), so every call reaches the same spear
session, and each call is one stateless MCP request (protocol 2026-07-28) made with the official
SDK's client.

Every method returns a `Result`: a refusal, a failed command and a timeout are results. An
exception means the call did not reach the session or its answer did not come back
(`TransportError`, `SessionLost`), or the node's answer was not a result (`ProtocolError`).
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any, TypeVar

import anyio
import httpx2
from anyio.from_thread import BlockingPortal
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from ._errors import ProtocolError, SessionLost, SessionRefused, SpearError, TransportError
from ._node import Node
from ._results import Action, Result
from ._transport import CONNECTION_FAILED, NODE_REFUSED, SESSION_LOST, AnsweringTransport

T = TypeVar("T")

#: The node's own default for a command's time (`terminal` without `timeout`), in seconds.
DEFAULT_COMMAND_TIMEOUT = 180
#: How long past a command's own time a call may take before this client stops waiting: the
#: node kills the command at its time and answers; this covers the answer's way back.
ANSWER_MARGIN = 30.0
#: How long a call that runs no command (a file tool) may take.
FILE_CALL_TIMEOUT = 60.0


class AsyncSession:
    """A session on `node`, for async code.

    ```python
    async with spear.AsyncSession(node, template="repo") as s:
        r = await s.run("pytest -q", timeout=120)
        if not r.ok: print(r.status, r.rule, r.reason, r.output)
        print(await s.diff())
    ```

    Open it with `async with` (or `await open()`, then `await close()` in the same task: the
    MCP client it holds is bound to the task that opened it).
    """

    def __init__(
        self,
        node: Node,
        *,
        template: str | None = None,
        workspace: str | os.PathLike[str] | None = None,
        url: str | None = None,
        verify: bool | str = True,
    ) -> None:
        """A session to open on `node`: on `template` (its path or its directory's name, one the
        node serves), or on `workspace` (a directory within the node's), or the node's own
        workspace; or the session at `url` that another process made on the node
        (`{node}/mcp/sessions/ID`), which this object then ends when it closes. `verify`: TLS
        verification for an `https` node (a CA bundle's path, or False)."""
        if sum(x is not None for x in (template, workspace, url)) > 1:
            raise ValueError("a session is on a template, a workspace or at a URL: one of them, not both")
        self.node = node
        self.template = template
        self.workspace_asked = None if workspace is None else os.fspath(workspace)
        self._verify = verify
        self._stack: AsyncExitStack | None = None
        self._client: Client | None = None
        self._http: httpx2.AsyncClient | None = None
        self.id: str | None = None
        """The session's id on the node, once open."""
        self.url: str | None = url
        """The session's URL (`{node}/mcp/sessions/ID`), once open."""
        self._made_elsewhere = url is not None
        self.actions: list[Action] = []
        """Every call this object made that returned a result, in order, with its times."""
        self.workspace: str | None = None
        """The directory the session works in, as the node reports it."""

    async def open(self) -> AsyncSession:
        """Makes the session on the node and connects to it.

        Raises:
            SessionRefused: the node would not make it (not granted, a limit, a bad token).
            TransportError: the node could not be reached.
        """
        if self._stack is not None:
            return self
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers={"Authorization": f"Bearer {self.node.token}"},
                    timeout=httpx2.Timeout(FILE_CALL_TIMEOUT, connect=10.0),
                    transport=AnsweringTransport(httpx2.AsyncHTTPTransport(verify=self._verify)),
                )
            )
            body: dict[str, str] = {}
            if self.template is not None:
                body["template"] = self.template
            if self.workspace_asked is not None:
                body["workspace"] = self.workspace_asked
            if self._made_elsewhere:
                assert self.url is not None
                self.id = self.url.rstrip("/").rsplit("/", 1)[-1]
            else:
                made = await self._make(http, body)
                self.id, self.url = str(made["session"]), str(made["url"])
                self.workspace = made.get("workspace")
            self._http = http
            # Made: from here on, a failure ends it again.
            stack.push_async_callback(self._end)
            client = Client(
                streamable_http_client(self.url, http_client=http, terminate_on_close=False),
                mode="auto",
            )
            self._client = await stack.enter_async_context(client)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def close(self) -> None:
        """Ends the session on the node (its jobs killed, its scratch and copy removed) and
        closes the connection. A second call does nothing."""
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    async def __aenter__(self) -> AsyncSession:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # The tools.

    async def run(self, command: str, *, timeout: float | None = None, workdir: str | None = None) -> Result:
        """Runs `command` (bash) in the sandbox, as the node's mode allows; the node kills its
        whole tree after `timeout` seconds (default 180, at most 600) and answers `timeout`."""
        args: dict[str, Any] = {"command": command}
        if timeout is not None:
            args["timeout"] = max(1, math.ceil(timeout))
        if workdir is not None:
            args["workdir"] = workdir
        seconds = args.get("timeout", DEFAULT_COMMAND_TIMEOUT)
        return await self.call("terminal", args, wait=seconds + ANSWER_MARGIN)

    async def read_file(self, path: str, *, offset: int | None = None, limit: int | None = None) -> Result:
        """A file's lines, numbered, in `stdout` (from line `offset`, at most `limit` lines)."""
        args: dict[str, Any] = {"path": path}
        if offset is not None:
            args["offset"] = offset
        if limit is not None:
            args["limit"] = limit
        return await self.call("read_file", args)

    async def write_file(self, path: str, content: str) -> Result:
        """Writes `content` to `path` (parents made; a link there is replaced, never written
        through)."""
        return await self.call("write_file", {"path": path, "content": content})

    async def patch(self, patch: str) -> Result:
        """Applies a patch (a unified diff, or the `*** Begin Patch` envelope), all or nothing."""
        return await self.call("patch", {"patch": patch})

    async def search(
        self,
        pattern: str,
        *,
        path: str | None = None,
        glob: str | None = None,
        case_insensitive: bool = False,
        max_results: int | None = None,
    ) -> Result:
        """Lines matching the regular expression `pattern` (ripgrep's), as `path:line:text`."""
        args: dict[str, Any] = {"pattern": pattern}
        if path is not None:
            args["path"] = path
        if glob is not None:
            args["glob"] = glob
        if case_insensitive:
            args["case_insensitive"] = True
        if max_results is not None:
            args["max_results"] = max_results
        return await self.call("search_files", args)

    async def delete(self, path: str) -> Result:
        """Removes a file or a link (never what the link points at)."""
        return await self.call("delete_file", {"path": path})

    async def diff(self) -> str:
        """The session's changes to its template, as a binary git patch that `git apply` takes
        on a fresh copy of the template.

        Raises:
            SpearError: the session is not on a template (its changes are in the workspace
                itself: `git diff` there shows them).
            SessionLost, TransportError: as for a call.
        """
        http, url = self._open()
        try:
            response = await http.get(f"{url}/patch", timeout=httpx2.Timeout(120.0, connect=10.0))
        except httpx2.HTTPError as error:  # pragma: no cover - the transport answers instead
            raise TransportError(str(error)) from error
        if response.status_code == 200:
            return response.text
        said = _said(response)
        if response.status_code == 404:
            raise SessionLost(f"session {self.id}: {said}")
        if response.status_code == 502:
            raise self.node_failure(said)
        raise SpearError(f"session {self.id} has no patch: {said}")

    async def call(self, tool: str, arguments: dict[str, Any], *, wait: float = FILE_CALL_TIMEOUT) -> Result:
        """Calls any of the node's tools (`terminal_output`, `read_output`, `fetch_url`, ...) and
        waits up to `wait` seconds for its answer."""
        self._open()
        assert self._client is not None
        start = time.perf_counter()
        try:
            with anyio.fail_after(wait):
                answer = await self._client.call_tool(tool, arguments, read_timeout_seconds=wait)
        except MCPError as error:
            raise self._failure(error.error.code, error.error.message) from error
        except TimeoutError as error:
            raise TransportError(
                f"session {self.id}: no answer to {tool} within {wait:g} s from {self.node.url}"
            ) from error
        elapsed = time.perf_counter() - start
        envelope = answer.structured_content
        if not isinstance(envelope, dict):
            text = " ".join(getattr(c, "text", "") for c in answer.content)
            raise ProtocolError(f"{tool} answered without a result: {text[:300]}")
        result = Result.from_envelope(envelope, tool=tool, elapsed_s=elapsed)
        self.actions.append(Action(tool, result.status, elapsed, result.duration_ms))
        return result

    # What is not a result.

    def _node_ended(self) -> bool:
        return self.node.exit_status is not None

    def node_failure(self, said: str) -> TransportError:
        """The error for a node that could not be reached: says whether a node this process
        started has ended, with what it printed last."""
        status = self.node.exit_status
        if status is not None:
            log = "\n".join(self.node.log)
            return TransportError(
                f"session {self.id}: the spear node {self.node.url} has ended (status {status}): {said}\n{log}"
            )
        return TransportError(f"session {self.id}: the spear node {self.node.url} could not be reached: {said}")

    def _failure(self, code: int, message: str) -> SpearError:
        if code == SESSION_LOST:
            return SessionLost(
                f"session {self.id} is gone from {self.node.url} (the node restarted, it idled out, "
                f"or it was ended): {message}"
            )
        if code == CONNECTION_FAILED:
            return self.node_failure(message)
        if code == NODE_REFUSED:
            return (
                self.node_failure(f"it answered {message}")
                if self._node_ended()
                else TransportError(f"session {self.id}: the spear node {self.node.url} answered {message}")
            )
        return ProtocolError(f"session {self.id}: {message}", code=code)

    def _open(self) -> tuple[httpx2.AsyncClient, str]:
        if self._stack is None or self._http is None or self.url is None:
            raise SpearError("the session is not open: use `async with` or `await session.open()`")
        return self._http, self.url

    async def _make(self, http: httpx2.AsyncClient, body: dict[str, str]) -> dict[str, Any]:
        response = await http.post(f"{self.node.url}/mcp/sessions", json=body)
        if response.status_code == 502:
            raise TransportError(f"the spear node {self.node.url} could not be reached: {_said(response)}")
        if response.status_code != 201:
            retry = response.headers.get("retry-after")
            raise SessionRefused(
                f"the spear node {self.node.url} made no session ({response.status_code}): {_said(response)}",
                status=response.status_code,
                retry_after=float(retry) if retry and retry.isdigit() else None,
            )
        made = response.json()
        if not isinstance(made, dict) or "session" not in made or "url" not in made:
            raise ProtocolError(f"the node's answer to POST /mcp/sessions is not a session: {response.text[:300]}")
        return made

    async def _end(self) -> None:
        """Ends the session on the node; one that is gone already, or a node that is gone, is
        ended already."""
        if self._http is not None and self.url is not None:
            with anyio.move_on_after(30):
                await self._http.delete(self.url)
        self._client = None


def _said(response: httpx2.Response) -> str:
    """What an error answer says: spear's `error_description`, a JSON-RPC error's message, or
    its text."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:500] or response.reason_phrase
    if isinstance(body, dict):
        if "error_description" in body:
            return str(body["error_description"])
        error = body.get("error")
        if isinstance(error, dict) and "message" in error:
            return str(error["message"])
    return response.text.strip()[:500]


class _LoopThread:
    """An event loop of its own on a daemon thread, for `Session`'s blocking calls: it never
    keeps the process from exiting."""

    def __init__(self) -> None:
        handed: queue.Queue[BlockingPortal | BaseException] = queue.Queue()

        async def host() -> None:
            try:
                async with BlockingPortal() as portal:
                    handed.put(portal)
                    await portal.sleep_until_stopped()
            except BaseException as error:  # pragma: no cover - the loop could not start
                handed.put(error)

        self._thread = threading.Thread(target=anyio.run, args=(host,), name="spear-session", daemon=True)
        self._thread.start()
        got = handed.get()
        if isinstance(got, BaseException):  # pragma: no cover
            raise got
        self.portal = got

    def stop(self) -> None:
        with contextlib.suppress(RuntimeError):  # stopped already
            self.portal.call(self.portal.stop)
        self._thread.join(timeout=10)


class Session:
    """A session on `node`, for blocking code; the same methods as `AsyncSession`.

    ```python
    with spear.Node(".", mode="auto") as node, spear.Session(node) as s:
        print(s.run("git status --short").output)
    ```

    Opened when made; `close()` (or the `with` block's end) ends it on the node.
    """

    def __init__(
        self,
        node: Node,
        *,
        template: str | None = None,
        workspace: str | os.PathLike[str] | None = None,
        url: str | None = None,
        verify: bool | str = True,
    ) -> None:
        """Makes a session on `node`, or takes the one at `url` (see `AsyncSession`).

        Raises:
            SessionRefused, TransportError: as `AsyncSession.open`.
        """
        self._async = AsyncSession(node, template=template, workspace=workspace, url=url, verify=verify)
        self._loop = _LoopThread()
        try:
            self._context = self._loop.portal.wrap_async_context_manager(self._async)
            self._context.__enter__()
        except BaseException:
            self._loop.stop()
            raise
        self._closed = False

    @property
    def id(self) -> str | None:
        """The session's id on the node."""
        return self._async.id

    @property
    def url(self) -> str | None:
        """The session's URL."""
        return self._async.url

    @property
    def workspace(self) -> str | None:
        """The directory the session works in, as the node reports it."""
        return self._async.workspace

    @property
    def actions(self) -> list[Action]:
        """Every call that returned a result, in order, with its times."""
        return self._async.actions

    @property
    def node(self) -> Node:
        """The node it is on."""
        return self._async.node

    def run(self, command: str, *, timeout: float | None = None, workdir: str | None = None) -> Result:
        """See `AsyncSession.run`."""
        return self._call(lambda: self._async.run(command, timeout=timeout, workdir=workdir))

    def read_file(self, path: str, *, offset: int | None = None, limit: int | None = None) -> Result:
        """See `AsyncSession.read_file`."""
        return self._call(lambda: self._async.read_file(path, offset=offset, limit=limit))

    def write_file(self, path: str, content: str) -> Result:
        """See `AsyncSession.write_file`."""
        return self._call(lambda: self._async.write_file(path, content))

    def patch(self, patch: str) -> Result:
        """See `AsyncSession.patch`."""
        return self._call(lambda: self._async.patch(patch))

    def search(
        self,
        pattern: str,
        *,
        path: str | None = None,
        glob: str | None = None,
        case_insensitive: bool = False,
        max_results: int | None = None,
    ) -> Result:
        """See `AsyncSession.search`."""
        return self._call(
            lambda: self._async.search(
                pattern, path=path, glob=glob, case_insensitive=case_insensitive, max_results=max_results
            )
        )

    def delete(self, path: str) -> Result:
        """See `AsyncSession.delete`."""
        return self._call(lambda: self._async.delete(path))

    def diff(self) -> str:
        """See `AsyncSession.diff`."""
        return self._call(self._async.diff)

    def call(self, tool: str, arguments: dict[str, Any], *, wait: float = FILE_CALL_TIMEOUT) -> Result:
        """See `AsyncSession.call`."""
        return self._call(lambda: self._async.call(tool, arguments, wait=wait))

    def close(self) -> None:
        """Ends the session on the node; a second call does nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            self._context.__exit__(None, None, None)
        finally:
            self._loop.stop()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, make: Callable[[], Awaitable[T]]) -> T:
        if self._closed:
            raise SpearError("the session is closed")

        async def go() -> T:
            return await make()

        return self._loop.portal.call(go)
