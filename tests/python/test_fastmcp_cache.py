"""The FastMCP transform's indexes across processes sharing a `cache_dir` (a server's workers),
and the kept index a new tool set takes its vectors from: real processes, the real model."""

import asyncio
import json
import os
import subprocess
import sys
import time

import toolsearch

# A worker: a transform over the cache directory ARGV[1]; at the file ARGV[2] it searches its
# tools (building or opening their index), prints what it built and found, then searches
# again at each line on stdin.
WORKER = r"""
import asyncio, json, sys, time
from pathlib import Path
import toolsearch
from fastmcp.tools import Tool
from toolsearch.integrations import fastmcp as integration

cache, go, name = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
built, real = [], toolsearch.build
def counted(listing, *args, **kwargs):
    built.append(len(listing))
    return real(listing, *args, **kwargs)
toolsearch.build = counted
tools = [
    Tool.from_function(lambda payment_id: payment_id, name="refund_payment", description="Refund a card payment to the customer."),
    Tool.from_function(lambda city: city, name="get_weather", description="Current weather for a city."),
]
transform = integration.ToolsearchSearchTransform(max_results=1, cache_dir=cache)
(go.parent / ("ready-" + name)).touch()
while not go.exists():
    time.sleep(0.002)

async def main():
    query = "give the customer their money back"
    while query:
        found = await transform._search(tools, query)
        (index,) = transform._indexes.values()
        print(json.dumps({"built": built, "found": [t.name for t in found], "on_disk": Path(index.path).exists()}), flush=True)
        query = (await asyncio.to_thread(sys.stdin.readline)).strip()

asyncio.run(main())
"""


def test_workers_sharing_a_cache_dir_build_a_tool_set_once_and_keep_answering_when_another_prunes_it(monkeypatch, tmp_path):
    from fastmcp.tools import Tool

    from toolsearch.integrations import fastmcp as integration

    cache, go = tmp_path / "indexes", tmp_path / "go"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(cache), str(go), str(n)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env={k: v for k, v in os.environ.items() if k != "TOOLSEARCH_MODELS"},
        )
        for n in range(2)
    ]
    try:
        deadline = time.monotonic() + 120
        while not all((tmp_path / f"ready-{n}").exists() for n in range(2)):
            assert time.monotonic() < deadline and all(w.poll() is None for w in workers), "a worker did not start"
            time.sleep(0.01)
        go.touch()  # both search at once: one builds the index, the other waits and opens it
        first = [json.loads(w.stdout.readline()) for w in workers]
        assert sorted(len(f["built"]) for f in first) == [0, 1], first
        assert all(f["found"] == ["refund_payment"] for f in first), first
        (kept,) = [d for d in cache.iterdir() if d.is_dir()]
        assert (cache / (kept.name + ".lock")).exists()

        # Another worker, keeping one index on disk, prunes theirs when it builds its own ...
        monkeypatch.setattr(integration, "KEPT_ON_DISK", 1)
        mine = integration.ToolsearchSearchTransform(cache_dir=cache)
        made = asyncio.run(mine._index_of([Tool.from_function(lambda city: city, name="get_forecast", description="Forecast.")]))
        assert not kept.exists() and not (cache / (kept.name + ".lock")).exists()
        assert sorted(p.name for p in cache.iterdir()) == sorted([os.path.basename(made.path), os.path.basename(made.path) + ".lock"])
        # ... and theirs, open, keeps answering from it.
        for w in workers:
            w.stdin.write("weather in Paris\n")
            w.stdin.flush()
        again = [json.loads(w.stdout.readline()) for w in workers]
        assert all(a["found"] == ["get_weather"] and not a["on_disk"] for a in again), again
    finally:
        for w in workers:
            w.stdin.close()
            w.wait(timeout=60)
    assert [w.returncode for w in workers] == [0, 0]


def test_pruning_passes_over_an_index_another_process_is_opening_or_building(monkeypatch, tmp_path):
    from toolsearch.integrations import _cache_lock
    from toolsearch.integrations import fastmcp as integration

    monkeypatch.setattr(integration, "KEPT_ON_DISK", 0)
    busy, idle, orphan = tmp_path / ("a" * 32), tmp_path / ("b" * 32), tmp_path / ("c" * 32)
    busy.mkdir()
    idle.mkdir()
    _cache_lock.lock_file(orphan).touch()  # a lock file whose build failed
    transform = integration.ToolsearchSearchTransform(cache_dir=tmp_path)
    with _cache_lock.entry_lock(busy, wait=True):  # held as another process would (its own open file)
        transform._prune(set())
        assert busy.exists() and not idle.exists()
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([busy.name, busy.name + ".lock"])
    transform._prune(set())
    assert list(tmp_path.iterdir()) == []


def test_a_new_tool_set_takes_its_vectors_from_the_kept_index_sharing_the_most_tools(monkeypatch):
    from fastmcp.tools import Tool

    from toolsearch.integrations.fastmcp import ToolsearchSearchTransform

    embedded = []
    real_build = toolsearch.build

    def counted(listing, **kwargs):
        index = real_build(listing, **kwargs)
        embedded.append(index.report.embedded)
        return index

    monkeypatch.setattr(toolsearch, "build", counted)

    def tool(name, description):
        return Tool.from_function(lambda x: x, name=name, description=description)

    shop = [tool("refund_payment", "Refund a card payment."), tool("list_orders", "List a customer's orders."),
            tool("cancel_order", "Cancel an order before it ships.")]
    weather = [tool("get_weather", "Current weather for a city.")]
    transform = ToolsearchSearchTransform()
    for tools in (shop, weather, shop + [tool("issue_coupon", "Give a customer a discount coupon.")]):
        asyncio.run(transform._index_of(tools))
    # The third set shares three tools with the first and none with the one used last.
    assert embedded == [3, 1, 1], embedded


def test_a_session_meeting_a_new_tool_set_holds_up_no_other_sessions_search(monkeypatch):
    import threading

    from fastmcp.tools import Tool

    from toolsearch.integrations.fastmcp import ToolsearchSearchTransform

    release, built = threading.Event(), []
    real_build = toolsearch.build

    def slow(listing, **kwargs):  # the new set's build waits until the test lets it go
        built.append(len(listing))
        if len(listing) == 2:
            assert release.wait(60)
        return real_build(listing, **kwargs)

    monkeypatch.setattr(toolsearch, "build", slow)
    old = [Tool.from_function(lambda city: city, name="get_weather", description="Current weather for a city.")]
    new = old + [Tool.from_function(lambda p: p, name="refund_payment", description="Refund a card payment.")]
    transform = ToolsearchSearchTransform(max_results=1)

    async def scenario():
        await transform._search(old, "weather")
        # Two sessions meet the new set at once (one build), and one searches the old set meanwhile.
        waiting = [asyncio.ensure_future(transform._search(new, "refund a payment")) for _ in range(2)]
        await asyncio.sleep(0.05)
        found = await asyncio.wait_for(transform._search(old, "weather in Paris"), 10)
        assert not any(w.done() for w in waiting), "the new set's build was let go"
        release.set()
        return [t.name for t in found], [[t.name for t in await w] for w in waiting]

    found, waited = asyncio.run(scenario())
    assert found == ["get_weather"] and waited == [["refund_payment"], ["refund_payment"]]
    assert built == [1, 2], built


def test_a_cache_dir_on_a_file_system_without_locks_still_serves(monkeypatch, tmp_path):
    import errno

    from toolsearch.integrations import _cache_lock

    def no_locks(fd, how):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(_cache_lock.fcntl, "flock", no_locks)
    with _cache_lock.entry_lock(tmp_path / ("a" * 32), wait=False) as mine:
        assert mine, "no lock to be had: taken as held, as without fcntl"
    monkeypatch.setattr(_cache_lock.fcntl, "flock", lambda fd, how: (_ for _ in ()).throw(OSError(errno.EBADF, "bad")))
    try:
        with _cache_lock.entry_lock(tmp_path / ("b" * 32), wait=True):
            raise AssertionError("another error is not swallowed")
    except OSError as e:
        assert e.errno == errno.EBADF
