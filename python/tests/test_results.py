"""`spear.Result` from a node's envelope: every field typed, and an envelope that is not spear's
an error rather than a guess."""

from __future__ import annotations

from typing import Any

import pytest

from spear import Guarantees, ProtocolError, Result, Status

ENVELOPE: dict[str, Any] = {
    "tool": "terminal",
    "status": "denied",
    "exit_code": None,
    "stdout": "",
    "stderr": "",
    "changed_paths": [],
    "reason": "SAFE mode refuses it",
    "rule": "mode_forbids",
    "class": "WORKSPACE_MUTATING",
    "duration_ms": 1,
    "truncated": False,
    "guarantees": None,
    "escaped": None,
}


def test_an_envelope_becomes_a_typed_result() -> None:
    r = Result.from_envelope(ENVELOPE, tool="terminal", elapsed_s=0.5)
    assert r.status is Status.DENIED and r.refused and not r.ok
    assert r.rule == "mode_forbids" and r.command_class == "WORKSPACE_MUTATING"
    assert r.changed_paths == () and r.elapsed_s == 0.5 and r.raw["class"] == "WORKSPACE_MUTATING"
    ran = Result.from_envelope(
        {
            **ENVELOPE,
            "status": "ok",
            "rule": None,
            "exit_code": 0,
            "stdout": "a",
            "stderr": "b",
            "changed_paths": ["x"],
            "guarantees": {"enforced": ["write_boundary"], "limits": "cgroup-v2"},
            "job": {"id": "job-1", "state": "running"},
            "output_ref": "r1",
        },
        tool="terminal",
    )
    assert ran.ok and not ran.refused and ran.output == "ab" and ran.changed_paths == ("x",)
    assert ran.guarantees == Guarantees(frozenset({"write_boundary"}), "cgroup-v2")
    assert "write_boundary" in ran.guarantees and ran.job is not None and ran.job.id == "job-1"
    assert str(Status.TIMEOUT) == "timeout"
    # A failure without a rule is no refusal.
    failed = Result.from_envelope({**ENVELOPE, "status": "failed", "rule": None, "exit_code": 2}, tool="terminal")
    assert not failed.refused and failed.exit_code == 2 and failed.exit_status == 2
    # Without an exit code, `spear exec`'s status for each way a call ends.
    for status, code in [
        ("denied", 126),
        ("cancelled", 126),
        ("invalid_path", 126),
        ("timeout", 124),
        ("not_found", 127),
        ("failed", 125),
    ]:
        assert Result.from_envelope({**ENVELOPE, "status": status}, tool="terminal").exit_status == code, status


@pytest.mark.parametrize(
    ("envelope", "words"),
    [
        ({k: v for k, v in ENVELOPE.items() if k != "status"}, "no status"),
        ({k: v for k, v in ENVELOPE.items() if k not in ("stdout", "stderr")}, "no stdout, stderr"),
        ({**ENVELOPE, "status": "exploded"}, "does not know"),
    ],
)
def test_an_envelope_that_is_not_spears_is_an_error(envelope: dict[str, object], words: str) -> None:
    with pytest.raises(ProtocolError, match=words):
        Result.from_envelope(envelope, tool="terminal")
