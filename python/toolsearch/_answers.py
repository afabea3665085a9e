"""The package's answers and errors as Python values: what a search, a listing, a build and a
tool set's call come to, and the protocol's errors. Re-exported by `toolsearch`, whose names
they carry."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


class ErrorCode(str, enum.Enum):
    """The protocol's error codes."""

    NO_MATCH_IN_CATEGORY = "NO_MATCH_IN_CATEGORY"
    UNKNOWN_PATH = "UNKNOWN_PATH"
    TOOL_NOT_FOUND = "TOOL_NOT_FOUND"
    NOT_AUTHORIZED = "NOT_AUTHORIZED"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    INVALID_CURSOR = "INVALID_CURSOR"
    UNKNOWN_TOOL = "UNKNOWN_TOOL"
    UNAVAILABLE = "UNAVAILABLE"
    INTERNAL = "INTERNAL"


class ProtocolError(Exception):
    """An answer of the protocol that is an error: `code` says what kind, `message` what went
    wrong, `hints` concrete alternatives (closest path, similar ids), `next_action` the call
    likely to help."""

    def __init__(self, code: ErrorCode, message: str, hints: List[str], next_action: Optional[Dict[str, Any]]):
        super().__init__(f"{code.value}: {message}")
        self.code = code
        self.message = message
        self.hints = hints
        self.next_action = next_action


@dataclass(frozen=True)
class Pointer:
    """A tool found by a search or listed in a category: enough to choose it, not its schema."""

    tool_id: str
    path: str
    summary: str
    tags: List[str]
    confidence: float


@dataclass(frozen=True)
class SearchPage:
    """One page of search results; `next_cursor` asks for the next. `answerable` is the
    engine's estimate that some tool in scope fits the query at all (a query-level
    probability, apart from each result's confidence; `None` for regex matches): under the
    engine's threshold the search raises `NO_MATCH_IN_CATEGORY` instead."""

    category_path: str
    results: List[Pointer]
    next_cursor: Optional[str]
    answerable: Optional[float] = None


@dataclass(frozen=True)
class NodeHit:
    """A category found by `Index.nodes`."""

    path: str
    summary: str
    confidence: float


@dataclass(frozen=True)
class NodeEntry:
    """A sub-category listed by `Index.list`."""

    name: str
    path: str
    summary: str
    tags: List[str]
    tool_count: int


@dataclass(frozen=True)
class ListPage:
    """What a category holds: its sub-categories and a page of its tools."""

    path: str
    nodes: List[NodeEntry]
    tools: List[Pointer]
    next_cursor: Optional[str]


@dataclass(frozen=True)
class BuildReport:
    """What a build did; `warnings` name each tool indexed with a caveat (a schema kept
    unvalidated, a description cut) or left out (a duplicate, a provider-defined tool)."""

    tools: int
    nodes: int
    embedded: int
    reused: int
    seconds: float
    warnings: List[Dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Outcome:
    """What a model's tool call came to: the result `text` for the model, whether it is an
    error, and the tool names that became visible (`added`) or stopped being (`removed`)."""

    text: str
    is_error: bool
    added: List[str]
    removed: List[str]
