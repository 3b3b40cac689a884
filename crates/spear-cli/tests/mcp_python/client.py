"""spear's MCP server driven by the Python MCP SDK, for crates/spear-cli/tests/mcp_python.rs.

Usage: python -B client.py CONFIG.json

CONFIG holds {"scenario": NAME, "runs": [RUN, ...]}. Each RUN is one server started over stdio:
{"generation": "legacy" | "modern", "spear": PATH, "workspace": DIR, "server_args": [...],
"env": {...}} plus what its scenario needs. The runs of one config go concurrently; the script
prints one JSON line, {"runs": [RESULT, ...]} in the same order, and exits 0; the Rust side
asserts on it and checks the host (files, processes, cgroups). Anything unexpected (a timeout, an
exception) is printed as {"error": ...} with exit status 1, so a failure shows what happened.

"legacy" is `Client(mode="legacy")`: the initialize handshake, 2025-11-25, ASK through
`elicitation/create` requests. "modern" is `Client(mode="auto")`: server/discover, 2026-07-28, ASK
through input-required results that the client resolves with the same elicitation callback.

Scenarios:
- calls: list the tools (optional), then make the calls in order. `$job` and `$ref` in an
  argument stand for the last job id and output ref seen. Each call's answer to a confirmation
  ("accept", "accept_false", "decline", "cancel") is its own "answer", else the run's; a run
  with "answer": "none" declares no elicitation capability. "progress": true records progress.
  "check_schema": true (with "list") records whether the call's arguments are valid against the
  listed schema of its tool ("schema_valid", by the jsonschema the SDK depends on).
- input_required (modern only): drives input-required rounds by hand with forged, replayed and
  foreign request states.
- cancel: cancels a running terminal call from the client and watches its processes die.
- job: a background job read with terminal_output, then killed with terminal_kill.
- close: closes the client while a background job runs and watches the job die.

Every wait is bounded (anyio.fail_after, or a polling loop with a deadline).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any

import anyio
import jsonschema
import mcp.types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

CONNECT_MODE = {"legacy": "legacy", "modern": "auto"}
CALL_TIMEOUT = 30.0
RUN_TIMEOUT = 90.0
POLL = 0.05


# ---------------------------------------------------------------------------------------------
# The host, as /proc and /sys/fs/cgroup show it.


def processes_with(token: str) -> list[str]:
    """Live processes whose command line holds `token` ("pid: cmdline"), this one excepted."""
    found = []
    me = os.getpid()
    needle = token.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if needle in cmdline:
            shown = cmdline.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{name}: {shown}")
    return found


def sleeping(token: str) -> bool:
    """Whether the command's own `sleep <token>` process is alive (it has started, not only its
    sandbox)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv[:2] == [b"sleep", token.encode()]:
            return True
    return False


def cgroups_of(server_pid: int | None) -> list[str]:
    """The cgroup directories the server made for its commands (`spear-<pid>-<n>`)."""
    if server_pid is None:
        return []
    prefix = f"spear-{server_pid}-"
    found = []
    for root, dirs, _files in os.walk("/sys/fs/cgroup"):
        for d in dirs:
            if d.startswith(prefix):
                found.append(os.path.join(root, d))
    return found


def session_cgroups_of(server_pid: int | None) -> list[str]:
    """The server's session cgroup directories (`spear-session-<pid>-<n>`), which hold its commands'
    and live as long as the server."""
    if server_pid is None:
        return []
    prefix = f"spear-session-{server_pid}-"
    found = []
    for root, dirs, _files in os.walk("/sys/fs/cgroup"):
        for d in dirs:
            if d.startswith(prefix):
                found.append(os.path.join(root, d))
    return found


def server_pid(workspace: str) -> int | None:
    """The pid of our child `spear mcp ... --workspace <workspace>`."""
    me = str(os.getpid())
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        ppid = stat.rsplit(")", 1)[1].split()[1]
        if ppid == me and b"mcp" in argv and workspace.encode() in argv:
            return int(name)
    return None


def pid_alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


async def until(predicate, within: float) -> float | None:
    """Seconds until `predicate()` held, or None if it did not within `within` seconds."""
    start = time.monotonic()
    while True:
        if predicate():
            return time.monotonic() - start
        if time.monotonic() - start > within:
            return None
        await anyio.sleep(POLL)


# ---------------------------------------------------------------------------------------------
# The client.


def params(run: dict) -> StdioServerParameters:
    return StdioServerParameters(
        command=run["spear"],
        args=["mcp", *run["server_args"], "--workspace", run["workspace"]],
        env=run["env"],
        cwd=run["workspace"],
    )


def elicit_result(answer: str) -> types.ElicitResult:
    if answer == "accept":
        return types.ElicitResult(action="accept", content={"approve": True})
    if answer == "accept_false":
        return types.ElicitResult(action="accept", content={"approve": False})
    if answer in ("decline", "cancel"):
        return types.ElicitResult(action=answer)
    raise ValueError(f"unknown answer {answer!r}")


class Asker:
    """The elicitation callback: records each question on the current call and answers it."""

    def __init__(self, default: str):
        self.answer = default
        self.questions: list[dict] = []

    async def __call__(self, context, p: types.ElicitRequestParams) -> types.ElicitResult:
        # How it was asked: a JSON-RPC request's id (elicitation/create, 2025-11-25), or the key
        # of an input-required result's entry (2026-07-28).
        self.questions.append({"message": p.message, "asked_as": context.request_id})
        return elicit_result(self.answer)


def result_json(r: Any) -> dict:
    if isinstance(r, types.InputRequiredResult):
        return {
            "input_required": True,
            "input_requests": {
                k: v.model_dump(mode="json", by_alias=True, exclude_none=True)
                for k, v in (r.input_requests or {}).items()
            },
            "request_state": r.request_state,
        }
    return {
        "is_error": bool(r.is_error),
        "structured": r.structured_content,
        "text": [c.text for c in r.content if getattr(c, "type", None) == "text"],
    }


async def call(client: Client, name: str, args: dict, **kw) -> dict:
    """One tools/call; a protocol error is recorded, not raised."""
    try:
        with anyio.fail_after(kw.pop("timeout", CALL_TIMEOUT)):
            r = await client.call_tool(name, args, **kw)
    except MCPError as e:
        return {"protocol_error": {"code": e.error.code, "message": e.error.message}}
    return result_json(r)


def substitute(value: Any, seen: dict) -> Any:
    if isinstance(value, str) and value.startswith("$") and value[1:] in seen:
        return seen[value[1:]]
    if isinstance(value, dict):
        return {k: substitute(v, seen) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, seen) for v in value]
    return value


def open_client(run: dict, asker: Asker | None) -> Client:
    return Client(
        params(run),
        mode=CONNECT_MODE[run["generation"]],
        elicitation_callback=asker,
    )


# ---------------------------------------------------------------------------------------------
# Scenarios. Each takes its run and returns its result.


async def scenario_calls(run: dict) -> dict:
    default = run.get("answer", "accept")
    asker = None if default == "none" else Asker(default)
    out: dict[str, Any] = {"results": []}
    async with open_client(run, asker) as client:
        out["protocol"] = client.session.protocol_version
        out["server_pid"] = server_pid(run["workspace"])
        if run.get("list"):
            with anyio.fail_after(CALL_TIMEOUT):
                listed = await client.list_tools()
            out["tools"] = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
        seen: dict[str, str] = {}
        for step in run["calls"]:
            args = substitute(step["args"], seen)
            if asker is not None:
                asker.answer = step.get("answer", default)
                asker.questions = []
            progress: list[dict] = []

            async def on_progress(p: float, total: float | None, message: str | None) -> None:
                progress.append({"progress": p, "total": total, "message": message, "at": time.monotonic()})

            kw = {"progress_callback": on_progress} if step.get("progress") else {}
            started = time.monotonic()
            valid = None
            if step.get("check_schema"):
                schema = next(t["inputSchema"] for t in out["tools"] if t["name"] == step["tool"])
                valid = jsonschema.Draft202012Validator(schema).is_valid(args)
            entry = {"tool": step["tool"], "args": args, **await call(client, step["tool"], args, **kw)}
            if valid is not None:
                entry["schema_valid"] = valid
            entry["seconds"] = time.monotonic() - started
            entry["questions"] = list(asker.questions) if asker is not None else []
            if step.get("progress"):
                entry["progress"] = progress
            s = entry.get("structured") or {}
            if isinstance(s.get("job"), dict):
                seen["job"] = s["job"]["id"]
            if s.get("output_ref"):
                seen["ref"] = s["output_ref"]
            out["results"].append(entry)
    return out


def altered(state: str) -> str:
    """`state` with one character in its middle changed."""
    i = len(state) // 2
    return state[:i] + ("B" if state[i] == "A" else "A") + state[i + 1 :]


async def scenario_input_required(run: dict) -> dict:
    """Rounds by hand. `commands` names four commands: ok (approved once, then replayed), other
    (approved with ok's state), forged (approved with an altered state) and declined."""
    cmds = run["commands"]
    accept = {"spear_confirm": elicit_result("accept")}
    out: dict[str, Any] = {}
    async with open_client(run, Asker("accept")) as client:
        out["protocol"] = client.session.protocol_version
        session = client.session

        async def raw(command: str, **kw) -> Any:
            with anyio.fail_after(CALL_TIMEOUT):
                try:
                    r = await session.call_tool(
                        "terminal", {"command": command}, allow_input_required=True, **kw
                    )
                except MCPError as e:
                    return {"protocol_error": {"code": e.error.code, "message": e.error.message}}
            return result_json(r)

        first = await raw(cmds["ok"])
        out["first"] = first
        state = first.get("request_state")
        if not state:
            return out
        # None of these opens the state, so none uses it up.
        out["forged"] = await raw(cmds["ok"], input_responses=accept, request_state=altered(state))
        out["forged_tail"] = await raw(
            cmds["ok"], input_responses=accept, request_state=state[:-1] + ("B" if state[-1] == "A" else "A")
        )
        out["made_up"] = await raw(cmds["ok"], input_responses=accept, request_state="rs1.bm90LWEtc3RhdGU")
        out["other_args"] = await raw(cmds["other"], input_responses=accept, request_state=state)
        # The approval it was minted for: runs once.
        out["approved"] = await raw(cmds["ok"], input_responses=accept, request_state=state)
        out["replayed"] = await raw(cmds["ok"], input_responses=accept, request_state=state)
        # A state for one command, answered decline.
        second = await raw(cmds["declined"])
        out["declined_first"] = second
        if second.get("request_state"):
            out["declined"] = await raw(
                cmds["declined"],
                input_responses={"spear_confirm": elicit_result("decline")},
                request_state=second["request_state"],
            )
        # A state with no answer at all.
        third = await raw(cmds["unanswered"])
        if third.get("request_state"):
            out["unanswered"] = await raw(cmds["unanswered"], request_state=third["request_state"])
        # A forged state for a command never asked about.
        out["forged_fresh"] = await raw(cmds["forged"], input_responses=accept, request_state=altered(state))
    return out


async def scenario_cancel(run: dict) -> dict:
    token = run["token"]
    out: dict[str, Any] = {}
    async with open_client(run, None) as client:
        out["protocol"] = client.session.protocol_version
        pid = server_pid(run["workspace"])
        out["server_pid"] = pid
        holder: dict[str, Any] = {}

        async def runner() -> None:
            with anyio.CancelScope() as scope:
                holder["scope"] = scope
                holder["result"] = await call(client, "terminal", {"command": run["command"]})
            holder["cancelled"] = scope.cancelled_caught

        async with anyio.create_task_group() as tg:
            tg.start_soon(runner)
            out["seen_after"] = await until(lambda: sleeping(token), 15)
            out["alive_before"] = processes_with(token)
            out["cgroups_before"] = cgroups_of(pid)
            holder["scope"].cancel()
        out["call_cancelled"] = holder.get("cancelled")
        out["call_result"] = holder.get("result")
        out["gone_after"] = await until(lambda: not processes_with(token), 10)
        out["survivors"] = processes_with(token)
        await until(lambda: not cgroups_of(pid), 5)
        out["cgroups_after"] = cgroups_of(pid)
        out["server_alive"] = pid_alive(pid)
        out["followup"] = await call(client, "read_file", {"path": "README.md"})
    return out


async def scenario_job(run: dict) -> dict:
    token = run["token"]
    out: dict[str, Any] = {"reads": []}
    async with open_client(run, None) as client:
        out["protocol"] = client.session.protocol_version
        pid = server_pid(run["workspace"])
        out["server_pid"] = pid
        started = await call(client, "terminal", {"command": run["command"], "background": True})
        out["started"] = started
        job = ((started.get("structured") or {}).get("job") or {}).get("id")
        if job is None:
            return out
        printed = ""

        async def read() -> dict:
            r = await call(client, "terminal_output", {"job_id": job})
            out["reads"].append(r)
            return r

        deadline = time.monotonic() + 15
        while "line3" not in printed and time.monotonic() < deadline:
            r = await read()
            printed += (r.get("structured") or {}).get("stdout", "")
            await anyio.sleep(0.1)
        # Two more reads once all three lines are in: nothing is printed twice.
        for _ in range(2):
            await anyio.sleep(0.3)
            await read()
        out["sleeping_before_kill"] = await until(lambda: sleeping(token), 10)
        out["alive_before_kill"] = processes_with(token)
        out["cgroups_before_kill"] = cgroups_of(pid)
        out["killed"] = await call(client, "terminal_kill", {"job_id": job})
        out["gone_after"] = await until(lambda: not processes_with(token), 10)
        out["survivors"] = processes_with(token)
        await until(lambda: not cgroups_of(pid), 5)
        out["cgroups_after"] = cgroups_of(pid)
        out["after_kill"] = await call(client, "terminal_output", {"job_id": job})
    return out


async def scenario_close(run: dict) -> dict:
    token = run["token"]
    out: dict[str, Any] = {}
    async with open_client(run, None) as client:
        out["protocol"] = client.session.protocol_version
        pid = server_pid(run["workspace"])
        out["server_pid"] = pid
        out["started"] = await call(client, "terminal", {"command": run["command"], "background": True})
        out["seen_after"] = await until(lambda: sleeping(token), 15)
        out["alive_before"] = processes_with(token)
        out["cgroups_before"] = cgroups_of(pid)
        out["session_cgroups_before"] = session_cgroups_of(pid)
        closing = time.monotonic()
    # The SDK closed the server's stdin and waited for it to exit (SIGTERM only after 2 s).
    out["close_seconds"] = time.monotonic() - closing
    out["gone_after"] = await until(lambda: not processes_with(token), 10)
    out["survivors"] = processes_with(token)
    out["server_alive"] = pid_alive(pid)
    out["cgroups_after"] = cgroups_of(pid)
    out["session_cgroups_after"] = session_cgroups_of(pid)
    return out


SCENARIOS = {
    "calls": scenario_calls,
    "input_required": scenario_input_required,
    "cancel": scenario_cancel,
    "job": scenario_job,
    "close": scenario_close,
}


async def main(config: dict) -> dict:
    scenario = SCENARIOS[config["scenario"]]
    results: list[Any] = [None] * len(config["runs"])

    async def one(i: int, run: dict) -> None:
        try:
            results[i] = {"generation": run["generation"], **await scenario(run)}
        except BaseException as e:  # noqa: BLE001 - reported, the Rust side fails on it
            if isinstance(e, anyio.get_cancelled_exc_class()):
                raise
            results[i] = {"generation": run["generation"], "error": "".join(traceback.format_exception(e))}

    with anyio.fail_after(RUN_TIMEOUT):
        async with anyio.create_task_group() as tg:
            for i, run in enumerate(config["runs"]):
                tg.start_soon(one, i, run)
    return {"runs": results}


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        cfg = json.load(f)
    try:
        answer = anyio.run(main, cfg)
    except BaseException:  # noqa: BLE001
        print(json.dumps({"error": traceback.format_exc()}))
        sys.exit(1)
    print(json.dumps(answer))
    sys.exit(1 if any("error" in r for r in answer["runs"]) else 0)
