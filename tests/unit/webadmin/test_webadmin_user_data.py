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
from mailserver.model.quota import LimitKey, QuotaLimits, QuotaRoot
from mailserver.rrt.can_send_from import CanSendFrom
from mailserver.rrt.mapping import Mapping, MappingSource
from mailserver.tasks.builtin.registration import register_builtin
from mailserver.tasks.manager import TaskManager
from mailserver.tasks.memory import MemoryTaskStore
from mailserver.tasks.registry import TaskRegistry
from mailserver.tasks.worker import TaskWorker
from mailserver.users.delegation import MemoryDelegationStore
from mailserver.vacation.api import DISABLED
from mailserver.vacation.memory import MemoryVacationRepository
from mailserver.webadmin.app import create_app
from mailserver.webadmin.context import WebAdminContext
from tests.unit.webadmin.mailbox_webadmin_support import add_user
from tests.unit.webadmin.webadmin_support import FULL, error, make_context

NODE = "user-data-node"
STEPS = ["RecipientRewriteTableUserDeletionTaskStep", "DelegationUserDeletionTaskStep",
         "IdentityUserDeletionTaskStep", "VacationDeleteUserTaskStep", "MailboxUserDeletionTaskStep"]


@dataclass
class Admin:
    client: TestClient
    ctx: WebAdminContext
    subscriptions: MemorySubscriptionStore
    delegation: MemoryDelegationStore
    identities: MemoryCustomIdentityStore
    vacations: MemoryVacationRepository

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
    vacations = ctx.vacations = MemoryVacationRepository()
    worker = TaskWorker(store, register_builtin(TaskRegistry(), user_data=ctx.user_data_parts()), NODE,
                        poll_interval=0.02, heartbeat_interval=0.05)
    worker.start()
    try:
        yield Admin(TestClient(create_app(ctx), headers={"Password": FULL}, raise_server_exceptions=False),
                    ctx, subscriptions, delegation, identities, vacations)
    finally:
        worker.stop()


@pytest.fixture
def user(admin) -> Username:
    return add_user(admin.ctx.users, f"u{uuid.uuid4().hex[:10]}@example.test")


def give_data(admin: Admin, user: Username) -> MailboxPath:
    """Something in every store a step walks; the other user's mailbox the user was given rights on."""
    other = add_user(admin.ctx.users, f"o{uuid.uuid4().hex[:10]}@example.test")
    admin.ctx.rrt.add_alias(MappingSource.from_address(user.value), f"alias-{user.value}")
    admin.ctx.rrt.add_forward(MappingSource.from_address(other.value), user.value)
    admin.delegation.add_authorized_user(user, other)
    admin.delegation.add_authorized_user(other, user)
    admin.identities.save(user, Identity(uuid.uuid4(), user.value, name="mine"))
    assert admin.ctx.mailboxes is not None
    admin.ctx.mailboxes.create_mailbox(MailboxPath.of(user, "Archive.2026"))
    admin.subscriptions.subscribe(user, "Archive")
    admin.vacations.modify(user.value, {"enabled": True, "subject": "away", "text_body": "back soon"})
    shared = MailboxPath.of(other, "Team")
    admin.ctx.mailboxes.create_mailbox(shared)
    admin.ctx.mailboxes.set_rights(shared, user.value, "lr")
    return shared


def test_delete_data_empties_every_store_and_reports_james_json(admin, user):
    shared = give_data(admin, user)
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
    assert admin.vacations.get(user.value) == DISABLED
    assert admin.ctx.mailboxes.get_acl(shared) == {}   # the rights on another user's mailbox revoked
    again = admin.await_task(admin.client.post(f"/users/{user.value}", params={"action": "deleteData"}))
    assert again["status"] == "completed"   # nothing left: each step finds nothing and succeeds


def test_from_step_skips_the_earlier_steps(admin, user):
    give_data(admin, user)
    report = admin.await_task(admin.client.post(
        f"/users/{user.value}", params={"action": "deleteData", "fromStep": "MailboxUserDeletionTaskStep"}))
    info = report["additionalInformation"]
    assert info["fromStep"] == "MailboxUserDeletionTaskStep"
    assert info["status"] == {**dict.fromkeys(STEPS[:4], "SKIPPED"), "MailboxUserDeletionTaskStep": "DONE"}
    assert admin.identities.list(user) != []   # skipped: still there
    assert admin.vacations.get(user.value).enabled


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


# ------------------------------------------------------------------ rename
RENAME_STEPS = ["ForwardUsernameChangeTaskStep", "DelegationUsernameChangeTaskStep",
                "MailboxUsernameChangeTaskStep", "ACLUsernameChangeTaskStep", "QuotaUsernameChangeTaskStep"]


def rename(admin: Admin, old: Username, new: Username, **query: str):
    return admin.client.post(f"/users/{old.value}/rename/{new.value}", params={"action": "rename", **query})


def test_rename_moves_forwards_delegations_mailboxes_rights_and_quota_to_the_new_name(admin, user):
    new, other = (add_user(admin.ctx.users, f"{p}{uuid.uuid4().hex[:10]}@example.test") for p in ("n", "o"))
    manager = admin.ctx.mailboxes
    assert manager is not None
    admin.ctx.rrt.add_mapping(MappingSource.from_address(user.value), Mapping.forward("far@else.test"))
    admin.delegation.add_authorized_user(user, other)
    admin.delegation.add_authorized_user(other, user)
    manager.create_mailbox(MailboxPath.of(user, "INBOX"))
    manager.append(MailboxPath.of(user, "INBOX"), b"Subject: a\r\n\r\nold\r\n")
    manager.create_mailbox(MailboxPath.of(user, "Work.2026"))
    manager.append(MailboxPath.of(user, "Work.2026"), b"Subject: c\r\n\r\nwork\r\n")
    kept_ids = {name: manager.get_mailbox(MailboxPath.of(user, name)).id for name in ("Work", "Work.2026")}
    manager.create_mailbox(MailboxPath.of(new, "INBOX"))
    manager.append(MailboxPath.of(new, "INBOX"), b"Subject: b\r\n\r\nnew\r\n")
    admin.subscriptions.subscribe(user, "Work")
    manager.quota.set_user_limits(QuotaRoot.for_user(user), QuotaLimits(count=10, size=None))
    manager.quota.set_user_limits(QuotaRoot.for_user(new), QuotaLimits(count=1, size=None))   # already full
    shared = MailboxPath.of(other, "Team")
    manager.create_mailbox(shared)
    manager.set_rights(shared, user.value, "lr")
    manager.set_rights(shared, new.value, "w")

    report = admin.await_task(rename(admin, user, new))
    assert (report["type"], report["status"]) == ("UsernameChangeTask", "completed")
    info = {k: v for k, v in report["additionalInformation"].items() if k != "timestamp"}
    assert info == {"type": "UsernameChangeTask", "oldUser": user.value, "newUser": new.value,
                    "status": dict.fromkeys(RENAME_STEPS, "DONE")}
    assert admin.ctx.rrt.get_stored_mappings(MappingSource.from_address(new.value)) == [
        Mapping.forward("far@else.test")]
    assert admin.ctx.rrt.get_stored_mappings(MappingSource.from_address(user.value)) == [Mapping.forward(new.value)]
    assert (admin.delegation.authorized_users(new), admin.delegation.delegated_users(new)) == ([other], [other])
    assert manager.list_mailboxes(user) == []
    assert sorted(m.path.name for m in manager.list_mailboxes(new)) == ["INBOX", "Work", "Work.2026"]
    # Renamed where the new name had no such mailbox: same ids, the parent's too.
    assert {name: manager.get_mailbox(MailboxPath.of(new, name)).id for name in kept_ids} == kept_ids
    assert manager.counters(MailboxPath.of(new, "INBOX")).count == 2   # merged, over the new name's limit
    assert manager.quota.current(QuotaRoot.for_user(new)).count == 3
    assert manager.quota.current(QuotaRoot.for_user(user)).count == 0
    assert manager.get_acl(shared) == {new.value: "lrw"}
    assert admin.subscriptions.subscriptions(new) == ["Work"]
    assert manager.quota.defined_limits(LimitKey.user(QuotaRoot.for_user(new))).count == 10
    assert manager.quota.defined_limits(LimitKey.user(QuotaRoot.for_user(user))).count == 10   # kept, as James
    again = admin.await_task(rename(admin, user, new, force=""))
    assert again["status"] == "completed"
    assert admin.ctx.rrt.get_stored_mappings(MappingSource.from_address(new.value)) == [
        Mapping.forward("far@else.test")]   # a re-run adds no self-forward


def test_rename_refusals_are_james_400s(admin, user):
    new = add_user(admin.ctx.users, f"n{uuid.uuid4().hex[:10]}@example.test")
    ghost = Username.of("ghost@example.test")
    assert error(rename(admin, ghost, new))["details"] == "'oldUser' parameter should be an existing user"
    assert error(rename(admin, user, ghost))["details"] == "'newUser' parameter should be an existing user"
    assert error(rename(admin, user, user))["details"] == "'newUser' should be distinct from 'oldUser'"
    assert error(rename(admin, user, new, fromStep="nope"))["details"] == "Starting step not found: nope"
    assert error(admin.client.post(f"/users/{user.value}/rename/{new.value}", params={"action": "x"}))[
        "details"] == "Invalid value supplied for query parameter 'action': x. Supported values are [rename]"
    assert rename(admin, ghost, new, force="").status_code == 201


def test_a_rename_interrupted_in_the_acl_step_is_finished_by_a_rerun_from_it(admin, user):
    new, other = (add_user(admin.ctx.users, f"{p}{uuid.uuid4().hex[:10]}@example.test") for p in ("n", "o"))
    manager = admin.ctx.mailboxes
    assert manager is not None
    shared, hidden = MailboxPath.of(other, "Team"), MailboxPath.of(other, "Hidden")
    for path in (shared, hidden):
        manager.create_mailbox(path)
    manager.set_rights(shared, user.value, "lr")
    manager.set_rights(shared, new.value, "lr")   # added before the run died, the old entry not yet removed
    manager.set_rights(hidden, user.value, "r")   # no lookup right: James's search does not list it
    report = admin.await_task(rename(admin, user, new, fromStep="ACLUsernameChangeTaskStep"))
    assert report["additionalInformation"]["status"] == {
        **dict.fromkeys(RENAME_STEPS[:3], "SKIPPED"), **dict.fromkeys(RENAME_STEPS[3:], "DONE")}
    assert manager.get_acl(shared) == {new.value: "lr"}
    assert manager.get_acl(hidden) == {user.value: "r"}
