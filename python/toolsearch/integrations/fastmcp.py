"""FastMCP: a search transform that ranks a server's (or proxy's) tools with toolsearch instead
of FastMCP's built-in BM25 or regex search.

    from fastmcp import FastMCP
    from toolsearch.integrations.fastmcp import ToolsearchSearchTransform
    mcp = FastMCP("tools", transforms=[ToolsearchSearchTransform(max_results=5)])

The index is built from the tools a caller may see (their names, descriptions and parameter
schemas), in a temporary directory, when that set is first met: sessions that see different
tools (FastMCP's per-session visibility, `ctx.enable_components`) each search an index of only
their own, and the last 8 such indexes are kept, so sessions taking turns build none again. A
new tool set's index takes the vectors of the tools it shares with the kept index sharing the
most, and embeds only the others. With `cache_dir=DIR`, the indexes are built in DIR, named by
their tool set, and a server started again opens the ones it built before instead of embedding
its tools again (the 32 used last are kept). A session meeting a new tool set waits for its
index alone: the other sessions' searches go on meanwhile, and sessions meeting the same new
set at once wait for one build. Processes sharing DIR (a server's workers) take a
tool set's lock file there while they open or build its index, so one builds it and the others
open it, and none prunes an index another is opening or building.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Annotated, Any, Dict, FrozenSet, List, Optional, Sequence, Set, Union

from fastmcp.server.context import Context
from fastmcp.server.transforms.search.base import BaseSearchTransform
from fastmcp.tools import Tool

import toolsearch

from .. import ErrorCode, ProtocolError
from ._cache_lock import entry_lock


# How many tool sets' indexes a transform keeps (sessions that see different tools take turns).
KEPT_INDEXES = 8
# How many a `cache_dir` keeps (the least recently used beyond are removed), and the length of
# their names (hex digits of the tool set's digest).
KEPT_ON_DISK = 32
CACHED_NAME = 32


class ToolsearchSearchTransform(BaseSearchTransform):
    """`list_tools` shows a search tool and a call tool (plus `always_visible` tools); the
    search ranks the hidden tools with toolsearch's hybrid ranking."""

    def __init__(
        self,
        *,
        max_results: int = 5,
        min_confidence: Optional[float] = None,
        cache_dir: Union[str, "os.PathLike[str]", None] = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(max_results=max_results, **kwargs)
        self._min_confidence = min_confidence
        # Where tool sets' indexes are kept across restarts (`None`: temporary directories).
        self._cache_dir = None if cache_dir is None else Path(cache_dir)
        # The indexes of the tool sets met lately, by digest, least recently used first, and
        # their tools (each one's listing entry, hashed).
        self._indexes: "OrderedDict[str, toolsearch.Index]" = OrderedDict()
        self._members: Dict[str, FrozenSet[int]] = {}
        # The tool sets whose index is being opened or built now (each once, however many
        # sessions wait for it; the others' searches do not), by digest.
        self._building: "Dict[str, asyncio.Future[toolsearch.Index]]" = {}
        # Held to change `_indexes`, and by a build's thread to read which ones are held open.
        self._held = threading.Lock()

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
        # No await from here to the build's start: sessions meeting a new set at once build it once.
        index = self._indexes.get(digest)
        if index is not None:
            with self._held:
                self._indexes.move_to_end(digest)
            return index
        building = self._building.get(digest)
        if building is None:
            members = frozenset(hash(json.dumps(t, sort_keys=True)) for t in listing)
            work = asyncio.to_thread(self._open_or_build, listing, digest, self._closest(members))
            building = asyncio.ensure_future(work)
            with self._held:
                self._building[digest] = building
            building.add_done_callback(lambda done: self._built(digest, members, done))
        # A search given up (its client went) does not stop the build the others wait for.
        return await asyncio.shield(building)

    def _built(self, digest: str, members: FrozenSet[int], done: "asyncio.Future[toolsearch.Index]") -> None:
        """Keeps the index a build made (a failed one is tried again by the next search)."""
        with self._held:
            del self._building[digest]
            if done.cancelled() or done.exception() is not None:
                return
            self._indexes[digest] = done.result()
            self._members[digest] = members
            while len(self._indexes) > KEPT_INDEXES:
                self._members.pop(self._indexes.popitem(last=False)[0], None)

    def _closest(self, members: FrozenSet[int]) -> Optional[toolsearch.Index]:
        """The kept index sharing the most tools with `members` (the one used latest of those
        sharing as many), whose vectors a new index takes; `None` when none shares one."""
        best, shared = None, 0
        for digest, index in reversed(self._indexes.items()):
            n = len(self._members.get(digest, frozenset()) & members)
            if n > shared:
                best, shared = index, n
        return best

    def _open_or_build(self, listing: List[Dict[str, Any]], digest: str, last: Optional[toolsearch.Index]) -> toolsearch.Index:
        """The index of `listing`: built in a temporary directory, or, with a `cache_dir`, the
        one built there before (by this process or one before it) when it opens with the
        installed model, else built there."""
        if self._cache_dir is None:
            return _build(listing, None, last)
        at = self._cache_dir / digest[:CACHED_NAME]
        self._cache_dir.mkdir(parents=True, exist_ok=True)
        # Another process opening or building it waits here (and then opens the one built).
        with entry_lock(at, wait=True):
            index = None
            if at.exists():
                try:
                    index = toolsearch.open(at)
                    os.utime(at)  # used now: pruned last
                except (OSError, ValueError):
                    index = None
                    shutil.rmtree(at, ignore_errors=True)  # damaged, or of a model no longer installed
            if index is None:
                index = _build(listing, at, last)
        # Those this transform holds open, or is opening or building, are kept whatever their age.
        with self._held:
            held = {Path(i.path) for i in self._indexes.values()}
            held |= {self._cache_dir / d[:CACHED_NAME] for d in self._building}
        self._prune(held | {at})  # this one too, whoever registered it
        return index

    def _prune(self, held: Set[Path]) -> None:
        """Removes the least recently used indexes of the cache directory past `KEPT_ON_DISK`,
        never one in `held` nor a directory it did not name (another process may prune too)."""
        if self._cache_dir is None:
            return
        ours = [d for d in self._cache_dir.iterdir() if _named_by_digest(d.name) and d.is_dir() and d not in held]
        for old in sorted(ours, key=_used)[: max(0, len(ours) + len(held) - KEPT_ON_DISK)]:
            # One another process is opening or building is passed over (it is used now).
            with entry_lock(old, wait=False, drop=True) as mine:
                if mine:
                    shutil.rmtree(old, ignore_errors=True)
        # Lock files left without an index (a build that failed), unless one is held.
        for lock in self._cache_dir.glob("*.lock"):
            index = lock.with_suffix("")
            if _named_by_digest(index.name) and not index.exists():
                with entry_lock(index, wait=False, drop=True):
                    pass


def _named_by_digest(name: str) -> bool:
    return len(name) == CACHED_NAME and all(c in "0123456789abcdef" for c in name)


def _used(d: Path) -> float:
    """When the index in `d` was last built or opened (0 when it is gone already)."""
    try:
        return d.stat().st_mtime
    except OSError:
        return 0.0


def _build(listing: List[Dict[str, Any]], out: Optional[Path], last: Optional[toolsearch.Index]) -> toolsearch.Index:
    """The index of `listing` at `out` (`None`: a temporary directory), taking the vectors of
    the tools it shares with `last`; from scratch when `last` cannot give them (an index a
    server started before built with a model no longer the default)."""
    try:
        return toolsearch.build(listing, out=out, progress=False, reuse=last)
    except ValueError:
        if last is None:
            raise
        return toolsearch.build(listing, out=out, progress=False)
