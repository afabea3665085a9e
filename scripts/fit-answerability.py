#!/usr/bin/env python3
"""Chooses the default path's relative cut and fits the answerability model, both
leave-one-set-out over candidate dumps of the dev sets (`toolsearch candidates IDX QUERIES
--depth 64 --out FILE`, one per set; toollens: its train split).

1. Relative cut: a result is shown when its confidence is at least CUT x the best result's.
   For each held-out set, the other sets choose the largest CUT on the grid whose worst loss of
   nDCG@10 (against the uncut top 10) stays under .005; the loss on the held-out set is
   reported.
2. Answerability: a logistic model over three features of the candidate list (best blend
   score, its lead over the mean of the 2nd to 10th, the dense list's cosine gap between its
   first and second), fitted on twins: each query's candidates (label 1) and the same
   candidates with the gold tools taken out (label 0), each set weighing the same. The
   threshold is the lowest of the training sets' 1st percentiles over originals (each keeps
   >= 99% answered). Held out: AUROC and NO_MATCH rates of twins and originals.
   Off-catalogue queries (one set's queries against another set's index, `none:Q:I=FILE`,
   where no tool is meant to fit) join the training as one more group of negatives, so that a
   request unlike anything in the catalogue is not taken for a near miss; a group is left out
   of a fold when its queries or its index are the held-out set's.

3. Per-term coverage (issue #63), measured, not in the shipped model: `--coverage share` adds
   the share of the query's content terms that no tool holds, `--coverage rare` the number of
   those that are not whole words of the model's vocabulary (`models/.../tokenizer.json`): a
   product or a format ("weread", "ics") rather than a common word. A twin's counts leave out
   its gold tools. Each fold also reports AUROC on gold-first pairs (twins whose original
   ranks a gold tool first). Dumps need `terms` (written by `toolsearch candidates`).

The final model (all sets) is printed as the Rust `Answerability::default()` wants it.
Needs numpy.

    scripts/fit-answerability.py mcp=c-mcp.jsonl stb=c-stb.jsonl meta=c-meta.jsonl \\
        lens=c-lens.jsonl seal=c-seal.jsonl none:stb:mcp=x-stb-on-mcp.jsonl ... \\
        [--report lens=c-lens-test.jsonl] [--coverage none|share|rare]

scripts/dump-answerability writes every dump and prints this command.
"""
import json
import math
import sys

import numpy as np

ALPHA, K = 0.5, 32.0  # the default blend (crates/query/src/fusion.rs)
CAL = (3.67, 18.63, -3.84)  # the default confidence map (crates/index/src/calibration.rs)
CUTS = [0.0, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2]
# Words that frame a request, never counted as unmatched (crates/query/src/coverage.rs).
REQUEST_WORDS = set(
    "about also any anything api app application ask call check data details find function get give help info "
    "information just know let like look looking make need now one plugin service show something tell thing tool "
    "tools try use using want way".split()
)
COVERAGE = "none"
VOCAB = set()


def coverage(terms, twin):
    """The coverage feature (empty under `--coverage none`); a twin's counts leave out its gold tools."""
    if COVERAGE == "none":
        return []
    content = [
        t for t in terms
        if len(t["surface"]) >= 2 and not t["surface"].isdigit() and t["surface"] not in REQUEST_WORDS
        and t["term"] not in REQUEST_WORDS
    ]
    unmatched = [t for t in content if t["documents"] - (t["gold"] if twin else 0) == 0]
    if COVERAGE == "share":
        return [len(unmatched) / len(content) if content else 0.0]
    return [float(sum(t["surface"] not in VOCAB for t in unmatched))]


def blend(c):
    best = max([x["bm25"] or 0.0 for x in c] + [0.0])
    return [ALPHA * x["cosine"] + (1 - ALPHA) * ((x["bm25"] or 0.0) / (best + K) if best > 0 else 0.0) for x in c]


def reference(s):
    top = sorted(s, reverse=True)[:10]
    return sum(top[1:]) / (len(top) - 1) if len(top) > 1 else 0.0


def ranked(c):
    """(confidence, gold) best first."""
    s = blend(c)
    ref = reference(s)
    conf = [1 / (1 + math.exp(-max(-30, min(30, CAL[0] * v + CAL[1] * (v - ref) + CAL[2])))) for v in s]
    order = sorted(range(len(c)), key=lambda i: -s[i])
    return [(conf[i], c[i]["gold"]) for i in order]


def features(c, terms=(), twin=False):
    s = blend(c)
    cos = sorted((x["cosine"] for x in c if x["dense_rank"] is not None), reverse=True) + [0.0, 0.0]
    return [max(s), max(s) - reference(s), cos[0] - cos[1]] + coverage(terms, twin)


def ndcg(gold, groups):
    dcg = sum(1 / math.log2(i + 2) for i, g in enumerate(gold[:10]) if g)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(groups, 10)))
    return dcg / ideal if ideal else 0.0


def dump(path):
    """The queries of a candidate dump that have candidates, as written."""
    with open(path) as f:
        for line in f:
            q = json.loads(line)
            if q["candidates"]:
                yield q


def load(path):
    return [(q["groups"], q["candidates"], q.get("terms", [])) for q in dump(path)]


def cut_loss(queries, cut):
    loss = 0.0
    for groups, c, _ in queries:
        r = ranked(c)
        shown = [g for conf, g in r if conf >= cut * r[0][0]]
        loss += ndcg([g for _, g in r], groups) - ndcg(shown, groups)
    return loss / len(queries)


def twins(queries, gold_first=False):
    """Each query's features (label 1) and its twin's (label 0); with `gold_first`, only the
    queries whose best-blended candidate is a gold tool."""
    x, y = [], []
    for _, c, terms in queries:
        rest = [d for d in c if not d["gold"]]
        if len(rest) == len(c) or not rest:
            continue
        if gold_first:
            s = blend(c)
            if not c[max(range(len(c)), key=lambda i: s[i])]["gold"]:
                continue
        x += [features(c, terms), features(rest, terms, twin=True)]
        y += [1, 0]
    return np.array(x), np.array(y, dtype=float)


def fit(x, y, w, l2=1.0):
    xb = np.hstack([x, np.ones((len(x), 1))])
    beta = np.zeros(xb.shape[1])
    for _ in range(30):
        p = 1 / (1 + np.exp(-np.clip(xb @ beta, -30, 30)))
        g = xb.T @ (w * (p - y)) + l2 * np.r_[beta[:-1], 0]
        h = (xb * (w * p * (1 - p))[:, None]).T @ xb + l2 * np.eye(len(beta))
        beta -= np.linalg.solve(h, g)
    return beta


def predict(model, x):
    mu, sd, beta = model
    z = ((x - mu) / sd) @ beta[:-1] + beta[-1]
    return 1 / (1 + np.exp(-np.clip(z, -30, 30)))


def auroc(p, y):
    order = np.argsort(p, kind="stable")
    ranks = np.empty(len(p))
    ranks[order] = np.arange(1, len(p) + 1)
    n1 = y.sum()
    n0 = len(y) - n1
    return (ranks[y == 1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0)


def train(sets, none):
    groups = list(sets.values()) + ([(none, np.zeros(len(none)))] if len(none) else [])
    x = np.vstack([g[0] for g in groups])
    y = np.concatenate([g[1] for g in groups])
    w = np.concatenate([np.full(len(g[1]), len(y) / len(g[1]) / len(groups)) for g in groups])
    mu, sd = x.mean(0), x.std(0) + 1e-9
    beta = fit((x - mu) / sd, y, w)
    model = (mu, sd, beta)
    threshold = min(np.quantile(predict(model, sets[s][0])[sets[s][1] == 1], 0.01) for s in sets)
    return model, threshold


def off_catalogue(nones, keep):
    rows = [features(c, terms) for (q, i), queries in nones.items() if keep(q, i) for _, c, terms in queries]
    return np.array(rows).reshape(-1, 3 + len(coverage([], False)))


def main():
    global COVERAGE, VOCAB
    if "--coverage" in sys.argv:
        at = sys.argv.index("--coverage")
        COVERAGE = sys.argv[at + 1]
        del sys.argv[at:at + 2]
        if COVERAGE not in ("none", "share", "rare"):
            sys.exit(f"--coverage: {COVERAGE!r} is not none, share or rare")
        with open("models/all-MiniLM-L6-v2-int8/tokenizer.json") as f:
            VOCAB = set(json.load(f)["model"]["vocab"])
    args = [a for a in sys.argv[1:] if a != "--report"]
    report_at = sys.argv.index("--report") if "--report" in sys.argv else len(sys.argv)
    dev = {a.split("=")[0]: load(a.split("=")[1]) for a in sys.argv[1:report_at] if "=" in a and ":" not in a.split("=")[0]}
    nones = {tuple(a.split("=")[0].split(":")[1:]): load(a.split("=")[1]) for a in sys.argv[1:report_at] if a.startswith("none:")}
    report = {a.split("=")[0]: load(a.split("=")[1]) for a in sys.argv[report_at + 1:] if "=" in a}
    del args
    judged = {s: report.get(s, dev[s]) for s in dev}

    print("1. relative cut, leave-one-set-out (loss of nDCG@10 against the uncut top 10)")
    losses = {s: {cut: cut_loss(dev[s], cut) for cut in CUTS} for s in dev}
    judged_losses = {s: ({cut: cut_loss(judged[s], cut) for cut in CUTS} if s in report else losses[s]) for s in dev}
    for held in dev:
        others = [s for s in dev if s != held]
        cut = max(c for c in CUTS if all(losses[s][c] <= 0.005 for s in others))
        print(f"  held out {held:6}: the others choose {cut:<5}  loss on {held}: {judged_losses[held][cut]:+.4f}")

    print(f"2. answerability, leave-one-set-out on twins (coverage feature: {COVERAGE})")
    data = {s: twins(dev[s]) for s in dev}
    judged_data = {s: (twins(judged[s]) if s in report else data[s]) for s in dev}
    for held in dev:
        model, t = train({s: data[s] for s in dev if s != held}, off_catalogue(nones, lambda q, i: held not in (q, i)))
        x, y = judged_data[held]
        p = predict(model, x)
        off = off_catalogue(nones, lambda q, i: held in (q, i))
        off_rate = f"{np.mean(predict(model, off) < t):6.1%}" if len(off) else "     -"
        print(
            f"  held out {held:6}: {len(y) // 2:5} pairs  AUROC {auroc(p, y):.3f}  threshold {t:.3f}  "
            f"NO_MATCH twins {np.mean(p[y == 0] < t):6.1%}  originals {np.mean(p[y == 1] < t):5.1%}  "
            f"off-catalogue {off_rate} of {len(off)}"
        )
        xg, yg = twins(report.get(held, dev[held]), gold_first=True)
        print(f"  {'':17} gold-first pairs {len(yg) // 2:5}  AUROC {auroc(predict(model, xg), yg):.3f}")
    (mu, sd, beta), t = train(data, off_catalogue(nones, lambda q, i: True))
    f = lambda v: ", ".join(f"{x:.6f}" for x in v)
    print("final (every set):")
    print(f"  mean: [{f(mu)}], scale: [{f(sd)}], weights: [{f(beta[:-1])}], bias: {beta[-1]:.6f}, threshold: {t:.4f}")


if __name__ == "__main__":
    main()
