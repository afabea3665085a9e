"""docs/gateway.md's `uvx` entry, as a client runs it: the page's JSON, with its two example
paths pointed at this machine (the wheels' folder, the gateway's config), is started by the
official Python MCP SDK's stdio client, which lists the gateway's tools, searches and calls a
tool of the server behind it. Exits non-zero, saying why, when anything differs from the page.

    python uvx_entry.py PAGE WHEELS_DIR WORK_DIR MEMORY_SERVER_JS

The page's wheel file names must be the ones the build made: a newcomer copies them.
"""

import json
import os
import re
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client

from client_entry import exercise, reason

PAGE, WHEELS, WORK, MEMORY = sys.argv[1:5]
PAGE_WHEELS = "/home/me/wheels/"
PAGE_CONFIG = "/home/me/.config/toolsearch/gateway.json"


def fail(why):
    print(f"uvx_entry: {PAGE}: {why}", file=sys.stderr)
    sys.exit(1)


def entry():
    """The page's one JSON block that starts the gateway with uvx, as printed."""
    blocks = [b for b in re.findall(r"```json\n(.*?)```", open(PAGE).read(), re.S) if '"uvx"' in b]
    if len(blocks) != 1:
        fail(f"expected one JSON block with a uvx entry, found {len(blocks)}")
    server = json.loads(blocks[0])["mcpServers"]["toolsearch"]
    if server["command"] != "uvx":
        fail(f"the entry runs {server['command']!r}, not uvx")
    return server["args"]


def localised(args, config):
    built = sorted(os.listdir(WHEELS))
    out = []
    for arg in args:
        if arg.startswith(PAGE_WHEELS):
            name = arg[len(PAGE_WHEELS):]
            if name not in built:
                fail(f"the page names the wheel {name!r}; the build made {built}")
            arg = os.path.join(WHEELS, name)
        elif arg == PAGE_CONFIG:
            arg = config
        out.append(arg)
    return out


async def drive(args):
    env = get_default_environment()
    env["UV_CACHE_DIR"] = os.path.join(WORK, "uv-cache")
    # The machine's certificate store, as the page advises behind an inspecting proxy (uv
    # otherwise trusts only its bundled roots; the test machines reach PyPI through one).
    env["UV_SYSTEM_CERTS"] = "1"
    env["TOOLSEARCH_MODELS"] = os.path.join(WORK, "no-models-here")  # only what uvx installed
    params = StdioServerParameters(command="uvx", args=args, env=env, cwd=WORK)
    with anyio.fail_after(600):
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                try:
                    listed = await exercise(session)
                except RuntimeError as e:
                    return str(e)
    print(f"uvx_entry: the page's uvx entry served {listed} tools; a search and a call went through")
    return None


def main():
    os.makedirs(WORK, exist_ok=True)
    config = os.path.join(WORK, "gateway.json")
    memory = {"command": "node", "args": [MEMORY], "env": {"MEMORY_FILE_PATH": os.path.join(WORK, "memory.jsonl")}}
    with open(config, "w") as f:
        json.dump({"mcpServers": {"memory": memory}}, f)
    try:
        why = anyio.run(drive, localised(entry(), config))
    except Exception as e:  # uv or the gateway ended the session: its stderr above says more
        why = f"the session ended: {reason(e)}"
    if why:
        fail(why)
    # The model package the entry adds with `--with` is the one the gateway built with (the
    # index records its model's id; without the package the stock model would stand in).
    meta = open(os.path.join(WORK, "gateway.toolsearch", "index", "meta.bin"), "rb").read()
    if b"all-MiniLM-L6-v2-tools" not in meta:
        fail("the gateway did not build with the tool-trained model the entry installs")


main()
