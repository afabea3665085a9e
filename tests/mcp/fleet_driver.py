"""Clients that keep calling through a fleet of gateways, and carry on when a replica dies:
WORKERS loops for SECONDS, each with a session of its own calling `everything.echo` through
call_tool with a message no other call sends; on any failure the worker opens a new session
(the load balancer sends it to a live replica) and goes on. Prints the messages answered and
how many failures were met, as JSON.

    python fleet_driver.py URL SECONDS WORKERS
"""

import json
import sys
import time

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


def dump(model):
    return model.model_dump(by_alias=True, exclude_none=True)


async def worker(url, deadline, n, answered, failures):
    i = 0
    while time.monotonic() < deadline:
        try:
            async with httpx2.AsyncClient(timeout=10) as http:
                async with streamable_http_client(url, http_client=http) as streams:
                    async with ClientSession(streams[0], streams[1]) as session:
                        await session.initialize()
                        while time.monotonic() < deadline:
                            message = f"w{n}-{i}"
                            i += 1
                            r = await session.call_tool(
                                "call_tool", {"tool_id": "everything.echo", "arguments": {"message": message}})
                            text = "\n".join(c.get("text", "") for c in dump(r).get("content", []))
                            if not dump(r).get("isError") and message in text:
                                answered.append(message)
                            await anyio.sleep(0.02)
        except Exception as e:  # the replica died under it (a reset, a 404 for its session)
            if not failures:
                print(f"first failure: {e!r}", file=sys.stderr)
            failures.append(n)
            await anyio.sleep(0.2)


async def main(url, seconds, workers):
    answered, failures = [], []
    deadline = time.monotonic() + seconds
    async with anyio.create_task_group() as tg:
        for n in range(workers):
            tg.start_soon(worker, url, deadline, n, answered, failures)
    print(json.dumps({"answered": answered, "failures": len(failures)}))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], float(sys.argv[2]), int(sys.argv[3]))
