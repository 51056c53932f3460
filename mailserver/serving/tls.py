"""The server side of STARTTLS, as SMTP and IMAP offer it: TLS 1.2 or later with the configured key pair."""

from __future__ import annotations

import ssl
from pathlib import Path


def server_tls_context(cert: Path | str | None, key: Path | str | None) -> ssl.SSLContext | None:
    """None without a certificate and its key: the server then offers no STARTTLS."""
    if cert is None or key is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(cert), str(key))
    return context


def reload_certificate(context: ssl.SSLContext | None, cert: Path | str | None, key: Path | str | None) -> bool:
    """Loads the key pair again into the live context (James's ``reloadSSLCertificate``): new
    handshakes use it, open sessions keep theirs. False when the server has no TLS."""
    if context is None or cert is None or key is None:
        return False
    context.load_cert_chain(str(cert), str(key))
    return True
