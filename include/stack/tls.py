"""A self-signed certificate for the stack's mail server, made once on first start.

SMTP AUTH and IMAP LOGIN are refused before STARTTLS by default, so a mail server without a
certificate cannot let anybody log in. Like a distribution's "snakeoil" certificate, this one
makes the stack usable out of the box; clients warn that it is self-signed. Production sets
``MAILSERVER_SMTP_TLS_CERT``/``KEY`` (and the IMAP ones) to a real certificate.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALIDITY = datetime.timedelta(days=825)   # the longest validity clients still accept for TLS servers


@dataclass(frozen=True)
class CertificateFiles:
    cert: Path
    key: Path


def ensure_self_signed(directory: Path, host: str) -> CertificateFiles:
    """The certificate and key in ``directory``, generated when either is missing (never replaced)."""
    files = CertificateFiles(cert=directory / "mailserver.crt", key=directory / "mailserver.key")
    if files.cert.exists() and files.key.exists():
        return files
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    try:
        names.append(x509.IPAddress(ipaddress.ip_address(host)))
    except ValueError:
        if host != "localhost":
            names.append(x509.DNSName(host))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host),
                         x509.NameAttribute(NameOID.ORGANIZATION_NAME, "mailserver stack (self-signed)")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder()
            .subject_name(subject).issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(key, hashes.SHA256()))
    # The key is written 0600 from its first byte: never readable by others, not even briefly.
    fd = os.open(files.key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
    files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return files
