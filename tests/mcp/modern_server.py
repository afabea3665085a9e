"""An MCP server that speaks only the session-free revision (2026-07-28), over stdio, written
for it by hand (newline-delimited JSON-RPC, no SDK): `initialize` is refused with -32022
naming 2026-07-28, `server/discover` answers, and every request must carry the revision,
client and capabilities in `_meta` (else -32602 naming what is missing). Two tools:
`forecast`, whose answer quotes the revision the request named, and `confirm`, which first
answers `input_required` (an elicitation) and, called again with the answer and the
`requestState` it gave, says what the answer was. The prompt `greeting` and the resource
`modern://motto` ask the same way before they answer.

    python modern_server.py
"""

import json
import sys

VERSION = "2026-07-28"
META = ("io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientInfo",
        "io.modelcontextprotocol/clientCapabilities")
TOOLS = [
    {
        "name": "forecast",
        "description": "Tomorrow's weather forecast for a city.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
    {
        "name": "confirm",
        "description": "Ask the user to confirm an action before it is taken.",
        "inputSchema": {"type": "object", "properties": {"action": {"type": "string"}}, "required": ["action"]},
    },
]


PROMPTS = [{"name": "greeting", "description": "A greeting for someone, signed by the user.",
            "arguments": [{"name": "who", "required": True}]}]
RESOURCES = [{"uri": "modern://motto", "name": "motto", "mimeType": "text/plain"}]


def asked(id_, params, subject):
    """Answers `input_required` (who signs?) unless PARAMS carry the answer and the state given
    for SUBJECT: then returns the name given; None when it has answered."""
    responses = params.get("inputResponses")
    if not responses:
        question = {"method": "elicitation/create",
                    "params": {"message": f"Who signs {subject}?", "mode": "form",
                               "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}
        answer(id_, {"resultType": "input_required", "inputRequests": {"sure": question},
                     "requestState": f"state-{subject}"})
        return None
    if params.get("requestState") != f"state-{subject}" or "sure" not in responses:
        answer(id_, error={"code": -32602, "message": "unknown requestState or no answer"})
        return None
    return (responses["sure"].get("content") or {}).get("name")


def answer(id_, result=None, error=None):
    message = {"jsonrpc": "2.0", "id": id_}
    if error is not None:
        message["error"] = error
    else:
        message["result"] = result
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def handle(message):
    method, id_ = message.get("method"), message.get("id")
    if id_ is None:
        return  # a notification: nothing to answer
    params = message.get("params") or {}
    if method == "initialize":
        return answer(id_, error={"code": -32022, "message": "only the session-free revision is served",
                                  "data": {"supported": [VERSION], "requested": params.get("protocolVersion")}})
    meta = params.get("_meta") or {}
    missing = [k for k in META if k not in meta]
    if missing:
        return answer(id_, error={"code": -32602, "message": f"_meta lacks {', '.join(missing)}"})
    if meta[META[0]] != VERSION:
        return answer(id_, error={"code": -32022, "message": "unsupported revision",
                                  "data": {"supported": [VERSION], "requested": meta[META[0]]}})
    complete = {"resultType": "complete"}
    if method == "server/discover":
        return answer(id_, dict(complete, supportedVersions=[VERSION], capabilities={"tools": {}, "prompts": {}, "resources": {}},
                                instructions="Weather forecasts.", ttlMs=0, cacheScope="public",
                                _meta={"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "1"}}))
    if method == "tools/list":
        return answer(id_, dict(complete, tools=TOOLS, ttlMs=60000, cacheScope="public"))
    if method == "prompts/list":
        return answer(id_, dict(complete, prompts=PROMPTS, ttlMs=60000, cacheScope="public"))
    if method == "resources/list":
        return answer(id_, dict(complete, resources=RESOURCES, ttlMs=60000, cacheScope="public"))
    if method == "resources/templates/list":
        return answer(id_, dict(complete, resourceTemplates=[], ttlMs=60000, cacheScope="public"))
    if method == "prompts/get" and params.get("name") == "greeting":
        who = (params.get("arguments") or {}).get("who", "")
        signer = asked(id_, params, "greeting")
        if signer is not None:
            text = f"Hello {who}, from {signer}."
            answer(id_, dict(complete, messages=[{"role": "user", "content": {"type": "text", "text": text}}]))
        return
    if method == "resources/read" and params.get("uri") == "modern://motto":
        signer = asked(id_, params, "motto")
        if signer is not None:
            answer(id_, dict(complete, contents=[{"uri": "modern://motto", "mimeType": "text/plain",
                                                  "text": f"Measure twice ({signer})."}]))
        return
    if method == "tools/call" and params.get("name") == "forecast":
        city = (params.get("arguments") or {}).get("city", "")
        return answer(id_, dict(complete, content=[{"type": "text", "text": f"sunny in {city} ({meta[META[0]]})"}]))
    if method == "tools/call" and params.get("name") == "confirm":
        action = (params.get("arguments") or {}).get("action", "")
        responses = params.get("inputResponses")
        if not responses:
            question = {"method": "elicitation/create",
                        "params": {"message": f"Really {action}?", "mode": "form",
                                   "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}
            return answer(id_, {"resultType": "input_required", "inputRequests": {"sure": question},
                                "requestState": f"state-{action}"})
        if params.get("requestState") != f"state-{action}" or "sure" not in responses:
            return answer(id_, error={"code": -32602, "message": "unknown requestState or no answer"})
        given = responses["sure"]
        return answer(id_, dict(complete, content=[{"type": "text", "text": f"{action}: {given.get('action')} by {(given.get('content') or {}).get('name')}"}]))
    return answer(id_, error={"code": -32601, "message": f"method not found: {method}"})


for line in sys.stdin:
    if line.strip():
        handle(json.loads(line))
