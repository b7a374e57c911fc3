"""Drives `axe mcp serve` with the official MCP Python SDK 2.x (`mcp`
2.3.0, target/mcp/venv2, pinned by scripts/mcp_servers.sh), whose client
speaks both eras: in its automatic mode it probes `server/discover` and
speaks the stateless revision 2026-07-28 to a server that offers it; in
`legacy` mode it makes the `initialize` handshake.

    client2.py MODE ACTION TARGET [AXE_ARGS...]

MODE: auto or legacy. TARGET: an http:// URL (streamable HTTP), else the
axe binary, started over stdio with `mcp serve AXE_ARGS` and the
environment whole. Prints one JSON object. ACTION:
  list                 the protocol agreed, the server, the tools
  call:TOOL:ARGS       one call (ARGS a JSON object); its result
  progress:TOOL:ARGS   one call with a progress callback; result, messages
  cancel:TOOL:ARGS     a call abandoned once its run reached a tool (over
                       HTTP the SDK drops its request); whether the
                       command ($AXE_TEST_SLEEP) ran before and after
"""
import json
import os
import sys

import anyio
from mcp import Client, StdioServerParameters

mode, action, target, rest = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
kind, _, spec = action.partition(":")
tool, _, args = spec.partition(":")
args = json.loads(args) if args else {}


def result(r):
    d = r.model_dump(by_alias=True, exclude_none=True)
    return {
        "text": [c["text"] for c in d.get("content", []) if c.get("type") == "text"],
        "isError": d.get("isError"),
        "structured": d.get("structuredContent"),
        "meta": d.get("_meta"),
    }


def sleeping(secs):
    """Whether a `sleep secs` runs (the cancel test's command)."""
    wanted = f"sleep\0{secs}\0".encode()
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read() == wanted:
                    return True
        except OSError:
            pass
    return False


async def cancel(c, out):
    marker = os.environ.get("AXE_TEST_SLEEP", "")
    reached = anyio.Event()

    async def on_progress(progress, total, message):
        if message and "tool run_command" in message:
            reached.set()

    answered = {}

    async def call():
        answered["result"] = result(await c.call_tool(tool, args, progress_callback=on_progress))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        with anyio.fail_after(30):
            await reached.wait()
        await anyio.sleep(0.5)
        out["sleeping_before"] = sleeping(marker)
        tg.cancel_scope.cancel()
    with anyio.move_on_after(10):
        while sleeping(marker):
            await anyio.sleep(0.05)
    out["sleeping_after"] = sleeping(marker)
    out["answered"] = "result" in answered
    # The server still serves after it.
    out["tools_after"] = len((await c.list_tools()).tools)


async def main():
    if target.startswith("http"):
        server = target
    else:
        server = StdioServerParameters(command=target, args=["mcp", "serve", *rest], env=dict(os.environ))
    async with Client(server, mode=mode) as c:
        out = {"protocol": c.protocol_version, "server": c.server_info.name if c.server_info else None}
        if kind == "list":
            tools = await c.list_tools()
            out["tools"] = [t.model_dump(by_alias=True, exclude_none=True) for t in tools.tools]
        elif kind == "call":
            out["result"] = result(await c.call_tool(tool, args))
        elif kind == "progress":
            seen = []

            async def on_progress(progress, total, message):
                seen.append({"progress": progress, "message": message})

            out["result"] = result(await c.call_tool(tool, args, progress_callback=on_progress))
            out["progress"] = seen
        elif kind == "cancel":
            await cancel(c, out)
        print(json.dumps(out))
        sys.stdout.flush()


try:
    anyio.run(main)
except BaseException as e:  # noqa: BLE001 - the test reads what failed
    print(json.dumps({"error": repr(e)}))
