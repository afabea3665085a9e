"""An MCP server written with the official Python SDK (MCPServer) that shows what reaches an
upstream through the gateway: the `_meta` of each call (the gateway's request id), over stdio.

    python trace_server.py
"""

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("trace", instructions="Shows what a forwarded request carried, and keeps a tally.")
TALLY: dict[str, int] = {}


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def request_meta(ctx: Context) -> dict:
    """Show the metadata this request carried when it reached the server (for tracing requests)."""
    meta = ctx.request_context.meta
    if meta is not None and not isinstance(meta, dict):
        meta = meta.model_dump(by_alias=True, exclude_none=True) if hasattr(meta, "model_dump") else dict(meta)
    params = ctx.request_context.params or {}
    return {"meta": meta or {}, "params_meta": dict(params.get("_meta") or {})}


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False))
def tally(name: str) -> str:
    """Add one to the named counter on the tally board."""
    TALLY[name] = TALLY.get(name, 0) + 1
    return f"{name}: {TALLY[name]}"


if __name__ == "__main__":
    server.run()
