"""Helpers for the WebAdmin unit tests (memory adapters)."""

from __future__ import annotations

from mailserver.domains.memory import MemoryDomainList
from mailserver.maintenance.memory import MemoryMaintenanceStore
from mailserver.model.passwords import PasswordHasher
from mailserver.rrt.memory import MemoryRecipientRewriteTable
from mailserver.users.memory import MemoryUsersRepository
from mailserver.webadmin.auth import AuthConfig
from mailserver.webadmin.context import WebAdminContext

FULL, NODELETE, READONLY = "full-secret", "nodelete-secret", "readonly-secret"


def make_context(auth: AuthConfig | None = None, **kwargs) -> WebAdminContext:
    domains = MemoryDomainList()
    return WebAdminContext(
        domains=domains, users=MemoryUsersRepository(domains), rrt=MemoryRecipientRewriteTable(domains),
        maintenance=MemoryMaintenanceStore(), auth=auth or AuthConfig.password([FULL], [NODELETE], [READONLY]),
        **kwargs)


def error(response) -> dict:
    """James's error body, checked for shape and consistency with the status code."""
    body = response.json()
    assert set(body) == {"statusCode", "type", "message", "details"}, body
    assert body["statusCode"] == response.status_code
    return body


# Route tests do not test passwords: PBKDF2's 210,000 rounds would cost about a second per user here.
CHEAP_HASHER = PasswordHasher("SHA-256")


def cheap_users(ctx: WebAdminContext) -> MemoryUsersRepository:
    """Users hashed with ``CHEAP_HASHER``, set on ``ctx`` before its app is made."""
    ctx.users = MemoryUsersRepository(ctx.domains, hasher=CHEAP_HASHER)
    return ctx.users
