#!/usr/bin/env python3
"""Offline fusion grid with leave-one-set-out selection.

Reads candidate dumps written by `toolsearch candidates INDEX QUERIES --out FILE` (one per
dev set), scores every fusion formula and setting in the grid, and for each set held out
chooses the setting that is best on the other sets (mean nDCG@10), then reports it on the held
out set. Nothing here is used at run time; the chosen formula is written in
crates/query/src/fusion.rs and the figures in docs/benchmarks.md.

    scripts/tune-fusion.py stb=/tmp/c-stb.jsonl metatool=/tmp/c-meta.jsonl ...
"""
import json
import math
import sys


def load(path):
    out = []
    with open(path) as f:
        for line in f:
            q = json.loads(line)
            c = [(x["cosine"], x["bm25"], x["dense_rank"], x["lexical_rank"], x["gold"]) for x in q["candidates"]]
            out.append((q["groups"], c))
    return out


def ndcg10(order, cands, groups):
    dcg = sum(1 / math.log2(i + 2) for i, j in enumerate(order[:10]) if cands[j][4])
    ideal = sum(1 / math.log2(i + 2) for i in range(min(groups, 10)))
    return dcg / ideal if ideal else 0.0


def minmax(xs):
    lo, hi = min(xs), max(xs)
    return [(x - lo) / (hi - lo) if hi > lo else 0.0 for x in xs]


def score_minmax(cands, alpha):
    cos = minmax([c[0] for c in cands])
    b = [c[1] or 0.0 for c in cands]
    bm = minmax(b) if any(b) else [0.0] * len(b)
    return [alpha * x + (1 - alpha) * y for x, y in zip(cos, bm)]


def score_abs(cands, alpha, k):
    best = max([c[1] or 0.0 for c in cands] + [0.0])
    return [alpha * c[0] + (1 - alpha) * ((c[1] or 0.0) / (best + k) if best > 0 else 0.0) for c in cands]


def score_rrf(cands, k):
    rr = lambda r: 0.0 if r is None else 1 / (k + r + 1)
    return [rr(c[2]) + rr(c[3]) for c in cands]


def score_adaptive(cands, alpha, gain, depth=10):
    """Min-max blend whose lexical weight grows with the agreement of the two top lists."""
    d = {i for i, c in enumerate(cands) if c[2] is not None and c[2] < depth}
    l = {i for i, c in enumerate(cands) if c[3] is not None and c[3] < depth}
    agree = len(d & l) / depth if l else 0.0
    a = min(1.0, max(0.0, alpha - gain * (agree - 0.5)))
    return score_minmax(cands, a)


def score_sum_norm(cands, alpha):
    """cosine + bm25 / max bm25 (lexical relative to its best, no damping)."""
    return score_abs(cands, alpha, 0.0)


GRID = (
    [("minmax", a) for a in [0.0, 1.0, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8]]
    + [("abs", a, k) for a in [0.5, 0.6, 0.65, 0.7, 0.8] for k in [0, 4, 8, 16, 32, 64]]
    + [("rrf", k) for k in [10, 30, 60]]
    + [("adaptive", a, g) for a in [0.5, 0.6, 0.7] for g in [0.2, 0.4, 0.8]]
)
FUN = {"minmax": score_minmax, "abs": score_abs, "rrf": score_rrf, "adaptive": score_adaptive}


def evaluate(queries, cfg):
    total = 0.0
    for groups, cands in queries:
        if not cands:
            continue
        s = FUN[cfg[0]](cands, *cfg[1:])
        order = sorted(range(len(cands)), key=lambda i: -s[i])
        total += ndcg10(order, cands, groups)
    return total / max(1, len(queries))


def main():
    sets = dict(a.split("=", 1) for a in sys.argv[1:])
    data = {name: load(path) for name, path in sets.items()}
    table = {cfg: {n: evaluate(q, cfg) for n, q in data.items()} for cfg in GRID}
    names = list(data)
    print("config".ljust(26) + "".join(n[:10].rjust(11) for n in names) + "       mean")
    for cfg, r in sorted(table.items(), key=lambda kv: -sum(kv[1].values())):
        print(str(cfg).ljust(26) + "".join(f"{r[n]:11.4f}" for n in names) + f"{sum(r.values()) / len(r):11.4f}")
    print("\nleave one set out: chosen on the others, scored on the held-out set")
    for held in names:
        rest = [n for n in names if n != held]
        best = max(GRID, key=lambda c: sum(table[c][n] for n in rest))
        print(f"  {held:14} chose {best}: {table[best][held]:.4f} (best possible {max(t[held] for t in table.values()):.4f})")


if __name__ == "__main__":
    main()
