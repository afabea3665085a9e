"""Drives gateway replicas behind HAProxy (scripts/gateway-replicas) with the official Python
MCP SDK client, and prints a JSON report:

1. the same searches, asked of each replica directly, get the same answers;
2. SESSIONS concurrent sessions through HAProxy, each a search and a call, all open at once;
   the replicas' RSS with them open, and how the sessions were shared (each replica's
   `/metrics`);
3. searches per second through HAProxy with those sessions.

    python replicas.py FRONT_URL REPLICA_A_URL REPLICA_B_URL PID_A PID_B SESSIONS
"""

import json
import sys
import time

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

FRONT, A, B = sys.argv[1:4]
PIDS = [int(sys.argv[4]), int(sys.argv[5])]
SESSIONS = int(sys.argv[6])
QUERIES = ["add two numbers", "echo a message back", "create entities in the knowledge graph",
           "print environment variables", "get a tiny image", "long running operation with progress",
           "read the whole knowledge graph", "delete relations between entities"]
REPORT: dict = {}


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "text", None) is not None)


async def session(url, work):
    async with httpx2.AsyncClient(timeout=120) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as s:
                await s.initialize()
                return await work(s)


async def answers(url):
    async def work(s):
        return [text(await s.call_tool("search_tool_by_category", {"query": q, "limit": 10})) for q in QUERIES]
    return await session(url, work)


def metric(url, name):
    body = httpx2.get(url.replace("/mcp", "/metrics"), timeout=10).text
    total = 0.0
    for line in body.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


async def main():
    a, b = await answers(A), await answers(B)
    REPORT["same_answers"] = a == b
    REPORT["queries"] = len(a)
    REPORT["rss_before_mb"] = [rss_mb(p) for p in PIDS]
    calls_before = [metric(u, "toolsearch_requests_total") for u in (A, B)]

    opened = [0]
    all_open = anyio.Event()
    window = {}
    counts = [0] * SESSIONS
    failures = []

    async def client(i):
        async def work(s):
            r = await s.call_tool("call_tool", {"tool_id": "everything.echo", "arguments": {"message": f"c{i}"}})
            if text(r) != f"Echo: c{i}":
                failures.append(text(r))
            opened[0] += 1
            if opened[0] == SESSIONS:
                window["rss_mb"] = [rss_mb(p) for p in PIDS]
                window["start"] = time.monotonic()
                window["stop"] = window["start"] + 10.0
                all_open.set()
            await all_open.wait()
            k = 0
            while time.monotonic() < window["stop"]:
                await s.call_tool("search_tool_by_category", {"query": QUERIES[(i + k) % len(QUERIES)]})
                counts[i] += 1
                k += 1
        try:
            await session(FRONT, work)
        except Exception as e:  # counted, and the report says so
            failures.append(repr(e))
            opened[0] += 1
            if opened[0] == SESSIONS:
                all_open.set()

    t0 = time.monotonic()
    async with anyio.create_task_group() as tg:
        for i in range(SESSIONS):
            tg.start_soon(client, i)
    REPORT["sessions"] = SESSIONS
    REPORT["failures"] = failures[:5]
    REPORT["failed_sessions"] = len(failures)
    REPORT["seconds_all_sessions"] = round(time.monotonic() - t0, 1)
    REPORT["rss_with_sessions_open_mb"] = window.get("rss_mb")
    REPORT["searches_per_s_through_haproxy"] = round(sum(counts) / 10.0, 1)
    await anyio.sleep(1.0)
    REPORT["rss_after_mb"] = [rss_mb(p) for p in PIDS]
    REPORT["requests_per_replica"] = [metric(u, "toolsearch_requests_total") - c for u, c in zip((A, B), calls_before)]
    print(json.dumps(REPORT, indent=2))


anyio.run(main)
