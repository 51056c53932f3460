"""How many of the endpoints James's WebAdmin documentation lists this app serves, counted from its router.

The documented endpoints are the checked-in table ``james_webadmin_endpoints.txt`` (taken from
James's docs; its header cites the file and commit). The served ones are read from the app built
with every optional part, never from a hand list. An endpoint is served when a route has its
method and a path matching the documented one (the router's own match) and, when several documented operations share
them, the route's OpenAPI summary or description names the operation's mark (``reIndex``,
``deleteData``...). Every documented endpoint not served must be listed, with its reason, in the
WebAdmin routes section of ``docs/compatibility.md``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from fastapi.routing import APIRoute

from mailserver.airflow.memory import MemoryDagRuns
from mailserver.blob.memory import MemoryBlobStore
from mailserver.dlp.store import DlpConfigurationStore
from mailserver.droplist.memory import MemoryDropList
from mailserver.eventsourcing.memory import MemoryEventStore
from mailserver.identities.memory import MemoryCustomIdentityStore
from mailserver.identities.repository import IdentityRepository
from mailserver.jmap.uploads import MemoryUploadRepository
from mailserver.mailbox.subscriptions import MemorySubscriptionStore
from mailserver.mailbox.wiring import memory_context
from mailserver.queue.memory import MemoryMailQueueFactory
from mailserver.repository.memory import MemoryMailRepositoryStore
from mailserver.rrt.can_send_from import CanSendFrom
from mailserver.serving.connections import ConnectionRegistry
from mailserver.sieve.quota import MemorySieveQuotas
from mailserver.tasks.builtin.migration import SchemaVersions
from mailserver.tasks.manager import TaskManager
from mailserver.tasks.memory import MemoryTaskStore
from mailserver.vacation.memory import MemoryVacationRepository
from mailserver.webadmin.app import create_app
from tests.support.schema_version_session import FakeSchemaSession
from tests.unit.webadmin.webadmin_support import make_context

TABLE = Path(__file__).with_name("james_webadmin_endpoints.txt")
COMPATIBILITY = Path(__file__).parents[3] / "docs" / "compatibility.md"
REQUIRED_SERVED = 175   # what is served now: a route lost fails


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str
    mark: str | None

    def __str__(self) -> str:
        return f"{self.method} {self.path}" + (f" ({self.mark})" if self.mark else "")


def documented() -> list[Endpoint]:
    rows = [line.split() for line in TABLE.read_text().splitlines() if line.strip() and not line.startswith("#")]
    return [Endpoint(method, path, None if mark == "-" else mark) for method, path, mark in rows]


def served_routes() -> list[APIRoute]:
    ctx = make_context(queues=MemoryMailQueueFactory(), repositories=MemoryMailRepositoryStore(),
                       tasks=TaskManager(MemoryTaskStore(), "count-node"),
                       mailboxes=memory_context(MemoryBlobStore()).manager, subscriptions=MemorySubscriptionStore(),
                       schema_versions=SchemaVersions(FakeSchemaSession(12), {}, 14),   # type: ignore[arg-type]
                       dag_runs=MemoryDagRuns(base_url="http://airflow.test"),
                       droplist=MemoryDropList(), sieve_quotas=MemorySieveQuotas(), connections=ConnectionRegistry(),
                       vacations=MemoryVacationRepository(), dlp=DlpConfigurationStore(MemoryEventStore()),
                       uploads=MemoryUploadRepository(MemoryBlobStore()))
    ctx.identities = IdentityRepository(MemoryCustomIdentityStore(), CanSendFrom(ctx.rrt).addresses)
    return [route for route in create_app(ctx).routes if isinstance(route, APIRoute)]


def serves(routes: list[APIRoute], endpoint: Endpoint) -> bool:
    """Whether the route the router picks for the endpoint (the first whose path and method match,
    catch-all paths included) exists and, for a marked endpoint, names the mark."""
    concrete = re.sub(r"\{[^}]*\}", "p", endpoint.path)
    for route in routes:
        if endpoint.method in route.methods and route.path_regex.match(concrete):
            return endpoint.mark is None or endpoint.mark in f"{route.summary or ''} {route.description or ''}"
    return False


def missing_endpoints() -> tuple[int, list[Endpoint]]:
    routes, endpoints = served_routes(), documented()
    return len(endpoints), [e for e in endpoints if not serves(routes, e)]


def webadmin_section() -> str:
    text = COMPATIBILITY.read_text()
    start = text.index("## WebAdmin routes")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def test_the_table_rows_are_well_formed_and_distinct():
    endpoints = documented()
    assert all(e.method in {"GET", "HEAD", "PUT", "POST", "PATCH", "DELETE"} for e in endpoints)
    assert all(e.path.startswith("/") for e in endpoints)
    assert len(set(endpoints)) == len(endpoints), "one row per documented operation"


def test_most_documented_endpoints_are_served():
    total, missing = missing_endpoints()
    print(f"\nJames WebAdmin endpoints served: {total - len(missing)} of {total}")
    assert total - len(missing) >= REQUIRED_SERVED, [str(e) for e in missing]


def test_every_missing_endpoint_is_listed_with_its_reason():
    section = webadmin_section()
    _, missing = missing_endpoints()
    unlisted = [str(e) for e in missing
                if not any(f"`{e.method} {e.path}" in line and (e.mark is None or e.mark in line)
                           for line in section.splitlines())]
    assert not unlisted, f"list them in docs/compatibility.md, WebAdmin routes: {unlisted}"


def test_the_documented_count_is_the_tested_one():
    total, missing = missing_endpoints()
    assert f"{total - len(missing)} of the {total} endpoints" in webadmin_section()


def test_a_route_without_the_mark_does_not_serve_a_marked_endpoint():
    routes = served_routes()
    assert not serves(routes, Endpoint("POST", "/mailboxes", "noSuchTaskAnywhere"))
    assert serves(routes, Endpoint("POST", "/mailboxes", "reIndex"))
