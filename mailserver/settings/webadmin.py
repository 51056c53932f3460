"""WebAdmin: where it listens, how it authenticates, and its request limits."""

from __future__ import annotations

from typing import Annotated

from .base import EnvironmentSettings, setting
from .values import CommaList, Flag, Positive, Whole, size


class WebAdminSettings(EnvironmentSettings):
    host: str = setting("MAILSERVER_WEBADMIN_HOST", "127.0.0.1", "Address WebAdmin listens on.", "address")
    port: Whole = setting("MAILSERVER_WEBADMIN_PORT", 8000, "Port WebAdmin listens on.", "integer")
    jwt_public_key: str | None = setting("MAILSERVER_WEBADMIN_JWT_PUBLIC_KEY", None, "RS256 public key (PEM text "
                                         "or a file): JWT authentication.", "PEM or path")
    passwords: CommaList = setting("MAILSERVER_WEBADMIN_PASSWORD", (), "Passwords with full access.",
                                   "comma list of secrets", secret=True)
    nodelete_passwords: CommaList = setting("MAILSERVER_WEBADMIN_PASSWORD_NODELETE", (), "Passwords allowed "
                                            "every method but DELETE.", "comma list of secrets", secret=True)
    readonly_passwords: CommaList = setting("MAILSERVER_WEBADMIN_PASSWORD_READONLY", (), "Passwords allowed GET "
                                            "and HEAD only.", "comma list of secrets", secret=True)
    auth: str | None = setting("MAILSERVER_WEBADMIN_AUTH", None, "`disabled` runs without authentication when "
                               "neither a key nor a password is set (else the server refuses to start).", "text")
    max_header_bytes: Annotated[int, size(1)] = setting("MAILSERVER_WEBADMIN_MAX_HEADER_BYTES", 16 * 1024,
                                                        "Request line and header fields (past it: 431).",
                                                        "size (bare number: bytes)")
    max_headers: Positive = setting("MAILSERVER_WEBADMIN_MAX_HEADERS", 100, "Header fields of a request (past "
                                    "it: 431).", "integer")
    docs: Flag = setting("MAILSERVER_WEBADMIN_DOCS", True, "Serve the `/docs` page.", "boolean")
