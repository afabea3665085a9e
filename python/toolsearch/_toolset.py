"""`ToolSet`: the disclosure runtime over an index, for a model's tool calls: what the model
sees (discovery tools, facades that unfold, expanded tools) and what its calls do, catalogue
tools run by the host's `run` callable. Made by `Index.toolset`."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Optional, Union

from . import _calls, _models, _watch
from ._answers import Outcome
from ._native import NativeToolSet as _NativeToolSet
from ._native import index_model as _index_model
from ._watch import metadata as _metadata

PathLike = Union[str, "os.PathLike[str]"]


class ToolSet:
    """What the model sees, and what its tool calls do: discovery tools, facades that unfold,
    expanded tools, and calls of catalogue tools run by the host's `run` callable."""

    def __init__(
        self,
        native: _NativeToolSet,
        path: str,
        seen: Optional[bytes] = None,
        models: Optional[PathLike] = None,
        watch: Optional[float] = None,
    ):
        self._native = native
        # As in `Index`: the index's metadata as read before `native` opened it, where another
        # model would be loaded from, for `reload`, and when to look by itself.
        self._path, self._seen, self._models = path, seen, models
        self._watch = None if watch is None else _watch.Watch(path, watch)

    def _look(self) -> None:
        if self._watch is not None:
            self._watch.look(self._seen, lambda: _metadata(self._path), self.reload)

    def reload(self) -> bool:
        """Picks up what another process did to the index since this set was made (built it
        again, `calibrate`, `learn`), as `Index.reload` does, keeping what the model had
        unfolded and expanded: the next calls answer from the new index. Returns whether it
        changed; then `definitions()` says what the model sees now (a pinned or expanded tool
        the index no longer has is gone). An index that does not open raises `OSError`, and the
        set goes on with the one before."""
        seen = _metadata(self._path)
        if seen is None or seen == self._seen:
            return False
        self._native.reload(_models.load(self._models, _index_model(self._path)))
        self._seen = seen
        return True

    def definitions(self, dialect: str = "openai") -> Any:
        """The tool definitions to give the model now: `openai` (Chat Completions),
        `openai-responses` (the Responses API), `anthropic`, `gemini` or `mcp`."""
        self._look()
        return json.loads(self._native.definitions(dialect))

    @property
    def system_prompt(self) -> str:
        """The system-prompt snippet that explains the tools."""
        return self._native.system_prompt()

    def handle(self, name: str, arguments: Dict[str, Any], run: Optional[Any] = None) -> Outcome:
        """Handles one tool call of the model. Discovery, facades and refusals are answered
        here; a catalogue tool is run by `run(tool_id, arguments)` (its return value, text or
        JSON-able, is the result; an exception is the tool's failure)."""
        self._look()
        step = json.loads(self._native.begin(name, json.dumps(arguments)))
        if "done" in step:
            return Outcome(**step["done"])
        call = step["run"]
        if run is None:
            ok, text = False, "no runner: pass run=callable to ToolSet.handle to run catalogue tools"
        else:
            try:
                result = run(call["tool_id"], call["arguments"])
                ok, text = True, result if isinstance(result, str) else json.dumps(result)
            except Exception as e:  # the tool's failure, reported to the model
                ok, text = False, f"{type(e).__name__}: {e}"
        return Outcome(**json.loads(self._native.finish(call["token"], ok, text)))

    def handle_calls(self, calls: Iterable[Any], dialect: str = "openai", run: Optional[Any] = None) -> List[Dict[str, Any]]:
        """Handles every tool call of a model's response as `handle` does, given in `dialect`'s
        shape (`openai`: the message's `tool_calls`; `openai-responses`: `response.output`;
        `anthropic`: the message's `content`; `gemini`: the content's `parts`; dicts or the
        SDK's objects, other items passed over), and returns the answers to send back, in order,
        in that shape. A call whose arguments do not parse is answered with an error, unrun."""
        return _calls.handle_calls(lambda name, args: self.handle(name, args, run), calls, dialect)

    def end_interaction(self) -> Dict[str, Any]:
        """Ends one interaction: unfolded facades fold back as configured."""
        return json.loads(self._native.end_interaction())

    @property
    def audit(self) -> List[Dict[str, Any]]:
        """The audit trail: what was searched, shown, expanded and called."""
        return [json.loads(line) for line in self._native.audit().splitlines() if line.strip()]
