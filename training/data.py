"""The data builder: training examples for one fold, and the held-out query files.

    python training/data.py heldout OUT_DIR     # every set's held-out queries, one file a set

A training example is a query and its gold tools in one catalogue. Sources, per set:
- labelled queries from the set's training portion (toollens: its train split; the others:
  70% by a hash of the query id, `common.is_training`), near-duplicates collapsed to one
  (`common.dup_key`), and none whose key is that of any held-out query of any set;
- self-supervised pairs from the set's tool texts: "name words: first sentence" -> the tool,
  and its longest parameter description -> the tool.
Each source is capped per set (QUERY_CAP, SELF_CAP), drawn by a fixed seed, so no set
dominates (metatool alone has 21k queries).
"""
import json
import random
import sys
from pathlib import Path

import common

QUERY_CAP = 2500
SELF_CAP = 600


def held_out_keys():
    keys = set()
    for name in common.SETS:
        for q in common.queries_of(name):
            if not common.is_training(name, q):
                keys.add(common.dup_key(q["query"]))
    return keys


def query_examples(name, banned):
    seen, out = set(), []
    for q in common.queries_of(name):
        if not common.is_training(name, q) or not q.get("gold"):
            continue
        key = common.dup_key(q["query"])
        if key in seen or key in banned:
            continue
        seen.add(key)
        out.append({"set": name, "query": q["query"], "gold": q["gold"], "kind": "query"})
    random.Random(f"q:{name}").shuffle(out)
    return out[:QUERY_CAP]


def self_examples(name):
    out = []
    for t in common.tools_of(name):
        desc = (t.get("description") or "").strip()
        words = common.split_identifier(t.get("name") or t["id"])
        first = common.first_sentence(desc) if desc else ""
        if first and len(first) > 12:
            out.append({"set": name, "query": f"{words}: {first}", "gold": [t["id"]], "kind": "self-name"})
        params = ((t.get("parameters") or {}).get("properties") or {}) if isinstance(t.get("parameters"), dict) else {}
        descs = [v.get("description") for v in params.values() if isinstance(v, dict) and isinstance(v.get("description"), str)]
        descs = [d.strip() for d in descs if len(d.strip()) >= 25]
        if descs:
            out.append({"set": name, "query": max(descs, key=len)[:200], "gold": [t["id"]], "kind": "self-param"})
    random.Random(f"s:{name}").shuffle(out)
    return out[:SELF_CAP]


def examples(sets):
    """Every training example of the given sets, and each set's tool texts by id."""
    banned = held_out_keys()
    ex, tools = [], {}
    for name in sets:
        tools[name] = {t["id"]: common.tool_text(t) for t in common.tools_of(name)}
        for e in query_examples(name, banned) + self_examples(name):
            e["gold"] = [g for g in e["gold"] if g in tools[name]]
            if e["gold"]:
                ex.append(e)
    return ex, tools


def write_held_out(out_dir):
    """Each set's held-out queries as a queries.jsonl of its own (metatool: a fixed 3,000
    sample, as the benchmarks use), for the evaluator."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in common.SETS:
        qs = [q for q in common.queries_of(name) if not common.is_training(name, q) and q.get("gold")]
        if len(qs) > 3000:
            qs = random.Random(f"h:{name}").sample(qs, 3000)
        with open(out_dir / f"{name}.jsonl", "w") as f:
            for q in qs:
                f.write(json.dumps({"id": q["id"], "query": q["query"], "gold": q["gold"]}) + "\n")
        print(f"{name}: {len(qs)} held-out queries")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "heldout":
        write_held_out(sys.argv[2])
    else:
        for held in [None] + common.SETS:
            ex, _ = examples(common.train_sets(held))
            kinds = {}
            for e in ex:
                kinds[(e["set"], e["kind"])] = kinds.get((e["set"], e["kind"]), 0) + 1
            print(held or "final", len(ex), sorted(kinds.items()))
