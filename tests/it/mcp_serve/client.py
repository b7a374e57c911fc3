"""Drives `axe mcp serve` over stdio with the official MCP Python SDK
(`mcp`, pinned by scripts/mcp_servers.sh), as a host would.

    client.py ACTION AXE [AXE_ARGS...]

The environment (the test's home, the fake provider's URL) is handed to
axe whole. Prints one JSON object. ACTION:
  list                 the protocol agreed, the tools with their schemas
  call:TOOL:ARGS       one call (ARGS a JSON object); its result
  progress:TOOL:ARGS   one call with a progress token; result and messages
  cancel:TOOL:ARGS     a call cancelled once its run reached a tool; whether
                       it was answered
  two:TOOL:ARGS        two calls at once; both results
"""
import json
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

action, axe, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
kind, _, spec = action.partition(":")
tool, _, args = spec.partition(":")
args = json.loads(args) if args else {}


def result(r):
    return {
        "text": [c.text for c in r.content if c.type == "text"],
        "isError": r.isError,
        "structured": r.structuredContent,
        "meta": r.meta,
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


async def main():
    params = StdioServerParameters(command=axe, args=["mcp", "serve", *rest], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            init = await s.initialize()
            out = {"protocol": init.protocolVersion, "server": init.serverInfo.name}
            if kind == "list":
                tools = await s.list_tools()
                out["tools"] = [t.model_dump(exclude_none=True) for t in tools.tools]
            elif kind == "call":
                out["result"] = result(await s.call_tool(tool, args))
            elif kind == "progress":
                seen = []

                async def on_progress(progress, total, message):
                    seen.append({"progress": progress, "message": message})

                r = await s.call_tool(tool, args, progress_callback=on_progress)
                out["result"] = result(r)
                out["progress"] = seen
            elif kind == "cancel":
                reached = anyio.Event()

                async def on_progress(progress, total, message):
                    if message and "tool run_command" in message:
                        reached.set()

                answered = {}
                request_id = s._request_id  # the id the next request gets

                async def call():
                    answered["result"] = result(
                        await s.call_tool(tool, args, progress_callback=on_progress))

                async with anyio.create_task_group() as tg:
                    tg.start_soon(call)
                    with anyio.fail_after(30):
                        await reached.wait()
                    await anyio.sleep(0.5)
                    out["sleeping_before"] = sleeping(os.environ.get("AXE_TEST_SLEEP", ""))
                    await s.send_notification(types.ClientNotification(types.CancelledNotification(
                        params=types.CancelledNotificationParams(requestId=request_id, reason="test"))))
                    # The command is killed while the session goes on (not
                    # by the end of stdin, which would kill it too).
                    with anyio.move_on_after(10):
                        while sleeping(os.environ.get("AXE_TEST_SLEEP", "")):
                            await anyio.sleep(0.05)
                    out["sleeping_after"] = sleeping(os.environ.get("AXE_TEST_SLEEP", ""))
                    # The spec: a cancelled request is not answered.
                    with anyio.move_on_after(2):
                        while "result" not in answered:
                            await anyio.sleep(0.05)
                    tg.cancel_scope.cancel()
                out["answered"] = "result" in answered
                # The session still works after a cancel.
                await s.send_ping()
                out["pinged"] = True
            elif kind == "two":
                got = [None, None]

                async def one(i):
                    got[i] = result(await s.call_tool(tool, {**args, "task": f"call {i}"}))

                async with anyio.create_task_group() as tg:
                    tg.start_soon(one, 0)
                    tg.start_soon(one, 1)
                out["results"] = got
            print(json.dumps(out))
            sys.stdout.flush()


try:
    anyio.run(main)
except Exception as e:  # noqa: BLE001 - the test reads what failed
    print(json.dumps({"error": repr(e)}))
