#!/usr/bin/env python3
"""Probes of the answerability ceiling (issue #50), leave-one-set-out on the dev twins.

Reads the candidate dumps that docs/answerability.md writes
(`toolsearch candidates ... --depth 64`: DUMPS/c-mcp.jsonl, c-stb, c-meta, c-lens (toollens
train), c-lens-test, c-seal) and prints, per held-out set (toollens: its test split):

1. `ceiling`: the ranking's precision at 1 and the share of queries with a gold tool in its
   top 3 / 10, and what they bound. A decision that judges only the best result cannot tell
   a twin from its original when the original's best result is not gold either (both lists
   then start with the same tool), so its AUROC on twins is at most .5 + .5 x P@1. With the
   shipped features' quality on the pairs whose original has gold first (A_g, measured),
   AUROC ~= P@1 x A_g + (1 - P@1) x .5; the last column is the A_g that .75 would need.
2. `shape`: the shipped logistic model over three features beside a logistic model and
   gradient-boosted trees over 24 features of the list's shape (blend, cosine and BM25
   scores at ranks 1-10, gaps, z-scores, agreement of the two retrievers' first results).
3. `judge`: a learned pair judge on the stock model's embeddings (logistic over q * t and
   |q - t|, trained on gold vs the hybrid's best non-gold tools of the other sets); the
   answerability score is its best verdict over the top k.
4. `geometry`: the query's least-squares residual on the top k tools' vectors, and its
   cosine to the best tool minus that tool's cosine to its nearest rival in the top k, added
   to the shipped three.

Run by hand, never by CI; needs numpy, scikit-learn, onnxruntime and tokenizers
(training/requirements.txt) and the stock model in models/ (scripts/setup). Embeddings are
cached under target/training/probe-embeddings/.

    training/answerability-probes.py /tmp/dev
"""
import importlib.util
import sys
from pathlib import Path

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from common import REPO, queries_of, tool_text, tools_of

# The shipped model's features, the blend and the dump reader: scripts/fit-answerability.py.
_spec = importlib.util.spec_from_file_location("fit_answerability", REPO / "scripts" / "fit-answerability.py")
fit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fit)
SETS = {  # short name -> (dev set, training dump, judged dump)
    "mcp": ("mcptoolbenchpp", "c-mcp", "c-mcp"),
    "stb": ("toolbench_stb", "c-stb", "c-stb"),
    "meta": ("metatool", "c-meta", "c-meta"),
    "lens": ("toollens", "c-lens", "c-lens-test"),
    "seal": ("sealtools", "c-seal", "c-seal"),
}
CACHE = REPO / "target" / "training" / "probe-embeddings"


def load(path):
    return [(q["id"], q["candidates"]) for q in fit.dump(path)]


def ranked(c):
    """The candidates in blend order (the engine's default fusion), with their scores."""
    s = fit.blend(c)
    order = sorted(range(len(c)), key=lambda i: -s[i])
    return [c[i] for i in order], [s[i] for i in order]


def pairs(items):
    """(query id, original candidates, twin candidates) of every query with a gold tool among
    its candidates and something else beside it."""
    for qid, c in items:
        rest = [d for d in c if not d["gold"]]
        if rest and len(rest) < len(c):
            yield qid, c, rest


def shape(oc, sc):
    ss = sc + [0.0] * 12
    cos = sorted((x["cosine"] for x in oc if x["dense_rank"] is not None), reverse=True)
    cs = cos + [cos[-1]] * 12
    bm = sorted((x["bm25"] or 0.0 for x in oc), reverse=True) + [0.0] * 12
    dense_top = max(oc, key=lambda x: x["cosine"] if x["dense_rank"] is not None else -9)
    lexical_top = max(oc, key=lambda x: x["bm25"] or -1)
    return fit.features(oc) + [
        ss[0] - ss[1], ss[1] - ss[2], cs[0], cs[0] - np.mean(cs[1:10]),
        (cs[0] - np.mean(cos)) / (np.std(cos) + 1e-6), cos[-1],
        bm[0], bm[0] / (bm[0] + fit.K), (bm[0] - bm[1]) / (bm[0] + fit.K),
        sum(x["bm25"] is not None for x in oc) / len(oc),
        float(dense_top is lexical_top), float(oc[0] is dense_top), float(oc[0] is lexical_top),
        cs[2], cs[4], cs[9], ss[2], ss[4], ss[9],
    ]


def embeddings(name, query_ids):
    """The stock model's vectors of a set's tools and of the given queries, as the engine
    embeds them (int8 model, mean pooling, unit length; checked against the dumps' cosines)."""
    path = CACHE / f"{name}.npz"
    if not path.exists():
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model = REPO / "models" / "all-MiniLM-L6-v2-int8"
        tok = Tokenizer.from_file(str(model / "tokenizer.json"))
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 2
        sess = ort.InferenceSession(str(model / "model.onnx"), opts)
        inputs = {i.name for i in sess.get_inputs()}

        def embed(texts, max_len):
            tok.enable_truncation(max_len)
            tok.enable_padding()
            out = np.zeros((len(texts), 384), dtype=np.float32)
            order = np.argsort([len(t) for t in texts])
            for b in range(0, len(texts), 64):
                idx = order[b : b + 64]
                enc = tok.encode_batch([texts[i] for i in idx])
                ids = np.array([e.ids for e in enc], dtype=np.int64)
                mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
                feed = {"input_ids": ids, "attention_mask": mask}
                if "token_type_ids" in inputs:
                    feed["token_type_ids"] = np.zeros_like(ids)
                h = sess.run(None, feed)[0]
                v = (h * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
                out[idx] = v / np.linalg.norm(v, axis=1, keepdims=True)
            return out

        tools = tools_of(name)
        queries = [q for q in queries_of(name) if q["id"] in query_ids]
        CACHE.mkdir(parents=True, exist_ok=True)
        np.savez(
            path,
            tids=np.array([t["id"] for t in tools]),
            tv=embed([tool_text(t) for t in tools], 256),
            qids=np.array([q["id"] for q in queries]),
            qv=embed([q["query"] for q in queries], 128),
        )
    with np.load(path) as z:  # each z[...] reads the whole array again: read each once
        tids, tv, qids, qv = z["tids"], z["tv"], z["qids"], z["qv"]
    return dict(zip(tids, tv)), dict(zip(qids, qv))


def loo(rows, judged, make, cols=None, scores=None):
    """AUROC on each held-out set of a model trained on the other four, each weighing the same
    (and, given `scores`, each held-out set's scores put there)."""
    out = {}
    for held in SETS:
        train = [s for s in SETS if s != held]
        x = np.vstack([rows[s][0] for s in train])
        y = np.concatenate([rows[s][1] for s in train])
        w = np.concatenate([np.full(len(rows[s][1]), len(y) / len(rows[s][1]) / len(train)) for s in train])
        if cols is not None:
            x = x[:, cols]
        mu, sd = x.mean(0), x.std(0) + 1e-9
        model = make().fit((x - mu) / sd, y, sample_weight=w)
        xh, yh = judged[held]
        xh = xh if cols is None else xh[:, cols]
        p = model.predict_proba((xh - mu) / sd)[:, 1]
        out[held] = roc_auc_score(yh, p)
        if scores is not None:
            scores[held] = p
    return out


def line(label, aurocs):
    print(f"  {label:44}" + "  ".join(f"{s} {aurocs[s]:.3f}" for s in SETS))


def main():
    dumps = Path(sys.argv[1])
    train = {s: load(dumps / f"{d}.jsonl") for s, (_, d, _) in SETS.items()}
    judged = {s: (load(dumps / f"{j}.jsonl") if j != d else train[s]) for s, (_, d, j) in SETS.items()}

    print("1. ceiling (judged dumps)")
    print("  set    P@1   any@3 any@10  top-1 oracle  A_g now  A_g .75 needs")
    for s in SETS:
        firsts = [ranked(c)[0] for _, c in judged[s]]
        golds = [[x["gold"] for x in oc] for oc in firsts]
        p1 = np.mean([g[0] for g in golds])
        x, y, gold_first = [], [], []
        for _, c, rest in pairs(judged[s]):
            oc, sc = ranked(c)
            x += [fit.features(oc)[1], fit.features(rest)[1]]
            y += [1, 0]
            gold_first += [oc[0]["gold"]] * 2
        x, y, gold_first = np.array(x), np.array(y), np.array(gold_first)
        a_g = roc_auc_score(y[gold_first], x[gold_first])
        print(
            f"  {s:5} {p1:.3f}  {np.mean([any(g[:3]) for g in golds]):.3f}  {np.mean([any(g[:10]) for g in golds]):.3f}"
            f"  {0.5 + 0.5 * p1:.3f}         {a_g:.3f}    {(0.75 - 0.5 * (1 - p1)) / p1:.3f}"
        )

    def rows_of(items, feature):
        x, y = [], []
        for qid, c, rest in pairs(items):
            x += [feature(qid, *ranked(c)), feature(qid, *ranked(rest))]
            y += [1, 0]
        return np.array(x), np.array(y)

    print("2. shape (AUROC on twins, leave-one-set-out)")
    tr = {s: rows_of(train[s], lambda q, oc, sc: shape(oc, sc)) for s in SETS}
    ju = {s: (rows_of(judged[s], lambda q, oc, sc: shape(oc, sc)) if judged[s] is not train[s] else tr[s]) for s in SETS}
    shipped = {}
    line("shipped: logistic, 3 features", loo(tr, ju, lambda: LogisticRegression(max_iter=2000), [0, 1, 2], shipped))
    line("logistic, 24 features", loo(tr, ju, lambda: LogisticRegression(C=0.1, max_iter=2000)))
    for depth, rounds in [(2, 100), (2, 300), (3, 300)]:
        make = lambda: HistGradientBoostingClassifier(max_depth=depth, max_iter=rounds, learning_rate=0.05, l2_regularization=1.0, random_state=0)
        line(f"boosted trees, depth {depth}, {rounds} rounds", loo(tr, ju, make))

    print("   label noise: twins whose best remaining tool is an endpoint of a gold tool's own API")
    for s in ("stb", "lens"):
        api = lambda tool: "::".join(tool.split("::")[:2])
        same = []
        for _, c, rest in pairs(judged[s]):
            gold = {api(d["tool"]) for d in c if d["gold"]}
            same += [api(ranked(rest)[0][0]["tool"]) in gold] * 2
        same, y = np.array(same), ju[s][1]
        print(f"    {s}: {np.mean(same[y == 0]):.1%} of twins; shipped AUROC without those pairs {roc_auc_score(y[~same], shipped[s][~same]):.3f}")

    vectors = {}
    for s, (name, _, _) in SETS.items():
        ids = {q for q, _ in train[s]} | {q for q, _ in judged[s]}
        vectors[s] = embeddings(name, ids)

    def pair_x(s, qid, tools):
        tv, qv = vectors[s]
        q, t = qv[qid], np.array([tv[x["tool"]] for x in tools])
        return np.hstack([q * t, np.abs(q - t)])

    print("3. judge (AUROC on twins of its best verdict over the top k, leave-one-set-out)")
    examples = {}
    for s in SETS:
        rng = np.random.default_rng(0)
        items = train[s] if len(train[s]) <= 2500 else [train[s][i] for i in rng.choice(len(train[s]), 2500, replace=False)]
        x, y = [], []
        for qid, c in items:
            oc, _ = ranked(c)
            pos, neg = [d for d in oc if d["gold"]][:3], [d for d in oc if not d["gold"]][:5]
            if pos:
                x.append(pair_x(s, qid, pos + neg))
                y += [1] * len(pos) + [0] * len(neg)
        examples[s] = (np.vstack(x), np.array(y))
    verdicts = {k: {} for k in (1, 3, 10)}
    for held in SETS:
        others = [s for s in SETS if s != held]
        x = np.vstack([examples[s][0] for s in others])
        y = np.concatenate([examples[s][1] for s in others])
        w = np.concatenate([np.full(len(examples[s][1]), len(y) / len(examples[s][1])) for s in others])
        judge = LogisticRegression(C=0.1, max_iter=3000).fit(x, y, sample_weight=w)
        for k in verdicts:
            scores, labels = [], []
            for qid, c, rest in pairs(judged[held]):
                for cand, label in ((c, 1), (rest, 0)):
                    scores.append(judge.decision_function(pair_x(held, qid, ranked(cand)[0][:k])).max())
                    labels.append(label)
            verdicts[k][held] = roc_auc_score(labels, scores)
    for k, aurocs in verdicts.items():
        line(f"best verdict over the top {k}", aurocs)

    def geometry(s, qid, oc, sc):
        tv, qv = vectors[s]
        q, out = qv[qid], fit.features(oc)
        for k in (3, 5, 10):
            a = np.array([tv[x["tool"]] for x in oc[:k]]).T
            coef, *_ = np.linalg.lstsq(a, q, rcond=None)
            out += [np.linalg.norm(q - a @ coef), q @ a[:, 0] - (a[:, 1:].T @ a[:, 0]).max()]
        return out

    print("4. geometry (AUROC on twins, leave-one-set-out)")
    tr = {s: rows_of(train[s], lambda q, oc, sc, s=s: geometry(s, q, oc, sc)) for s in SETS}
    ju = {s: (rows_of(judged[s], lambda q, oc, sc, s=s: geometry(s, q, oc, sc)) if judged[s] is not train[s] else tr[s]) for s in SETS}
    line("shipped 3 + residual on the top 3", loo(tr, ju, lambda: LogisticRegression(max_iter=2000), [0, 1, 2, 3]))
    line("shipped 3 + all six", loo(tr, ju, lambda: LogisticRegression(max_iter=2000)))


main()
