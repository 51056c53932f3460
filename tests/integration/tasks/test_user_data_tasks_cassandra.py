"""``?action=rename`` then ``?action=deleteData`` of one user on the Cassandra stores, wired as
``mailserver serve`` wires them (``cassandra_user_data_parts``), rebuilt through the task registry
from their parameters as a worker node does."""

from __future__ import annotations

import uuid

import pytest

from mailserver.domains.cassandra import CassandraDomainList
from mailserver.events.in_process import InProcessEventBus
from mailserver.identities.api import Identity
from mailserver.mailbox.wiring import cassandra_context
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from mailserver.model.quota import LimitKey, QuotaRoot, QuotaType
from mailserver.rrt.cassandra import CassandraRecipientRewriteTable
from mailserver.rrt.mapping import Mapping, MappingSource
from mailserver.runtime.serve import cassandra_user_data_parts
from mailserver.tasks.api import Result, Task
from mailserver.tasks.builtin.registration import register_builtin
from mailserver.tasks.builtin.user_data import DeleteUserDataTask
from mailserver.tasks.builtin.username_change import UsernameChangeTask
from mailserver.tasks.registry import TaskRegistry
from mailserver.users.cassandra import CassandraUsersRepository
from mailserver.vacation.api import Vacation
from tests.unit.webadmin.webadmin_support import CHEAP_HASHER

pytestmark = pytest.mark.integration
MESSAGE = b"From: a@example.test\r\nSubject: moved\r\n\r\nhello\r\n"


def rebuilt_and_run(registry: TaskRegistry, task: Task) -> dict:
    """The task as another node rebuilds it from its parameters, run; its details."""
    again = registry.create(task.type, task.parameters())
    assert again.run() is Result.COMPLETED, again.additional_information()
    return again.additional_information()


def test_rename_then_delete_data_on_the_cassandra_stores(cassandra, s3_blobs, unique):
    domain = f"ud-{unique}-{uuid.uuid4().hex[:6]}.test"
    domains = CassandraDomainList(cassandra)
    domains.add(domain)
    users = CassandraUsersRepository(cassandra, domains, hasher=CHEAP_HASHER)
    rrt = CassandraRecipientRewriteTable(cassandra, domains)
    mailbox = cassandra_context(cassandra, s3_blobs, InProcessEventBus())
    parts = cassandra_user_data_parts(cassandra, users, rrt, mailbox.manager)
    assert parts.subscriptions and parts.delegation and parts.identities and parts.vacations   # every step runs
    registry = register_builtin(TaskRegistry(), user_data=parts)
    old, new, helper = (Username.of(f"{name}@{domain}") for name in ("alice", "carol", "bob"))
    for user in (old, new, helper):
        users.add_user(user.value, "secret")
    manager = mailbox.manager
    manager.create_mailbox(MailboxPath.of(old, "INBOX"))
    manager.create_mailbox(MailboxPath.of(old, "Archive"))
    manager.append(MailboxPath.of(old, "Archive"), MESSAGE)
    archive_id = manager.get_mailbox(MailboxPath.of(old, "Archive")).id
    team = MailboxPath.of(helper, "Team")
    manager.create_mailbox(team)
    manager.set_rights(team, old.value, "lr")
    parts.subscriptions.subscribe(old, "Archive")
    rrt.add_mapping(MappingSource.from_address(old.value), Mapping.forward(f"elsewhere@{domain}"))
    parts.delegation.add_authorized_user(old, helper)
    manager.quota.set_limit(LimitKey.user(QuotaRoot.for_user(old)), QuotaType.COUNT, 42)

    renamed = rebuilt_and_run(registry, UsernameChangeTask(parts, old, new))
    assert set(renamed["status"].values()) == {"DONE"}
    assert set(renamed["status"]) == {"ForwardUsernameChangeTaskStep", "DelegationUsernameChangeTaskStep",
                                      "MailboxUsernameChangeTaskStep", "ACLUsernameChangeTaskStep",
                                      "QuotaUsernameChangeTaskStep"}
    assert manager.list_mailboxes(old) == []
    assert sorted(m.path.name for m in manager.list_mailboxes(new)) == ["Archive", "INBOX"]
    assert manager.get_mailbox(MailboxPath.of(new, "Archive")).id == archive_id   # renamed, not copied
    assert [m.uid for m in manager.get_messages(MailboxPath.of(new, "Archive"))] == [1]
    assert manager.quota.current(QuotaRoot.for_user(new)).count == 1
    assert manager.get_acl(team) == {new.value: "lr"}
    assert parts.subscriptions.subscriptions(new) == ["Archive"] and parts.subscriptions.subscriptions(old) == []
    assert rrt.get_stored_mappings(MappingSource.from_address(old.value)) == [Mapping.forward(new.value)]
    assert rrt.get_stored_mappings(MappingSource.from_address(new.value)) == [Mapping.forward(f"elsewhere@{domain}")]
    assert parts.delegation.authorized_users(new) == [helper] and parts.delegation.authorized_users(old) == []
    assert manager.quota.defined_limits(LimitKey.user(QuotaRoot.for_user(new))).count == 42

    parts.identities.save(new, Identity(uuid.uuid4(), new.value, name="carol"))
    parts.vacations.modify(new.value, {"enabled": True, "subject": "away"})
    deleted = rebuilt_and_run(registry, DeleteUserDataTask(parts, new))
    assert set(deleted["status"].values()) == {"DONE"}
    assert set(deleted["status"]) == {"RecipientRewriteTableUserDeletionTaskStep", "DelegationUserDeletionTaskStep",
                                      "IdentityUserDeletionTaskStep", "VacationDeleteUserTaskStep",
                                      "MailboxUserDeletionTaskStep"}
    assert manager.list_mailboxes(new) == [] and parts.subscriptions.subscriptions(new) == []
    assert rrt.get_stored_mappings(MappingSource.from_address(new.value)) == []
    assert rrt.list_sources(Mapping.forward(new.value)) == []   # alice's redirection to carol is gone too
    assert parts.delegation.authorized_users(new) == [] and parts.delegation.delegated_users(helper) == []
    assert parts.identities.list(new) == []
    assert parts.vacations.get(new.value) == Vacation()
    assert manager.get_acl(team) == {} and manager.shared_with(new) == []
