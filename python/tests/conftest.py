"""What the package's tests share: the spear binary, a state directory of each test's own (so
the operator's audit log and token store are never touched), a workspace and a template."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import spear

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def spear_bin() -> str:
    """`$SPEAR_BIN`, else the workspace's debug build (which `cargo build` makes)."""
    path = os.environ.get("SPEAR_BIN") or str(REPO / "target" / "debug" / "spear")
    if not os.access(path, os.X_OK):
        pytest.fail(f"no spear binary at {path}: run `cargo build -p spear-cli` or set SPEAR_BIN")
    return path


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The node's environment: this process's, with spear's state in the test's own directory."""
    state = tmp_path / "state"
    state.mkdir()
    return {**os.environ, "XDG_STATE_HOME": str(state)}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "README.md").write_text("readme\n")
    (ws / "src" / "app.py").write_text("def answer():\n    return 41\n")
    return ws


@pytest.fixture
def template(tmp_path: Path) -> Path:
    tpl = tmp_path / "repo"
    (tpl / "src").mkdir(parents=True)
    (tpl / "src" / "app.py").write_text("def answer():\n    return 41\n")
    (tpl / "notes.txt").write_text("one\ntwo\n")
    return tpl


@pytest.fixture
def node(spear_bin: str, env: dict[str, str], workspace: Path, template: Path) -> Iterator[spear.Node]:
    """An AUTO node over `workspace`, serving `template`."""
    with spear.Node(workspace, templates=[template], mode="auto", spear=spear_bin, env=env) as n:
        yield n


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root`, by relative path, with its contents."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def spear_processes() -> list[int]:
    """The pids of every `spear mcp --listen` of this machine."""
    out = subprocess.run(["pgrep", "-f", "spear mcp --listen"], capture_output=True, text=True, check=False)
    return [int(p) for p in out.stdout.split()]
