"""The gateway's TLS certificate: self-signed, made by ``legionrm up``, pinned by fingerprint.

Bound to any address but 127.0.0.1 the gateway serves TLS with
``<home>/tls/gateway.crt`` and ``gateway.key`` (ECDSA P-256, the key 0600,
the directory 0700), made once for that address (a new address makes a new
one).  There is no CA: every credentials file carries the certificate's
SHA-256 fingerprint (:func:`legionrm.client.credentials.fingerprint`) and a
client trusts that certificate and nothing else.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from legionrm.client.credentials import fingerprint

TLS_DIR = "tls"
CERT, KEY = "gateway.crt", "gateway.key"
VALID_DAYS = 3650


def paths(home: str | os.PathLike[str]) -> tuple[Path, Path]:
    d = Path(home) / TLS_DIR
    return d / CERT, d / KEY


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def ensure_certificate(home: str | os.PathLike[str], host: str) -> str:
    """The certificate for ``host`` under ``home`` (made if missing or for another host); its fingerprint."""
    cert_path, key_path = paths(home)
    if cert_path.exists() and key_path.exists():
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        if _san(host) in list(names):
            return fingerprint(cert.public_bytes(serialization.Encoding.DER))
    cert_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"legionrm gateway {host}")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
            .add_extension(x509.SubjectAlternativeName([_san(host)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .sign(key, hashes.SHA256()))
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    os.chmod(cert_path, 0o600)
    return fingerprint(cert.public_bytes(serialization.Encoding.DER))


def server_context(home: str | os.PathLike[str], host: str) -> tuple[ssl.SSLContext, str]:
    """The TLS context the gateway serves ``host`` with, and its certificate's fingerprint."""
    fp = ensure_certificate(home, host)
    cert_path, key_path = paths(home)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert_path, key_path)
    return ctx, fp
