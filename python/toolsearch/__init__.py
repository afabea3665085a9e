"""toolsearch: find the right tool for an agent among thousands, without loading every schema.

Build an index of a tool catalogue (paths to catalogue files, or the Python objects an MCP
server, OpenAI, Anthropic or Gemini use for tools), then search it: each result is a `Pointer` with a
calibrated confidence, and `expand` gives one tool's full schema when the agent has chosen it.

    import toolsearch
    index = toolsearch.build([{"name": "get_weather", "description": "Current weather for a city",
                                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}])
    page = index.search("what is the weather in Oslo")
    print(page.results[0].tool_id, page.results[0].confidence)

The engine is Rust (the same as the `toolsearch` command, which this package also installs);
the model comes from PyPI packages, nothing is downloaded at run time.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from . import _models, _sources, _watch
from ._answers import (
    BuildReport,
    ErrorCode,
    ListPage,
    NodeEntry,
    NodeHit,
    Outcome,
    Pointer,
    ProtocolError,
    SearchPage,
)
from ._toolset import ToolSet
from ._watch import metadata as _metadata
from ._native import Model as _Model
from ._native import NativeIndex as _NativeIndex
from ._native import NativeProtocolError as _NativeProtocolError
from ._native import NativeToolSet as _NativeToolSet
from ._native import build as _build
from ._native import index_model as _index_model
from ._native import learn as _learn
from ._native import render_tool_search as _render_tool_search

__all__ = [
    "build",
    "open",
    "Index",
    "Pointer",
    "SearchPage",
    "NodeHit",
    "NodeEntry",
    "ListPage",
    "ErrorCode",
    "ProtocolError",
    "BuildReport",
    "ToolSet",
    "Outcome",
]

# The answers are documented, shown and pickled as the package's own.
for _answer in (BuildReport, ErrorCode, ListPage, NodeEntry, NodeHit, Outcome, Pointer, ProtocolError, SearchPage, ToolSet):
    _answer.__module__ = __name__

PathLike = Union[str, "os.PathLike[str]"]
Source = Union[PathLike, Dict[str, Any], List[Any]]


def _pointer(p: Dict[str, Any]) -> Pointer:
    return Pointer(p["tool_id"], p["path"], p["summary"], list(p.get("tags", [])), float(p["confidence"]))


class Index:
    """An open index. Methods answer the progressive-disclosure protocol; `scopes` (a list of
    scope names) searches as a caller holding only those, `None` as a trusted caller."""

    def __init__(
        self,
        native: _NativeIndex,
        model: _Model,
        report: Optional[BuildReport] = None,
        *,
        seen: Optional[bytes] = None,
        models: Optional[PathLike] = None,
        watch: Optional[float] = None,
    ):
        self._native = native
        self._model = model
        self.report = report
        # The metadata as read before `native` opened it, and the models directory to load
        # another model from: what `reload` compares and uses.
        self._seen = seen
        self._models = models
        # `open(watch=...)`: how often to look for changes by itself, and when it looks next.
        self._every = watch
        self._watch = None if watch is None else _watch.Watch(native.path, watch)

    @property
    def path(self) -> str:
        """Where the index is on disk."""
        return self._native.path

    @property
    def model_id(self) -> str:
        """The id of the model this index is searched with, the one it was built with (e.g.
        `toolsearch/all-MiniLM-L6-v2-tools-2@int8`)."""
        return self._model.id

    def reload(self) -> bool:
        """Opens the index again if another process changed it on disk since it was opened
        (built it again, `calibrate`, `learn`): this `Index` then answers from the new one, with
        the model it records (loaded, if it is another). Returns whether it changed. An index
        that does not open raises `OSError`, naming it, and this `Index` goes on answering from
        the one before. Tool sets made from this `Index` before keep theirs."""
        seen = _metadata(self.path)
        if seen is None or seen == self._seen:
            return False
        loaded = _models.load(self._models, _index_model(self.path))
        self._reopen(loaded)
        self._model, self._seen = loaded, seen
        return True

    def _reopen(self, model: _Model) -> None:
        """Answers from the index on disk now, opened with `model`, prepared for the scope
        sets the one before kept (a caller's next request pays nothing again)."""
        native = _NativeIndex(self.path, model)
        native.prepare_like(self._native)
        self._native = native

    def prepare(self, scope_sets: Iterable[Sequence[str]]) -> None:
        """Works out now what callers holding each of `scope_sets` may see, as `toolsearch
        serve` does for its tokens at start, so that none of their requests pays for it or
        reads a posting of a tool hidden from them (docs/protocol.md, "Timing"). A scope set
        first met at a request is prepared behind it, on a thread of its own; this is for
        the ones a host knows ahead."""
        self._native.prepare([_scope_list(s) for s in _scope_list(scope_sets, "scope_sets")])

    def prepared(self, scopes: Sequence[str]) -> bool:
        """Whether what a caller holding `scopes` may see is worked out whole (by `prepare`,
        or behind its first request)."""
        return self._native.prepared(_scope_list(scopes))

    def _call(
        self, call: str, request: Dict[str, Any], scopes: Optional[Sequence[str]], min_confidence: Optional[float] = None
    ) -> Any:
        request = {k: v for k, v in request.items() if v is not None}
        if self._watch is not None:
            self._watch.look(self._seen, lambda: _metadata(self.path), self.reload)
        try:
            answer = self._native.handle(call, json.dumps(request), _scope_list(scopes), min_confidence)
        except _NativeProtocolError as e:
            err = json.loads(str(e))
            raise ProtocolError(ErrorCode(err["code"]), err["message"], err.get("hints", []), err.get("next_action")) from None
        return json.loads(answer)

    def search(
        self,
        query: str,
        *,
        path: Optional[str] = None,
        tags: Union[str, Sequence[str], None] = None,
        limit: int = 10,
        min_confidence: Optional[float] = None,
        scopes: Optional[Sequence[str]] = None,
        cursor: Optional[str] = None,
    ) -> SearchPage:
        """The best tools for `query` (inside category `path`, carrying every tag of `tags`),
        a page of `limit` at a time, each with its confidence. Results far below the best one
        (under 3% of its confidence) are left out, and so are results below `min_confidence`
        when given. When no tool in scope fits the query (`answerable` under the engine's
        threshold), or none is left, the answer is `ProtocolError` `NO_MATCH_IN_CATEGORY`
        whose hints name the closest tools."""
        a = self._call(
            "search_tool_by_category",
            {"query": query, "category_path": path, "tags": _tags(tags), "limit": limit, "cursor": cursor},
            scopes,
            min_confidence,
        )
        return SearchPage(
            a.get("category_path", ""), [_pointer(p) for p in a["results"]], a.get("next_cursor"), a.get("answerable")
        )

    def nodes(self, query: str, *, limit: int = 10, scopes: Optional[Sequence[str]] = None) -> List[NodeHit]:
        """The categories that best match `query`."""
        a = self._call("search_nodes", {"query": query, "limit": limit}, scopes)
        return [NodeHit(h["path"], h["summary"], float(h["confidence"])) for h in a["results"]]

    def list(
        self,
        path: Optional[str] = None,
        *,
        tags: Union[str, Sequence[str], None] = None,
        query: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        scopes: Optional[Sequence[str]] = None,
    ) -> ListPage:
        """What category `path` (the root when `None`) holds."""
        a = self._call(
            "list", {"path": path, "tags": _tags(tags), "query": query, "limit": limit, "cursor": cursor}, scopes
        )
        nodes = [NodeEntry(n["name"], n["path"], n["summary"], list(n.get("tags", [])), int(n["tool_count"])) for n in a["nodes"]]
        return ListPage(a["path"], nodes, [_pointer(p) for p in a["tools"]], a.get("next_cursor"))

    def expand(self, tool_id: str, *, scopes: Optional[Sequence[str]] = None) -> Dict[str, Any]:
        """One tool in full, as a dict: `args_schema` (JSON Schema), `description`,
        `usage_notes`, `validation` and the rest."""
        return self._call("expand_tool", {"tool_id": tool_id}, scopes)

    def check_call(self, tool_id: str, args: Dict[str, Any], *, scopes: Optional[Sequence[str]] = None) -> None:
        """Raises `ProtocolError` (`INVALID_ARGUMENT` naming the field, `TOOL_NOT_FOUND`, ...)
        unless calling `tool_id` with `args` is valid for this caller."""
        self._call("check_call", {"tool_id": tool_id, "arguments": args}, scopes)

    def tool_search_result(
        self, page: SearchPage, provider: str, call_id: str, *, names: Optional[Dict[str, str]] = None
    ) -> Dict[str, Any]:
        """`page` as a provider's own tool-search answer, for a host that defines its tools with
        deferred loading and runs the search itself: `anthropic` gives the `tool_result` (of
        `tool_reference` blocks) answering tool use `call_id`; `openai` gives the
        `tool_search_output` item (with each tool's definition) answering `tool_search` call
        `call_id`. `names` maps tool ids to the names the host defined them under (default:
        the tool's own name)."""
        tools = []
        for p in page.results:
            t = self.expand(p.tool_id)
            name = (names or {}).get(p.tool_id, t["name"])
            tools.append({"name": name, "description": t.get("description") or t.get("summary", ""), "input_schema": t["args_schema"]})
        return json.loads(_render_tool_search(provider, call_id, json.dumps(tools)))

    def learn(self, labels: Union[PathLike, Sequence[Dict[str, Any]]], *, dry_run: bool = False) -> Dict[str, Any]:
        """As `toolsearch learn`: fits a query adapter to this catalogue's labelled queries
        (`{"query": ..., "tools": [tool ids]}` dicts, a queries.jsonl path, or an audit trail
        path) and stores it in the index when it beats the unadapted ranking on held-out
        queries; this `Index` then ranks with it. Returns the report: nDCG@10 before and after
        on held-out labels, `learned` (it beat the unadapted ranking) and `stored`. Too few
        labels raises `ValueError`."""
        if isinstance(labels, (str, os.PathLike)):
            report = _learn(self.path, self._model, os.fspath(labels), dry_run)
        else:
            with tempfile.TemporaryDirectory(prefix="toolsearch-labels-") as d:
                p = Path(d) / "queries.jsonl"
                lines = []
                for i, q in enumerate(labels):
                    lines.append(json.dumps({"id": str(q.get("id", f"q{i}")), "query": q["query"], "gold": list(q["tools"])}))
                p.write_text("\n".join(lines) + "\n")
                report = _learn(self.path, self._model, str(p), dry_run)
        self._seen = _metadata(self.path)
        self._reopen(self._model)
        return json.loads(report)

    def toolset(self, config: Optional[Dict[str, Any]] = None, *, scopes: Optional[Sequence[str]] = None) -> "ToolSet":
        """The disclosure runtime over this index, configured as a `serve` config's `toolset`,
        for a model acting for a caller holding `scopes` (`None`: trusted): a tool they do not
        allow never appears to it, in any definition, answer or call."""
        seen = _metadata(self.path)
        native = _NativeToolSet(self.path, self._model, json.dumps(config or {}), _scope_list(scopes))
        return ToolSet(native, self.path, seen, self._models, self._every)


def open(  # noqa: A001 (the API's name)
    path: PathLike,
    *,
    models: Optional[PathLike] = None,
    model: Optional[PathLike] = None,
    watch: Optional[float] = None,
) -> Index:
    """Opens the index at `path` with the model it was built with (or `model`: `stock`, `tools`
    or a sentence-transformers export's directory; another model than the index's is refused).
    `models` (or `$TOOLSEARCH_MODELS`) names a models directory laid out as `scripts/setup`
    installs it, instead of the installed packages' files. With `watch=SECS`, the `Index` and
    the tool sets made from it `reload()` by themselves, looking at most every `SECS` seconds
    when called (an index that does not open then warns, and the one before answers)."""
    every = _watch.interval(watch)
    seen = _metadata(os.fspath(path))
    loaded = _models.load(models, model if model is not None else _index_model(os.fspath(path)))
    return Index(_NativeIndex(os.fspath(path), loaded), loaded, seen=seen, models=models, watch=every)


def build(
    source: Union[Source, Sequence[Source]],
    out: Optional[PathLike] = None,
    *,
    format: Optional[str] = None,
    progress: bool = True,
    models: Optional[PathLike] = None,
    model: Optional[PathLike] = None,
    server: str = "mcp",
    reuse: Union[Index, PathLike, None] = None,
) -> Index:
    """Builds an index of `source` and opens it. `source` is a catalogue path, a Python object
    (an MCP `tools/list` result, an OpenAI, Anthropic or Gemini tool list, a native manifest dict), or
    a list of those; `out=None` builds in a temporary directory removed with the index. An MCP
    `tools/list` result is one server's: its tools get ids `SERVER.NAME`, the server named by
    `server` (default `mcp`). `model` is `stock`, `tools` (the default) or the directory of a
    sentence-transformers ONNX export (docs/models.md). A catalogue file that does not exist raises `FileNotFoundError`
    (an `OSError`); nothing to build, or bad input, raises `ValueError` naming the file (or
    the object, by its place in `source`) and the field. `reuse` (an `Index`, or an index's
    path) gives the vectors of documents whose text it holds too, and they are not embedded
    again (and its calibration and learned adapter, when `out` holds no index); built with
    another model, it raises `ValueError`."""
    if not server or not all(c.isalnum() or c in "-_" for c in server):
        raise ValueError(f"server={server!r}: a server name is letters, digits, '-' and '_'")
    items = _sources.items(source)
    scratch = tempfile.mkdtemp(prefix="toolsearch-")
    paths, labels = _sources.stage(items, server, scratch)
    target = Path(out) if out is not None else Path(scratch) / "index"
    try:
        loaded = _models.load(models, model)
        reused = reuse.path if isinstance(reuse, Index) else None if reuse is None else os.fspath(reuse)
        report = json.loads(_build(paths, str(target), loaded, format, progress, reused))
        seen = _metadata(str(target))
        index = Index(_NativeIndex(str(target), loaded), loaded, BuildReport(**report), seen=seen, models=models)
    except ValueError as e:
        shutil.rmtree(scratch, ignore_errors=True)
        message = str(e)
        for path, what in labels:
            message = message.replace(path, what)
        raise ValueError(message.replace(scratch, "the objects passed to build()")) from None
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    if out is None:
        weakref.finalize(index, shutil.rmtree, scratch, True)
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return index


def _scope_list(scopes: Any, what: str = "scopes") -> Any:
    """`scopes` as a list, or `None`; a string is refused (its characters are no scopes)."""
    if isinstance(scopes, str):
        raise TypeError(f"{what}: give a list (e.g. ['user']), not the string {scopes!r}")
    return None if scopes is None else list(scopes)


def _tags(tags: Union[str, Sequence[str], None]) -> List[str]:
    """`tags` as a list: a string is a comma-separated list (`"a,b"`), never its characters."""
    if tags is None:
        return []
    if isinstance(tags, str):
        return [t.strip() for t in tags.split(",") if t.strip()]
    return [str(t) for t in tags]

