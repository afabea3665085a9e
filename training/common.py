"""What every training step shares: the dev sets, the held-out split, the text a tool is
embedded as, and the near-duplicate key of a query.

The dev sets are read from ../shared/bench and never copied into the repository.
"""
import hashlib
import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO.parent / "shared" / "bench"
SETS = ["toolbench_stb", "metatool", "toollens", "mcptoolbenchpp", "sealtools"]
# toollens and toolbench_stb are both RapidAPI endpoints from ToolBench (105 tool ids in
# common): a fold that holds one out trains on neither, so its catalogue stays unseen.
SAME_UNIVERSE = {"toolbench_stb": {"toollens"}, "toollens": {"toolbench_stb"}}
HELD_OUT_PERCENT = 30


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def tools_of(name):
    return read_jsonl(BENCH / name / "tools.jsonl")


def queries_of(name):
    return read_jsonl(BENCH / name / "queries.jsonl")


def is_training(name, query):
    """Whether a query is in its set's training portion: toollens by its own split, every
    other set by a fixed hash of the query id (70% train, 30% held out)."""
    if name == "toollens":
        return query.get("split") == "train"
    h = int(hashlib.sha256(f"{name}:{query['id']}".encode()).hexdigest()[:8], 16) % 100
    return h >= HELD_OUT_PERCENT


def train_sets(held_out):
    """The sets a leave-one-catalogue-out fold trains on (None: the final model, all five)."""
    if held_out is None:
        return list(SETS)
    skip = {held_out} | SAME_UNIVERSE.get(held_out, set())
    return [s for s in SETS if s not in skip]


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def split_identifier(s):
    """`getUserByID_v2` -> `get user by id v2` (as the indexer splits names)."""
    s = _CAMEL.sub(" ", s)
    return " ".join(w for w in re.split(r"[\s_\-./:]+", s.lower()) if w)


def first_sentence(text):
    m = re.search(r"\.(\s|$)|\n", text)
    return (text[: m.start() + (1 if text[m.start()] == "." else 0)] if m else text).strip()


def tool_text(tool):
    """The embedded text of a tool, as the indexer writes it (crates/index/src/document.rs,
    `tool_dense_text`): name words, category path, description, parameters."""
    out = split_identifier(tool.get("name") or tool["id"])
    path = tool.get("path") or []
    if path:
        out += " (" + " > ".join(path) + ")"
    desc = (tool.get("description") or "").strip()
    out += ": " + desc[:1200]
    props = ((tool.get("parameters") or {}).get("properties") or {}) if isinstance(tool.get("parameters"), dict) else {}
    params = []
    for k, v in list(props.items())[:24]:
        name = split_identifier(k)
        d = (v.get("description") or "").strip()[:160] if isinstance(v, dict) and isinstance(v.get("description"), str) else ""
        if name:
            params.append(f"{name} ({d})" if d else name)
    if params:
        out += " Parameters: " + "; ".join(params) + "."
    return out


def dup_key(text):
    """Two queries with the same key are near-duplicates: the same words, ignoring case,
    punctuation, numbers and order."""
    words = re.findall(r"[a-z]+", text.lower())
    return " ".join(sorted(set(words)))
