"""An HTTPS front for a gateway's plain-HTTP listener, as a TLS-terminating proxy would be in
production: GET requests to https://127.0.0.1:PORT/... are passed to http://127.0.0.1:TARGET/...
and the answer passed back. Its certificate is signed by a test authority it makes
(`tests/mcp/test_ca.py`), whose certificate it writes to CA_OUT before listening.

    python tls_front.py PORT TARGET CA_OUT
"""

import http.server
import os
import ssl
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mcp"))
from test_ca import make_certificates  # noqa: E402

PORT, TARGET, CA_OUT = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]


class Front(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{TARGET}{self.path}", timeout=5) as r:
                status, kind, body = r.status, r.headers.get("content-type", ""), r.read()
        except urllib.error.HTTPError as e:
            status, kind, body = e.code, e.headers.get("content-type", ""), e.read()
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


key_file, leaf_file = make_certificates(CA_OUT + ".tmp")
os.rename(CA_OUT + ".tmp", CA_OUT)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(leaf_file, key_file)
server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Front)
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
