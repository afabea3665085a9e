"""What throttling refused tokens costs (docs/gateway-security.md#guessing-tokens), one run, two
binaries side by side (OLD: a build without the throttle, NEW: this one), each an HTTP gateway
with one static token in front of the notes server:

1. an authenticated request's latency: p50/p99 of `ping` on a live session (the token is checked
   on every request), OLD and NEW alternated request by request;
2. refused tokens answered per second, 4 clients on one address guessing (OLD answers each 401;
   NEW 401 for the burst, then 429 without comparing);
3. each gateway's RSS before and after refused tokens from ADDRESSES distinct client addresses
   (named by `X-Forwarded-For`, which NEW trusts from 127.0.0.1), the worst case for the table
   of strikes, which keeps at most 100,000 addresses.

    python bench_strikes.py BIN_OLD,BIN_NEW WORKDIR [PINGS [ADDRESSES]]
Prints one JSON line per binary and one with NEW's ratios to OLD.
"""

import json
import os
import sys
import time

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bench_common import http_gateway, pct, rss_kb

BINS, WORK = sys.argv[1].split(","), sys.argv[2]
PINGS, ADDRESSES = (int(a) for a in (sys.argv[3:5] + ["2000", "150000"][len(sys.argv[3:5]):]))
HERE = os.path.dirname(os.path.abspath(__file__))
TOKEN = "5b1e9c3a7d2f4068b1a3c5e7f9d2b4a6"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
ACCEPT = "application/json, text/event-stream"


def start(binary, i):
    """An HTTP gateway of `binary`; its URL and process. NEW trusts 127.0.0.1 as a proxy."""
    settings = {"tokens": {TOKEN: []}}
    if i == 1:
        settings["trusted_proxies"] = ["127.0.0.1"]
    config = os.path.join(WORK, f"gateway-{i}.json")
    with open(config, "w") as f:
        json.dump({"mcpServers": {"notes": {"command": sys.executable, "args": [os.path.join(HERE, "notes_server.py")]}},
                   "toolsearch": settings}, f)
    return http_gateway(binary, config, os.path.join(WORK, f"state-{i}"))


async def pings(urls):
    """`ping` on a live session of each gateway, alternated, PINGS each; milliseconds."""
    seen = [[] for _ in urls]
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx2.AsyncClient(timeout=60, headers=headers) as h0, \
            httpx2.AsyncClient(timeout=60, headers=headers) as h1:
        async with streamable_http_client(urls[0], http_client=h0) as a, \
                streamable_http_client(urls[1], http_client=h1) as b:
            async with ClientSession(a[0], a[1]) as s0, ClientSession(b[0], b[1]) as s1:
                await s0.initialize()
                await s1.initialize()
                sessions = [s0, s1]
                for k in range(PINGS + 100):
                    for i in (0, 1) if k % 2 == 0 else (1, 0):
                        t = time.perf_counter()
                        await sessions[i].send_ping()
                        if k >= 100:
                            seen[i].append((time.perf_counter() - t) * 1000)
    return seen


async def guesses(url, count, address=None):
    """`count` initializes with wrong tokens from 4 clients; answers per second and by status.
    With `address`, each request names a client address of its own (`X-Forwarded-For`)."""
    statuses = {}
    sent = [0]

    async def client(c):
        async with httpx2.AsyncClient(timeout=60) as http:
            while sent[0] < count:
                n = sent[0]
                sent[0] += 1
                headers = {"Authorization": f"Bearer wrong-{n:032d}", "Accept": ACCEPT}
                if address:
                    headers["X-Forwarded-For"] = f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"
                try:
                    status = (await http.post(url, json=INIT, headers=headers)).status_code
                except httpx2.TransportError as e:
                    status = type(e).__name__
                statuses[status] = statuses.get(status, 0) + 1

    t = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for c in range(4):
            tg.start_soon(client, c)
    return round(count / (time.perf_counter() - t), 1), statuses


async def main():
    os.makedirs(WORK, exist_ok=True)
    started = [start(b, i) for i, b in enumerate(BINS)]
    urls = [u for u, _ in started]
    report = [{"bin": b} for b in BINS]
    try:
        seen = await pings(urls)
        for i, r in enumerate(report):
            r["ping_p50_ms"], r["ping_p99_ms"] = round(pct(seen[i], 50), 3), round(pct(seen[i], 99), 3)
        for i, (url, gw) in enumerate(started):
            r = report[i]
            r["guesses_per_s"], r["guess_statuses"] = await guesses(url, 3000)
            r["rss_before_mb"] = round(rss_kb(gw.pid) / 1024, 1)
            r["addresses_per_s"], r["address_statuses"] = await guesses(url, ADDRESSES, address=True)
            r["rss_after_mb"] = round(rss_kb(gw.pid) / 1024, 1)
            r["rss_growth_mb"] = round(r["rss_after_mb"] - r["rss_before_mb"], 1)
    finally:
        for _, gw in started:
            gw.terminate()
            gw.wait(timeout=20)
    for r in report:
        print(json.dumps(r))
    old, new = report
    print(json.dumps({"ratio_new_to_old": {
        k: round(new[k] / old[k], 3) for k in ("ping_p50_ms", "ping_p99_ms", "guesses_per_s", "addresses_per_s")}}))


anyio.run(main)
