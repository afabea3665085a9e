"""An MCP server over stdio written by hand (no SDK) to do what real servers do that the SDKs
would not let us write: old-style and uncompilable schemas, tools with no inputSchema, a
second tool of one name, tool (or resource and prompt) lists that page forever or are full of bad tools, answers too
large to carry, and tool lists that change every few milliseconds. The gateway's tests put it
upstream.

    python rude_server.py MODE [MARKER]

MODE: schemas | pages | bad_tools | huge | churn | offer_pages (one tool; resource and prompt
lists that page forever). MARKER is ignored (it tags the process).
"""

import json
import sys
import threading
import time

MODE = sys.argv[1]
OUT = sys.stdout
LOCK = threading.Lock()


def send(message):
    line = json.dumps(message, separators=(",", ":"))
    with LOCK:
        OUT.write(line + "\n")
        OUT.flush()


def schema_tools():
    return [
        {
            "name": "read_pdf",
            "description": "Read pages of a PDF file and return their text.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "page": {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
                },
                "required": ["path"],
            },
        },
        {"name": "read_pdf", "description": "A second tool of the same name.", "inputSchema": {"type": "object"}},
        {"name": "take_anything", "description": "Take a snapshot of the screen, with no arguments declared."},
        {
            "name": "fetch_remote",
            "description": "Fetch a web page by its address, with a schema defined elsewhere.",
            "inputSchema": {"$ref": "https://schemas.example.com/fetch.json"},
        },
        {
            "name": "set_alarm",
            "description": "Set an alarm clock for a time of day, optionally with a label.",
            "inputSchema": {
                "type": "object",
                "properties": {"hour": {"type": "integer", "maximum": 23}, "label": {"type": "string", "nullable": True}},
                "required": ["hour"],
                "additionalProperties": False,
            },
        },
        {"description": "A tool with no name at all."},
    ]


def tools_page(cursor):
    if MODE == "schemas":
        return {"tools": schema_tools()}
    if MODE == "pages":
        n = int(cursor or 0)
        return {"tools": [{"name": f"page_tool_{n}", "inputSchema": {"type": "object"}}], "nextCursor": str(n + 1)}
    if MODE == "bad_tools":
        bad = [{"name": f"bad_{i}", "description": "broken", "inputSchema": "object"} for i in range(3000)]
        good = {"name": "ping_host", "description": "Ping a network host and report its latency.", "inputSchema": {"type": "object"}}
        return {"tools": bad + [good]}
    if MODE == "churn":
        return {"tools": [{"name": f"churn_{int(time.time() * 1000) % 7}", "description": "changes", "inputSchema": {"type": "object"}}]}
    return {
        "tools": [
            {"name": "dump_logs", "description": "Dump all logs of the service.", "inputSchema": {"type": "object", "properties": {"mib": {"type": "number"}}}},
        ]
    }


def call(params):
    name = params.get("name")
    args = params.get("arguments") or {}
    if MODE == "huge" and name == "dump_logs":
        size = int(float(args.get("mib", 20)) * (1 << 20))
        return {"content": [{"type": "text", "text": "x" * size}]}
    return {"content": [{"type": "text", "text": json.dumps({"tool": name, "arguments": args}, sort_keys=True)}]}


def churn():
    while True:
        time.sleep(0.05)
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        method, mid = msg.get("method"), msg.get("id")
        if mid is None:
            if method == "notifications/initialized" and MODE == "churn":
                threading.Thread(target=churn, daemon=True).start()
            continue
        if method == "initialize":
            capabilities = {"tools": {"listChanged": True}}
            if MODE == "offer_pages":
                capabilities.update({"resources": {}, "prompts": {}})
            result = {
                "protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"),
                "capabilities": capabilities,
                "serverInfo": {"name": "rude", "version": "0"},
            }
        elif method == "tools/list":
            result = tools_page((msg.get("params") or {}).get("cursor"))
        elif method in ("resources/list", "resources/templates/list", "prompts/list") and MODE == "offer_pages":
            n = int((msg.get("params") or {}).get("cursor") or 0)
            key = {"resources/list": "resources", "resources/templates/list": "resourceTemplates", "prompts/list": "prompts"}[method]
            item = {"resources": {"uri": f"page://{n}", "name": f"page {n}"},
                    "resourceTemplates": {"uriTemplate": f"page://{n}/{{x}}", "name": f"pages {n}"},
                    "prompts": {"name": f"page_prompt_{n}"}}[key]
            result = {key: [item], "nextCursor": str(n + 1)}
        elif method == "tools/call":
            result = call(msg.get("params") or {})
        elif method == "ping":
            result = {}
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": f"method not found: {method}"}})
            continue
        send({"jsonrpc": "2.0", "id": mid, "result": result})


if __name__ == "__main__":
    main()
