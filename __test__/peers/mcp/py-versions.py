# The Python MCP SDK's client (`mcp`, installed by scripts/peers.sh as py-mcp) against a
# streamable-HTTP server, once per way it connects: `initialize` (the handshake, up to 2025-11-25)
# and `discover` (server/discover, 2026-07-28). Each way lists the tools, calls one, and pings;
# one JSON line per way says what each step gave.
#   python3 py-versions.py URL TOOL
import asyncio
import builtins
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


def failure(e: BaseException) -> str:
    group = getattr(builtins, "BaseExceptionGroup", None)  # Python 3.11+
    while group is not None and isinstance(e, group) and e.exceptions:
        e = e.exceptions[0]
    return f"{type(e).__name__}: {e}"[:500]


async def one_way(url: str, tool: str, way: str) -> dict:
    out: dict = {"way": way}
    try:
        async with streamable_http_client(url) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                if way == "initialize":
                    await session.initialize()
                else:
                    await session.discover()
                out["version"] = session.protocol_version
                listed = await asyncio.wait_for(session.list_tools(), 30)
                out["tools"] = [t.name for t in listed.tools]
                result = await asyncio.wait_for(session.call_tool(tool, {"text": "hi"}), 30)
                out["call"] = "".join(getattr(c, "text", "") for c in result.content)
                out["isError"] = bool(result.is_error)
                try:
                    await asyncio.wait_for(session.send_ping(), 30)
                    out["ping"] = "ok"
                except BaseException as e:  # noqa: BLE001 - the test reads it
                    out["ping"] = failure(e)
    except BaseException as e:  # noqa: BLE001 - the test reads the failure from the line
        out["error"] = failure(e)
    return out


async def main(url: str, tool: str) -> None:
    for way in ("initialize", "discover"):
        print(json.dumps(await one_way(url, tool, way)), flush=True)


asyncio.run(main(sys.argv[1], sys.argv[2]))
