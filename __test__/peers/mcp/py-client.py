# The Python MCP SDK's client (`mcp`, installed by scripts/peers.sh as py-mcp) against a
# streamable-HTTP server: initialize, call one tool, print one JSON line with what came back.
#   python3 py-client.py URL TOOL
import asyncio
import builtins
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, tool: str) -> None:
    try:
        async with streamable_http_client(url) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                result = await asyncio.wait_for(session.call_tool(tool, {}), 60)
                text = "".join(getattr(c, "text", "") for c in result.content)
                print(json.dumps({"ok": True, "isError": bool(result.is_error), "length": len(text), "head": text[:16]}), flush=True)
    except BaseException as e:  # noqa: BLE001 - the test reads the failure from the line
        group = getattr(builtins, "BaseExceptionGroup", None)  # Python 3.11+
        while group is not None and isinstance(e, group) and e.exceptions:
            e = e.exceptions[0]
        print(json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"[:2000]}), flush=True)


asyncio.run(main(sys.argv[1], sys.argv[2]))
