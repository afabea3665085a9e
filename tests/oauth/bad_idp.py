"""An identity provider gone wrong, for the OAuth refusal tests: its metadata is served, but

    python bad_idp.py PORT hang           # its JWKS endpoint never answers
    python bad_idp.py PORT garbage        # its JWKS endpoint answers HTML
    python bad_idp.py PORT wrong-issuer   # its metadata names another issuer

Prints "ready" once listening. Counts the requests it gets on /jwks at /count.
"""

import http.server
import json
import sys
import threading
import time

PORT, MODE = int(sys.argv[1]), sys.argv[2]
ISSUER = f"http://127.0.0.1:{PORT}"
HITS = {"jwks": 0}


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def send(self, body, kind="application/json"):
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.startswith("/.well-known/"):
            issuer = "https://somebody-else.example" if MODE == "wrong-issuer" else ISSUER
            self.send(json.dumps({"issuer": issuer, "jwks_uri": f"{ISSUER}/jwks"}))
        elif self.path == "/jwks":
            HITS["jwks"] += 1
            if MODE == "hang":
                time.sleep(120)
            self.send("<html>this is not a key set</html>", "text/html")
        elif self.path == "/count":
            self.send(json.dumps(HITS))
        else:
            self.send_error(404)


server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
server.daemon_threads = True
threading.Thread(target=server.serve_forever, daemon=True).start()
print("ready", flush=True)
try:
    while True:
        time.sleep(3600)
except KeyboardInterrupt:
    pass
