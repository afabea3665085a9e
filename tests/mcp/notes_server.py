"""A small stateful MCP server written with the official Python SDK (MCPServer, formerly
FastMCP), used as an upstream of the gateway in tests: it keeps notes in memory (state across
calls), has a slow tool that reports progress and notices cancellation, and can add a tool at
run time (tools/list_changed).

    python notes_server.py                 # stdio
    python notes_server.py http PORT       # Streamable HTTP at http://127.0.0.1:PORT/mcp
"""

import os
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("notes", instructions="Keeps short notes in memory: remember and recall them by key.")
NOTES: dict[str, str] = {}
STATS = {"cancelled": 0, "finished": 0}


@server.tool(title="Remember a note", annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False))
def remember(key: str, text: str) -> str:
    """Store a note under a key, replacing any note already stored there."""
    NOTES[key] = text
    return f"remembered {key}"


@server.tool(title="Recall a note", annotations=ToolAnnotations(readOnlyHint=True))
def recall(key: str) -> dict:
    """Read back the note stored under a key."""
    return {"key": key, "text": NOTES.get(key), "pid": os.getpid()}


@server.tool()
async def slow_job(seconds: float, ctx: Context) -> str:
    """Run a long batch job for the given number of seconds, reporting progress every half second."""
    steps = max(1, int(seconds * 2))
    try:
        for i in range(steps):
            await ctx.report_progress(i, steps, f"step {i} of {steps}")
            await anyio.sleep(0.5)
    except anyio.get_cancelled_exc_class():
        STATS["cancelled"] += 1
        raise
    STATS["finished"] += 1
    return f"job done after {seconds} s"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def job_stats() -> dict:
    """How many slow jobs finished and how many were cancelled, and this server's process id."""
    return {**STATS, "pid": os.getpid()}


@server.tool()
async def install_weather_tool(ctx: Context) -> str:
    """Install an extra tool that forecasts the weather, and tell the client the tool list changed."""

    def weather_forecast(city: str) -> str:
        """Forecast tomorrow's weather for a city."""
        return f"sunny in {city}"

    server.add_tool(weather_forecast)
    await ctx.session.send_tool_list_changed()
    return "installed weather_forecast"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
