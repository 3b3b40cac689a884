"""`spear.Node`: started on a free loopback port with a token of its own, attached by URL, and
stopped cleanly, leaving nothing behind."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

import spear


def test_a_node_listens_on_loopback_with_a_token_nobody_else_holds(
    spear_bin: str, env: dict[str, str], workspace: Path
) -> None:
    node = spear.Node(workspace, spear=spear_bin, env=env)
    try:
        assert node.started and node.running and node.healthy()
        assert node.url.startswith("http://127.0.0.1:")
        # The token is the node's alone: not in its arguments (which `ps` shows) ...
        assert node._process is not None
        cmdline = Path(f"/proc/{node._process.pid}/cmdline").read_bytes()
        assert node.token.encode() not in cmdline
        assert b"--token-file\x00-\x00" in cmdline
        # ... nor in the operator's token store.
        listed = subprocess.run(
            [spear_bin, "token", "list", "--json"], env=env, capture_output=True, text=True, check=True
        )
        assert json.loads(listed.stdout) == []
        # It is required: without it, or with another, the node answers 401.
        for headers in ({}, {"Authorization": "Bearer " + "x" * 43}):
            answer = httpx2.post(f"{node.url}/mcp/sessions", json={}, headers=headers)
            assert answer.status_code == 401, answer.text
        # The positive control: with it, a session is made.
        answer = httpx2.post(f"{node.url}/mcp/sessions", json={}, headers={"Authorization": f"Bearer {node.token}"})
        assert answer.status_code == 201, answer.text
    finally:
        node.stop()
    pid = node._process.pid
    assert not node.running
    assert not Path(f"/proc/{pid}").exists()
    assert not node.healthy(timeout=1)
    node.stop()  # a second stop does nothing


def test_a_node_that_cannot_start_says_why(spear_bin: str, env: dict[str, str], tmp_path: Path) -> None:
    with pytest.raises(spear.NodeError, match="could not be started") as raised:
        spear.Node(tmp_path / "missing", spear=spear_bin, env=env)
    assert "missing" in str(raised.value)
    with pytest.raises(spear.NodeError, match="not an executable spear binary"):
        spear.Node(tmp_path, spear=tmp_path / "nothing-here")
    with pytest.raises(ValueError, match="mode"):
        spear.Node(tmp_path, mode="yolo", spear=spear_bin)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="32"):
        spear.Node(tmp_path, token="short", spear=spear_bin)


def test_an_attached_node_serves_sessions_and_is_not_stopped(node: spear.Node) -> None:
    attached = spear.Node.attach(node.url + "/mcp", node.token)
    assert attached.url == node.url and not attached.started
    with spear.Session(attached) as s:
        assert s.read_file("README.md").stdout.endswith("readme\n")
    attached.stop()
    assert node.running and attached.running
    # The token from the environment, or a clear error without one.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SPEAR_TOKEN", node.token)
        assert spear.Node.attach(node.url).token == node.token
        patch.delenv("SPEAR_TOKEN")
        with pytest.raises(ValueError, match="SPEAR_TOKEN"):
            spear.Node.attach(node.url)


def test_a_node_ends_every_session_when_it_stops(
    spear_bin: str, env: dict[str, str], workspace: Path, template: Path
) -> None:
    node = spear.Node(workspace, templates=[template], mode="auto", spear=spear_bin, env=env)
    s = spear.Session(node, template="repo")
    job = s.call("terminal", {"command": "sleep 317", "background": True})
    assert job.ok and job.job is not None, job
    assert _sleepers() != "", "the job is not running"
    copy = Path(s.workspace or "")
    assert copy.is_dir()
    node.stop()
    # The session's copy is unmounted and removed, and no process of it is left.
    assert not copy.exists()
    assert _sleepers() == "", "a job of the session outlived the node"
    with pytest.raises(spear.TransportError, match="has ended"):
        s.read_file("notes.txt")
    s.close()  # the node is gone: closing still ends cleanly


def test_a_node_started_by_a_process_stops_when_the_process_exits(
    spear_bin: str, env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    script = tmp_path / "child.py"
    script.write_text(
        "import sys, spear\n"
        f"node = spear.Node({str(workspace)!r}, spear={spear_bin!r})\n"
        "print(node._process.pid, flush=True)\n"
    )
    out = subprocess.run(
        [sys.executable, str(script)], check=False, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    pid = int(out.stdout.split()[0])
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists(), "the node outlived the process that started it"


def _sleepers() -> str:
    """The pids of the test's background job (`sleep 317`) on this machine."""
    out = subprocess.run(["pgrep", "-x", "-f", "sleep 317"], capture_output=True, text=True, check=False)
    return out.stdout.strip()
