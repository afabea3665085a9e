"""What `toolsearch.build` is given, as catalogue files: paths as they are, Python objects (an MCP
`tools/list` result, an OpenAI, Anthropic or Gemini tool list, a manifest dict) written to a
scratch directory, each remembered as what the caller passed, for errors to name."""

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Tuple


def items(source: Any) -> List[Any]:
    """`source` as a list of catalogue sources: one path, object or tool list is one item.
    Nothing to build raises `ValueError`, a path that does not exist `FileNotFoundError`."""
    found: List[Any]
    if isinstance(source, (str, os.PathLike, dict)):
        found = [source]
    elif isinstance(source, list) and source and all(isinstance(s, dict) and _is_tool(s) for s in source):
        found = [source]  # one tool list
    else:
        found = list(source)
    if not found:
        raise ValueError("nothing to build: give a catalogue file, a tool list or a manifest (source is empty)")
    for item in found:
        if isinstance(item, (str, os.PathLike)) and not os.path.exists(item):
            raise FileNotFoundError(2, "no such catalogue file", os.fspath(item))
    return found


def stage(found: List[Any], server: str, scratch: str) -> Tuple[List[str], List[Tuple[str, str]]]:
    """The catalogue files of `found`, objects written under `scratch`; and for each written
    file, what it stands for in an error (the object the caller passed)."""
    paths: List[str] = []
    labels: List[Tuple[str, str]] = []
    for i, item in enumerate(found):
        if isinstance(item, (str, os.PathLike)):
            paths.append(os.fspath(item))
        else:
            # An MCP tool list's server is named after its file: `server`, so ids read `SERVER.NAME`.
            p = Path(scratch) / str(i) / f"{server}.json"
            p.parent.mkdir()
            p.write_text(json.dumps(item))
            paths.append(str(p))
            what = "the object passed to build()" if len(found) == 1 else f"object {i} of the list passed to build()"
            labels.append((str(p), what))
    return paths, labels


def _is_tool(d: Dict[str, Any]) -> bool:
    # A provider-defined tool ({"type": "web_search"}) has a type and may have no name; a
    # Gemini tool object holds declarations.
    return "name" in d or isinstance(d.get("type"), str) or "functionDeclarations" in d or "function_declarations" in d
