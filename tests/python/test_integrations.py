"""Each integration against the real framework from PyPI, with no LLM: the frameworks' own fake
chat model, or their pieces called directly."""

import asyncio
import json
import os
from pathlib import Path

import pytest

import toolsearch

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample-catalog.json"

TOOLS = [
    {"name": "get_weather", "description": "Current weather for a city: temperature, wind and rain.",
     "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
    {"name": "translate_text", "description": "Translate a text from one language into another.",
     "input_schema": {"type": "object", "properties": {"text": {"type": "string"}, "to": {"type": "string"}}}},
    {"name": "send_invoice", "description": "Send an invoice for an order to a customer by email.",
     "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}}},
]


@pytest.fixture(scope="module")
def index():
    return toolsearch.build(TOOLS, progress=False)


def test_langgraph_bigtool_agent_retrieves_with_toolsearch_and_calls_the_tool(index):
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph_bigtool import create_agent

    from toolsearch.integrations.langgraph import retrieve_tools

    @tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return f"sunny in {city}"

    @tool
    def translate_text(text: str, to: str) -> str:
        """Translate a text."""
        return text

    @tool
    def send_invoice(order_id: str) -> str:
        """Send an invoice."""
        return order_id

    registry = {"get_weather": get_weather, "translate_text": translate_text, "send_invoice": send_invoice}

    class FakeModel(GenericFakeChatModel):
        def bind_tools(self, tools, **kwargs):
            return self

    # A whole agent step: the model asks for tools, calls the first one toolsearch retrieved,
    # then answers with what the tool returned.
    script = iter([
        AIMessage(content="", tool_calls=[{"name": "retrieve_tools", "args": {"query": "will it rain in Oslo"}, "id": "c1"}]),
        AIMessage(content="", tool_calls=[{"name": "get_weather", "args": {"city": "Oslo"}, "id": "c2"}]),
        AIMessage(content="It is sunny in Oslo."),
    ])
    agent = create_agent(FakeModel(messages=script), registry, retrieve_tools_function=retrieve_tools(index, limit=2)).compile()
    out = agent.invoke({"messages": "What's the weather in Oslo?"})
    assert out["selected_tool_ids"][0] == "get_weather"
    assert all(i in registry for i in out["selected_tool_ids"])
    ran = [m for m in out["messages"] if getattr(m, "tool_call_id", None) == "c2"]
    assert [m.content for m in ran] == ["sunny in Oslo"]
    assert out["messages"][-1].content == "It is sunny in Oslo."


def test_langchain_retriever_returns_documents_with_tool_ids(index):
    from toolsearch.integrations.langgraph import ToolsearchRetriever

    docs = ToolsearchRetriever(index=index, k=2).invoke("bill a customer for their order")
    assert docs[0].metadata["tool_id"] == "send_invoice" and 0 < docs[0].metadata["confidence"] <= 1
    assert docs[0].page_content


def test_openai_agents_function_tools_search_expand_and_call(index):
    from agents import Agent, FunctionTool
    from agents.tool_context import ToolContext

    from toolsearch.integrations.openai_agents import discovery_tools

    ran = []
    tools = discovery_tools(index, run=lambda tool_id, args: ran.append((tool_id, args)) or {"ok": True})
    assert [t.name for t in tools] == ["search_tools", "expand_tool", "call_tool"]
    assert all(isinstance(t, FunctionTool) for t in tools)
    Agent(name="assistant", instructions="Find tools, then call them.", tools=tools)

    def invoke(t, args):
        raw = json.dumps(args)
        ctx = ToolContext(context=None, tool_name=t.name, tool_call_id="call-1", tool_arguments=raw)
        return asyncio.run(t.on_invoke_tool(ctx, raw))

    found = json.loads(invoke(tools[0], {"query": "translate this into French"}))
    assert found[0]["tool_id"] == "translate_text"
    schema = json.loads(invoke(tools[1], {"tool_id": "get_weather"}))["args_schema"]
    assert schema["required"] == ["city"]
    refused = json.loads(invoke(tools[2], {"tool_id": "get_weather", "arguments_json": json.dumps({"city": 5})}))
    assert refused["code"] == "INVALID_ARGUMENT" and not ran
    assert json.loads(invoke(tools[2], {"tool_id": "get_weather", "arguments_json": json.dumps({"city": "Oslo"})})) == {"ok": True}
    assert ran == [("get_weather", {"city": "Oslo"})]


def test_fastmcp_search_transform_ranks_the_servers_tools_with_toolsearch():
    from fastmcp import Client, FastMCP

    from toolsearch.integrations.fastmcp import ToolsearchSearchTransform

    mcp = FastMCP("shop", transforms=[ToolsearchSearchTransform(max_results=2)])

    @mcp.tool
    def refund_payment(payment_id: str) -> str:
        """Refund a card payment to the customer."""
        return f"refunded {payment_id}"

    @mcp.tool
    def crop_image(path: str, width: int, height: int) -> str:
        """Crop an image to a width and height."""
        return path

    @mcp.tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return city

    async def scenario():
        async with Client(mcp) as client:
            listed = [t.name for t in await client.list_tools()]
            found = await client.call_tool("search_tools", {"query": "give the customer their money back"})
            result = await client.call_tool("call_tool", {"name": "refund_payment", "arguments": {"payment_id": "p1"}})
            return listed, found, result

    listed, found, result = asyncio.run(scenario())
    assert listed == ["search_tools", "call_tool"]
    text = json.dumps(found.structured_content if found.structured_content is not None else [c.text for c in found.content])
    assert text.index("refund_payment") < (text.index("crop_image") if "crop_image" in text else len(text))
    assert "refunded p1" in json.dumps([getattr(c, "text", "") for c in result.content])


def test_fastmcp_with_a_cache_dir_a_restarted_server_opens_the_index_it_built_and_builds_a_damaged_one_again(monkeypatch, tmp_path):
    from fastmcp import Client, FastMCP

    from toolsearch.integrations import fastmcp as integration

    built = []
    real_build = toolsearch.build

    def counted(listing, *args, **kwargs):
        built.append(len(listing))
        return real_build(listing, *args, **kwargs)

    monkeypatch.setattr(toolsearch, "build", counted)
    cache = tmp_path / "indexes"

    def server():  # a server process, started again: a new transform over the same cache
        mcp = FastMCP("shop", transforms=[integration.ToolsearchSearchTransform(max_results=2, cache_dir=cache)])

        @mcp.tool
        def refund_payment(payment_id: str) -> str:
            """Refund a card payment to the customer."""
            return payment_id

        @mcp.tool
        def get_weather(city: str) -> str:
            """Current weather for a city."""
            return city

        return mcp

    def search():
        async def scenario():
            async with Client(server()) as client:
                found = await client.call_tool("search_tools", {"query": "give the customer their money back"})
                return json.dumps(found.structured_content if found.structured_content is not None else [c.text for c in found.content])

        return asyncio.run(scenario())

    first = search()
    assert "refund_payment" in first and built == [2], built
    (kept,) = [d for d in cache.iterdir() if d.is_dir()]
    assert search() == first and built == [2], "started again, it opened the index it built"
    (kept / "vectors.f16").write_bytes(b"damaged")
    assert search() == first and built == [2, 2], "a damaged index is built again"
    # Past KEPT_ON_DISK tool sets, the least recently used go (the index opened last stays, and
    # what the transform did not name); a transform holding none builds another set's there.
    monkeypatch.setattr(integration, "KEPT_ON_DISK", 2)
    old, older = cache / ("b" * 32), cache / ("a" * 32)
    for d in (old, older, cache / "not-ours", cache / ("z" * 32)):
        d.mkdir()
    os.utime(older, (1, 1))
    os.utime(old, (5, 5))
    from fastmcp.tools import Tool

    other = integration.ToolsearchSearchTransform(cache_dir=cache)
    made = asyncio.run(other._index_of([Tool.from_function(lambda city: city, name="get_forecast", description="Forecast.")]))
    assert built == [2, 2, 1]
    named = [kept.name, Path(made.path).name]
    assert sorted(d.name for d in cache.iterdir()) == sorted(named + [n + ".lock" for n in named] + ["not-ours", "z" * 32])


def test_fastmcp_sessions_that_see_other_tools_search_their_own_and_taking_turns_build_none_again(monkeypatch):
    from fastmcp import Client, FastMCP
    from fastmcp.server.context import Context

    from toolsearch.integrations.fastmcp import ToolsearchSearchTransform

    built, embedded = [], []
    real_build = toolsearch.build

    def counted(listing, **kwargs):
        built.append(sorted(t["name"] for t in listing))
        index = real_build(listing, **kwargs)
        embedded.append(index.report.embedded)
        return index

    monkeypatch.setattr(toolsearch, "build", counted)
    mcp = FastMCP("ops", transforms=[ToolsearchSearchTransform(max_results=3)])

    @mcp.tool(tags={"admin"})
    def drop_database(name: str) -> str:
        """Drop a production database and every table in it."""
        return name

    @mcp.tool
    def query_database(sql: str) -> str:
        """Run a read-only SQL query against a database."""
        return sql

    @mcp.tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return city

    @mcp.tool
    async def unlock(ctx: Context) -> str:
        """Unlock the administration tools for this session."""
        await ctx.enable_components(tags={"admin"})
        return "unlocked"

    mcp.disable(tags={"admin"})

    def names(found):
        return json.dumps(found.structured_content if found.structured_content is not None else [c.text for c in found.content])

    async def scenario():
        # Handshake-era sessions: FastMCP keys a session's visibility on its session id (on
        # 2026-07-28, on the authenticated user; in memory, the process is one client).
        async with Client(mcp, mode="legacy") as admin, Client(mcp, mode="legacy") as user:
            await admin.call_tool("call_tool", {"name": "unlock", "arguments": {}})
            seen = []
            for _ in range(3):
                for client in (admin, user):
                    seen.append(names(await client.call_tool("search_tools", {"query": "drop the database"})))
            return seen

    seen = asyncio.run(scenario())
    assert all("drop_database" in s for s in seen[0::2]), seen
    assert not any("drop_database" in s for s in seen[1::2]), seen
    # One index per tool set, each built once, however the sessions take turns.
    assert sorted(map(tuple, built)) == sorted(
        [("drop_database", "get_weather", "query_database", "unlock"), ("get_weather", "query_database", "unlock")]
    ), built
    # The second tool set's index (the first one's but `drop_database`) embedded nothing: it
    # took every vector from the first's.
    assert embedded == [4, 0], (built, embedded)


def test_search_results_render_as_provider_native_tool_search_answers(index):
    page = index.search("will it rain in Oslo", limit=2)
    anthropic = index.tool_search_result(page, "anthropic", "toolu_01")
    assert anthropic["type"] == "tool_result" and anthropic["tool_use_id"] == "toolu_01"
    assert anthropic["content"][0] == {"type": "tool_reference", "tool_name": "get_weather"}
    openai = index.tool_search_result(page, "openai", "call_7")
    assert openai["type"] == "tool_search_output" and openai["call_id"] == "call_7" and openai["execution"] == "client"
    first = openai["tools"][0]
    assert first["type"] == "function" and first["name"] == "get_weather" and first["parameters"]["required"] == ["city"]
    # The items are what the SDKs accept.
    from openai.types.responses import ResponseInputItemParam  # noqa: F401  (the item's type exists)


def test_responses_api_tools_of_the_agents_sdk_import_and_render_back_as_it_wrote_them(tmp_path):
    from agents import WebSearchTool, function_tool
    from agents.models.openai_responses import Converter
    from openai.types.responses import FunctionTool, FunctionToolParam

    @function_tool
    def refund_payment(payment_id: str, amount_cents: int) -> str:
        """Refund a card payment to the customer.

        Args:
            payment_id: The payment to refund.
            amount_cents: How much to give back, in cents.
        """
        return "refunded"

    @function_tool
    def crop_image(path: str, width: int, height: int) -> str:
        """Crop an image to a width and height."""
        return path

    # The Responses API request the Agents SDK would send: its function tools and a hosted one.
    sent = Converter.convert_tools([refund_payment, crop_image, WebSearchTool()], []).tools
    assert [t["type"] for t in sent] == ["function", "function", "web_search"]
    body = tmp_path / "request.json"
    body.write_text(json.dumps({"model": "gpt-5", "input": "refund p1", "tools": sent}))
    for source in (str(body), sent):
        index = toolsearch.build(source, progress=False)
        assert index.report.tools == 2
        assert [(w["kind"], w["at"].rsplit(" at ", 1)[1]) for w in index.report.warnings] == [("provider_defined", "/tools/2" if source is not sent else "/2")]
        assert index.search("give the customer their money back", limit=1).results[0].tool_id == "refund_payment"
    ts = index.toolset({"pinned": ["refund_payment", "crop_image"], "discovery": {"mode": "off"}})
    rendered = {d["name"]: d for d in ts.definitions("openai-responses")}
    allowed = FunctionToolParam.__required_keys__ | FunctionToolParam.__optional_keys__
    for tool in sent[:2]:
        back = rendered[tool["name"]]
        assert set(back) <= allowed and FunctionToolParam.__required_keys__ <= set(back), back
        FunctionTool.model_validate(back)
        assert {k: back[k] for k in ("type", "name", "description", "parameters")} == {
            k: tool[k] for k in ("type", "name", "description", "parameters")
        }
    with pytest.raises(ValueError, match="openai-responses"):
        ts.definitions("cohere")


def test_gemini_declarations_of_the_google_genai_sdk_import_and_render_back_as_it_validates(tmp_path):
    from google.genai import types

    def refund_payment(payment_id: str, amount_cents: int) -> str:
        """Refund a card payment to the customer."""
        return "refunded"

    def crop_image(path: str, width: int, height: int) -> str:
        """Crop an image to a width and height."""
        return path

    declared = [types.FunctionDeclaration.from_callable_with_api_option(callable=f, api_option="GEMINI_API")
                for f in (refund_payment, crop_image)]
    tool = types.Tool(function_declarations=declared, google_search=types.GoogleSearch())
    # As the REST API takes it (a whole request body) and as the Python SDK dumps it.
    rest = {"contents": [{"parts": [{"text": "refund p1"}]}], "tools": [tool.model_dump(mode="json", by_alias=True, exclude_none=True)]}
    for source in (rest, [tool.model_dump(mode="json")], tool.model_dump(mode="json")):
        index = toolsearch.build(source, progress=False)
        assert index.report.tools == 2
        assert [w["kind"] for w in index.report.warnings] == ["provider_defined"], index.report.warnings
        assert index.search("give the customer their money back", limit=1).results[0].tool_id == "refund_payment"
        schema = index.expand("crop_image")["args_schema"]
        assert schema["type"] == "object" and schema["properties"]["width"]["type"] == "integer"
        with pytest.raises(toolsearch.ProtocolError, match="width"):
            index.check_call("crop_image", {"path": "a.png", "width": "wide", "height": 2})
    ts = index.toolset({"pinned": ["refund_payment", "crop_image"], "discovery": {"mode": "off"}})
    rendered = ts.definitions("gemini")
    back = types.Tool.model_validate(rendered[0])  # the SDK forbids any field it does not know
    assert [(d.name, d.description) for d in back.function_declarations] == [(d.name, d.description) for d in declared]
    assert back.function_declarations[0].parameters_json_schema["properties"]["amount_cents"]["type"] == "integer"
    types.GenerateContentConfig(tools=rendered)


def _scripted_turns(dialect):
    """The tool calls a model makes over three turns (search, expand, call), plus a call whose
    arguments do not parse, as each provider's SDK objects."""
    turns = [("search_tool_by_category", {"query": "translate this into French"}),
             ("expand_tool", {"tool_id": "translate_text"}),
             ("translate_text", {"text": "hello", "to": "fr"})]
    made = []
    for i, (name, args) in enumerate(turns):
        if dialect == "openai":
            from openai.types.chat import ChatCompletionMessageToolCall
            made.append([ChatCompletionMessageToolCall(id=f"call_{i}", type="function",
                                                       function={"name": name, "arguments": json.dumps(args)})])
        elif dialect == "openai-responses":
            from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
            said = ResponseOutputText(type="output_text", text="Let me look.", annotations=[])
            made.append([ResponseOutputMessage(id=f"msg_{i}", type="message", role="assistant", status="completed", content=[said]),
                         ResponseFunctionToolCall(type="function_call", call_id=f"call_{i}", name=name,
                                                  arguments=json.dumps(args))])
        elif dialect == "anthropic":
            from anthropic.types import TextBlock, ToolUseBlock
            made.append([TextBlock(type="text", text="Let me look."),
                         ToolUseBlock(type="tool_use", id=f"toolu_{i}", name=name, input=args)])
        else:
            from google.genai import types
            made.append([types.Part(text="Let me look."),
                         types.Part(function_call=types.FunctionCall(id=f"fc_{i}", name=name, args=args))])
    return made


def _answer_is_valid(dialect, answer):
    """The answer as the provider's SDK types take it back (pydantic checks each)."""
    import pydantic
    if dialect == "gemini":
        from google.genai import types
        types.Part.model_validate(answer)  # forbids unknown fields
        return
    if dialect == "openai":
        from openai.types.chat import ChatCompletionToolMessageParam as param
    elif dialect == "openai-responses":
        from openai.types.responses.response_input_item_param import FunctionCallOutput as param
    else:
        from anthropic.types import ToolResultBlockParam as param
    pydantic.TypeAdapter(param).validate_python(answer)
    # A TypedDict lets unknown keys by: each must be one the SDK knows.
    assert set(answer) <= param.__required_keys__ | param.__optional_keys__, (answer, param.__optional_keys__)


@pytest.mark.parametrize("dialect", ["openai", "openai-responses", "anthropic", "gemini"])
def test_a_models_tool_calls_in_each_providers_shape_are_handled_and_answered_in_it(index, dialect):
    ran = []
    ts = index.toolset({"discovery": {"detail": "summaries", "limit": 3}})
    answers = []
    for turn in _scripted_turns(dialect):
        (answer,) = ts.handle_calls(turn, dialect, run=lambda tool_id, args: ran.append((tool_id, args)) or "bonjour")
        _answer_is_valid(dialect, answer)
        answers.append(answer)
    text = [json.dumps(a) for a in answers]
    assert "translate_text" in text[0] and "bonjour" in text[2], text
    assert ran == [("translate_text", {"text": "hello", "to": "fr"})]
    key = {"openai": "tool_call_id", "openai-responses": "call_id", "anthropic": "tool_use_id"}.get(dialect)
    prefix = {"anthropic": "toolu", "gemini": "fc"}.get(dialect, "call")
    assert [a["functionResponse"]["id"] if key is None else a[key] for a in answers] == [f"{prefix}_{i}" for i in range(3)]
    names = json.dumps(ts.definitions(dialect))
    assert "translate_text" in names, "expanded, the tool is defined for the model"
    if dialect == "openai":
        from openai.types.chat import ChatCompletionMessageToolCall
        bad = ChatCompletionMessageToolCall(id="call_9", type="function", function={"name": "translate_text", "arguments": "{not json"})
        (refused,) = ts.handle_calls([bad], dialect, run=lambda *a: ran.append(a))
        assert refused["tool_call_id"] == "call_9" and "could not be read" in refused["content"] and len(ran) == 1
    if dialect == "anthropic":
        assert [a["is_error"] for a in answers] == [False, False, False]
    if dialect == "gemini":
        outputs = [a["functionResponse"]["response"]["output"] for a in answers]
        assert isinstance(outputs[0], dict) and outputs[2] == "bonjour", "JSON as its value, text as it is"
    with pytest.raises(ValueError, match="dialect"):
        ts.handle_calls([], "cohere")
