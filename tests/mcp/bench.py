"""Gateway benchmark, one run, with the official Python MCP SDK as the client:

1. a forwarded call's added latency: p50/p99 of `recall` called directly on the notes server vs
   through the gateway (by its revealed name), both over stdio, alternated call by call; and
   the gateway's context switches and CPU time per forwarded call;
2. ping latency while a 5 s upstream call is in flight;
3. searches per second with 8 and with 200 concurrent Streamable HTTP clients (sessions), and
   the gateway's RSS with 200 sessions open; searches per second with 8 clients whose every
   query is new (so the model embeds each), and p50/p99 of one client's new queries one by one;
4. the gateway's RSS over 10,000 mixed requests (search, expand, call, list, ping) over HTTP;
5. reload time for a config change: a server added to the config until the gateway has
   applied it (`config_reloaded`) and until the new server's tools are found by search, and
   ping latency from another session meanwhile (the server starting, the index rebuilt);
6. ping latency from a session while a config edit adds six stdio servers at once, until the
   next index is built (`ping_during_six_starts`, `six_starts_indexed_s`).

    python bench.py TOOLSEARCH_BIN CONFIG STATE HTTP_CONFIG HTTP_STATE
Prints a JSON report.

    python bench.py --compare BIN_A,BIN_B CONFIG STATE [STARTS [CALLS]]
compares binaries on 1 only (a before/after in one run): each gateway started STARTS times
(default 4), alternating which goes first, CALLS alternated calls each (default 500); prints one
JSON line per binary.

    python bench.py --compare-http BIN_A,BIN_B CONFIG STATE [STARTS [CALLS]]
the same over Streamable HTTP: the notes server serves HTTP, the gateway serves HTTP with it as
an HTTP upstream, and `recall` is called on each alternately (CONFIG is written by this script).
"""

import json
import os
import subprocess
import sys
import time

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from bench_common import http_gateway, pct, rss_kb

COMPARE = sys.argv[1] in ("--compare", "--compare-http")
OVER_HTTP = sys.argv[1] == "--compare-http"
if COMPARE:
    BINS, CONFIG, STATE = sys.argv[2].split(","), sys.argv[3], sys.argv[4]
    STARTS, CALLS = (int(a) for a in (sys.argv[5:7] + ["4", "500"][len(sys.argv[5:7]):]))
    BIN = HTTP_CONFIG = HTTP_STATE = None
else:
    BIN, CONFIG, STATE, HTTP_CONFIG, HTTP_STATE = sys.argv[1:6]
HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable
REPORT: dict = {}


def summary(ms):
    return {"n": len(ms), "p50_ms": round(pct(ms, 50), 3), "p99_ms": round(pct(ms, 99), 3), "max_ms": round(max(ms), 3)}


async def timed(f):
    t = time.perf_counter()
    await f()
    return (time.perf_counter() - t) * 1000


def gateway_pid():
    """The gateway this process started over stdio (a child running BIN)."""
    me = str(os.getpid())
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            ppid = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1]
            if ppid == me and open(f"/proc/{p}/cmdline", "rb").read().split(b"\0")[0].decode() == BIN:
                return int(p)
        except OSError:
            pass


def switches_and_cpu_ms(pid):
    """Context switches of every thread of `pid`, and its CPU time in ms, so far."""
    switches = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        for line in open(f"/proc/{pid}/task/{t}/status"):
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                switches += int(line.split()[1])
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return switches, (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


async def calls(n):
    """`recall` directly on the notes server and through the gateway, alternated call by call
    in two sessions open side by side, so both meet the same load on the machine; then pings
    through the gateway while a 5 s upstream call is in flight."""
    direct_params = StdioServerParameters(command=PY, args=[os.path.join(HERE, "notes_server.py")])
    params = StdioServerParameters(command=BIN, args=["gateway", "--config", CONFIG, "--state", STATE])
    async with stdio_client(direct_params) as (dr, dw), stdio_client(params) as (r, w):
        async with ClientSession(dr, dw) as d, ClientSession(r, w) as s:
            await d.initialize()
            await s.initialize()
            expanded = json.loads((await s.call_tool("expand_tool", {"tool_id": "notes.recall"})).content[0].text)
            name = expanded["callable_as"]
            await d.call_tool("remember", {"key": "k", "text": "v"})
            await s.call_tool("call_tool", {"tool_id": "notes.remember", "arguments": {"key": "k", "text": "v"}})
            for _ in range(20):
                await d.call_tool("recall", {"key": "k"})
                await s.call_tool(name, {"key": "k"})
            pid = gateway_pid()
            before = switches_and_cpu_ms(pid)
            direct, through = [], []
            for _ in range(n):
                direct.append(await timed(lambda: d.call_tool("recall", {"key": "k"})))
                through.append(await timed(lambda: s.call_tool(name, {"key": "k"})))
            after = switches_and_cpu_ms(pid)
            REPORT["gateway_per_call"] = {
                "context_switches": round((after[0] - before[0]) / n, 1),
                "cpu_ms": round((after[1] - before[1]) / n, 3),
            }
            # Pings while a 5 s upstream call is in flight.
            pings = []
            async with anyio.create_task_group() as tg:
                tg.start_soon(s.call_tool, "call_tool", {"tool_id": "notes.slow_job", "arguments": {"seconds": 5}})
                await anyio.sleep(0.3)
                t_end = time.monotonic() + 4.0
                while time.monotonic() < t_end:
                    pings.append(await timed(s.send_ping))
                    await anyio.sleep(0.05)
            return direct, through, pings


def free_port():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def http_calls(n):
    """`recall` directly on the notes server over HTTP and through an HTTP gateway in front of
    it, alternated call by call in two sessions open side by side."""
    import socket

    port = free_port()
    notes = subprocess.Popen([PY, os.path.join(HERE, "notes_server.py"), "http", str(port)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    gw = None
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        with open(CONFIG, "w") as f:
            json.dump({"mcpServers": {"notes": {"url": f"http://127.0.0.1:{port}/mcp"}}}, f)
        url, gw = http_gateway(BIN, CONFIG, STATE)
        direct_url = f"http://127.0.0.1:{port}/mcp"
        async with httpx2.AsyncClient(timeout=120) as h1, httpx2.AsyncClient(timeout=120) as h2:
            async with streamable_http_client(direct_url, http_client=h1) as ds, \
                    streamable_http_client(url, http_client=h2) as gs:
                async with ClientSession(ds[0], ds[1]) as d, ClientSession(gs[0], gs[1]) as s:
                    await d.initialize()
                    await s.initialize()
                    await d.call_tool("remember", {"key": "k", "text": "v"})
                    args = {"tool_id": "notes.recall", "arguments": {"key": "k"}}
                    for _ in range(20):
                        await d.call_tool("recall", {"key": "k"})
                        await s.call_tool("call_tool", args)
                    before = switches_and_cpu_ms(gw.pid)
                    direct, through = [], []
                    for _ in range(n):
                        direct.append(await timed(lambda: d.call_tool("recall", {"key": "k"})))
                        through.append(await timed(lambda: s.call_tool("call_tool", args)))
                    after = switches_and_cpu_ms(gw.pid)
                    REPORT["gateway_per_call"] = {
                        "context_switches": round((after[0] - before[0]) / n, 1),
                        "cpu_ms": round((after[1] - before[1]) / n, 3),
                    }
                    return direct, through, []
    finally:
        if gw is not None:
            gw.terminate()
            gw.wait(timeout=20)
        notes.terminate()
        notes.wait(timeout=20)


async def http_session(url, work):
    async with httpx2.AsyncClient(timeout=120) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as s:
                await s.initialize()
                return await work(s)


QUERIES = ["remember a note under a key", "echo a message back", "add two numbers", "long running job with progress",
           "read back a stored note", "print environment variables", "sample an llm", "get a tiny image"]


async def searches_per_s(url, pid, clients, seconds, uncached=False):
    """Searches per second with CLIENTS concurrent sessions for SECONDS, once all are open; the
    gateway's RSS (MB) with them all open. The queries repeat (400 of them, so most are answered
    from the query cache) unless UNCACHED, where each is new and the model embeds every one."""
    counts = [0] * clients
    opened = [0]
    all_open = anyio.Event()
    window = {}

    async def searcher(i):
        async def work(s):
            opened[0] += 1
            if opened[0] == clients:
                window["rss_mb"] = round(rss_kb(pid) / 1024, 1)
                window["stop"] = time.monotonic() + seconds
                all_open.set()
            await all_open.wait()
            k = 0
            while time.monotonic() < window["stop"]:
                tail = f"{i}-{k}" if uncached else f"{k % 50}"
                await s.call_tool("search_tool_by_category", {"query": f"{QUERIES[(i + k) % len(QUERIES)]} {tail}"})
                counts[i] += 1
                k += 1
        await http_session(url, work)

    async with anyio.create_task_group() as tg:
        for i in range(clients):
            tg.start_soon(searcher, i)
    return round(sum(counts) / seconds, 1), window["rss_mb"]


async def http_bench(url, pid, events):
    REPORT["rss_idle_mb"] = round(rss_kb(pid) / 1024, 1)
    REPORT["http_searches_per_s_8_clients"], _ = await searches_per_s(url, pid, 8, 10.0)
    REPORT["http_uncached_searches_per_s_8_clients"], _ = await searches_per_s(url, pid, 8, 10.0, uncached=True)

    async def one_by_one(s):
        ms, inside = [], []
        for k in range(300):
            if k == 50:
                seen, cpu = len(events), switches_and_cpu_ms(pid)[1]
            query = f"{QUERIES[k % 8]} one {k}"
            ms.append(await timed(lambda: s.call_tool("search_tool_by_category", {"query": query})))
        cpu = switches_and_cpu_ms(pid)[1] - cpu
        await anyio.sleep(0.5)  # the last request log lines
        for line in events[seen:]:
            if '"request"' in line and "search_tool_by_category" in line:
                inside.append(json.loads(line)["ms"])
        return ms[50:], inside[-250:], cpu / 250

    ms, inside, cpu = await http_session(url, one_by_one)
    REPORT["http_uncached_search_1_client"] = summary(ms)
    # The same searches inside the gateway (its request log's `ms`) and its CPU time per search.
    REPORT["http_uncached_search_1_client_inside"] = summary(inside)
    REPORT["gateway_cpu_ms_per_uncached_search"] = round(cpu, 2)
    per_s, rss = await searches_per_s(url, pid, 200, 10.0)
    REPORT["http_searches_per_s_200_clients"] = per_s
    REPORT["rss_with_200_sessions_mb"] = rss
    await anyio.sleep(1.0)
    REPORT["rss_after_200_sessions_closed_mb"] = round(rss_kb(pid) / 1024, 1)

    # RSS over 10,000 mixed requests (one client).
    samples = []

    async def mixed(s):
        for k in range(10_000):
            op = k % 5
            if op == 0:
                await s.call_tool("search_tool_by_category", {"query": f"{QUERIES[k % 8]} {k}"})
            elif op == 1:
                await s.call_tool("expand_tool", {"tool_id": "everything.echo"})
            elif op == 2:
                await s.call_tool("call_tool", {"tool_id": "everything.echo", "arguments": {"message": f"m{k}"}})
            elif op == 3:
                await s.list_tools()
            else:
                await s.send_ping()
            if k % 1000 == 999:
                samples.append({"requests": k + 1, "rss_mb": round(rss_kb(pid) / 1024, 1)})

    t0 = time.monotonic()
    await http_session(url, mixed)
    REPORT["mixed_10k_seconds"] = round(time.monotonic() - t0, 1)
    REPORT["rss_over_10k_mixed"] = samples


async def main():
    direct, through, pings = await calls(1000)
    REPORT["direct_call"] = summary(direct)
    REPORT["gateway_call"] = summary(through)
    REPORT["added_p50_ms"] = round(pct(through, 50) - pct(direct, 50), 3)
    REPORT["added_p99_ms"] = round(pct(through, 99) - pct(direct, 99), 3)
    REPORT["ping_during_5s_call"] = summary(pings)
    gw = subprocess.Popen([BIN, "--json", "gateway", "--config", HTTP_CONFIG, "--state", HTTP_STATE, "--http", "127.0.0.1:0"],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = None
    for line in gw.stderr:
        if "http://" in line:
            url = "http://" + line.split("http://")[1].split('"')[0].strip()
            break
    # The status lines that follow are read on a thread (the log queue drops lines a parent
    # does not read; the reload below waits for one).
    events = []
    import threading
    threading.Thread(target=lambda: events.extend(gw.stderr), daemon=True).start()
    try:
        await http_bench(url, gw.pid, events)
        await reload_bench(url, events)
        await starts_bench(url, events)
    finally:
        gw.terminate()
        gw.wait(timeout=20)
    print(json.dumps(REPORT, indent=2))


async def reload_bench(url, events):
    """A server added to the config: until the gateway applied it, and until its tools are found."""
    with open(HTTP_CONFIG) as f:
        config = json.load(f)
    memory = os.path.join(os.path.dirname(os.path.dirname(HERE)), "target/npm/node_modules/@modelcontextprotocol/server-memory/dist/index.js")
    config["mcpServers"]["memory"] = {"command": "node", "args": [memory], "env": {"MEMORY_FILE_PATH": HTTP_CONFIG + ".memory.jsonl"}}
    t0 = time.monotonic()
    with open(HTTP_CONFIG + ".new", "w") as f:
        json.dump(config, f)
    os.replace(HTTP_CONFIG + ".new", HTTP_CONFIG)

    async def until_found(s):
        while time.monotonic() - t0 < 120:
            r = await s.call_tool("search_tool_by_category", {"query": "create entities in the knowledge graph"})
            if "memory.create_entities" in r.content[0].text:
                return time.monotonic() - t0
            await anyio.sleep(0.05)
        return None

    pings, result = [], {}

    async def pinger(s):
        while "found" not in result:
            pings.append(await timed(s.send_ping))

    async def finder():
        result["found"] = await http_session(url, until_found)

    async with anyio.create_task_group() as tg:
        tg.start_soon(http_session, url, pinger)
        tg.start_soon(finder)
    found = result["found"]
    # Pings from another session meanwhile: what the server's start and the index build cost
    # the other requests.
    REPORT["ping_during_reload"] = summary(pings)
    applied = [json.loads(l)["ms"] for l in events if '"config_reloaded"' in l]
    REPORT["reload_applied_ms"] = applied[0] if applied else None
    REPORT["reload_until_searchable_s"] = round(found, 2) if found else None


async def starts_bench(url, events):
    """Six stdio servers added to the config at once: pings from a session until the index
    the gateway builds next is in (it starts each program, lists its tools, then indexes)."""
    with open(HTTP_CONFIG) as f:
        config = json.load(f)
    everything = config["mcpServers"]["everything"]
    for i in range(6):
        config["mcpServers"][f"more{i}"] = everything
    pings, t0 = [], []

    async def pinger(s):
        before = sum('"indexed"' in e for e in events)
        with open(HTTP_CONFIG + ".new", "w") as f:
            json.dump(config, f)
        os.replace(HTTP_CONFIG + ".new", HTTP_CONFIG)
        t0.append(time.monotonic())
        while sum('"indexed"' in e for e in events) == before and time.monotonic() - t0[0] < 60:
            pings.append(await timed(s.send_ping))

    await http_session(url, pinger)
    REPORT["ping_during_six_starts"] = summary(pings)
    REPORT["six_starts_indexed_s"] = round(time.monotonic() - t0[0], 2)


async def compare():
    """Added latency, context switches and CPU per call of each of BINS, in one run."""
    global BIN, STATE
    seen = {b: {"direct": [], "through": [], "per_call": []} for b in BINS}
    base = STATE
    for start in range(STARTS):
        for b in BINS if start % 2 == 0 else BINS[::-1]:
            # Each binary keeps a state dir of its own: an older one need not read a newer
            # one's pins (format 2 pins annotations, which format 1 does not know).
            BIN, STATE = b, f"{base}-{BINS.index(b)}"
            direct, through, _ = await (http_calls(CALLS) if OVER_HTTP else calls(CALLS))
            seen[b]["direct"] += direct
            seen[b]["through"] += through
            seen[b]["per_call"].append(REPORT["gateway_per_call"])
    for b in BINS:
        d, g, per = seen[b]["direct"], seen[b]["through"], seen[b]["per_call"]
        print(json.dumps({
            "bin": b,
            "direct_p50_ms": round(pct(d, 50), 3),
            "added_p50_ms": round(pct(g, 50) - pct(d, 50), 3),
            "added_p99_ms": round(pct(g, 99) - pct(d, 99), 3),
            "context_switches_per_call": round(sum(x["context_switches"] for x in per) / len(per), 1),
            "cpu_ms_per_call": round(sum(x["cpu_ms"] for x in per) / len(per), 3),
        }))


anyio.run(compare if COMPARE else main)
