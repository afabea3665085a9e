"""A certificate authority of a test's own, and a server certificate for 127.0.0.1 signed by
it (with `cryptography`): what a test trusts (`SSL_CERT_FILE`, `NODE_EXTRA_CA_CERTS`) and what
its HTTPS server presents."""

import datetime
import ipaddress
import os
import tempfile

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _certificate(subject, issuer, public_key, signing_key, ca):
    now = datetime.datetime.now(datetime.timezone.utc)
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


def make_certificates(ca_out):
    """Writes the authority's certificate (PEM) to `ca_out`; the server's key and certificate
    files, for 127.0.0.1, in a fresh temporary directory."""
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _certificate("toolsearch test CA", "toolsearch test CA", ca_key.public_key(), ca_key, True)
    leaf = _certificate("127.0.0.1", "toolsearch test CA", key.public_key(), ca_key, False)
    with open(ca_out, "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    folder = tempfile.mkdtemp()
    key_file, leaf_file = os.path.join(folder, "key.pem"), os.path.join(folder, "leaf.pem")
    with open(leaf_file, "wb") as f:
        f.write(leaf.public_bytes(serialization.Encoding.PEM))
    with open(key_file, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return key_file, leaf_file
