"""``POST /mailboxes?task=SolveMessageDeletedInconsistencies`` / ``SolveMessageRecentInconsistencies``:
James's ``SolveMailboxFlagInconsistencyTask`` run by a real worker over the memory mailboxes."""

from __future__ import annotations

import pytest

from mailserver.model.address import Username
from mailserver.model.flags import SystemFlag
from mailserver.model.ids import MailboxId
from mailserver.model.mailbox import MailboxPath
from mailserver.tasks.builtin.flag_inconsistencies import SolveMailboxFlagInconsistencyTask
from mailserver.tasks.builtin.registration import register_builtin
from mailserver.tasks.registry import TaskRegistry
from tests.unit.webadmin.mailbox_webadmin_support import add_user, mailbox_admin

TYPE = "solve-mailbox-flag-inconsistencies"


@pytest.fixture(scope="module")
def admin():
    with mailbox_admin() as admin:
        admin.ctx.domains.add("example.test")
        user = add_user(admin.ctx.users, "flags@example.test")
        for name in ("INBOX", "Sent", "Trash"):
            admin.mailbox.manager.create_mailbox(MailboxPath.of(user, name))
        yield admin


def all_mailbox_ids(admin) -> list[MailboxId]:
    return [m.id for m in admin.mailbox.manager.mailboxes.all_mailboxes()]


@pytest.mark.parametrize(("selector", "flag"), [("SolveMessageDeletedInconsistencies", "DELETED"),
                                                ("SolveMessageRecentInconsistencies", "RECENT")])
def test_each_selector_runs_the_task_of_its_flag_over_every_mailbox(admin, selector, flag):
    report = admin.await_task(admin.client.post(f"/mailboxes?task={selector}"))
    assert (report["type"], report["status"]) == (TYPE, "completed")
    info = report["additionalInformation"]
    assert set(info) == {"type", "timestamp", "processedMailboxEntries", "errors", "targetFlag"}
    assert (info["type"], info["targetFlag"], info["errors"]) == (TYPE, flag, [])
    assert info["processedMailboxEntries"] == len(all_mailbox_ids(admin))


def test_a_mailbox_that_fails_is_listed_and_fails_the_task_the_others_are_processed(admin, monkeypatch):
    broken = admin.mailbox.manager.mailboxes.find_by_path(MailboxPath.of(Username.of("flags@example.test"), "Sent")).id
    messages = admin.mailbox.manager.messages
    rebuild = messages.rebuild_flag_index

    def failing_for_one(mailbox_id: MailboxId, flag: SystemFlag) -> int:
        if mailbox_id == broken:
            raise RuntimeError("Cassandra timed out")
        return rebuild(mailbox_id, flag)

    monkeypatch.setattr(messages, "rebuild_flag_index", failing_for_one)
    report = admin.await_task(admin.client.post("/mailboxes?task=SolveMessageDeletedInconsistencies"))
    assert report["status"] == "failed"
    info = report["additionalInformation"]
    assert info["errors"] == [str(broken)]
    assert info["processedMailboxEntries"] == len(all_mailbox_ids(admin))


def test_the_task_is_rebuilt_from_its_parameters_on_any_node(admin):
    registry = register_builtin(TaskRegistry(), mailboxes=admin.mailbox.manager)
    task = SolveMailboxFlagInconsistencyTask(admin.mailbox.manager, "RECENT")
    assert task.parameters() == {"flagName": "RECENT"}
    assert registry.create(TYPE, task.parameters()).parameters() == {"flagName": "RECENT"}
    with pytest.raises(ValueError, match="Invalid target flag: SEEN"):
        SolveMailboxFlagInconsistencyTask(admin.mailbox.manager, "SEEN")
