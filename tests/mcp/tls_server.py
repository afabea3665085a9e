"""An MCP server written with the official Python SDK (MCPServer), served over HTTPS with a
certificate it makes for 127.0.0.1, signed by a certificate authority it makes too (with
`cryptography`): the gateway reaches it
only when told to trust that certificate (`SSL_CERT_FILE`).

    python tls_server.py PORT CERT_OUT

Writes the authority's certificate (PEM) to CERT_OUT, then serves https://127.0.0.1:PORT/mcp.
"""

import sys

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

from test_ca import make_certificates

PORT, CERT_OUT = int(sys.argv[1]), sys.argv[2]
key_file, leaf_file = make_certificates(CERT_OUT)

server = MCPServer("secure", instructions="A service reached over HTTPS.")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def cipher_report() -> str:
    """Report that this request arrived over an encrypted connection."""
    return "served over TLS"


if __name__ == "__main__":
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=PORT, log_level="warning",
                ssl_keyfile=key_file, ssl_certfile=leaf_file)
