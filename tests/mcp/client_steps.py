"""The steps a client.py scenario runs on a session: the helpers it reads answers with, and
OFFER_STEPS, the steps over resources, prompts, subscriptions, notifications, progress,
completion and log levels (each `step_NAME(session, notes, *args)`)."""

import json
import time

import anyio
from mcp import types


def dump(model):
    return model.model_dump(by_alias=True, exclude_none=True)


def text_of(result) -> str:
    d = dump(result)
    return "\n".join(c.get("text", "") for c in d.get("content", []))


async def search(session, query):
    r = await session.call_tool("search_tool_by_category", {"query": query})
    return json.loads(text_of(r))


async def call(session, tool_id, arguments, **kw):
    return await session.call_tool("call_tool", {"tool_id": tool_id, "arguments": arguments}, **kw)


def event_of(event):
    """A subscription event as `[KIND, URI or None]`."""
    name = type(event).__name__
    uri = getattr(event, "uri", None)
    return [name, str(uri) if uri is not None else None]


async def all_pages(list_page, key):
    """Every item of a paged list and the number of pages it took."""
    items, cursor, pages = [], None, 0
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = dump(await list_page(params=params))
        pages += 1
        items += page.get(key, [])
        cursor = page.get("nextCursor")
        if not cursor or pages > 100:
            return {"items": items, "pages": pages}


async def step_tools(session, notes):
    return await all_pages(session.list_tools, "tools")


async def step_resources(session, notes):
    return await all_pages(session.list_resources, "resources")


async def step_templates(session, notes):
    return await all_pages(session.list_resource_templates, "resourceTemplates")


async def step_prompts(session, notes):
    return await all_pages(session.list_prompts, "prompts")


async def step_read(session, notes, uri):
    return dump(await session.read_resource(uri))


async def step_get_prompt(session, notes, name, arguments):
    return dump(await session.get_prompt(name, arguments))


async def step_subscribe(session, notes, uri):
    await session.subscribe_resource(uri)
    return {}


async def step_wait_updated(session, notes, uri, seconds):
    """Waits up to SECONDS for a notifications/resources/updated of URI; the URIs seen."""
    deadline = time.monotonic() + seconds
    while uri not in notes.updated and time.monotonic() < deadline:
        await anyio.sleep(0.05)
    return notes.updated


async def step_notes(session, notes):
    """The notifications seen so far, by method."""
    return notes.methods


async def step_wait_note(session, notes, method, seconds):
    """Waits up to SECONDS for a notification METHOD; the notifications seen."""
    deadline = time.monotonic() + seconds
    while method not in notes.methods and time.monotonic() < deadline:
        await anyio.sleep(0.05)
    return notes.methods


async def step_call_progress(session, notes, tool_id, arguments):
    """Calls TOOL_ID through call_tool asking for progress; the result's text and every
    progress message that reached this call, in order."""
    seen = []

    async def on_progress(p, total, message):
        seen.append(message)

    r = await call(session, tool_id, arguments, progress_callback=on_progress)
    # Anything sent after the answer is not the call's: wait a moment to count it too.
    await anyio.sleep(0.3)
    return {"text": text_of(r), "progress": seen}


async def step_complete(session, notes, kind, subject, argument, value, context):
    """completion/complete of ARGUMENT (typed so far: VALUE) of a prompt or resource template."""
    ref = (types.PromptReference(type="ref/prompt", name=subject) if kind == "prompt"
           else types.ResourceTemplateReference(type="ref/resource", uri=subject))
    return dump(await session.complete(ref, {"name": argument, "value": value}, context or None))


async def step_set_level(session, notes, level):
    return dump(await session.set_logging_level(level))


OFFER_STEPS = {
    "tools": step_tools,
    "resources": step_resources,
    "templates": step_templates,
    "prompts": step_prompts,
    "read": step_read,
    "get_prompt": step_get_prompt,
    "subscribe": step_subscribe,
    "wait_updated": step_wait_updated,
    "notes": step_notes,
    "wait_note": step_wait_note,
    "call_progress": step_call_progress,
    "complete": step_complete,
    "set_level": step_set_level,
}
