"""Starts `toolsearch gateway` over stdio with the official Python MCP SDK client, runs a list of
steps, and prints one JSON object of what it saw (each step's answer and how long it took);
the gateway's stderr (its status, as JSON lines) goes to a file. tests/gateway_upstreams.rs asserts on both.

    python probe.py CONFIG STATE STDERR_FILE STEPS_JSON

A step is {"call": TOOL_ID, "arguments": {...}} (through call_tool), {"tool": NAME,
"arguments": {...}} (tools/call by name), {"search": QUERY}, {"expand": TOOL_ID} or
{"sleep": SECONDS}, or {"list": "resources" | "prompts"} (every page; the URIs or names).
"""

import json
import os
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.types import PaginatedRequestParams
from mcp.client.stdio import stdio_client

TOOLSEARCH = os.environ["TOOLSEARCH_BIN"]


def text_of(result) -> str:
    d = result.model_dump(by_alias=True, exclude_none=True)
    return "\n".join(c.get("text", "") for c in d.get("content", []))


async def step(session, s):
    if "sleep" in s:
        await anyio.sleep(s["sleep"])
        return {}
    if "list" in s:
        # {"list": "resources" | "prompts"}: every page, the names (resources: URIs).
        names, cursor = [], None
        for _ in range(1000):
            if s["list"] == "resources":
                page = await session.list_resources(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
                names += [str(r.uri) for r in page.resources]
            else:
                page = await session.list_prompts(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
                names += [p.name for p in page.prompts]
            cursor = page.next_cursor
            if not cursor:
                break
        return {"names": names}
    if "call" in s:
        r = await session.call_tool("call_tool", {"tool_id": s["call"], "arguments": s.get("arguments", {})})
    elif "tool" in s:
        r = await session.call_tool(s["tool"], s.get("arguments", {}))
    elif "search" in s:
        r = await session.call_tool("search_tool_by_category", {"query": s["search"], "limit": s.get("limit", 10)})
    else:
        r = await session.call_tool("expand_tool", {"tool_id": s["expand"]})
    text = text_of(r)
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    blocks = [c.get("text", "") for c in r.model_dump(by_alias=True, exclude_none=True).get("content", [])]
    notice = blocks[-1][:2000] if len(blocks) > 1 else None
    return {"is_error": bool(r.is_error), "text": text[:2000], "bytes": len(text), "json": parsed, "notice": notice}


async def run(config, state, errfile, steps):
    out = {"steps": []}
    params = StdioServerParameters(command=TOOLSEARCH, args=["gateway", "--json", "--config", config, "--state", state])
    started = time.monotonic()
    with open(errfile, "w") as err:
        async with stdio_client(params, errlog=err) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                out["ready_s"] = time.monotonic() - started
                for s in steps:
                    t0 = time.monotonic()
                    seen = await step(session, s)
                    seen["seconds"] = time.monotonic() - t0
                    out["steps"].append(seen)
    return out


def main():
    config, state, errfile, steps = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    print(json.dumps(anyio.run(run, config, state, errfile, steps)))


if __name__ == "__main__":
    main()
