"""WebAdmin with every administered part on memory adapters, each route's entities present: a domain, a
user with an INBOX, the spool queue and a mail repository. Tasks are submitted, never run (no worker)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

with warnings.catch_warnings():
    warnings.simplefilter("ignore")   # starlette's httpx deprecation notice
    from fastapi.testclient import TestClient

from mailserver.airflow.memory import MemoryDagRuns
from mailserver.blob.memory import MemoryBlobStore
from mailserver.events.in_process import InProcessEventBus
from mailserver.mailbox.subscriptions import MemorySubscriptionStore
from mailserver.mailbox.wiring import memory_context
from mailserver.model.address import MailAddress
from mailserver.model.mailbox import MailboxPath
from mailserver.queue.memory import MemoryMailQueueFactory
from mailserver.repository.memory import MemoryMailRepositoryStore
from mailserver.tasks.builtin.migration import SchemaVersions
from mailserver.tasks.builtin.vault import VaultParts
from mailserver.tasks.manager import TaskManager
from mailserver.tasks.memory import MemoryTaskStore
from mailserver.users.memory import MemoryUsersRepository
from mailserver.vault.config import VaultConfiguration
from mailserver.vault.memory import memory_vault
from mailserver.webadmin.app import create_app
from mailserver.webadmin.context import WebAdminContext
from tests.support.schema_version_session import FakeSchemaSession
from tests.unit.mailets.support import FastHasher
from tests.unit.webadmin.webadmin_support import FULL, make_context

DOMAIN, USER = "parts.test", "bob@parts.test"
REPOSITORY_URL = "memory://var/mail/error/"
REPOSITORY = "var%2Fmail%2Ferror%2F"   # as WebAdmin paths name it


@contextmanager
def every_part_client() -> Iterator[tuple[TestClient, WebAdminContext]]:
    bus = InProcessEventBus(retries=0)
    mailbox = memory_context(MemoryBlobStore(), bus)
    queues, subscriptions = MemoryMailQueueFactory(), MemorySubscriptionStore()
    vault = VaultParts(memory_vault(), mailbox.manager, VaultConfiguration(enabled=True), queues,
                       MailAddress.of(f"postmaster@{DOMAIN}"), subscriptions)
    ctx = make_context(queues=queues, repositories=MemoryMailRepositoryStore(),
                       tasks=TaskManager(MemoryTaskStore(), "parts"),
                       schema_versions=SchemaVersions(FakeSchemaSession(12), {}, 14),  # type: ignore[arg-type]
                       dag_runs=MemoryDagRuns(base_url="http://airflow.test"), dead_letters=bus.dead_letters, bus=bus,
                       mailboxes=mailbox.manager, subscriptions=subscriptions, vault=vault)
    ctx.users = MemoryUsersRepository(ctx.domains, hasher=FastHasher())   # no real hashing: passwords are not tested
    ctx.domains.add(DOMAIN)
    ctx.users.add_user(USER, "secret-password")
    mailbox.manager.create_mailbox(MailboxPath.inbox(USER))
    queues.get("spool")
    ctx.repositories.select(REPOSITORY_URL)
    with TestClient(create_app(ctx), headers={"Password": FULL}, raise_server_exceptions=False) as client:
        yield client, ctx
