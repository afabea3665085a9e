#!/usr/bin/env python3
"""Servers and categories lifting their tools (issue #63 item 3), chosen leave-one-set-out over
candidate dumps (`scripts/dump-answerability DIR` writes them; each candidate carries `node`,
the cosine of its category node's own document, and `node_tools`, the mean cosine of that
node's tools).

A candidate's score becomes blend + W x signal, where the signal is the node's own cosine
(`node`), what its tools say (`node_tools`), or their mean (`both`); a tool outside any node
gets 0 (metatool is flat, so it never moves). For each held-out set, the other sets choose W
on the grid by their mean gain of nDCG@10 over W = 0; the held-out set's gain at that W is
reported with nDCG@10, Recall@5 and P@1. The lift is kept only if it helps every held-out set
or costs none of them more than .002.

    scripts/tune-structure.py DIR        # DIR as written by scripts/dump-answerability
"""
import importlib.util
import json
import os
import sys

spec = importlib.util.spec_from_file_location("fa", os.path.join(os.path.dirname(__file__), "fit-answerability.py"))
fa = importlib.util.module_from_spec(spec)
sys.modules["fa"] = fa
spec.loader.exec_module(fa)

GRID = [0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5]
SIGNALS = ["node", "node_tools", "both"]


def signal(x, kind):
    if x.get("node") is None:
        return 0.0
    if kind == "both":
        return (x["node"] + x["node_tools"]) / 2
    return x[kind]


def metrics(queries, kind, w):
    nd = r5 = p1 = 0.0
    for groups, c in queries:
        s = fa.blend(c)
        order = sorted(range(len(c)), key=lambda i: -(s[i] + w * signal(c[i], kind)))
        gold = [c[i]["gold"] for i in order]
        nd += fa.ndcg(gold, groups)
        r5 += min(sum(gold[:5]), groups) / groups
        p1 += gold[0]
    n = len(queries)
    return nd / n, r5 / n, p1 / n


def load(path):
    out = []
    with open(path) as f:
        for line in f:
            q = json.loads(line)
            if q["candidates"] and any(x["gold"] for x in q["candidates"]):
                out.append((q["groups"], q["candidates"]))
    return out


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__)
    dev = {s: load(f"{d}/c-{s}.jsonl") for s in ["mcp", "stb", "meta", "lens", "seal"]}
    judged = dict(dev, lens=load(f"{d}/c-lens-test.jsonl"))
    for kind in SIGNALS:
        table = {s: {w: metrics(dev[s], kind, w) for w in GRID} for s in dev}
        print(f"signal {kind}: per-set nDCG@10 gain over W = 0 (training portions; toollens train)")
        for s in dev:
            print(f"  {s:5}" + "".join(f"  {w}:{table[s][w][0] - table[s][0.0][0]:+.4f}" for w in GRID))
        print("  leave-one-set-out (held-out: toollens test):")
        for held in dev:
            others = [s for s in dev if s != held]
            w = max(GRID, key=lambda w: sum(table[s][w][0] - table[s][0.0][0] for s in others))
            base, lifted = metrics(judged[held], kind, 0.0), metrics(judged[held], kind, w)
            gain = " ".join(f"{name} {a:.4f}->{b:.4f} ({b - a:+.4f})" for name, a, b in zip(["nDCG@10", "R@5", "P@1"], base, lifted))
            print(f"    held out {held:5} W={w:<5} {gain}")


if __name__ == "__main__":
    main()
