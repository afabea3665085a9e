"""A model's tool calls in each provider's own shape, and the results in the shape that
provider takes back: what `ToolSet.handle_calls` reads and writes. The shapes are the Rust
library's (`toolsearch_disclosure::model_calls`, the same for both), given JSON: SDK objects
are turned into the dicts they serialise to first.

| dialect | calls (dicts or the SDK's objects) | results |
|---|---|---|
| `openai` | `message.tool_calls`: `{id, function: {name, arguments}}` | `{"role": "tool", "tool_call_id", "content"}` |
| `openai-responses` | `response.output` items of type `function_call` | `{"type": "function_call_output", "call_id", "output"}` |
| `anthropic` | `message.content` blocks of type `tool_use` | `{"type": "tool_result", "tool_use_id", "content", "is_error"}` |
| `gemini` | content parts with a `functionCall` | parts `{"functionResponse": {"name", "response": {"output" or "error"}, "id"?}}`, a JSON result as its value |

Items that are not tool calls (text, reasoning) are passed over, so a whole response may be
given as it came."""

import json
from typing import Any, Callable, Dict, Iterable, List

from ._native import model_answer as _model_answer
from ._native import model_calls as _model_calls


def _plain(item: Any) -> Dict[str, Any]:
    """An SDK object (pydantic) as the dict it serialises to; a dict as it is."""
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    if dump is None:
        raise TypeError(f"a tool call is a dict or an SDK object, not {type(item).__name__}")
    return dump(mode="json", exclude_none=True)


def handle_calls(handle: Callable[[str, Dict[str, Any]], Any], items: Iterable[Any], dialect: str) -> List[Dict[str, Any]]:
    """Each tool call among `items` handled by `handle(name, arguments)` (an `Outcome`), in
    order, and its answer in `dialect`'s shape. An unknown dialect raises `ValueError`."""
    answers = []
    for call in json.loads(_model_calls(json.dumps([_plain(i) for i in items]), dialect)):
        if call["unreadable"] is not None:
            text, is_error = call["unreadable"], True
        else:
            outcome = handle(call["name"], call["arguments"])
            text, is_error = outcome.text, outcome.is_error
        answers.append(json.loads(_model_answer(dialect, json.dumps(call), text, is_error)))
    return answers
