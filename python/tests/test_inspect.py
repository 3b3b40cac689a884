"""The Inspect AI adapter: an Inspect eval whose mock model calls the bash tool, with
`sandbox="spear"` resolved through Inspect's plugin entry point; every call runs in a spear
session of the sample's own, on a copy of the template."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import Score, Target, accuracy, scorer
from inspect_ai.solver import TaskState, generate, use_tools
from inspect_ai.tool import bash
from inspect_ai.util import SandboxEnvironmentSpec, SandboxUserUnsupportedError, sandbox


def test_the_provider_is_registered_through_inspects_entry_point() -> None:
    points = importlib.metadata.entry_points(group="inspect_ai")
    assert any(p.name == "spear" and p.value == "spear.inspect_sandbox" for p in points), list(points)


@scorer(metrics=[accuracy()])
def spear_checks():  # type: ignore[no-untyped-def]
    """Reads back through the sandbox what the tool calls did, and what spear refused."""

    async def score(state: TaskState, target: Target) -> Score:
        box = sandbox()
        written = await box.read_file("out.txt")
        await box.write_file("bytes.bin", b"\x00\xffspear")
        raw = await box.read_file("bytes.bin", text=False)
        piped = await box.exec(["cat"], input="through stdin")
        refused = await box.exec(["sudo", "id"])
        with pytest.raises(FileNotFoundError):
            await box.read_file("missing.txt")
        with pytest.raises(SandboxUserUnsupportedError):
            await box.exec(["id"], user="somebody-else")
        own = await box.exec(["true"], user=str(os.geteuid()))
        ok = (
            written == "hello from spear\n"
            and raw == b"\x00\xffspear"
            and piped.stdout == "through stdin"
            and refused.returncode == 126
            and "privilege" in refused.stderr
            and own.success
        )
        return Score(value=1 if ok else 0, explanation=repr((written, raw, piped, refused)))

    return score


def test_an_eval_with_the_mock_model_runs_its_bash_calls_through_spear(
    spear_bin: str, env: dict[str, str], template: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from spear.inspect_sandbox import SpearSandboxConfig

    monkeypatch.setenv("XDG_STATE_HOME", env["XDG_STATE_HOME"])
    outputs = [
        ModelOutput.for_tool_call("mockllm/model", "bash", {"command": "echo hello from spear > out.txt; ls"}),
        ModelOutput.for_tool_call("mockllm/model", "bash", {"command": "cat notes.txt; echo $$ > /tmp/pid"}),
        ModelOutput.from_content("mockllm/model", "done"),
    ]
    for output in outputs:
        # Usage given: the mock model then counts no tokens, which would fetch tiktoken's
        # encoding from the internet.
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    model = get_model("mockllm/model", custom_outputs=outputs)
    config = SpearSandboxConfig(template=str(template), workspace=str(workspace), spear=spear_bin)
    task = Task(
        dataset=[Sample(input="Write out.txt.", target="done")],
        solver=[use_tools([bash(timeout=30)]), generate()],
        scorer=spear_checks(),
        sandbox=SandboxEnvironmentSpec("spear", config),
    )
    logs = eval(task, model=model, log_dir=str(workspace.parent / "logs"), display="none")
    log = logs[0]
    assert log.status == "success", log.error
    assert log.samples is not None
    sample = log.samples[0]
    assert sample.scores is not None
    score = next(iter(sample.scores.values()))
    assert score.value == 1, score.explanation
    tool_outputs = [m.text for m in sample.messages if m.role == "tool"]
    assert "out.txt" in tool_outputs[0] and "notes.txt" in tool_outputs[0]
    assert tool_outputs[1].startswith("one\ntwo\n")
    # The template and the node's workspace are untouched: the sample worked in its own copy.
    assert not (template / "out.txt").exists() and not (workspace / "out.txt").exists()


EVAL_BY_NAME = """
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import bash

outputs = [
    ModelOutput.for_tool_call("mockllm/model", "bash", {"command": "cat README.md; echo ran > ran.txt"}),
    ModelOutput.from_content("mockllm/model", "done"),
]
for output in outputs:
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
task = Task(dataset=[Sample(input="Read the README.")], solver=[use_tools([bash()]), generate()], sandbox="spear")
log = eval(task, model=get_model("mockllm/model", custom_outputs=outputs), log_dir="../logs", display="none")[0]
assert log.status == "success", log.error
tool = [m.text for m in log.samples[0].messages if m.role == "tool"]
print(tool[0])
"""


def test_sandbox_spear_by_name_alone_finds_the_provider_and_serves_the_current_directory(
    spear_bin: str, env: dict[str, str], workspace: Path
) -> None:
    """No import of spear in the eval: the name resolves through the entry point, and with no
    configuration a node is started on the current directory (in AUTO)."""
    out = subprocess.run(
        [sys.executable, "-c", EVAL_BY_NAME],
        cwd=workspace,
        env={**env, "SPEAR_BIN": spear_bin},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "readme" in out.stdout, out.stdout
    assert (workspace / "ran.txt").read_text() == "ran\n"
