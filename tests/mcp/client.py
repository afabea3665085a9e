"""Drives `toolsearch gateway` with the official Python MCP SDK client, as an MCP client
nobody here wrote. Prints one JSON object of observations; tests/gateway.rs asserts on it.

    python client.py stdio CONFIG STATE     # spawns the gateway over stdio
    python client.py http URL TOKEN         # connects to a running gateway (TOKEN may be "-")
    python client.py calls URL TOKEN STEPS  # one HTTP session: each step of the JSON list STEPS,
                                            # [discovery tool or "call", tool id or arguments, ...]
                                            # or a step of OFFER_STEPS (resources, prompts)
    python client.py client MODE TARGET TOKEN STEPS
                                            # the same STEPS through the SDK's high-level Client in
                                            # MODE ("legacy", "auto" or a revision like
                                            # "2026-07-28"); TARGET is a URL, or
                                            # "stdio:CONFIG:STATE" to spawn the gateway
"""

import json
import os
import signal
import sys
import time

import anyio
import httpx2
from mcp import Client, ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from client_steps import OFFER_STEPS, call, dump, event_of, search, text_of

TOOLSEARCH = os.environ["TOOLSEARCH_BIN"]
OUT: dict = {}


class Notes:
    def __init__(self):
        self.list_changed = 0
        self.progress = 0
        self.methods = {}
        self.updated = []

    async def handle(self, message):
        method = getattr(message, "method", None)
        if method is None and hasattr(message, "root"):
            message = message.root
            method = getattr(message, "method", None)
        if method == "notifications/tools/list_changed":
            self.list_changed += 1
        if method:
            self.methods[method] = self.methods.get(method, 0) + 1
        if method == "notifications/resources/updated":
            self.updated.append(str(message.params.uri))


async def stdio_scenario(config, state):
    notes = Notes()
    params = StdioServerParameters(command=TOOLSEARCH, args=["gateway", "--config", config, "--state", state])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=notes.handle) as session:
            init = await session.initialize()
            OUT["instructions"] = dump(init).get("instructions", "")
            OUT["initial_tools"] = [t.name for t in (await session.list_tools()).tools]

            # Search finds an upstream tool; expand reveals it; it is called by name.
            found = await search(session, "remember a note under a key")
            OUT["search_top"] = found["results"][0]["tool_id"]
            expanded = json.loads(text_of(await session.call_tool("expand_tool", {"tool_id": "notes.remember"})))
            OUT["expanded"] = expanded
            listed = {t["name"]: t for t in (dump(t) for t in (await session.list_tools()).tools)}
            OUT["revealed"] = listed.get(expanded.get("callable_as", ""), {})
            OUT["remember"] = text_of(await session.call_tool(expanded["callable_as"], {"key": "k1", "text": "hello"}))
            recall = await call(session, "notes.recall", {"key": "k1"})
            OUT["recall"] = dump(recall)
            OUT["echo"] = text_of(await call(session, "everything.echo", {"message": "hi there"}))
            OUT["list_changed_after_expand"] = notes.list_changed

            # A long upstream call: progress flows back, a ping answers at once, cancel stops it.
            progress = []

            async def on_progress(p, total, message):
                progress.append(p)

            async def long_call(scope_holder):
                with anyio.CancelScope() as scope:
                    scope_holder.append(scope)
                    await call(session, "notes.slow_job", {"seconds": 20}, progress_callback=on_progress)

            holder = []
            started = time.monotonic()
            async with anyio.create_task_group() as tg:
                tg.start_soon(long_call, holder)
                await anyio.sleep(2.0)
                t0 = time.monotonic()
                await session.send_ping()
                OUT["ping_during_call_ms"] = (time.monotonic() - t0) * 1000
                t0 = time.monotonic()
                search_during = await search(session, "echo a message back")
                OUT["search_during_call_ms"] = (time.monotonic() - t0) * 1000
                OUT["search_during_call_top"] = search_during["results"][0]["tool_id"]
                holder[0].cancel()
            OUT["cancelled_after_s"] = time.monotonic() - started
            OUT["progress_seen"] = len(progress)
            await anyio.sleep(1.0)
            stats = await call(session, "notes.job_stats", {})
            OUT["stats_after_cancel"] = dump(stats).get("structuredContent") or json.loads(text_of(stats))

            # The upstream tells its tool list changed: the gateway re-imports it.
            OUT["install"] = text_of(await call(session, "notes.install_weather_tool", {}))
            deadline = time.monotonic() + 60
            top = None
            while time.monotonic() < deadline:
                top = (await search(session, "forecast tomorrow's weather for a city"))["results"][0]["tool_id"]
                if top == "notes.weather_forecast":
                    break
                await anyio.sleep(0.5)
            OUT["new_tool_found"] = top
            OUT["new_tool_call"] = text_of(await call(session, "notes.weather_forecast", {"city": "Oslo"}))

            # An upstream killed mid-session turns unavailable, then comes back (restarted).
            pid = OUT["stats_after_cancel"]["pid"]
            changed_before = notes.list_changed
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 30
            down_text = ""
            while time.monotonic() < deadline:
                r = await call(session, "notes.recall", {"key": "k1"})
                if "UNAVAILABLE" in text_of(r) or "unavailable" in text_of(r):
                    down_text = text_of(r)
                    break
                await anyio.sleep(0.2)
            OUT["down_text"] = down_text
            deadline = time.monotonic() + 60
            back = None
            while time.monotonic() < deadline:
                r = await call(session, "notes.job_stats", {})
                d = dump(r)
                if not d.get("isError"):
                    back = d.get("structuredContent") or json.loads(text_of(r))
                    break
                await anyio.sleep(0.5)
            OUT["back"] = back
            OUT["list_changed_on_down_up"] = notes.list_changed - changed_before
    return OUT


async def http_scenario(url, token):
    headers = {} if token == "-" else {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                await session.initialize()
                OUT["tools"] = [t.name for t in (await session.list_tools()).tools]
                OUT["notes_search"] = await search(session, "remember a note under a key")
                OUT["echo_search"] = await search(session, "echo a message back")
                r = await call(session, "everything.echo", {"message": "over http"})
                OUT["echo_call"] = dump(r)
                r = await call(session, "notes.remember", {"key": "h", "text": "x"})
                OUT["remember_call"] = dump(r)
    return OUT


async def calls_scenario(url, token, steps):
    """Runs each step in one session and records its result: `["call", TOOL_ID, ARGS]`
    goes through call_tool, `[DISCOVERY_TOOL, ARGS]` calls that tool, `["wait_for_file", PATH]`
    holds the session open until PATH exists, `["touch", PATH]` creates PATH, `["try_call",
    TOOL_ID, ARGS]` records an error raised as its text, `["list_changed"]` counts the
    list_changed notifications so far."""
    headers = {} if token == "-" else {"Authorization": f"Bearer {token}"}
    results = []
    notes = Notes()
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write, message_handler=notes.handle) as session:
                await session.initialize()
                for step in json.loads(steps):
                    if step[0] == "wait_for_file":
                        # Holds the session open until the test creates the file.
                        deadline = time.monotonic() + 120
                        while not os.path.exists(step[1]) and time.monotonic() < deadline:
                            await anyio.sleep(0.05)
                        results.append({"text": "", "is_error": not os.path.exists(step[1])})
                        continue
                    if step[0] == "list_changed":
                        results.append({"text": str(notes.list_changed), "is_error": False})
                        continue
                    if step[0] == "touch":
                        # Tells the test that the session is open (and every step before done).
                        open(step[1], "w").close()
                        results.append({"text": "", "is_error": False})
                        continue
                    if step[0] == "try_call":
                        # ["try_call", TOOL_ID, ARGS]: a call whose JSON-RPC error (or a
                        # transport's) is the observation, as its text.
                        try:
                            r = await call(session, step[1], step[2])
                            results.append({"text": text_of(r), "is_error": bool(dump(r).get("isError"))})
                        except Exception as e:
                            results.append({"text": "raised: " + str(e), "is_error": True})
                        continue
                    if step[0] == "until":
                        # ["until", TOOL_ID, ARGS, TEXT, SECONDS]: call_tool every 50 ms until
                        # the answer contains TEXT; the wall-clock time it first did.
                        deadline, answer = time.monotonic() + step[4], ""
                        while time.monotonic() < deadline:
                            answer = text_of(await call(session, step[1], step[2]))
                            if step[3] in answer:
                                break
                            await anyio.sleep(0.05)
                        results.append({"text": answer, "at": time.time(), "is_error": step[3] not in answer})
                        continue
                    if step[0] == "burst":
                        # ["burst", TOOL_ID, ARGS, WORKERS, SECONDS]: WORKERS concurrent loops of
                        # call_tool for SECONDS; each distinct answer text with its count.
                        seen = {}
                        deadline = time.monotonic() + step[4]

                        async def worker():
                            while time.monotonic() < deadline:
                                try:
                                    r = await call(session, step[1], step[2])
                                    key = ("error: " if dump(r).get("isError") else "") + text_of(r)[:160]
                                except Exception as e:  # a JSON-RPC error answer (RATE_LIMITED)
                                    key = "raised: " + str(e)[:60]
                                    await anyio.sleep(0.2)
                                seen[key] = seen.get(key, 0) + 1

                        async with anyio.create_task_group() as tg:
                            for _ in range(step[3]):
                                tg.start_soon(worker)
                        results.append({"text": json.dumps(seen), "is_error": False})
                        continue
                    if step[0] in OFFER_STEPS:
                        try:
                            value = await OFFER_STEPS[step[0]](session, notes, *step[1:])
                            results.append({"text": json.dumps(value), "is_error": False})
                        except Exception as e:  # an MCP error answer: its message is the observation
                            results.append({"text": str(e), "is_error": True})
                        continue
                    if step[0] == "call":
                        r = await call(session, step[1], step[2])
                    else:
                        r = await session.call_tool(step[0], step[1])
                    d = dump(r)
                    results.append({"text": text_of(r), "is_error": bool(d.get("isError"))})
    return {"results": results}


async def client_scenario(mode, target, token, steps):
    """Runs STEPS as `calls_scenario` does, through `mcp.Client` in MODE. Besides those steps:
    `["revision"]` is the revision the client settled on, `["set_level", LEVEL]` sends
    logging/setLevel, `["logs", SECONDS]` the log messages received by SECONDS from now, `["raw_tools"]` the whole
    tools/list result (resultType, ttlMs, cacheScope included), `["listen_tools", SECONDS,
    "call", TOOL, ARGS]` opens a subscriptions/listen stream for tools/list_changed, makes
    that call, and counts the events seen within SECONDS; `["touch", PATH]` creates PATH,
    `["wait_list_changed", SECONDS]` waits for a tools/list_changed."""
    notes = Notes()
    results = []
    if target.startswith("stdio:"):
        _, config, state = target.split(":", 2)
        server = StdioServerParameters(command=TOOLSEARCH, args=["gateway", "--config", config, "--state", state])
        http = None
    else:
        headers = {} if token == "-" else {"Authorization": f"Bearer {token}"}
        http = httpx2.AsyncClient(headers=headers, timeout=60)
        server = streamable_http_client(target, http_client=http)
    try:
        async with Client(server, mode=mode, message_handler=notes.handle, cache=None, logging_callback=log_message,
                          elicitation_callback=answer_elicitation, sampling_callback=answer_sampling) as client:
            session = client.session
            for step in json.loads(steps):
                try:
                    value = await client_step(client, session, notes, step)
                    results.append(value)
                except Exception as e:  # an MCP error answer: its message is the observation
                    code = getattr(getattr(e, "error", None), "code", None)
                    results.append({"text": str(e), "is_error": True, "code": code})
    finally:
        if http is not None:
            await http.aclose()
    return {"results": results}


ASKED = []
LOGS = []


async def log_message(params):
    """Keeps a log message the server sent (its level, logger and data) in LOGS."""
    LOGS.append([params.level, params.logger, params.data])


LOGIN = []
# Login addresses a client took but did not follow (["login_as", "later"]), for ["visit", NAME].
LATER = []


async def answer_elicitation(context, params):
    """Accepts an elicitation with a name (and says what was asked in ASKED). A URL-mode one
    (a login the gateway asks for) is followed as a person's browser would, signing in as the
    last ["login_as", NAME] step named (headless Chromium, tests/oauth/chromium.py), unless
    that name is "decline"."""
    if getattr(params, "mode", None) == "url":
        ASKED.append(["url", params.message, params.url.split("?")[0]])
        if LOGIN and LOGIN[-1] == "decline":
            return types.ElicitResult(action="decline")
        if LOGIN and LOGIN[-1] == "later":
            LATER.append(params.url)
            return types.ElicitResult(action="accept")
        ASKED.append(["page", await browse(params.url, LOGIN[-1] if LOGIN else "anyone")])
        return types.ElicitResult(action="accept")
    ASKED.append(["elicitation", params.message])
    return types.ElicitResult(action="accept", content={"name": "Ada Lovelace", "check": True})


async def browse(address, login):
    """A person's browser following a login `address` and signing in as `login`: the page it
    ends on."""
    browser = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oauth", "chromium.py")
    proc = await anyio.run_process([sys.executable, browser, "address", address, login])
    return json.loads(proc.stdout)


async def answer_sampling(context, params):
    """Answers a sampling request with a fixed text."""
    ASKED.append(["sampling", len(params.messages)])
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="sampled by the test client"),
                                     model="test-model")


async def client_step(client, session, notes, step):
    if step[0] == "touch":
        # Tells the test that every step before is done.
        open(step[1], "w").close()
        return {"text": "", "is_error": False}
    if step[0] == "wait_list_changed":
        # ["wait_list_changed", SECONDS]: waits for a tools list_changed; how many came.
        deadline = time.monotonic() + step[1]
        while notes.list_changed == 0 and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        return {"text": str(notes.list_changed), "is_error": notes.list_changed == 0}
    if step[0] == "login_as":
        LOGIN.append(step[1])
        return {"text": "", "is_error": False}
    if step[0] == "call_abandoned":
        # ["call_abandoned", TOOL_ID, ARGS, SECONDS]: a call given up after SECONDS (the SDK
        # then tells the server `notifications/cancelled`); whether it was given up.
        with anyio.move_on_after(step[3]) as scope:
            await client.call_tool("call_tool", {"tool_id": step[1], "arguments": step[2]})
        return {"text": json.dumps(scope.cancelled_caught), "is_error": False}
    if step[0] == "visit":
        # ["visit", NAME]: the last login address not followed, followed now, as NAME.
        return {"text": json.dumps(await browse(LATER[-1], step[1])), "is_error": False}
    if step[0] == "asked":
        return {"text": json.dumps(ASKED), "is_error": False}
    if step[0] == "set_level":
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.set_logging_level(step[1])
        return {"text": "", "is_error": False}
    if step[0] == "logs":
        # ["logs", SECONDS]: the log messages received within SECONDS from now.
        await anyio.sleep(step[1])
        return {"text": json.dumps(LOGS), "is_error": False}
    if step[0] == "revision":
        return {"text": str(session.protocol_version), "is_error": False}
    if step[0] == "raw_tools":
        return {"text": json.dumps(dump(await session.list_tools())), "is_error": False}
    if step[0] == "listen":
        # ["listen", FILTER, SECONDS, [[TOOL, ARGS], ...]]: a subscriptions/listen stream with
        # FILTER (the keywords of Client.listen), the calls made while it is open, and the
        # events it carried within SECONDS after them.
        events, answers = [], []
        async with client.listen(**step[1]) as sub:

            async def collect():
                async for event in sub:
                    events.append(event_of(event))

            async with anyio.create_task_group() as tg:
                tg.start_soon(collect)
                for tool, arguments in step[3]:
                    answers.append(text_of(await session.call_tool(tool, arguments)))
                await anyio.sleep(step[2])
                tg.cancel_scope.cancel()
        return {"text": json.dumps({"events": events, "answers": answers, "honored": dump(sub.honored)}), "is_error": False}
    if step[0] in OFFER_STEPS:
        value = await OFFER_STEPS[step[0]](session, notes, *step[1:])
        return {"text": json.dumps(value), "is_error": False}
    # ["client_prompt", NAME, ARGS] and ["client_read", URI]: through the high-level Client,
    # which answers input_required rounds with the callbacks above.
    if step[0] == "client_prompt":
        return {"text": json.dumps(dump(await client.get_prompt(step[1], step[2]))), "is_error": False}
    if step[0] == "client_read":
        return {"text": json.dumps(dump(await client.read_resource(step[1]))), "is_error": False}
    # Through the high-level Client, which answers a 2026-07-28 server's input_required
    # rounds with the callbacks above.
    if step[0] == "call":
        r = await client.call_tool("call_tool", {"tool_id": step[1], "arguments": step[2]})
    else:
        r = await client.call_tool(step[0], step[1])
    return {"text": text_of(r), "is_error": bool(dump(r).get("isError"))}


def main():
    mode = sys.argv[1]
    if mode == "stdio":
        result = anyio.run(stdio_scenario, sys.argv[2], sys.argv[3])
    elif mode == "client":
        result = anyio.run(client_scenario, *sys.argv[2:6])
    elif mode == "calls":
        result = anyio.run(calls_scenario, sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        result = anyio.run(http_scenario, sys.argv[2], sys.argv[3])
    print(json.dumps(result, default=str))


if __name__ == "__main__":
    main()
