"""``DELETE /messages?olderThan=`` (James's ExpireMailboxTask, MessageRoutesExpireTest): statuses,
messages and task JSON, the task run by a real worker over the memory mailbox layer."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from tests.unit.webadmin.mailbox_webadmin_support import add_user, mailbox_admin
from tests.unit.webadmin.webadmin_support import error

OLD = datetime.now(UTC) - timedelta(days=40)


@pytest.fixture(scope="module")
def admin():
    with mailbox_admin(expire=True) as admin:
        admin.ctx.domains.add("example.test")
        yield admin


@pytest.fixture
def user(admin) -> Username:
    user = add_user(admin.ctx.users, f"u{uuid.uuid4().hex[:10]}@example.test")
    admin.mailbox.manager.create_mailbox(MailboxPath.of(user, "INBOX"))
    return user


def append(admin, user: Username, body: bytes, when: datetime | None = None) -> None:
    admin.mailbox.manager.append(MailboxPath.of(user, "INBOX"), body, internal_date=when)


def test_older_than_deletes_the_old_messages_of_the_inbox_with_james_json(admin, user):
    append(admin, user, b"Subject: old\r\n\r\nold\r\n", OLD)
    append(admin, user, b"Subject: new\r\n\r\nnew\r\n")
    report = admin.await_task(admin.client.delete("/messages", params={"olderThan": "30d", "user": user.value}))
    assert (report["type"], report["status"]) == ("ExpireMailboxTask", "completed")
    info = {k: v for k, v in report["additionalInformation"].items() if k != "timestamp"}
    assert info == {"type": "ExpireMailboxTask", "mailboxesExpired": 1, "mailboxesFailed": 0,
                    "mailboxesProcessed": 1, "messagesDeleted": 1,
                    "runningOptions": {"usersPerSecond": 1, "mailbox": "INBOX", "byExpiresHeader": False,
                                       "olderThan": "30d", "useSavedDate": False, "user": user.value}}
    assert admin.mailbox.manager.counters(MailboxPath.of(user, "INBOX")).count == 1


def test_by_expires_header_deletes_the_expired_ones(admin, user):
    append(admin, user, b"Expires: Mon, 1 Jan 2001 00:00:00 +0000\r\nSubject: x\r\n\r\nx\r\n")
    append(admin, user, b"Expires: Fri, 1 Jan 2100 00:00:00 +0000\r\nSubject: y\r\n\r\ny\r\n")
    append(admin, user, b"Subject: z\r\n\r\nz\r\n")
    report = admin.await_task(admin.client.delete("/messages", params={"byExpiresHeader": "", "user": user.value}))
    assert report["additionalInformation"]["messagesDeleted"] == 1
    assert "olderThan" not in report["additionalInformation"]["runningOptions"]
    assert admin.mailbox.manager.counters(MailboxPath.of(user, "INBOX")).count == 2


@pytest.mark.parametrize(("query", "details"), [
    ({}, "Must specify either 'olderThan' or 'byExpiresHeader' parameter"),
    ({"olderThan": "1d", "byExpiresHeader": ""}, "Must specify either 'olderThan' or 'byExpiresHeader' parameter"),
    ({"olderThan": "1d", "usersPerSecond": "abc"}, "'usersPerSecond' must be numeric"),
    ({"olderThan": "1d", "usersPerSecond": "0"}, "'usersPerSecond' must be strictly positive"),
    ({"olderThan": "-5d"}, "Duration amount should be positive"),
    ({"olderThan": "1d", "user": "nobody@example.test"}, "user does not exist"),
])
def test_invalid_requests_are_james_400s(admin, query, details):
    assert error(admin.client.delete("/messages", params=query)) == {
        "statusCode": 400, "type": "InvalidArgument", "message": "Invalid arguments supplied in the user request",
        "details": details}
