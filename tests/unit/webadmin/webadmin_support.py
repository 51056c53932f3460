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


def cheap_users(ctx: WebAdminContext) -> MemoryUsersRepository:
    """Users hashed with 1000 PBKDF2 rounds (the default's 210000 cost a second per user here), set
    on ``ctx`` before its app is made."""
    ctx.users = MemoryUsersRepository(ctx.domains, hasher=PasswordHasher("PBKDF2-SHA512"))
    return ctx.users
