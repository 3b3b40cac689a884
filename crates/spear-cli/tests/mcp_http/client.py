"""Drives `spear mcp --listen` with the Python MCP SDK's streamable HTTP client.

Reads a JSON config on stdin: {"url": URL, "token": TOKEN, "generation": "legacy" | "modern",
"calls": [{"tool": NAME, "args": {...}}, ...], "cafile": PEM (optional: trust this certificate
for https)} and prints one JSON object: the protocol version
negotiated and each call's structured result (or the protocol error). "legacy" negotiates
2025-11-25 through initialize (one MCP session, one spear session); "modern" lets the SDK choose
(2026-07-28, stateless).
"""

import json
import ssl
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

MODE = {"legacy": "legacy", "modern": "auto"}


async def main(config: dict) -> dict:
    headers = {"Authorization": f"Bearer {config['token']}"}
    out: dict = {"results": []}
    verify = ssl.create_default_context(cafile=config["cafile"]) if "cafile" in config else True
    async with httpx2.AsyncClient(headers=headers, timeout=60.0, verify=verify) as http:
        transport = streamable_http_client(config["url"], http_client=http)
        async with Client(transport, mode=MODE[config["generation"]]) as client:
            out["protocol"] = client.session.protocol_version
            for step in config["calls"]:
                try:
                    with anyio.fail_after(60):
                        result = await client.call_tool(step["tool"], step["args"])
                    out["results"].append(result.structured_content)
                except MCPError as e:
                    out["results"].append({"protocol_error": {"code": e.error.code, "message": e.error.message}})
    return out


if __name__ == "__main__":
    print(json.dumps(anyio.run(main, json.load(sys.stdin))))
