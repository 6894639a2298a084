# The Python MCP SDK's client (`mcp`, installed by scripts/peers.sh as py-mcp) against a served
# toolkit: it answers elicitations (accepting with {"name": "py"}) and sampling requests (the
# text "sampled: <first message>"), calls each tool named on the command line, then lists and
# reads the server's prompts and resources. One JSON line per step.
#   python3 py-ask.py URL TOOL...
import asyncio
import builtins
import json
import sys

import mcp_types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

asked = []


async def elicit(context, params):
    asked.append({"message": params.message, "schema": getattr(params, "requested_schema", None) is not None})
    return types.ElicitResult(action="accept", content={"name": "py"})


async def sample(context, params):
    first = params.messages[0].content
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text=f"sampled: {first.text}"), model="py-model"
    )


def say(**fields):
    print(json.dumps(fields), flush=True)


async def main(url, tools):
    try:
        async with streamable_http_client(url) as streams:
            async with ClientSession(streams[0], streams[1], elicitation_callback=elicit, sampling_callback=sample) as s:
                await s.initialize()
                for tool in tools:
                    r = await asyncio.wait_for(s.call_tool(tool, {}), 60)
                    text = "".join(getattr(c, "text", "") for c in r.content)
                    say(step="call", tool=tool, isError=bool(r.is_error), text=text, asked=list(asked))
                    asked.clear()
                prompts = await s.list_prompts()
                say(step="prompts", names=[p.name for p in prompts.prompts])
                got = await s.get_prompt(prompts.prompts[0].name, {"topic": "rust"})
                say(step="prompt", texts=[getattr(m.content, "text", "") for m in got.messages])
                resources = await s.list_resources()
                say(step="resources", uris=[str(r.uri) for r in resources.resources])
                read = await s.read_resource(resources.resources[0].uri)
                say(step="read", texts=[getattr(c, "text", "") for c in read.contents])
    except BaseException as e:  # noqa: BLE001 - the test reads the failure from the line
        group = getattr(builtins, "BaseExceptionGroup", None)  # Python 3.11+
        while group is not None and isinstance(e, group) and e.exceptions:
            e = e.exceptions[0]
        say(step="failed", error=f"{type(e).__name__}: {e}"[:2000])


asyncio.run(main(sys.argv[1], sys.argv[2:]))
