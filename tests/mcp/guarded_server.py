"""An MCP server written with the official Python SDK (MCPServer) behind a bearer token, over
Streamable HTTP: every request must carry `Authorization: Bearer TOKEN`, where TOKEN is what
the file TOKEN_FILE holds at that moment (rewrite the file to rotate it); anything else gets
401 with a `WWW-Authenticate: Bearer` challenge. Used to test header commands and 401 refresh.

    python guarded_server.py PORT TOKEN_FILE
"""

import sys
from pathlib import Path

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

PORT, TOKEN_FILE = int(sys.argv[1]), Path(sys.argv[2])
server = MCPServer("guarded", instructions="A service that needs a bearer token.")
SEEN = {"rejected": 0}


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def vault_status() -> dict:
    """Report the status of the vault service and how many requests were rejected for a bad token."""
    return {"status": "sealed", "rejected": SEEN["rejected"]}


app = server.streamable_http_app()


async def guarded(scope, receive, send):
    if scope["type"] == "http":
        headers = dict(scope["headers"])
        want = "Bearer " + TOKEN_FILE.read_text().strip()
        if headers.get(b"authorization", b"").decode() != want:
            SEEN["rejected"] += 1
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"www-authenticate", b"Bearer"), (b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"bad token"})
            return
    await app(scope, receive, send)


if __name__ == "__main__":
    uvicorn.run(guarded, host="127.0.0.1", port=PORT, log_level="warning")
