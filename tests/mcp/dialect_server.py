"""An MCP server written with the official Python SDK (its low-level `Server`) whose tools use
the schema forms real servers ship: a draft-04 boolean `exclusiveMaximum` without `$schema`
(zod-to-json-schema's OpenAPI 3 target), `required` naming a property declared only inside
`allOf`, draft-03 `type: "any"`, OpenAPI `nullable`, a remote `$ref` (never fetched), and names
with dots, spaces and non-ASCII letters, with and without descriptions. Every call answers with
its tool name and arguments, so a test sees what reached the server.

    python dialect_server.py
"""

import json

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TOOLS = [
    types.Tool(
        name="set_volume",
        description="Set the speaker volume, a percentage below 100.",
        input_schema={
            "type": "object",
            "properties": {"level": {"type": "number", "maximum": 100, "exclusiveMaximum": True}},
            "required": ["level"],
        },
    ),
    types.Tool(
        name="create_user",
        description="Create a user account with a name and an email address.",
        input_schema={
            "type": "object",
            "allOf": [{"properties": {"name": {"type": "string"}, "email": {"type": "string"}}}],
            "required": ["name", "email"],
        },
    ),
    types.Tool(
        name="store_value",
        description="Store any value under a key in the cache.",
        input_schema={"type": "object", "properties": {"key": {"type": "string"}, "value": {"type": "any"}}},
    ),
    types.Tool(
        name="rename_branch",
        description="Rename a git branch, optionally with a note.",
        input_schema={
            "type": "object",
            "properties": {"branch": {"type": "string"}, "note": {"type": "string", "nullable": True}},
            "required": ["branch"],
        },
    ),
    types.Tool(
        name="fetch_page",
        description="Fetch a web page; its schema lives on another server.",
        input_schema={"type": "object", "$ref": "https://schemas.example.com/fetch.json"},
    ),
    types.Tool(name="db.query rows", description="Query rows of a database table.", input_schema={"type": "object"}),
    types.Tool(name="météo", input_schema={"type": "object", "properties": {"ville": {"type": "string"}}}),
]


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params):
    text = json.dumps({"tool": params.name, "arguments": params.arguments or {}}, sort_keys=True, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server("dialects", on_list_tools=list_tools, on_call_tool=call_tool)


async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
