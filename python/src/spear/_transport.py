"""The HTTP layer under the MCP SDK's client: a failure becomes an answer.

The SDK's streamable HTTP transport raises a connection error inside its own task group, which
cancels the call waiting on it and surfaces only as an exception group when the client closes; a
`404` for a session that is gone becomes a JSON-RPC error that says only "Not Found", and a
`429` or a `503` "Server returned an error response". None tells a caller what happened.
`AnsweringTransport` wraps the HTTP transport so that each is the JSON-RPC error answer of the
request that met it, with a code of its own and the words that explain it, and the client stays
usable (a node back at the same address is reached again).
"""

from __future__ import annotations

import json

import httpx2

#: The node could not be reached, or dropped the connection, or sent nothing in time.
CONNECTION_FAILED = -32090
#: The session named in the URL does not exist on the node (`404` from spear).
SESSION_LOST = -32091
#: The node answered an HTTP error that is not a JSON-RPC error (a limit, its shutdown, ...).
NODE_REFUSED = -32092


def _answer(code: int, message: str, request: httpx2.Request, status: int) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return httpx2.Response(
        status,
        headers={"content-type": "application/json"},
        content=json.dumps(body).encode(),
        request=request,
    )


class AnsweringTransport(httpx2.AsyncBaseTransport):
    """`inner`, with a connection failure answered `502`, and an HTTP error without a JSON-RPC
    error in it rewritten, each as a JSON-RPC error: `CONNECTION_FAILED`, `SESSION_LOST` for a
    `404` (spear's answer for a session it does not have), `NODE_REFUSED` for the rest."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            response = await self._inner.handle_async_request(request)
        except httpx2.TransportError as error:
            return _answer(CONNECTION_FAILED, f"{type(error).__name__}: {error}", request, 502)
        # Only the MCP requests of a session: `POST /mcp/sessions` (making one) is read whole,
        # status and headers, by the session itself.
        if response.status_code < 400 or request.method != "POST" or request.url.path.endswith("/mcp/sessions"):
            return response
        # spear's own refusals (`{"error": ..., "error_description": ...}`), and anything else
        # that is not a JSON-RPC error: said in a JSON-RPC error of the request.
        await response.aread()
        try:
            body = json.loads(response.content)
        except ValueError:
            body = None
        if isinstance(body, dict) and "jsonrpc" in body:
            return response
        said = body.get("error_description") if isinstance(body, dict) else None
        said = str(said or response.text.strip()[:300] or response.reason_phrase)
        await response.aclose()
        if response.status_code == 404:
            return _answer(SESSION_LOST, said, request, 404)
        return _answer(NODE_REFUSED, f"HTTP {response.status_code}: {said}", request, response.status_code)

    async def aclose(self) -> None:
        await self._inner.aclose()
