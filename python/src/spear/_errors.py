"""What can go wrong outside a tool call's result.

A refusal, a failed command, a timeout: those are results (`spear.Result`), never exceptions.
An exception means the call did not reach a session, or its answer did not come back: the node
could not be started or reached, the session is gone, or the answer was not spear's.
"""

from __future__ import annotations


class SpearError(Exception):
    """Every error this package raises."""


class NodeError(SpearError):
    """A local node could not be started, or stopped answering: the message says why, and ends
    with what the server printed last."""


class TransportError(SpearError):
    """The node could not be reached, or answered outside the protocol (the connection was
    refused or dropped, an HTTP error, no answer within the call's time)."""


class SessionLost(TransportError):
    """The session no longer exists on the node: it was restarted, the session idled out or was
    ended, or its token was revoked. Open a new session; nothing of the old one remains."""


class SessionRefused(SpearError):
    """The node would not open a session: the credential does not grant what was asked (403),
    a limit was reached (429: try again after `retry_after` seconds), or the token is not the
    node's (401)."""

    def __init__(self, message: str, *, status: int, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class ProtocolError(SpearError):
    """The node answered, but not with a result this package understands (an MCP error, or an
    envelope without the fields every spear result has)."""

    def __init__(self, message: str, *, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code
