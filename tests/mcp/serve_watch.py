"""Drives `toolsearch serve --watch 1` with the official Python MCP SDK client while the index
it serves (built here from BASE_CATALOGUE) is rebuilt on disk, broken, and rebuilt again.
Prints one JSON object of observations; tests/serve_watch.rs asserts on it.

    python serve_watch.py index INDEX BASE_CATALOGUE GROWN_CATALOGUE QUERY STDERR_FILE
    python serve_watch.py config INDEX CONFIG LESS_CATALOGUE STDERR_FILE
                                      # the configuration edited; the index rebuilt without a pinned tool
    python serve_watch.py hidden INDEX HIDDEN_CATALOGUE SHOWN_CATALOGUE QUERY STDERR_FILE
                                      # a caller without scopes, a hidden tool added, then a shown one
    python serve_watch.py runners INDEX CONFIG SCRATCH_DIR STDERR_FILE
                                      # the executor and the checks edited while serving
"""

import contextlib
import json
import os
import subprocess
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from client_steps import text_of

TOOLSEARCH = os.environ["TOOLSEARCH_BIN"]
OUT: dict = {}


class Notes:
    def __init__(self):
        self.list_changed = 0

    async def handle(self, message):
        message = getattr(message, "root", message)
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self.list_changed += 1


@contextlib.asynccontextmanager
async def serving(stderr_file, *args):
    """A session of the SDK's client with `toolsearch serve ARGS --watch 1`, its stderr written to
    `stderr_file` (kept in OUT once it ends): the session, and the notifications it counts."""
    notes = Notes()
    params = StdioServerParameters(command=TOOLSEARCH, args=["serve", *args, "--watch", "1"])
    with open(stderr_file, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write_stream):
            async with ClientSession(read, write_stream, message_handler=notes.handle) as session:
                await session.initialize()
                yield session, notes
    with open(stderr_file) as f:
        OUT["stderr"] = f.read()


def build(catalogue, index, *flags):
    done = subprocess.run([TOOLSEARCH, "index", catalogue, "--out", index, *flags], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


async def top(session, query):
    """The first tool a search answers with, or the error code it answers instead."""
    answer = json.loads(text_of(await session.call_tool("search_tool_by_category", {"query": query})))
    results = answer.get("results") or []
    return results[0]["tool_id"] if results else answer.get("code", answer)


async def told(notes, before, seconds=30.0):
    """Waits for a `list_changed` beyond the `before` already counted; whether one came."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if notes.list_changed > before:
            return True
        await anyio.sleep(0.1)
    return False


async def logged(stderr_file, text, seconds=30.0):
    """Waits for the server to write `text` on its stderr; whether it did."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with open(stderr_file) as f:
            if text in f.read():
                return True
        await anyio.sleep(0.1)
    return False


def said(stderr_file, what):
    """How many times the server has said it runs with an edited `what` (executor, checks)."""
    with open(stderr_file) as f:
        return f.read().count(f'; running with its "{what}"')


async def applied(stderr_file, what, times, seconds=30.0):
    """Waits for the server to have said `times` times that it runs with an edited `what`;
    whether it did."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if said(stderr_file, what) >= times:
            return True
        await anyio.sleep(0.1)
    return False


async def names(session):
    return sorted(t.name for t in (await session.list_tools()).tools)


def write(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


async def config_edits(index, config, less, stderr_file):
    async with serving(stderr_file, index, "--config", config) as (session, notes):
        OUT["at_start"] = await names(session)

        write(config, json.dumps({"toolset": {"pinned": ["weather.current", "git.status"]}}))
        OUT["told_after_pin"] = await told(notes, 0)
        OUT["after_pin"] = await names(session)

        write(config, '{"toolset": ')
        OUT["warned_unparsable"] = await logged(stderr_file, "still serving with the configuration before")
        write(config, json.dumps({"toolset": {"pinned": ["no.such.tool"]}}))
        OUT["warned_unknown_pin"] = await logged(stderr_file, "no.such.tool")
        toolset = {"pinned": ["weather.current", "git.status"]}
        write(config, json.dumps({"toolset": toolset, "executor": ["true"]}))
        OUT["applied_executor"] = await logged(stderr_file, 'running with its "executor" now')
        OUT["after_bad_edits"] = await names(session)
        OUT["list_changed"] = notes.list_changed

        # The index rebuilt without a pinned tool: said, and the tool no longer offered.
        build(less, index)
        OUT["told_after_less"] = await told(notes, notes.list_changed)
        OUT["warned_less"] = await logged(stderr_file, "the index changed under the configuration")
        OUT["after_less"] = await names(session)


async def index_rebuilds(index, base, grown, query, stderr_file):
    build(base, index)
    async with serving(stderr_file, index) as (session, notes):
        OUT["before"] = await top(session, query)

        # Another process rebuilds the index with one more tool.
        build(grown, index)
        OUT["told_after_rebuild"] = await told(notes, 0)
        OUT["after_rebuild"] = await top(session, query)

        # The metadata is overwritten with garbage: the index before goes on serving.
        meta = os.path.join(index, "meta.bin")
        with open(meta, "rb") as f:
            kept = f.read()
        with open(meta, "wb") as f:
            f.write(b"not an index")
        OUT["warned"] = await logged(stderr_file, "does not open")
        OUT["while_broken"] = await top(session, query)
        with open(meta + ".tmp", "wb") as f:
            f.write(kept)
        os.replace(meta + ".tmp", meta)

        # Rebuilt without the new tool: it is gone from the client's searches.
        count = notes.list_changed
        build(base, index)
        OUT["told_after_second_rebuild"] = await told(notes, count)
        OUT["after_second_rebuild"] = await top(session, query)

        # Rebuilt with another model: served with that model, loaded.
        count = notes.list_changed
        build(grown, index, "--model", "stock")
        OUT["told_after_model_change"] = await told(notes, count)
        OUT["after_model_change"] = await top(session, query)
        OUT["list_changed"] = notes.list_changed


async def hidden_tool(index, hidden, shown, query, stderr_file):
    async with serving(stderr_file, index, "--scopes", "none") as (session, notes):
        OUT["before"] = await top(session, query)
        build(hidden, index)
        OUT["served_hidden"] = await logged(stderr_file, "serving it now (205 tools")
        await anyio.sleep(2.0)
        OUT["told_after_hidden"] = notes.list_changed
        OUT["after_hidden"] = await top(session, query)
        build(shown, index)
        OUT["told_after_shown"] = await told(notes, 0)
        OUT["after_shown"] = await top(session, query)


async def run(session, arguments=None):
    """What a call of the pinned `weather.current` answers: its text, and whether it is an error."""
    result = await session.call_tool("current", arguments or {"location": "Paris"})
    return {"text": text_of(result).strip(), "error": bool(result.is_error)}


def runners_config(executor=None, check=None):
    config = {"toolset": {"pinned": ["weather.current", "github.create_issue"]}, "timeout_secs": 30}
    if executor:
        config["executor"] = ["sh", "-c", executor]
    if check:
        config["checks"] = {"github_reachable": ["sh", "-c", check]}
    return json.dumps(config)


async def runners(index, config, scratch, stderr_file):
    write(config, runners_config("echo first", "false"))
    async with serving(stderr_file, index, "--config", config) as (session, notes):
        OUT["at_start"] = await names(session)
        OUT["first"] = await run(session)

        # The executor and the check edited: the next call runs the new one; the group comes up.
        write(config, runners_config("echo second", "true"))
        OUT["applied_both"] = await applied(stderr_file, "executor", 1) and await applied(stderr_file, "checks", 1)
        OUT["told_after_check"] = await told(notes, 0)
        OUT["after_check"] = await names(session)
        OUT["second"] = await run(session)

        # A call under way when the executor changes finishes with the one it started with.
        started = os.path.join(scratch, "started")
        write(config, runners_config(f"touch {started}; sleep 3; echo slow", "true"))
        OUT["applied_slow"] = await applied(stderr_file, "executor", 2)
        async with anyio.create_task_group() as tasks:
            slow = {}

            async def slow_call():
                slow.update(await run(session))

            tasks.start_soon(slow_call)
            while not os.path.exists(started):
                await anyio.sleep(0.05)
            write(config, runners_config("echo fast", "true"))
            OUT["applied_during_call"] = await applied(stderr_file, "executor", 3)
            OUT["during"] = await run(session)
        OUT["slow"] = slow

        # A check that takes 8 s to first answer: the executor edited with it runs at once, and
        # the old check serves until the new one has run; then the group goes down.
        count = notes.list_changed
        edited = time.monotonic()
        write(config, runners_config("echo third", "sleep 8; false"))
        OUT["applied_third"] = await applied(stderr_file, "executor", 4)
        OUT["third"] = await run(session)
        OUT["third_secs"] = time.monotonic() - edited
        OUT["while_checking"] = await names(session)
        OUT["checks_said_while_checking"] = said(stderr_file, "checks")
        OUT["applied_slow_check"] = await applied(stderr_file, "checks", 2)
        OUT["told_after_slow_check"] = await told(notes, count)
        OUT["after_slow_check"] = await names(session)

        # Checks asked for and then replaced by a later edit before their first run ended are
        # dropped: the later ones stay.
        write(config, runners_config("echo b1", "sleep 4; false"))
        OUT["applied_b1"] = await applied(stderr_file, "executor", 5)
        write(config, runners_config("echo b2", "true"))
        OUT["applied_b2"] = await applied(stderr_file, "executor", 6) and await applied(stderr_file, "checks", 3)
        await anyio.sleep(6)
        OUT["after_superseded"] = await names(session)
        OUT["checks_said_after_superseded"] = said(stderr_file, "checks")

        # Neither named any more: calls say what to configure; the group is down again.
        count = notes.list_changed
        write(config, runners_config())
        OUT["told_after_none"] = await told(notes, count)
        OUT["after_none"] = await names(session)
        OUT["none"] = await run(session)


if __name__ == "__main__":
    scenarios = {"index": (index_rebuilds, 5), "config": (config_edits, 4), "hidden": (hidden_tool, 5), "runners": (runners, 4)}
    scenario, arity = scenarios[sys.argv[1]]
    anyio.run(scenario, *sys.argv[2 : 2 + arity])
    print(json.dumps(OUT))
