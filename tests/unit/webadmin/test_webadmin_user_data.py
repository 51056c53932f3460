"""``POST /users/{u}?action=deleteData`` and ``POST /domains/{d}?action=deleteData`` in process:
James's statuses, messages and task JSON (DeleteUserDataRoutesTest, DomainsRoutesTest), the
tasks run by a real worker over memory stores."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from mailserver.blob.memory import MemoryBlobStore
from mailserver.identities.api import Identity
from mailserver.identities.memory import MemoryCustomIdentityStore
from mailserver.identities.repository import IdentityRepository
from mailserver.mailbox.subscriptions import MemorySubscriptionStore
from mailserver.mailbox.wiring import memory_context
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from mailserver.rrt.can_send_from import CanSendFrom
from mailserver.rrt.mapping import Mapping, MappingSource
from mailserver.tasks.builtin.registration import register_builtin
from mailserver.tasks.manager import TaskManager
from mailserver.tasks.memory import MemoryTaskStore
from mailserver.tasks.registry import TaskRegistry
from mailserver.tasks.worker import TaskWorker
from mailserver.users.delegation import MemoryDelegationStore
from mailserver.webadmin.app import create_app
from mailserver.webadmin.context import WebAdminContext
from tests.unit.webadmin.mailbox_webadmin_support import add_user
from tests.unit.webadmin.webadmin_support import FULL, error, make_context

NODE = "user-data-node"
STEPS = ["RecipientRewriteTableUserDeletionTaskStep", "DelegationUserDeletionTaskStep",
         "IdentityUserDeletionTaskStep", "MailboxUserDeletionTaskStep"]


@dataclass
class Admin:
    client: TestClient
    ctx: WebAdminContext
    subscriptions: MemorySubscriptionStore
    delegation: MemoryDelegationStore
    identities: MemoryCustomIdentityStore

    def await_task(self, response) -> dict:
        assert response.status_code == 201, response.text
        task_id = response.json()["taskId"]
        assert response.headers["location"] == f"/tasks/{task_id}"
        return self.client.get(f"/tasks/{task_id}/await", params={"timeout": "10s"}).json()


@pytest.fixture(scope="module")
def admin() -> Iterator[Admin]:
    store, subscriptions = MemoryTaskStore(), MemorySubscriptionStore()
    identities = MemoryCustomIdentityStore()
    ctx = make_context(tasks=TaskManager(store, NODE), subscriptions=subscriptions)
    delegation = ctx.delegation = MemoryDelegationStore(ctx.users.contains)
    ctx.mailboxes = memory_context(MemoryBlobStore()).manager
    ctx.identities = IdentityRepository(identities, CanSendFrom(ctx.rrt).addresses)
    ctx.domains.add("example.test")
    worker = TaskWorker(store, register_builtin(TaskRegistry(), user_data=ctx.user_data_parts()), NODE,
                        poll_interval=0.02, heartbeat_interval=0.05)
    worker.start()
    try:
        yield Admin(TestClient(create_app(ctx), headers={"Password": FULL}, raise_server_exceptions=False),
                    ctx, subscriptions, delegation, identities)
    finally:
        worker.stop()


@pytest.fixture
def user(admin) -> Username:
    return add_user(admin.ctx.users, f"u{uuid.uuid4().hex[:10]}@example.test")


def give_data(admin: Admin, user: Username) -> None:
    """Something in every store a step walks."""
    other = add_user(admin.ctx.users, f"o{uuid.uuid4().hex[:10]}@example.test")
    admin.ctx.rrt.add_alias(MappingSource.from_address(user.value), f"alias-{user.value}")
    admin.ctx.rrt.add_forward(MappingSource.from_address(other.value), user.value)
    admin.delegation.add_authorized_user(user, other)
    admin.delegation.add_authorized_user(other, user)
    admin.identities.save(user, Identity(uuid.uuid4(), user.value, name="mine"))
    assert admin.ctx.mailboxes is not None
    admin.ctx.mailboxes.create_mailbox(MailboxPath.of(user, "Archive.2026"))
    admin.subscriptions.subscribe(user, "Archive")


def test_delete_data_empties_every_store_and_reports_james_json(admin, user):
    give_data(admin, user)
    report = admin.await_task(admin.client.post(f"/users/{user.value}", params={"action": "deleteData"}))
    assert (report["type"], report["status"]) == ("DeleteUserDataTask", "completed")
    info = {k: v for k, v in report["additionalInformation"].items() if k != "timestamp"}
    assert info == {"type": "DeleteUserDataTask", "username": user.value, "status": dict.fromkeys(STEPS, "DONE")}
    assert admin.ctx.rrt.get_stored_mappings(MappingSource.from_address(user.value)) == []
    assert admin.ctx.rrt.list_sources(Mapping.forward(user.value)) == []
    assert (admin.delegation.authorized_users(user), admin.delegation.delegated_users(user)) == ([], [])
    assert admin.identities.list(user) == []
    assert admin.ctx.mailboxes is not None and admin.ctx.mailboxes.list_mailboxes(user) == []
    assert admin.subscriptions.subscriptions(user) == []
    again = admin.await_task(admin.client.post(f"/users/{user.value}", params={"action": "deleteData"}))
    assert again["status"] == "completed"   # nothing left: each step finds nothing and succeeds


def test_from_step_skips_the_earlier_steps(admin, user):
    give_data(admin, user)
    report = admin.await_task(admin.client.post(
        f"/users/{user.value}", params={"action": "deleteData", "fromStep": "MailboxUserDeletionTaskStep"}))
    info = report["additionalInformation"]
    assert info["fromStep"] == "MailboxUserDeletionTaskStep"
    assert info["status"] == {**dict.fromkeys(STEPS[:3], "SKIPPED"), "MailboxUserDeletionTaskStep": "DONE"}
    assert admin.identities.list(user) != []   # skipped: still there


def test_unknown_user_is_400_unless_forced(admin):
    assert error(admin.client.post("/users/unknown@example.test", params={"action": "deleteData"})) == {
        "statusCode": 400, "type": "InvalidArgument", "message": "Invalid arguments supplied in the user request",
        "details": "'username' parameter should be an existing user"}
    forced = admin.client.post("/users/unknown@example.test", params={"action": "deleteData", "force": ""})
    assert forced.status_code == 201


def test_invalid_action_and_invalid_step_are_400_with_james_details(admin, user):
    assert error(admin.client.post(f"/users/{user.value}", params={"action": "invalid"}))["details"] == (
        "Invalid value supplied for query parameter 'action': invalid. Supported values are [deleteData]")
    assert error(admin.client.post(f"/users/{user.value}", params={"action": "deleteData",
                                                                   "fromStep": "invalid"}))["details"] == (
        "Starting step not found: invalid")


def test_domain_delete_data_walks_its_users(admin):
    admin.ctx.domains.add("gone.test")
    users = [add_user(admin.ctx.users, f"{name}@gone.test") for name in ("a", "b")]
    for user in users:
        give_data(admin, user)
    report = admin.await_task(admin.client.post("/domains/gone.test", params={"action": "deleteData"}))
    assert (report["type"], report["status"]) == ("DeleteUsersDataOfDomainTask", "completed")
    info = {k: v for k, v in report["additionalInformation"].items() if k != "timestamp"}
    assert info == {"type": "DeleteUsersDataOfDomainTask", "domain": "gone.test", "successfulUsersCount": 2,
                    "failedUsersCount": 0, "failedUsers": []}
    assert admin.ctx.mailboxes is not None
    assert all(admin.ctx.mailboxes.list_mailboxes(user) == [] for user in users)


def test_domain_delete_data_of_an_unknown_domain_is_400(admin):
    assert error(admin.client.post("/domains/nowhere.test", params={"action": "deleteData"}))["details"] == (
        "'domainName' parameter should be an existing domain")
