"""An MCP server of the official Python SDK 2.x (mcp==2.3.0, target/mcp/venv2)
that speaks only the stateless revision 2026-07-28: `initialize` is refused
with -32022 naming that one version. It records what it receives, a JSON
line each, to the file $AXE_TEST_RECORD: every request's method and `_meta`
and, over HTTP, each POST's MCP headers. Its tools: `echo`, and `confirm`,
whose result is `input_required` (an elicitation axe cannot answer), and
`strict`, refused with -32602 (over HTTP, a 400 carrying the error), and
`where`, whose `region` is mirrored in an `Mcp-Param-Region` header.

    stateless_server.py stdio
    stateless_server.py http PORT      (streamable HTTP at /mcp)

With $AXE_TEST_SLOW_START (seconds), it sleeps that long before it reads
its first message (a server slow to start).
"""

import json
import os
import sys
from typing import Annotated

from pydantic import Field

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

RECORD = os.environ["AXE_TEST_RECORD"]


def record(entry):
    with open(RECORD, "a") as f:
        f.write(json.dumps(entry) + "\n")


async def recorder(ctx, call_next):
    params = dict(ctx.params or {})
    record({"method": ctx.method, "meta": params.get("_meta"), "name": params.get("name")})
    if ctx.method == "initialize":
        raise MCPError(
            code=-32022,
            message="Unsupported protocol version: this server speaks only 2026-07-28",
            data={"supported": ["2026-07-28"], "requested": params.get("protocolVersion")},
        )
    if ctx.method == "tools/call" and params.get("name") == "strict":
        raise MCPError(code=-32602, message="strict takes no such arguments")
    if ctx.method == "tools/call" and params.get("name") == "confirm":
        return {
            "resultType": "input_required",
            "inputRequests": {
                "ok": {
                    "method": "elicitation/create",
                    "params": {
                        "mode": "form",
                        "message": "Really delete the branch?",
                        "requestedSchema": {"type": "object", "properties": {"yes": {"type": "boolean"}}},
                    },
                }
            },
            "requestState": "opaque-state",
        }
    return await call_next(ctx)


mcp = MCPServer("stateless-test", version="2.3.0-test", middleware=[recorder])


@mcp.tool()
def echo(message: str) -> str:
    """Echoes the message back."""
    return "Echo: " + message


@mcp.tool()
def where(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
    """Mirrors `region` in an Mcp-Param-Region header, which the server checks."""
    return "in " + region


@mcp.tool()
def strict(n: int) -> str:
    """Refuses every call with invalid params (-32602, HTTP 400 over HTTP)."""
    return "never reached"


@mcp.tool()
def confirm(action: str) -> str:
    """Asks the user to confirm the action first."""
    return "never reached"


def headers_recorded(app):
    async def wrapped(scope, receive, send):
        if scope["type"] == "http":
            seen = {}
            for k, v in scope["headers"]:
                k = k.decode("latin-1")
                if k.startswith("mcp-"):
                    seen[k] = v.decode("latin-1")
            record({"http": scope["method"], "headers": seen})
        await app(scope, receive, send)

    return wrapped


if sys.argv[1] == "stdio":
    import time

    time.sleep(float(os.environ.get("AXE_TEST_SLOW_START", "0")))
    mcp.run("stdio")
else:
    import uvicorn

    app = mcp.streamable_http_app(stateless_http=True)
    uvicorn.run(headers_recorded(app), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
