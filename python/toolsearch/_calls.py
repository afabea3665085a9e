"""A model's tool calls in each provider's own shape, and the results in the shape that
provider takes back: what `ToolSet.handle_calls` reads and writes.

| dialect | calls (dicts or the SDK's objects) | results |
|---|---|---|
| `openai` | `message.tool_calls`: `{id, function: {name, arguments}}` | `{"role": "tool", "tool_call_id", "content"}` |
| `openai-responses` | `response.output` items of type `function_call` | `{"type": "function_call_output", "call_id", "output"}` |
| `anthropic` | `message.content` blocks of type `tool_use` | `{"type": "tool_result", "tool_use_id", "content", "is_error"}` |
| `gemini` | content parts with a `functionCall` | parts `{"functionResponse": {"name", "response": {"output" or "error"}, "id"?}}` |

Items that are not tool calls (text, reasoning) are passed over, so a whole response may be
given as it came."""

import json
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional


class Call(NamedTuple):
    """One tool call: the provider's id for it (`None` when it gives none), the tool's name,
    its arguments, or why they could not be read."""

    id: Optional[str]
    name: str
    arguments: Dict[str, Any]
    unreadable: Optional[str] = None


def _plain(item: Any) -> Dict[str, Any]:
    """An SDK object (pydantic) as the dict it serialises to; a dict as it is."""
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    if dump is None:
        raise TypeError(f"a tool call is a dict or an SDK object, not {type(item).__name__}")
    return dump(mode="json", exclude_none=True)


def _from_json(text: Any) -> Dict[str, Any]:
    """OpenAI's arguments: a JSON object in a string."""
    value = json.loads(text) if isinstance(text, str) else text
    if not isinstance(value, dict):
        raise ValueError("the arguments are not a JSON object")
    return value


def calls(items: Iterable[Any], dialect: str) -> List[Call]:
    """The tool calls among `items`, in `dialect`'s shape."""
    if dialect not in ("openai", "openai-responses", "anthropic", "gemini"):
        raise ValueError(f"dialect {dialect!r}: use openai, openai-responses, anthropic or gemini")
    found: List[Call] = []
    for raw in items:
        item = _plain(raw)
        if dialect == "openai":
            if "function" not in item:
                continue
            fn = item["function"]
            ident, name, args = item.get("id"), fn.get("name", ""), fn.get("arguments", "{}")
        elif dialect == "openai-responses":
            if item.get("type") != "function_call":
                continue
            ident, name, args = item.get("call_id"), item.get("name", ""), item.get("arguments", "{}")
        elif dialect == "anthropic":
            if item.get("type") != "tool_use":
                continue
            ident, name, args = item.get("id"), item.get("name", ""), item.get("input", {})
        else:
            fc = item.get("functionCall", item.get("function_call"))
            if fc is None:
                continue
            ident, name, args = fc.get("id"), fc.get("name", ""), fc.get("args") or {}
        try:
            found.append(Call(ident, name, _from_json(args)))
        except ValueError as e:
            found.append(Call(ident, name, {}, f"the arguments could not be read: {e}"))
    return found


def result(dialect: str, call: Call, text: str, is_error: bool) -> Dict[str, Any]:
    """The answer to `call` in `dialect`'s shape."""
    if dialect == "openai":
        return {"role": "tool", "tool_call_id": call.id, "content": text}
    if dialect == "openai-responses":
        return {"type": "function_call_output", "call_id": call.id, "output": text}
    if dialect == "anthropic":
        return {"type": "tool_result", "tool_use_id": call.id, "content": text, "is_error": is_error}
    response: Dict[str, Any] = {"name": call.name, "response": {"error" if is_error else "output": text}}
    if call.id is not None:
        response["id"] = call.id
    return {"functionResponse": response}


def handle_calls(handle: Callable[[str, Dict[str, Any]], Any], items: Iterable[Any], dialect: str) -> List[Dict[str, Any]]:
    """Each tool call among `items` handled by `handle(name, arguments)` (an `Outcome`), in
    order, and its answer in `dialect`'s shape."""
    answers = []
    for call in calls(items, dialect):
        if call.unreadable is not None:
            answers.append(result(dialect, call, call.unreadable, True))
            continue
        outcome = handle(call.name, call.arguments)
        answers.append(result(dialect, call, outcome.text, outcome.is_error))
    return answers
