"""An MCP server written with the official Python SDK (MCPServer), served over HTTPS with a
certificate it makes for 127.0.0.1, signed by a certificate authority it makes too (with
`cryptography`): the gateway reaches it
only when told to trust that certificate (`SSL_CERT_FILE`).

    python tls_server.py PORT CERT_OUT

Writes the authority's certificate (PEM) to CERT_OUT, then serves https://127.0.0.1:PORT/mcp.
"""

import datetime
import ipaddress
import os
import sys
import tempfile

import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

PORT, CERT_OUT = int(sys.argv[1]), sys.argv[2]
now = datetime.datetime.now(datetime.timezone.utc)


def certificate(subject, issuer, public_key, signing_key, ca):
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
        ).add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    return builder.sign(signing_key, hashes.SHA256())


# A certificate authority of its own (what SSL_CERT_FILE will hold), and the server's
# certificate, for 127.0.0.1, signed by it.
ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
ca = certificate("toolsearch test CA", "toolsearch test CA", ca_key.public_key(), ca_key, True)
leaf = certificate("127.0.0.1", "toolsearch test CA", key.public_key(), ca_key, False)
with open(CERT_OUT, "wb") as f:
    f.write(ca.public_bytes(serialization.Encoding.PEM))
folder = tempfile.mkdtemp()
key_file, leaf_file = os.path.join(folder, "key.pem"), os.path.join(folder, "leaf.pem")
with open(leaf_file, "wb") as f:
    f.write(leaf.public_bytes(serialization.Encoding.PEM))
with open(key_file, "wb") as f:
    f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))

server = MCPServer("secure", instructions="A service reached over HTTPS.")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def cipher_report() -> str:
    """Report that this request arrived over an encrypted connection."""
    return "served over TLS"


if __name__ == "__main__":
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=PORT, log_level="warning",
                ssl_keyfile=key_file, ssl_certfile=leaf_file)
