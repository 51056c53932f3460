"""Helpers for the WebAdmin unit tests (memory adapters)."""

from __future__ import annotations

from mailserver.domains.memory import MemoryDomainList
from mailserver.maintenance.memory import MemoryMaintenanceStore
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
