"""An HTTP+SSE server (MCP 2024-11-05's transport) that answers like a server should, then
sends on its event stream, after each answer to `tools/list`, a `message` event that is not
JSON-RPC. A gateway should skip that one, say so in its operator's log, and keep the session.

    python sse_garbled.py PORT
"""

import json
import queue
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
OUTBOX = queue.Queue()
GARBLED = "this is not JSON-RPC"


def answer(request):
    """The result of REQUEST, or None for a method this server does not have."""
    method = request.get("method")
    if method == "initialize":
        return {
            "protocolVersion": "2024-11-05",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "garbled", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": [{"name": "noop", "description": "Does nothing.", "inputSchema": {"type": "object"}}]}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": "still here"}]}
    if method == "ping":
        return {}
    return None


class Server(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b"event: endpoint\ndata: /messages?sessionId=1\n\n")
        self.wfile.flush()
        while True:
            data = OUTBOX.get()
            self.wfile.write(f"event: message\ndata: {data}\n\n".encode())
            self.wfile.flush()

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(202)
        self.end_headers()
        if "id" not in request or "method" not in request:
            return
        result = answer(request)
        if result is None:
            reply = {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "no such method"}}
        else:
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        OUTBOX.put(json.dumps(reply))
        if request["method"] == "tools/list":
            OUTBOX.put(GARBLED)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", PORT), Server).serve_forever()
