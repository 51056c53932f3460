"""WebAdmin over a memory mailbox layer, with a task worker that can run the mailbox tasks."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from mailserver.blob.memory import MemoryBlobStore
from mailserver.mailbox.subscriptions import MemorySubscriptionStore
from mailserver.mailbox.wiring import MailboxContext, memory_context
from mailserver.model.address import Username
from mailserver.tasks.builtin.registration import register_builtin
from mailserver.tasks.manager import TaskManager
from mailserver.tasks.memory import MemoryTaskStore
from mailserver.tasks.registry import TaskRegistry
from mailserver.tasks.worker import TaskWorker
from mailserver.users.api import UsersRepository
from mailserver.webadmin.app import create_app
from mailserver.webadmin.context import WebAdminContext
from tests.unit.webadmin.webadmin_support import CHEAP_HASHER, FULL, make_context

NODE = "mailbox-node"


def add_user(users: UsersRepository, name: str) -> Username:
    """A user the routes find, without paying PBKDF2's 210,000 rounds per test (the users are not tested here):
    the repository hashes with plain SHA-256 from then on."""
    users.hasher = CHEAP_HASHER
    return users.add_user(name, "secret")


@dataclass
class MailboxAdmin:
    client: TestClient
    ctx: WebAdminContext
    mailbox: MailboxContext
    subscriptions: MemorySubscriptionStore

    def await_task(self, response) -> dict:
        assert response.status_code == 201, response.text
        task_id = response.json()["taskId"]
        assert response.headers["location"] == f"/tasks/{task_id}"
        report = self.client.get(f"/tasks/{task_id}/await", params={"timeout": "10s"})
        assert report.status_code == 200, report.text
        return report.json()


@contextmanager
def mailbox_admin(*, virtual_hosting: bool = True, expire: bool = False) -> Iterator[MailboxAdmin]:
    subscriptions, store = MemorySubscriptionStore(), MemoryTaskStore()
    ctx = make_context(tasks=TaskManager(store, NODE), subscriptions=subscriptions)
    assert ctx.guard is not None
    # Mailbox writes refused in maintenance mode, as in ``mailserver serve``.
    mailbox = memory_context(MemoryBlobStore(), write_guard=ctx.guard.writes_allowed)
    ctx.mailboxes = mailbox.manager
    # ``expire``: also the user-data tasks (ExpireMailboxTask among them), built from the context.
    registry = register_builtin(TaskRegistry(), mailboxes=mailbox.manager, subscriptions=subscriptions,
                                user_data=ctx.user_data_parts() if expire else None)
    if not virtual_hosting:
        ctx.users.virtual_hosting = False
    worker = TaskWorker(store, registry, NODE, poll_interval=0.02, heartbeat_interval=0.05)
    worker.start()
    try:
        client = TestClient(create_app(ctx), headers={"Password": FULL}, raise_server_exceptions=False)
        yield MailboxAdmin(client, ctx, mailbox, subscriptions)
    finally:
        worker.stop()
