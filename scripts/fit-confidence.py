#!/usr/bin/env python3
"""Fits the confidence map on candidate dumps of several dev sets pooled (each set weighs the
same), checks it leave-one-set-out (ECE on the held-out set), and prints the abstention rates
at a range of thresholds (gold removed / gold present) for the chosen map.

    scripts/fit-confidence.py ALPHA K stb=/tmp/c-stb.jsonl meta=... lens=... mcp=...
"""
import json, math, sys

def load(path, alpha, k):
    out = []
    for line in open(path):
        q = json.loads(line)
        c = q["candidates"]
        if not c:
            continue
        best = max([x["bm25"] or 0.0 for x in c] + [0.0])
        s = [alpha * x["cosine"] + (1 - alpha) * ((x["bm25"] or 0.0) / (best + k) if best > 0 else 0.0) for x in c]
        order = sorted(range(len(c)), key=lambda i: -s[i])
        top = [s[i] for i in order[:10]]
        ref = sum(top[1:]) / (len(top) - 1) if len(top) > 1 else 0.0
        rows = [(s[i], ref, c[i]["gold"]) for i in order[:10]]
        out.append(rows)
    return out

def conf(w, x):
    z = w[0] * x[0] + w[1] * (x[0] - x[1]) + w[2]
    return 1 / (1 + math.exp(-max(-30, min(30, z))))

def fit(samples):
    # weighted logistic regression by Newton steps; samples: (score, ref, gold, weight)
    w = [4.0, 16.0, -4.0]
    for _ in range(50):
        g = [0.0] * 3; h = [[0.0] * 3 for _ in range(3)]
        for s, r, y, wt in samples:
            f = [s, s - r, 1.0]; p = conf(w, (s, r))
            for i in range(3):
                g[i] += wt * (p - y) * f[i]
                for j in range(3):
                    h[i][j] += wt * p * (1 - p) * f[i] * f[j]
        for i in range(3): h[i][i] += 1e-6
        # solve h d = g (3x3)
        import copy
        a = copy.deepcopy(h); b = g[:]
        for i in range(3):
            piv = a[i][i]
            for j in range(i + 1, 3):
                m = a[j][i] / piv
                for kk in range(i, 3): a[j][kk] -= m * a[i][kk]
                b[j] -= m * b[i]
        d = [0.0] * 3
        for i in reversed(range(3)):
            d[i] = (b[i] - sum(a[i][j] * d[j] for j in range(i + 1, 3))) / a[i][i]
        w = [w[i] - d[i] for i in range(3)]
    return w

def ece(w, queries, bins=10):
    tot = [0.0] * bins; hit = [0.0] * bins; n = [0] * bins; N = 0
    for rows in queries:
        for s, r, y in rows:
            c = conf(w, (s, r)); b = min(bins - 1, int(c * bins))
            tot[b] += c; hit[b] += y; n[b] += 1; N += 1
    return sum(abs(tot[i] - hit[i]) for i in range(bins) if n[i]) / max(1, N)

def abstain(w, queries, t):
    removed = present = 0
    for rows in queries:
        present += conf(w, rows[0][:2]) < t
        other = next((r for r in rows if not r[2]), None)
        removed += other is None or conf(w, other[:2]) < t
    return removed / len(queries), present / len(queries)

def samples_of(sets):
    out = []
    for qs in sets:
        n = sum(len(r) for r in qs)
        out += [(s, r, y, 1.0 / n) for rows in qs for s, r, y in rows]
    return out

def main():
    alpha, k = float(sys.argv[1]), float(sys.argv[2])
    data = {a.split("=")[0]: load(a.split("=")[1], alpha, k) for a in sys.argv[3:]}
    w = fit(samples_of(data.values()))
    print("pooled fit: scale %.3f margin_scale %.3f bias %.3f" % tuple(w))
    for name, qs in data.items():
        wl = fit(samples_of([v for n, v in data.items() if n != name]))
        print(f"  {name:6} ECE pooled {ece(w, qs):.3f}  held out {ece(wl, qs):.3f}")
    print("threshold  " + "  ".join(f"{n:>13}" for n in data) + "   (abstain: gold removed / present)")
    for t in [0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3]:
        print(f"  {t:5.2f}    " + "  ".join("%5.1f%% / %4.1f%%" % tuple(100 * x for x in abstain(w, qs, t)) for qs in data.values()))

main()
