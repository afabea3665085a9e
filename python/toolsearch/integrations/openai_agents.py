"""OpenAI Agents SDK: toolsearch discovery as function tools an `Agent` takes.

    from agents import Agent
    from toolsearch.integrations.openai_agents import discovery_tools
    agent = Agent(name="assistant", tools=discovery_tools(index, run=my_runner))

`search_tools` finds tools, `expand_tool` gives one's full schema, `call_tool` checks the
arguments against it and runs it through `run(tool_id, arguments)`.
"""

from __future__ import annotations

import json
from typing import Any, Callable, List, Optional, Sequence

from agents import FunctionTool, function_tool

from .. import Index, ProtocolError


def _error(e: ProtocolError) -> str:
    return json.dumps({"code": e.code.value, "message": e.message, "hints": e.hints})


def discovery_tools(
    index: Index,
    *,
    run: Optional[Callable[[str, Any], Any]] = None,
    limit: int = 5,
    scopes: Optional[Sequence[str]] = None,
) -> List[FunctionTool]:
    """`search_tools`, `expand_tool` and (with `run`) `call_tool` as function tools."""

    @function_tool
    def search_tools(query: str) -> str:
        """Find tools for a task: describe what you need to do in a few words. Returns tool ids
        with a summary and a confidence; expand one before calling it."""
        try:
            page = index.search(query, limit=limit, scopes=scopes)
        except ProtocolError as e:
            return _error(e)
        return json.dumps([{"tool_id": p.tool_id, "summary": p.summary, "confidence": round(p.confidence, 3)} for p in page.results])

    @function_tool
    def expand_tool(tool_id: str) -> str:
        """The full definition of one tool found by search_tools: its description and the JSON
        Schema of its arguments."""
        try:
            t = index.expand(tool_id, scopes=scopes)
        except ProtocolError as e:
            return _error(e)
        return json.dumps({k: t.get(k) for k in ("tool_id", "name", "description", "args_schema", "usage_notes")})

    tools = [search_tools, expand_tool]
    if run is not None:

        @function_tool
        def call_tool(tool_id: str, arguments_json: str) -> str:
            """Call a tool found by search_tools with its arguments, given as a JSON object
            matching the schema expand_tool returned."""
            try:
                arguments = json.loads(arguments_json or "{}")
            except ValueError as e:
                return json.dumps({"code": "INVALID_ARGUMENT", "message": f"arguments_json is not JSON: {e}"})
            try:
                index.check_call(tool_id, arguments, scopes=scopes)
            except ProtocolError as e:
                return _error(e)
            result = run(tool_id, arguments)
            return result if isinstance(result, str) else json.dumps(result)

        tools.append(call_tool)
    return tools
