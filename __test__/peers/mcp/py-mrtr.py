# The Python MCP SDK's client (`mcp`, installed by scripts/peers.sh as py-mcp) at protocol
# 2026-07-28 (server/discover), where a server asks by an `input_required` result: it calls the
# tool, answers the elicitation it is given (accepting with {"name": "py"}) by retrying with the
# request state, then retries twice more, once with the same state (a replay) and once with it
# edited. One JSON line per step.
#   python3 py-mrtr.py URL TOOL
import asyncio
import builtins
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def elicit(context, params):
    # Declares the capability; at 2026-07-28 the server asks through the result instead.
    raise RuntimeError("not asked this way at 2026-07-28")


def say(**fields):
    print(json.dumps(fields), flush=True)


def failure(e):
    group = getattr(builtins, "BaseExceptionGroup", None)  # Python 3.11+
    while group is not None and isinstance(e, group) and e.exceptions:
        e = e.exceptions[0]
    return f"{type(e).__name__}: {e}"[:500]


def text_of(r):
    return "".join(getattr(c, "text", "") for c in getattr(r, "content", []) or [])


async def retry(s, tool, responses, state):
    try:
        r = await s.call_tool(tool, {}, input_responses=responses, request_state=state, allow_input_required=True)
        return {"text": text_of(r), "kind": type(r).__name__}
    except BaseException as e:  # noqa: BLE001 - the test reads it
        return {"error": failure(e)}


async def main(url, tool):
    try:
        async with streamable_http_client(url) as streams:
            async with ClientSession(streams[0], streams[1], elicitation_callback=elicit) as s:
                await s.discover()
                say(step="version", version=s.protocol_version)
                first = await s.call_tool(tool, {}, allow_input_required=True)
                requests = {k: v.model_dump(by_alias=True, exclude_none=True) for k, v in (first.input_requests or {}).items()}
                say(step="asked", kind=type(first).__name__, requests=requests, hasState=bool(first.request_state))
                answer = {"action": "accept", "content": {"name": "py"}}
                responses = {k: answer for k in requests}
                say(step="answered", **(await retry(s, tool, responses, first.request_state)))
                say(step="replayed", **(await retry(s, tool, responses, first.request_state)))
                edited = first.request_state[:-2] + ("00" if not first.request_state.endswith("00") else "11")
                say(step="edited", **(await retry(s, tool, responses, edited)))
    except BaseException as e:  # noqa: BLE001 - the test reads the failure from the line
        say(step="failed", error=failure(e))


asyncio.run(main(sys.argv[1], sys.argv[2]))
