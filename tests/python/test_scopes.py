"""Callers holding scopes: what they may see, from an `Index` and from a tool set made for them;
and that an `Index` shared by many of them works out each one's view whole, ahead (`prepare`)
or behind its first request, as the MCP server does (docs/protocol.md, "Timing")."""

import json
import time

import pytest

import toolsearch
from toolsearch import ErrorCode, ProtocolError

def test_scopes_hide_tools(tmp_path):
    manifest = {
        "tools": [
            {"id": "admin.drop_db", "name": "drop_db", "description": "Drop a production database.", "requires": ["admin"]},
            {"id": "db.query", "name": "query", "description": "Run a read-only query against a database."},
        ]
    }
    index = toolsearch.build(manifest, progress=False)
    seen = {p.tool_id for p in index.search("drop a database", scopes=[]).results}
    assert "admin.drop_db" not in seen and "db.query" in seen
    assert "admin.drop_db" in {p.tool_id for p in index.search("drop a database", scopes=["admin"]).results}
    with pytest.raises(ProtocolError) as e:
        index.expand("admin.drop_db", scopes=[])
    assert e.value.code is ErrorCode.TOOL_NOT_FOUND


def _catalogue(extra: str = ""):
    tools = [
        {"id": f"files.t{i}", "name": f"t{i}", "description": f"Read and write files, kind {i}{extra}.", "requires": ["user"]}
        for i in range(20)
    ]
    tools += [
        {"id": f"pay.p{i}", "name": f"p{i}", "description": f"Refund a card payment through the ledger, kind {i}.", "requires": ["billing"]}
        for i in range(20)
    ]
    # Six scopes in all: of the 64 sets they make, the 16 of fewest scopes are prepared with
    # the first caller prepared (none, each alone, nine pairs), and no set of three.
    tools += [
        {"id": f"ops.o{i}", "name": f"o{i}", "description": f"Restart a service, kind {i}.", "requires": [f"ops{i}"]}
        for i in range(4)
    ]
    return {"tools": tools}


def _until(index, scopes):
    deadline = time.monotonic() + 20
    while not index.prepared(scopes):
        assert time.monotonic() < deadline, f"{scopes} not prepared behind its first request"
        time.sleep(0.01)


def test_a_caller_is_prepared_behind_its_first_request_and_across_a_reload(tmp_path):
    out = tmp_path / "index"
    index = toolsearch.build(_catalogue(), out, progress=False)
    assert not index.prepared(["user"])
    first = index.search("read a file", scopes=["user"])
    assert first.results and all(p.tool_id.startswith("files.") for p in first.results)
    _until(index, ["user"])
    # Prepared, it answers as before, and hidden tools stay hidden.
    again = index.search("read a file", scopes=["user"])
    assert [(p.tool_id, p.confidence) for p in again.results] == [(p.tool_id, p.confidence) for p in first.results]
    try:
        seen = [p.tool_id for p in index.search("refund a card payment through the ledger", scopes=["user"]).results]
    except ProtocolError as e:
        assert e.code is ErrorCode.NO_MATCH_IN_CATEGORY
        seen = e.hints
    assert not any("pay." in s for s in seen), seen
    # With it, the sets of fewest scopes, for callers no host names; a scope no tool requires
    # makes no set of its own.
    assert index.prepared(["billing", "user"]) and index.prepared(["openid", "ops3"])
    # Ahead of any request.
    assert not index.prepared(["billing", "user", "ops0"])
    index.prepare([["billing", "user", "ops0"]])
    assert index.prepared(["user", "ops0", "billing"])
    assert not index.prepared(["billing", "user", "ops1"])
    # Another process builds it again: the reloaded index keeps them prepared.
    toolsearch.build(_catalogue(", again"), out, progress=False)
    assert index.reload()
    assert index.prepared(["user"]) and index.prepared(["billing", "user", "ops0"])
    assert not index.prepared(["billing", "user", "ops1"])


def test_scopes_given_as_a_string_are_refused():
    index = toolsearch.build(_catalogue(), progress=False)
    with pytest.raises(TypeError) as e:
        index.search("read a file", scopes="user")
    assert "scopes" in str(e.value) and "'user'" in str(e.value)
    with pytest.raises(TypeError) as e:
        index.prepare(["user"])
    assert "['user']" in str(e.value)
    with pytest.raises(TypeError):
        index.prepare("user")


def test_a_tool_set_for_a_caller_holding_scopes_never_shows_what_they_do_not_allow():
    manifest = {
        "tools": [
            {"id": "admin.drop_db", "name": "drop_db", "description": "Drop a production database.", "requires": ["admin"]},
            {"id": "db.query", "name": "query", "description": "Run a read-only query against a database."},
        ]
    }
    index = toolsearch.build(manifest, progress=False)
    ts = index.toolset({"discovery": {"call_tool": True}}, scopes=[])
    found = ts.handle("search_tool_by_category", {"query": "drop a database"})
    assert "db.query" in found.text and "drop_db" not in found.text, found.text
    listed = ts.handle("list", {})
    assert "admin" not in listed.text.lower(), listed.text
    for name, arguments in (("expand_tool", {"tool_id": "admin.drop_db"}), ("call_tool", {"tool_id": "admin.drop_db", "arguments": {}})):
        ran = []
        refused = ts.handle(name, arguments, run=lambda tool_id, args: ran.append(tool_id))
        assert refused.is_error and "TOOL_NOT_FOUND" in refused.text and not ran, (name, refused.text)
    assert not any("drop_db" in json.dumps(d) for d in ts.definitions("openai"))
    # The same index, trusted, and with the scope: the tool is there.
    for other in (index.toolset(), index.toolset(scopes=["admin"])):
        assert "drop_db" in other.handle("search_tool_by_category", {"query": "drop a database"}).text
    with pytest.raises(TypeError):
        index.toolset(scopes="admin")
