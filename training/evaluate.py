"""The evaluator: the product's own ranking (the release `toolsearch` binary) with a model.

    python training/evaluate.py dump LABEL MODEL_ONNX   # index the five sets (or $SETS), dump candidates
    python training/evaluate.py report [PREFIX]        # every fold against the stock model
    python training/evaluate.py metrics [PREFIX]       # R@5, P@1 and twin AUROC too, shipped fusion
    python training/evaluate.py parity LABEL_A LABEL_B # two dumps of one model (int8, fp32)
    python training/evaluate.py paired PREFIX_A PREFIX_B # two recipes' folds, paired, per held-out set
    python training/evaluate.py speed ONNX             # query embedding p50, stock vs ONNX

`dump` builds a models directory for the ONNX file (the stock runtime library and tokenizer
beside it), indexes each dev set's tools with it and writes the fusion candidates of each
set's held-out queries (`data.py heldout`) under target/training/LABEL/. `report` reads the
dumps: for each fold (the model trained without that set), the dense ranking and the hybrid
ranking with the fusion refit leave-one-set-out (the grid of scripts/tune-fusion.py, chosen
on the other four sets' held-out queries with the same model), against the stock model's
dumps refit the same way; nDCG@10 with paired standard errors over the held-out set's queries.
`REFIT_ON=a,b` chooses the fusion on those sets only (a fold trained on some of the other sets
is otherwise refit partly on its own training sets' queries).
"""
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import common

WORK = common.REPO / "target" / "training"
BIN = common.REPO / "target" / "release" / "toolsearch"
STOCK_MODELS = common.REPO / "models"
SHIPPED = "abs", 0.5, 32  # the product's fusion today: 0.5 cos + 0.5 bm25 / (best + 32)

_spec = importlib.util.spec_from_file_location("tune_fusion", common.REPO / "scripts" / "tune-fusion.py")
tune = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tune)


def models_dir(label, onnx):
    """A models directory holding `onnx` as the model, the stock runtime and tokenizer."""
    d = WORK / label / "models"
    m = d / "all-MiniLM-L6-v2-int8"
    m.mkdir(parents=True, exist_ok=True)
    lib = "libonnxruntime.so.1.31.1"
    if not (d / lib).exists():
        os.symlink(STOCK_MODELS / lib, d / lib)
    for f in ["tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"]:
        if not (m / f).exists():
            os.symlink(STOCK_MODELS / "all-MiniLM-L6-v2-int8" / f, m / f)
    shutil.copyfile(onnx, m / "model.onnx")
    return d


def dump(label, onnx):
    models = STOCK_MODELS if onnx == "stock" else models_dir(label, onnx)
    held = WORK / "heldout"
    # SETS=a,b dumps only those sets (a fold's own held-out set, say).
    for name in [n for n in os.environ.get("SETS", ",".join(common.SETS)).split(",") if n]:
        idx = WORK / label / "index" / name
        out = WORK / label / f"c-{name}.jsonl"
        if out.exists():
            continue
        run = lambda *a: subprocess.run([str(BIN), "--models", str(models), "--model", "stock", *a], check=True, stdout=subprocess.DEVNULL)
        run("index", str(common.BENCH / name / "tools.jsonl"), "--out", str(idx))
        run("candidates", str(idx), str(held / f"{name}.jsonl"), "--out", str(out))
        shutil.rmtree(idx)
        print(f"{label}: {name} dumped", flush=True)


def per_query(queries, cfg):
    out = []
    for groups, cands in queries:
        if not cands:
            out.append(0.0)
            continue
        s = tune.FUN[cfg[0]](cands, *cfg[1:])
        order = sorted(range(len(cands)), key=lambda i: -s[i])
        out.append(tune.ndcg10(order, cands, groups))
    return out


def mean(xs):
    return sum(xs) / max(1, len(xs))


def paired(a, b):
    d = [y - x for x, y in zip(a, b)]
    m = mean(d)
    se = math.sqrt(sum((x - m) ** 2 for x in d) / max(1, len(d) - 1) / max(1, len(d)))
    return m, se


def load(label):
    return {n: tune.load(WORK / label / f"c-{n}.jsonl") for n in common.SETS if (WORK / label / f"c-{n}.jsonl").exists()}


def refit(data, held):
    """The grid setting best on the mean of the other sets (leave-one-set-out)."""
    only = [n for n in os.environ.get("REFIT_ON", "").split(",") if n]
    rest = [n for n in data if n != held and (not only or n in only)]
    return max(tune.GRID, key=lambda c: sum(mean(per_query(data[n], c)) for n in rest))


def report(prefix="fold"):
    stock = load("stock")
    rows = []
    for held in common.SETS:
        fold = load(f"{prefix}-{held}")
        if held not in fold or held not in stock:
            continue
        s_cfg, f_cfg = refit(stock, held), refit(fold, held)
        s_dense, f_dense = per_query(stock[held], ("minmax", 1.0)), per_query(fold[held], ("minmax", 1.0))
        s_hyb, f_hyb = per_query(stock[held], s_cfg), per_query(fold[held], f_cfg)
        s_ship, f_ship = per_query(stock[held], SHIPPED), per_query(fold[held], SHIPPED)
        dd, dse = paired(s_dense, f_dense)
        hd, hse = paired(s_hyb, f_hyb)
        sd, sse = paired(s_ship, f_ship)
        rows.append({
            "held_out": held, "queries": len(s_dense),
            "dense": [mean(s_dense), mean(f_dense), dd, dse],
            "hybrid_refit": [mean(s_hyb), mean(f_hyb), hd, hse, str(s_cfg), str(f_cfg)],
            "hybrid_shipped_fusion": [mean(s_ship), mean(f_ship), sd, sse],
        })
    print("| held out | queries | dense stock | dense ours | gain (SE) | hybrid stock (refit) | hybrid ours (refit) | gain (SE) | fusion chosen (stock / ours) | hybrid, shipped fusion: stock / ours / gain (SE) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        d, h, s = r["dense"], r["hybrid_refit"], r["hybrid_shipped_fusion"]
        print(f"| {r['held_out']} | {r['queries']} | {d[0]:.4f} | {d[1]:.4f} | {d[2]:+.4f} ({d[3]:.4f}) | {h[0]:.4f} | {h[1]:.4f} | {h[2]:+.4f} ({h[3]:.4f}) | {h[4]} / {h[5]} | {s[0]:.4f} / {s[1]:.4f} / {s[2]:+.4f} ({s[3]:.4f}) |")
    ship = rows and len(rows) == len(common.SETS) and all(r["hybrid_refit"][2] >= 0.01 and r["dense"][2] >= 0.02 for r in rows)
    print(f"\nship rule (every fold: hybrid >= +0.01 and dense >= +0.02): {'MET' if ship else 'NOT MET'} over {len(rows)} folds")
    (WORK / f"report-{prefix}.json").write_text(json.dumps(rows, indent=2))


# The shipped answerability model (crates/query/src/answerable.rs): mean, scale, weights, bias.
ANSWERABILITY = ([0.347204, 0.120250, 0.054933], [0.138482, 0.082583, 0.066889], [0.401910, 0.662188, 0.176458], -0.396651)
_fa_spec = importlib.util.spec_from_file_location("fit_answerability", common.REPO / "scripts" / "fit-answerability.py")
fa = importlib.util.module_from_spec(_fa_spec)
_fa_spec.loader.exec_module(fa)


def answerable(cands):
    mu, sd, w, b = ANSWERABILITY
    z = sum(wi * (f - m) / d for wi, f, m, d in zip(w, fa.features(cands), mu, sd)) + b
    return 1 / (1 + math.exp(-z))


def shipped_metrics(queries):
    """nDCG@10, R@5, P@1 with the shipped fusion, and the shipped answerability's AUROC on twins
    (each query against its candidates without the gold tools): all pairs, gold-first pairs."""
    nd, r5, p1, pairs, gold_first = [], [], [], ([], []), ([], [])
    for groups, c in queries:
        if not c:
            continue
        sc = tune.FUN[SHIPPED[0]](c, *SHIPPED[1:])
        order = sorted(range(len(c)), key=lambda i: -sc[i])
        gold = [c[i][4] for i in order]
        nd.append(tune.ndcg10(order, c, groups))
        r5.append(min(sum(gold[:5]), groups) / groups)
        p1.append(float(gold[0]))
        c = [{"cosine": x[0], "bm25": x[1], "dense_rank": x[2], "gold": x[4]} for x in c]
        rest = [x for x in c if not x["gold"]]
        if rest and len(rest) < len(c):
            for bucket in (pairs, gold_first) if gold[0] else (pairs,):
                bucket[0].extend([answerable(c), answerable(rest)])
                bucket[1].extend([1, 0])
    auc = lambda b: fa.auroc(fa.np.array(b[0]), fa.np.array(b[1], dtype=float)) if b[1] else float("nan")
    return mean(nd), mean(r5), mean(p1), auc(pairs), auc(gold_first)


def metrics(prefix="fold"):
    stock = load("stock")
    print("| held out | model | nDCG@10 | R@5 | P@1 | twin AUROC (all) | twin AUROC (gold-first) |")
    print("|---|---|---|---|---|---|---|")
    for held in common.SETS:
        fold = load(f"{prefix}-{held}")
        if held not in fold or held not in stock:
            continue
        for label, data in (("stock", stock), (prefix, fold)):
            m = shipped_metrics(data[held])
            print(f"| {held} | {label} | " + " | ".join(f"{x:.4f}" for x in m) + " |")


def parity(a, b):
    """Dense and hybrid (shipped fusion) nDCG@10 of two dumps of one model, set by set."""
    da, db = load(a), load(b)
    print(f"| set | dense {a} | dense {b} | diff | hybrid {a} | hybrid {b} | diff |")
    print("|---|---|---|---|---|---|---|")
    for n in common.SETS:
        if n in da and n in db:
            x, y = mean(per_query(da[n], ("minmax", 1.0))), mean(per_query(db[n], ("minmax", 1.0)))
            u, v = mean(per_query(da[n], SHIPPED)), mean(per_query(db[n], SHIPPED))
            print(f"| {n} | {x:.4f} | {y:.4f} | {y - x:+.4f} | {u:.4f} | {v:.4f} | {v - u:+.4f} |")


def paired_folds(a, b):
    """Two recipes' folds on each set both hold out (e.g. loso3 and loso5): dense and shipped
    fusion nDCG@10, B minus A with its paired standard error over the held-out queries."""
    print(f"| held out (queries) | ranking | {a} | {b} | {b} minus {a} (SE) |")
    print("|---|---|---|---|---|")
    for held in common.SETS:
        da, db = load(f"{a}-{held}"), load(f"{b}-{held}")
        if held not in da or held not in db:
            continue
        for name, cfg in (("dense", ("minmax", 1.0)), ("shipped fusion", SHIPPED)):
            pa, pb = per_query(da[held], cfg), per_query(db[held], cfg)
            d, se = paired(pa, pb)
            print(f"| {held} ({len(pa)}) | {name} | {mean(pa):.4f} | {mean(pb):.4f} | {d:+.4f} ({se:.4f}) |")


def speed(onnx, rounds=7):
    """Query embedding p50 of the stock file and of `onnx`, alternated, on the
    mcptoolbenchpp held-out queries (`toolsearch bench --mode dense --json`)."""
    out = {}
    for label, models in (("stock", STOCK_MODELS), ("candidate", models_dir("speed", onnx))):
        idx = WORK / "speed" / f"index-{label}"
        subprocess.run([str(BIN), "--models", str(models), "--model", "stock", "index", str(common.BENCH / "mcptoolbenchpp" / "tools.jsonl"),
                        "--out", str(idx)], check=True, stdout=subprocess.DEVNULL)
        out[label] = (models, idx)
    p50 = {k: [] for k in out}
    for _ in range(rounds):
        for label, (models, idx) in out.items():
            r = subprocess.run([str(BIN), "--models", str(models), "--model", "stock", "--json", "bench", str(idx),
                                str(WORK / "heldout" / "mcptoolbenchpp.jsonl"), "--mode", "dense"],
                               check=True, capture_output=True, text=True)
            p50[label].append(json.loads(r.stdout)[0])
    med = {k: sorted(r["latency_ms"]["embed"]["p50"] for r in v)[len(v) // 2] for k, v in p50.items()}
    for k, v in p50.items():
        print(f"{k}: embed p50 per round " + ", ".join(f"{r['latency_ms']['embed']['p50']:.2f}" for r in v)
              + f" ms; median {med[k]:.2f} ms; dense nDCG@10 {v[0]['ndcg10']:.4f}")
    print(f"candidate / stock: {med['candidate'] / med['stock']:.3f}x (aim: at most 1.05x)")


if __name__ == "__main__":
    if sys.argv[1] == "dump":
        dump(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "parity":
        parity(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "paired":
        paired_folds(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "speed":
        speed(sys.argv[2])
    elif sys.argv[1] == "metrics":
        metrics(sys.argv[2] if len(sys.argv) > 2 else "fold")
    else:
        report(sys.argv[2] if len(sys.argv) > 2 else "fold")
