"""`spear.Session` and `spear.AsyncSession` against a real node: every method, refusals as
results, a node restarted under a session, and what a session leaves behind (nothing)."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from conftest import tree

import spear
from spear import Status


def test_every_method_works_on_a_template_session_and_the_template_never_changes(
    node: spear.Node, template: Path
) -> None:
    before = tree(template)
    with spear.Session(node, template="repo") as s:
        assert s.id and s.url and s.url.startswith(node.url)
        copy = Path(s.workspace or "")
        assert copy != template and copy.is_dir()

        r = s.read_file("src/app.py")
        assert r.ok and r.tool == "read_file" and "return 41" in r.stdout
        assert r.exit_code == 0 and r.rule is None and not r.refused and r.elapsed_s > 0

        r = s.write_file("src/new.py", "print('new')\n")
        assert r.ok and r.changed_paths == ("src/new.py",), r

        r = s.patch(
            "*** Begin Patch\n*** Update File: src/app.py\n@@\n def answer():\n"
            "-    return 41\n+    return 42\n*** End Patch\n"
        )
        assert r.ok and "src/app.py" in r.changed_paths, r

        r = s.search("return 4[0-9]")
        assert r.ok and "src/app.py" in r.stdout and "return 42" in r.stdout, r
        r = s.search("ONE", path="notes.txt", case_insensitive=True)
        assert r.ok and "one" in r.stdout, r

        r = s.delete("notes.txt")
        assert r.ok and r.changed_paths == ("notes.txt",), r

        r = s.run("python3 -c 'import src.app as a; print(a.answer())' && ls", timeout=60)
        assert r.ok and r.stdout.startswith("42\n") and "notes.txt" not in r.stdout, r
        assert r.command_class is not None and r.duration_ms >= 0
        assert r.guarantees is not None and "write_boundary" in r.guarantees
        assert "process_boundary" in r.guarantees.enforced

        patch = s.diff()
        assert "src/new.py" in patch and "+    return 42" in patch and "notes.txt" in patch
    # The template is as it was; the copy is gone with the session.
    assert tree(template) == before
    assert not copy.exists()
    # The patch is the session's work: applied to a fresh copy it gives the same files.
    fresh = template.parent / "fresh"
    subprocess.run(["cp", "-a", str(template), str(fresh)], check=True)
    subprocess.run(["git", "apply", "-"], input=patch.encode(), cwd=fresh, check=True)
    assert (fresh / "src" / "app.py").read_text().endswith("return 42\n")
    assert (fresh / "src" / "new.py").exists() and not (fresh / "notes.txt").exists()


def test_a_workspace_session_writes_the_workspace_and_has_no_patch(node: spear.Node, workspace: Path) -> None:
    with spear.Session(node) as s:
        assert s.workspace == str(workspace)
        r = s.run("echo made > made.txt")
        assert r.ok and r.changed_paths == ("made.txt",)
        assert (workspace / "made.txt").read_text() == "made\n"
        with pytest.raises(spear.SpearError, match="no patch"):
            s.diff()
    with spear.Session(node, workspace=workspace / "src") as s:
        assert s.workspace == str(workspace / "src")
        assert s.read_file("app.py").ok
        r = s.read_file("../README.md")
        assert not r.ok and r.status is Status.INVALID_PATH, r


def test_refusals_failures_and_timeouts_are_results(spear_bin: str, env: dict[str, str], workspace: Path) -> None:
    before = tree(workspace)
    with spear.Node(workspace, mode="safe", spear=spear_bin, env=env) as node, spear.Session(node) as s:
        r = s.write_file("x.txt", "x")
        assert r.status is Status.DENIED and r.refused and r.rule and r.reason, r
        r = s.run("echo x > x.txt")
        assert r.status is Status.DENIED and r.rule == "mode_forbids" and "SAFE" in (r.reason or ""), r
        r = s.run("sudo id")
        assert r.refused and r.rule == "privilege_change", r
        r = s.delete("README.md")
        assert r.refused, r
        r = s.read_file("/etc/shadow")
        assert not r.ok and r.status is not Status.OK, r
        r = s.read_file("nope.txt")
        assert r.status is Status.NOT_FOUND, r
        # Not refusals: a command that fails, and one that runs out of time.
        r = s.run("exit 3")
        assert r.status is Status.FAILED and r.exit_code == 3 and not r.refused, r
        start = time.monotonic()
        r = s.run("sleep 30", timeout=1)
        assert r.status is Status.TIMEOUT and not r.refused, r
        assert time.monotonic() - start < 15
        # The positive control: a read runs.
        assert s.run("cat README.md").stdout == "readme\n"
    assert tree(workspace) == before


def test_a_session_the_node_will_not_make_is_an_exception_saying_why(
    spear_bin: str, env: dict[str, str], workspace: Path, template: Path
) -> None:
    with spear.Node(workspace, templates=[template], mode="auto", max_sessions=1, spear=spear_bin, env=env) as node:
        with pytest.raises(spear.SessionRefused) as refused:
            spear.Session(node, template="not-served")
        assert refused.value.status == 403 and "not-served" in str(refused.value)
        with spear.Session(node):
            with pytest.raises(spear.SessionRefused) as full:
                spear.Session(node)
            assert full.value.status == 429 and full.value.retry_after is not None
        # Its place was given back.
        with spear.Session(node) as s:
            assert s.read_file("README.md").ok
        wrong = spear.Node.attach(node.url, "y" * 43)
        with pytest.raises(spear.SessionRefused) as unauthorized:
            spear.Session(wrong)
        assert unauthorized.value.status == 401


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_node_restarted_under_a_session_is_a_clear_exception_and_no_hang(
    spear_bin: str, env: dict[str, str], workspace: Path
) -> None:
    listen = f"127.0.0.1:{_free_port()}"
    token = "t" * 43
    first = spear.Node(workspace, mode="auto", listen=listen, token=token, spear=spear_bin, env=env)
    s = spear.Session(first)
    assert s.read_file("README.md").ok
    # A call in flight when the node goes: it ends at once, not after the command's time.
    failed: list[BaseException] = []

    def long_call() -> None:
        try:
            s.run("sleep 120", timeout=300)
        except BaseException as e:
            failed.append(e)

    caller = threading.Thread(target=long_call)
    caller.start()
    time.sleep(1.5)
    start = time.monotonic()
    first.stop()
    caller.join(timeout=30)
    assert not caller.is_alive(), "a call hung after its node ended"
    assert time.monotonic() - start < 30
    assert failed and isinstance(failed[0], spear.TransportError), failed
    # Stopped: the next call fails at once, saying the node ended.
    start = time.monotonic()
    with pytest.raises(spear.TransportError, match="has ended"):
        s.read_file("README.md")
    assert time.monotonic() - start < 5
    # Restarted at the same address with the same token: the session is not there any more.
    second = spear.Node(workspace, mode="auto", listen=listen, token=token, spear=spear_bin, env=env)
    try:
        start = time.monotonic()
        with pytest.raises(spear.SessionLost, match="gone"):
            s.read_file("README.md")
        assert time.monotonic() - start < 5
        s.close()
        # A new session on the new node works (the positive control).
        with spear.Session(second) as again:
            assert again.read_file("README.md").stdout.endswith("readme\n")
    finally:
        second.stop()


def test_closing_a_session_ends_it_on_the_node(node: spear.Node) -> None:
    s = spear.Session(node, template="repo")
    url, copy = s.url, Path(s.workspace or "")
    assert copy.is_dir()
    job = s.call("terminal", {"command": "sleep 331", "background": True})
    assert job.ok and job.job is not None
    s.close()
    s.close()
    headers = {"Authorization": f"Bearer {node.token}"}
    assert httpx2.get(f"{url}/patch", headers=headers).status_code == 404
    assert not copy.exists()
    left = subprocess.run(["pgrep", "-x", "-f", "sleep 331"], capture_output=True, text=True, check=False)
    assert left.stdout.strip() == ""
    with pytest.raises(spear.SpearError, match="closed"):
        s.read_file("notes.txt")


def test_the_async_session_runs_calls_at_once_on_one_session(node: spear.Node, workspace: Path) -> None:
    async def main() -> None:
        async with spear.AsyncSession(node, template="repo") as s:
            results: dict[int, spear.Result] = {}

            async def one(i: int) -> None:
                results[i] = await s.run(f"sleep 0.3; echo {i} > out{i}.txt; echo {i}")

            start = time.monotonic()
            async with anyio.create_task_group() as group:
                for i in range(4):
                    group.start_soon(one, i)
            assert all(results[i].ok and results[i].stdout == f"{i}\n" for i in range(4)), results
            r = await s.read_file("out2.txt")
            assert r.ok and "2" in r.stdout
            assert (await s.write_file("a.txt", "a")).ok
            assert (await s.patch("*** Begin Patch\n*** Delete File: a.txt\n*** End Patch\n")).ok
            assert (await s.search("answer")).ok
            assert (await s.delete("notes.txt")).ok
            assert "out3.txt" in await s.diff()
            del start
        # Nothing of the template session reached the node's workspace.
        assert not (workspace / "out0.txt").exists()

    anyio.run(main)


def test_a_session_not_opened_says_so() -> None:
    node = spear.Node.attach("http://127.0.0.1:9", "z" * 43)

    async def main() -> None:
        s = spear.AsyncSession(node)
        with pytest.raises(spear.SpearError, match="not open"):
            await s.read_file("x")
        with pytest.raises(spear.TransportError, match="could not be reached"):
            await s.open()

    anyio.run(main)
    with pytest.raises(ValueError, match="not both"):
        spear.AsyncSession(node, template="a", workspace="b")


def test_a_session_made_elsewhere_is_taken_by_its_url_and_every_call_is_timed(node: spear.Node) -> None:
    headers = {"Authorization": f"Bearer {node.token}"}
    made = httpx2.post(f"{node.url}/mcp/sessions", json={"template": "repo"}, headers=headers).json()
    with spear.Session(node, url=made["url"]) as s:
        assert s.id == made["session"]
        assert s.run("echo x > x.txt").ok
        assert s.read_file("x.txt").ok
        assert s.run("exit 4").status is Status.FAILED
        assert [(a.tool, a.status) for a in s.actions] == [
            ("terminal", Status.OK),
            ("read_file", Status.OK),
            ("terminal", Status.FAILED),
        ]
        assert all(a.elapsed_s > 0 and a.duration_ms >= 0 for a in s.actions)
    # Taken, it is ended with the object.
    assert httpx2.get(f"{made['url']}/patch", headers=headers).status_code == 404
