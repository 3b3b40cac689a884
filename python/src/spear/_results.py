"""A tool call's result as spear returns it (the envelope of every call), typed.

`Result.ok` is true only when the call happened exactly as asked. Anything else carries its
`status`, and a refusal its `rule` (the stable name of the rule that refused) and `reason` (in
words, with what to do).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._errors import ProtocolError


class Status(enum.StrEnum):
    """How a call ended."""

    OK = "ok"
    """It happened as asked (a command ran and exited 0)."""
    DENIED = "denied"
    """A rule refused it: nothing ran and nothing was written. `Result.rule` names the rule."""
    CANCELLED = "cancelled"
    """It was cancelled (or an approval never came): nothing ran, or its whole tree was killed."""
    INVALID_PATH = "invalid_path"
    """A path is outside the workspace or cannot be resolved inside it."""
    NOT_FOUND = "not_found"
    """What it names does not exist (a file, a program, a job)."""
    TIMEOUT = "timeout"
    """The command ran past its time and its whole tree was killed."""
    FAILED = "failed"
    """It ran and failed (a non-zero exit, a tool error, bad arguments): `exit_code`, `stderr`
    and `reason` say how."""


@dataclass(frozen=True)
class Guarantees:
    """What the sandbox enforced while a command ran (`"process_boundary"`, `"write_boundary"`,
    `"read_boundary"`, `"environment_scrubbed"`, `"network_closed"`, `"resource_limits"`,
    `"target_policy"`, ...), and the limits' mechanism (`"cgroup-v2"`, ...)."""

    enforced: frozenset[str]
    limits: str | None = None

    def __contains__(self, guarantee: object) -> bool:
        return guarantee in self.enforced


@dataclass(frozen=True)
class Job:
    """A background job a `terminal` call started: its id and state."""

    id: str
    state: str


@dataclass(frozen=True)
class Action:
    """One call a session made, as timed: what `Session.actions` lists."""

    tool: str
    status: Status
    elapsed_s: float
    """The round trip from the client."""
    duration_ms: int
    """The node's own time for it."""


_REQUIRED = ("status", "stdout", "stderr", "changed_paths")


@dataclass(frozen=True)
class Result:
    """One call's result. Equal to what the node returned, plus the round trip as this client
    measured it (`elapsed_s`)."""

    tool: str
    status: Status
    exit_code: int | None
    stdout: str
    stderr: str
    changed_paths: tuple[str, ...]
    reason: str | None
    rule: str | None
    command_class: str | None
    """The command's class (`"READ_ONLY"`, `"WORKSPACE_MUTATING"`, ...), for `terminal`."""
    duration_ms: int
    """How long the node took (the command's run, for `terminal`)."""
    truncated: bool
    """The output was longer than the preview: `output_ref` names the rest."""
    guarantees: Guarantees | None
    output_ref: str | None = None
    job: Job | None = None
    elapsed_s: float = 0.0
    """The call's round trip from this client, in seconds."""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The envelope as the node sent it."""

    @property
    def ok(self) -> bool:
        """The call happened exactly as asked."""
        return self.status is Status.OK

    @property
    def refused(self) -> bool:
        """A rule refused the call (`rule` names it): nothing ran and nothing was written."""
        return self.status is not Status.OK and self.rule is not None

    @property
    def exit_status(self) -> int:
        """The exit status `spear exec` gives for this result, for callers that want one number:
        the command's own when it ran; else 124 for a timeout, 127 for not found, 125 for a
        sandbox or harness failure, 126 for a refusal, a cancellation or an invalid path."""
        if self.exit_code is not None:
            return self.exit_code
        return {
            Status.TIMEOUT: 124,
            Status.NOT_FOUND: 127,
            Status.FAILED: 125,
        }.get(self.status, 126)

    @property
    def output(self) -> str:
        """stdout, then stderr if there is any."""
        return self.stdout + self.stderr if self.stderr else self.stdout

    @classmethod
    def from_envelope(cls, envelope: Mapping[str, Any], *, tool: str, elapsed_s: float = 0.0) -> Result:
        """The result of a node's envelope (`structuredContent`).

        Raises:
            ProtocolError: the envelope lacks a field every result has, or names a status this
                package does not know (a newer node: upgrade the package).
        """
        missing = [k for k in _REQUIRED if k not in envelope]
        if missing:
            raise ProtocolError(f"the node's result has no {', '.join(missing)}: {dict(envelope)!r:.300}")
        try:
            status = Status(envelope["status"])
        except ValueError:
            raise ProtocolError(
                f"the node answered status {envelope['status']!r}, which this package does not know: upgrade it"
            ) from None
        guarantees = envelope.get("guarantees")
        job = envelope.get("job")
        return cls(
            tool=str(envelope.get("tool") or tool),
            status=status,
            exit_code=envelope.get("exit_code"),
            stdout=envelope["stdout"] or "",
            stderr=envelope["stderr"] or "",
            changed_paths=tuple(envelope["changed_paths"] or ()),
            reason=envelope.get("reason"),
            rule=envelope.get("rule"),
            command_class=envelope.get("class"),
            duration_ms=int(envelope.get("duration_ms") or 0),
            truncated=bool(envelope.get("truncated")),
            guarantees=(
                Guarantees(frozenset(guarantees.get("enforced") or ()), guarantees.get("limits"))
                if isinstance(guarantees, Mapping)
                else None
            ),
            output_ref=envelope.get("output_ref"),
            job=Job(str(job["id"]), str(job["state"])) if isinstance(job, Mapping) else None,
            elapsed_s=elapsed_s,
            raw=dict(envelope),
        )
