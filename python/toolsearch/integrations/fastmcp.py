"""FastMCP: a search transform that ranks a server's (or proxy's) tools with toolsearch instead
of FastMCP's built-in BM25 or regex search.

    from fastmcp import FastMCP
    from toolsearch.integrations.fastmcp import ToolsearchSearchTransform
    mcp = FastMCP("tools", transforms=[ToolsearchSearchTransform(max_results=5)])

The index is built from the tools a caller may see (their names, descriptions and parameter
schemas), in a temporary directory, when that set is first met: sessions that see different
tools (FastMCP's per-session visibility, `ctx.enable_components`) each search an index of only
their own, and the last 8 such indexes are kept, so sessions taking turns build none again. A
new tool set's index takes the vectors of the tools it shares with the last one used, and
embeds only the others.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import OrderedDict
from typing import Annotated, Any, Dict, List, Optional, Sequence

from fastmcp.server.context import Context
from fastmcp.server.transforms.search.base import BaseSearchTransform
from fastmcp.tools import Tool

import toolsearch

from .. import ErrorCode, ProtocolError


# How many tool sets' indexes a transform keeps (sessions that see different tools take turns).
KEPT_INDEXES = 8


class ToolsearchSearchTransform(BaseSearchTransform):
    """`list_tools` shows a search tool and a call tool (plus `always_visible` tools); the
    search ranks the hidden tools with toolsearch's hybrid ranking."""

    def __init__(self, *, max_results: int = 5, min_confidence: Optional[float] = None, **kwargs: Any) -> None:
        super().__init__(max_results=max_results, **kwargs)
        self._min_confidence = min_confidence
        # The indexes of the tool sets met lately, by digest, least recently used first.
        self._indexes: "OrderedDict[str, toolsearch.Index]" = OrderedDict()
        self._lock = asyncio.Lock()

    def _make_search_tool(self) -> Tool:
        transform = self

        async def search_tools(
            query: Annotated[str, "What you need to do, in a few words"],
            ctx: Context = None,  # type: ignore[assignment]
        ) -> Any:
            """Find the tools for a task, best first; call one with call_tool."""
            tools = await transform._get_visible_tools(ctx)
            return await transform._render_results(await transform._search(tools, query))

        return Tool.from_function(fn=search_tools, name=self._search_tool_name)

    async def _search(self, tools: Sequence[Tool], query: str) -> Sequence[Tool]:
        by_name: Dict[str, Tool] = {t.name: t for t in tools}
        if not by_name:
            return []
        index = await self._index_of(list(by_name.values()))
        try:
            page = await asyncio.to_thread(index.search, query, limit=self._max_results, min_confidence=self._min_confidence)
        except ProtocolError as e:
            if e.code is ErrorCode.NO_MATCH_IN_CATEGORY:
                return []
            raise
        return [by_name[p.tool_id] for p in page.results if p.tool_id in by_name]

    async def _index_of(self, tools: List[Tool]) -> toolsearch.Index:
        listing = [
            {"name": t.name, "description": t.description or "", "input_schema": t.parameters or {"type": "object"}}
            for t in sorted(tools, key=lambda t: t.name)
        ]
        digest = hashlib.sha256(json.dumps(listing, sort_keys=True).encode()).hexdigest()
        async with self._lock:
            index = self._indexes.get(digest)
            if index is None:
                # The tools this set shares with the one used last keep their vectors.
                last = next(reversed(self._indexes.values()), None)
                index = await asyncio.to_thread(toolsearch.build, listing, progress=False, reuse=last)
                self._indexes[digest] = index
                while len(self._indexes) > KEPT_INDEXES:
                    self._indexes.popitem(last=False)
            self._indexes.move_to_end(digest)
            return index
