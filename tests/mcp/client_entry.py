"""A client's entry for the gateway, as a page prints it, started the way the client would:
the official Python MCP SDK connects through it, lists the gateway's tools, searches for a tool
of the memory reference server behind it and calls that tool. Prints one line saying what went
through; exits non-zero, saying why, when anything fails.

    python client_entry.py ENTRY_JSON

ENTRY_JSON is the client's `toolsearch` entry: `{"command": ..., "args": [...], "env": {...}}`
(a stdio entry: the SDK starts the command, found on PATH as a client finds it) or
`{"type": "http", "url": ..., "headers": {...}}` (a running gateway). tests/client_entries.rs
takes the entries from docs/gateway.md; tests/mcp/uvx_entry.py checks its `uvx` entry with
`exercise` too.
"""

import json
import sys
import uuid

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.client.streamable_http import streamable_http_client


def text_of(result):
    return "".join(getattr(c, "text", "") for c in result.content)


async def exercise(session):
    """Lists, searches and calls through an initialised session: the number of tools listed,
    or raises `RuntimeError` naming what the gateway answered instead."""
    await session.initialize()
    names = [t.name for t in (await session.list_tools()).tools]
    if "search_tool_by_category" not in names or "call_tool" not in names:
        raise RuntimeError(f"the gateway lists {names}, without search_tool_by_category and call_tool")
    found = await session.call_tool("search_tool_by_category", {"query": "remember a fact about a person"})
    if found.is_error or "memory." not in text_of(found):
        raise RuntimeError(f"search_tool_by_category found no tool of the memory server: {text_of(found)[:400]}")
    name = f"Ada-{uuid.uuid4().hex[:8]}"  # new to the memory file, however often it runs
    made = await session.call_tool(
        "call_tool",
        {
            "tool_id": "memory.create_entities",
            "arguments": {"entities": [{"name": name, "entityType": "person", "observations": ["writes"]}]},
        },
    )
    if made.is_error or name not in text_of(made):
        raise RuntimeError(f"call_tool through the gateway failed: {text_of(made)[:400]}")
    return len(names)


def reason(e):
    """What went wrong, out of the task groups the SDK wraps an error in."""
    while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
        e = e.exceptions[0]
    return f"{type(e).__name__}: {e}"


async def over_stdio(entry):
    env = get_default_environment()
    env.update(entry.get("env", {}))
    params = StdioServerParameters(command=entry["command"], args=entry.get("args", []), env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            return await exercise(session)


async def over_http(entry):
    async with httpx2.AsyncClient(headers=entry.get("headers", {}), timeout=60) as http:
        async with streamable_http_client(entry["url"], http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                return await exercise(session)


async def drive(entry):
    with anyio.fail_after(300):
        if entry.get("type") == "http" or "url" in entry:
            return await over_http(entry)
        return await over_stdio(entry)


def main():
    entry = json.loads(sys.argv[1])
    try:
        listed = anyio.run(drive, entry)
    except Exception as e:  # the test prints why, whatever the SDK raised
        print(f"client_entry: {reason(e)}", file=sys.stderr)
        sys.exit(1)
    print(f"client_entry: {listed} tools listed; a search and a call went through")


if __name__ == "__main__":
    main()
