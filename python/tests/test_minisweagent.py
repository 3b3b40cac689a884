"""The mini-swe-agent adapter: mini-swe-agent's default agent, run end to end on a small task
with the harness's own deterministic model, every command through a spear session on a copy of
the template."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped]
from minisweagent import package_dir
from minisweagent.agents.default import DefaultAgent
from minisweagent.environments import get_environment
from minisweagent.models.test_models import DeterministicModel, make_output

from spear.minisweagent import SpearEnvironment


def _step(command: str) -> dict[str, object]:
    return make_output(f"THOUGHT: next.\n\n```mswea_bash_command\n{command}\n```", [{"command": command}])


def test_the_default_agent_solves_a_task_with_every_command_through_spear(
    spear_bin: str, env: dict[str, str], template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", env["XDG_STATE_HOME"])  # the node's state: the test's own
    before = (template / "src" / "app.py").read_text()
    environment = get_environment(
        {
            "environment_class": "spear.minisweagent.SpearEnvironment",
            "template": str(template),
            "spear": spear_bin,
            "timeout": 30,
        }
    )
    assert isinstance(environment, SpearEnvironment)
    model = DeterministicModel(  # type: ignore[no-untyped-call]
        outputs=[
            _step("cat src/app.py"),
            _step("sed -i 's/return 41/return 42/' src/app.py && cat src/app.py"),
            _step("sudo reboot"),
            _step("python3 -B -c 'import src.app as a; print(a.answer())'"),
            _step("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git --version >/dev/null 2>&1; true"),
        ]
    )
    agent_config = yaml.safe_load(Path(package_dir / "config" / "default.yaml").read_text())["agent"]
    agent = DefaultAgent(model, environment, **agent_config)
    try:
        outcome = agent.run("Make answer() return 42.")
        assert outcome["exit_status"] == "Submitted", outcome
        observations = [m["content"] for m in agent.messages if m["role"] == "user"][1:]
        assert "return 41" in observations[0]
        assert "return 42" in observations[1]
        # A refusal is an observation with spear's reason, and the agent went on.
        assert "<returncode>126</returncode>" in observations[2] and "privilege" in observations[2]
        assert "42" in observations[3]
        # Every command ran in the spear session: its calls, in order, and the copy changed.
        assert [a.tool for a in environment.session.actions] == ["terminal"] * 5
        patch = environment.diff()
        assert "+    return 42" in patch
    finally:
        environment.cleanup()
    assert (template / "src" / "app.py").read_text() == before
