"""What a restricted caller's answers cost, and whether their time tells it how much is hidden
(docs/protocol.md, "Timing"): one run, binaries side by side (OLD and NEW), each serving two
catalogues we generate over MCP stdio (`toolsearch serve --scopes user`):

- HIDDEN: 7,000 tools the caller may see and 5,000 payment tools that require `billing`;
- NONE: the same 7,000 tools and nothing else.

A caller that can tell HIDDEN from NONE by timing learns that tools are hidden from it. For each
request kind (`list` at the root and in a category, `search_nodes`, `search_tool_by_category`
about payments repeated, in a category, new each time, and new but with its vector cached,
`expand_tool`, of an id and of a mistyped one; `list` and search with a tag the hidden tools carry, search without it), the
requests of every binary and catalogue are interleaved, and the median milliseconds of each
are printed with HIDDEN/NONE. With `mixed`, the hidden tools sit in a
category the caller sees (Cat1, which the category rows ask about) instead of their own.

With `first`, each server is started afresh REQUESTS times instead, and what is timed is its
`initialize` and its first `list` and search: what a caller's first requests pay; then the
first search meeting words only the hidden tools hold, with its vector cached (`first_words`).

    python bench_scopes.py BIN_OLD,BIN_NEW WORKDIR [REQUESTS] [mixed|first]
Prints one JSON line per binary and one with NEW's times as ratios of OLD's.
"""

import json
import os
import random
import subprocess
import sys
import time

BINS, WORK = sys.argv[1].split(","), sys.argv[2]
REQUESTS = int(sys.argv[3]) if len(sys.argv) > 3 else 300
# `mixed`: the hidden tools sit in a category the caller sees (Cat1) instead of their own.
MIXED = len(sys.argv) > 4 and sys.argv[4] == "mixed"
# `first`: fresh servers, timing what their first requests pay.
FIRST = len(sys.argv) > 4 and sys.argv[4] == "first"
KINDS = {
    "list_root": ("list", {}),
    "list_category": ("list", {"path": "Cat1"}),
    "search_nodes": ("search_nodes", {"query": "refund a customer payment"}),
    "search_repeated": ("search_tool_by_category", {"query": "refund a customer payment"}),
    "search_in_category": ("search_tool_by_category", {"query": "refund a customer payment", "path": "Cat1"}),
    "expand": ("expand_tool", {"tool_id": "v1"}),
    # A mistyped id: TOOL_NOT_FOUND suggests the nearest ids the caller may see.
    "expand_mistyped": ("expand_tool", {"tool_id": "vv1"}),
    # Tags: every hidden tool carries `write`, as some the caller sees do.
    "list_root_tagged": ("list", {"tags": ["write"]}),
    "search_tagged": ("search_tool_by_category", {"query": "refund a customer payment", "tags": ["write"]}),
    "search_without_tag": ("search_tool_by_category", {"query": "refund a customer payment", "tags": ["!write"]}),
    # A new query each time (the model embeds it; the same texts for every server).
    "search_new": ("search_tool_by_category", {"query": "refund the payment of customer {i}"}),
    # The same first 2,000 characters (all the model reads) and a new end: the query's vector is
    # cached and its ranking is not, so BM25 is not hidden behind the model.
    "search_vector_cached": ("search_tool_by_category", {"query": "refund the payment of customer " + "y" * 2000 + " {i}"}),
}


def catalogue(hidden):
    """7,000 tools anyone may see, and with `hidden` 5,000 payment tools requiring `billing`."""
    rng = random.Random(2)
    words = ["file", "image", "user", "report", "email", "calendar", "chart", "table", "queue", "log",
             "metric", "alert", "backup", "cache", "domain", "ticket", "video", "song", "map", "recipe"]
    verbs = ["create", "delete", "list", "update", "send", "fetch", "resize", "export", "import", "archive"]
    tools = []
    for i in range(7000):
        v, w = rng.choice(verbs), rng.choice(words)
        tools.append({"id": f"v{i}", "name": f"{v}_{w}_{i}", "path": f"Cat{i % 30}",
                      "tags": ["read" if v in ("list", "fetch", "export") else "write"],
                      "description": f"{v.capitalize()} a {w} in the system, variant {i}."})
    for i in range(5000 if hidden else 0):
        v, w = rng.choice(verbs), rng.choice(["payment", "invoice", "refund", "charge", "subscription"])
        tools.append({"id": f"h{i}", "name": f"{v}_{w}_{i}", "path": "Cat1" if MIXED else f"Pay{i % 10}", "requires": ["billing"], "tags": ["write"],
                      "description": f"{v.capitalize()} a {w} for a customer, variant {i}."})
    return {"name": "bench-scopes", "tools": tools}


class Served:
    """`toolsearch serve INDEX --scopes user` over stdio, initialised."""

    def __init__(self, binary, index):
        self.p = subprocess.Popen([binary, "serve", index, "--scopes", "user", "--watch", "0"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.id = 0
        start = time.perf_counter()
        self.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "bench", "version": "1"}})
        self.initialized = time.perf_counter() - start
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")

    def ask(self, method, params):
        self.id += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params}) + "\n")
        self.p.stdin.flush()
        while True:
            answer = json.loads(self.p.stdout.readline())
            if answer.get("id") == self.id:
                return answer

    def call(self, tool, arguments):
        """Seconds one `tools/call` took, round trip."""
        start = time.perf_counter()
        answer = self.ask("tools/call", {"name": tool, "arguments": arguments})
        took = time.perf_counter() - start
        assert "result" in answer, answer
        return took

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def main():
    indexes = {}
    for name, hidden in (("hidden", True), ("none", False)):
        path = os.path.join(WORK, f"{name}.json")
        with open(path, "w") as f:
            json.dump(catalogue(hidden), f)
        indexes[name] = os.path.join(WORK, f"index-{name}")
        subprocess.run([BINS[-1], "index", path, "--out", indexes[name]], check=True, capture_output=True)
    if FIRST:
        return report(first_requests(indexes))
    served = {(b, n): Served(b, i) for b in BINS for n, i in indexes.items()}
    times = {key: {k: [] for k in KINDS} for key in served}
    for kind, (tool, arguments) in KINDS.items():
        for s in served.values():
            s.call(tool, arguments)  # the first, which fills every cache
        for i in range(REQUESTS):
            order = list(served.items())
            random.shuffle(order)
            asked = {k: str(v).format(i=i) for k, v in arguments.items()}
            for key, s in order:
                times[key][kind].append(s.call(tool, asked))
    for s in served.values():
        s.close()
    report(times)


# A query the model reads whole (its first 2,000 characters), and the same with words after them
# that every hidden tool holds and no tool the caller sees: the second's vector is cached, so its
# time is BM25's, meeting those words for the first time.
PREFIX = "find the thing " + "y" * 2000
HIDDEN_WORDS = PREFIX + " refund payment invoice charge subscription customer"


def first_requests(indexes):
    """Seconds of `initialize`, the first `list` and the first search of fresh servers, and of
    the first search with words only hidden tools hold (`first_words`, its vector cached)."""
    times = {(b, n): {"initialize": [], "first_list": [], "first_search": [], "first_words": []}
             for b in BINS for n in indexes}
    for _ in range(REQUESTS):
        order = list(times)
        random.shuffle(order)
        for b, n in order:
            s = Served(b, indexes[n])
            times[(b, n)]["initialize"].append(s.initialized)
            times[(b, n)]["first_list"].append(s.call("list", {"path": "Cat1"}))
            times[(b, n)]["first_search"].append(s.call("search_tool_by_category", {"query": "find a chart"}))
            s.call("search_tool_by_category", {"query": PREFIX})
            times[(b, n)]["first_words"].append(s.call("search_tool_by_category", {"query": HIDDEN_WORDS}))
            s.close()
    return times


def report(times):
    """One JSON line per binary: each kind's median ms, HIDDEN and NONE; then NEW / OLD."""
    kinds = list(next(iter(times.values())))
    median = {key: {k: sorted(t)[len(t) // 2] * 1000 for k, t in by_kind.items()} for key, by_kind in times.items()}
    rows = []
    for b in BINS:
        row = {"binary": b}
        for k in kinds:
            h, n = median[(b, "hidden")][k], median[(b, "none")][k]
            row[k] = {"hidden_ms": round(h, 3), "none_ms": round(n, 3), "hidden_over_none": round(h / n, 2)}
        rows.append(row)
        print(json.dumps(row))
    if len(BINS) == 2:
        print(json.dumps({"new_over_old_hidden": {
            k: round(median[(BINS[1], "hidden")][k] / median[(BINS[0], "hidden")][k], 3) for k in kinds}}))


main()
