"""``/users/{u}/mailboxes`` in process: James's statuses, bodies and messages (UserMailboxesRoutesTest),
read back through the mailbox manager; the clear and subscribe-all tasks run by a real worker.
"""

from __future__ import annotations

import urllib.parse
import uuid
from dataclasses import dataclass

import pytest

from mailserver.mailbox.hooks import DeleteOperation, PreDeletionHook
from mailserver.model.address import Username
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.mailbox import MailboxPath
from mailserver.model.quota import QuotaRoot, QuotaUsage
from tests.unit.webadmin.mailbox_webadmin_support import MailboxAdmin, add_user, mailbox_admin
from tests.unit.webadmin.webadmin_support import error

MESSAGE = b"From: a@example.test\r\nSubject: hi\r\n\r\nhello\r\n"


@pytest.fixture(scope="module")
def shared():
    """One app for the module (building it costs more than a test): each test has a user of its own."""
    with mailbox_admin() as admin:
        admin.ctx.domains.add("example.test")
        yield admin


@dataclass
class Admin:
    shared: MailboxAdmin
    user: str

    def __getattr__(self, name: str):
        return getattr(self.shared, name)

    @property
    def base(self) -> str:
        return f"/users/{self.user}/mailboxes"

    def path(self, name: str) -> MailboxPath:
        return MailboxPath.of(self.user, name)


@pytest.fixture
def admin(shared) -> Admin:
    user = f"u{uuid.uuid4().hex[:10]}@example.test"
    add_user(shared.ctx.users, user)
    return Admin(shared, user)


def names(admin, user: str | None = None) -> list[str]:
    return [m.path.name for m in admin.mailbox.manager.list_mailboxes(Username.of(user or admin.user))]


def no_content(response) -> None:
    assert (response.status_code, response.content) == (204, b""), response.text


# ------------------------------------------------------------------ list, create, exists
def test_list_is_empty_then_names_every_mailbox_with_its_id(admin):
    assert admin.client.get(admin.base).json() == []
    no_content(admin.client.put(f"{admin.base}/Archive.2026"))
    ids = {m.path.name: str(m.id) for m in admin.mailbox.manager.list_mailboxes(Username.of(admin.user))}
    assert admin.client.get(admin.base).json() == [{"mailboxName": "Archive", "mailboxId": ids["Archive"]},
                                             {"mailboxName": "Archive.2026", "mailboxId": ids["Archive.2026"]}]


def test_put_creates_missing_parents_and_is_idempotent(admin):
    no_content(admin.client.put(f"{admin.base}/a.b.c"))
    no_content(admin.client.put(f"{admin.base}/a.b.c"))
    assert names(admin) == ["a", "a.b", "a.b.c"]


@pytest.mark.parametrize("name", ["a#b", "name&", "with space"])
def test_put_accepts_names_james_accepts(admin, name):
    no_content(admin.client.put(f"{admin.base}/{urllib.parse.quote(name)}"))
    no_content(admin.client.get(f"{admin.base}/{urllib.parse.quote(name)}"))


EMPTY_PART = "'#private:{{user}}:{}' has an empty part within its mailbox name considering . as a delimiter"
FORBIDDEN = "#private:{{user}}:{} contains one of the forbidden characters %*\r\n or starts with #"
INVALID_NAMES = [("my..box", EMPTY_PART.format("my..box")), (".start", EMPTY_PART.format(".start")),
                 ("end.", EMPTY_PART.format("end.")), ("a. .b", EMPTY_PART.format("a. .b")),
                 ("#box", FORBIDDEN.format("#box")), ("box*", FORBIDDEN.format("box*")),
                 ("box%", FORBIDDEN.format("box%")),
                 ("x" * 201, "Mailbox name exceeds maximum size of 200 characters")]


@pytest.mark.parametrize(("name", "details"), INVALID_NAMES, ids=lambda v: v[:12])
@pytest.mark.parametrize(("method", "message"), [("put", "Attempt to create an invalid mailbox"),
                                                 ("get", "Attempt to test existence of an invalid mailbox"),
                                                 ("delete", "Attempt to delete an invalid mailbox")])
def test_invalid_names_are_400_with_james_messages_and_write_nothing(admin, method, message, name, details):
    response = getattr(admin.client, method)(f"{admin.base}/{urllib.parse.quote(name)}")
    assert error(response) == {"statusCode": 400, "type": "InvalidArgument", "message": message,
                               "details": details.format(user=admin.user)}
    assert names(admin) == []


CONTROL = "#private:{user}:{} contains a control character (U+0000 to U+001F, U+007F) or invalid UTF-8"


@pytest.mark.parametrize(("name", "shown"), [("a\x00b", "a\\x00b"), ("a\x01b", "a\\x01b"), ("tab\there", "tab\\there"),
                                            ("a.b\x7f", "a.b\\x7f")], ids=["NUL", "SOH", "TAB", "DEL"])
@pytest.mark.parametrize(("method", "message"), [("put", "Attempt to create an invalid mailbox"),
                                                 ("get", "Attempt to test existence of an invalid mailbox"),
                                                 ("delete", "Attempt to delete an invalid mailbox")])
def test_control_characters_in_names_are_400_and_write_nothing(admin, method, message, name, shown):
    response = getattr(admin.client, method)(f"{admin.base}/{urllib.parse.quote(name)}")
    assert error(response) == {"statusCode": 400, "type": "InvalidArgument", "message": message,
                               "details": CONTROL.format(shown, user=admin.user)}
    assert names(admin) == []


def test_exists_is_204_or_404(admin):
    no_content(admin.client.put(f"{admin.base}/Work"))
    no_content(admin.client.get(f"{admin.base}/Work"))
    assert error(admin.client.get(f"{admin.base}/Play")) == {
        "statusCode": 404, "type": "notFound", "message": "Mailbox does not exist", "details": None}


@pytest.mark.parametrize(("method", "suffix", "message"), [
    ("get", "", "Invalid get on user mailboxes"), ("delete", "", "Invalid delete on user mailboxes"),
    ("get", "/Work", "Invalid get on user mailboxes"), ("put", "/Work", "Invalid get on user mailboxes"),
    ("delete", "/Work", "Invalid delete on user mailboxes"),
    ("get", "/Work/messageCount", "Invalid get on user mailboxes"),
    ("get", "/Work/unseenMessageCount", "Invalid get on user mailboxes"),
    ("delete", "/Work/messages", "Invalid get on user mailboxes")])
def test_unknown_user_is_404_before_anything_else(admin, method, suffix, message):
    response = getattr(admin.client, method)(f"/users/nobody@example.test/mailboxes{suffix}")
    assert error(response) == {"statusCode": 404, "type": "notFound", "message": message,
                               "details": "User does not exist"}
    assert names(admin, "nobody@example.test") == []


def test_force_skips_the_user_check(admin):
    other = "/users/ghost@example.test/mailboxes"
    no_content(admin.client.put(f"{other}/Old?force"))
    assert admin.client.get(f"{other}?force").json()[0]["mailboxName"] == "Old"
    no_content(admin.client.delete(f"{other}?force"))
    assert names(admin, "ghost@example.test") == []


# ------------------------------------------------------------------ delete
def test_delete_removes_the_mailbox_its_children_and_their_messages_only(admin):
    manager = admin.mailbox.manager
    for name in ("a.b.c", "ab", "b.a"):
        no_content(admin.client.put(f"{admin.base}/{name}"))
    manager.append(admin.path("a.b"), MESSAGE)
    manager.append(admin.path("ab"), MESSAGE)
    no_content(admin.client.delete(f"{admin.base}/a"))
    assert names(admin) == ["ab", "b", "b.a"]
    assert admin.mailbox.quota.current(QuotaRoot.for_user(Username.of(admin.user))) == QuotaUsage(1, len(MESSAGE))


class RefusingHook(PreDeletionHook):
    """The vault's S3 unreachable, say: every deletion with messages is refused."""

    def notify_delete(self, operation: DeleteOperation) -> None:
        raise OSError("vault unavailable")


def test_delete_refused_by_a_pre_deletion_hook_is_503_and_keeps_the_mailbox_and_its_messages(admin, monkeypatch):
    manager = admin.mailbox.manager
    no_content(admin.client.put(f"{admin.base}/Kept"))
    manager.append(admin.path("Kept"), MESSAGE)
    monkeypatch.setattr(manager, "pre_deletion_hooks", [RefusingHook()])
    response = admin.client.delete(f"{admin.base}/Kept")
    assert response.status_code == 503, response.text
    assert "could not be archived" in response.json()["message"] and "vault unavailable" in response.text
    assert names(admin) == ["Kept"] and len(manager.get_messages(admin.path("Kept"))) == 1


def test_delete_of_a_missing_mailbox_is_204_and_deletes_nothing(admin):
    no_content(admin.client.put(f"{admin.base}/Keep"))
    no_content(admin.client.delete(f"{admin.base}/Gone"))
    assert names(admin) == ["Keep"]


def test_delete_all_removes_every_mailbox_inbox_included(admin):
    for name in ("INBOX", "Sent", "Archive.2026"):
        no_content(admin.client.put(f"{admin.base}/{name}"))
    admin.mailbox.manager.append(admin.path("INBOX"), MESSAGE)
    no_content(admin.client.delete(admin.base))
    assert names(admin) == []
    assert admin.mailbox.quota.current(QuotaRoot.for_user(Username.of(admin.user))) == QuotaUsage(0, 0)
    no_content(admin.client.delete(admin.base))   # nothing left: still 204


def test_mailbox_writes_are_refused_in_maintenance_mode(admin):
    no_content(admin.client.put(f"{admin.base}/Keep"))
    assert admin.client.put("/maintenance", json={"reason": "repair"}).status_code == 200
    try:
        for response in (admin.client.put(f"{admin.base}/New"), admin.client.delete(f"{admin.base}/Keep")):
            body = error(response)
            assert (body["statusCode"], body["type"]) == (503, "ServerError")
            assert "maintenance mode" in body["details"]
    finally:
        assert admin.client.delete("/maintenance").status_code == 200
    assert names(admin) == ["Keep"]


# ------------------------------------------------------------------ counts
def test_message_counts_are_bare_numbers(admin):
    manager = admin.mailbox.manager
    no_content(admin.client.put(f"{admin.base}/INBOX"))
    assert admin.client.get(f"{admin.base}/INBOX/messageCount").json() == 0
    for _ in range(3):
        manager.append(admin.path("INBOX"), MESSAGE)
    manager.set_flags(admin.path("INBOX"), Flags.of(SystemFlag.SEEN), FlagsUpdateMode.ADD, [1])
    count = admin.client.get(f"{admin.base}/INBOX/messageCount")
    unseen = admin.client.get(f"{admin.base}/INBOX/unseenMessageCount")
    assert (count.status_code, count.text, unseen.status_code, unseen.text) == (200, "3", 200, "2")


@pytest.mark.parametrize("suffix", ["messageCount", "unseenMessageCount"])
def test_counts_of_a_missing_mailbox_are_404(admin, suffix):
    assert error(admin.client.get(f"{admin.base}/Nope/{suffix}")) == {
        "statusCode": 404, "type": "notFound", "message": "Invalid get on user mailboxes",
        "details": f"#private:{admin.user}:Nope can not be found"}


# ------------------------------------------------------------------ clear (task)
def test_clear_deletes_every_message_of_that_mailbox_only(admin):
    manager = admin.mailbox.manager
    for name in ("INBOX", "Other"):
        no_content(admin.client.put(f"{admin.base}/{name}"))
    for _ in range(4):
        manager.append(admin.path("INBOX"), MESSAGE)
    kept = manager.append(admin.path("Other"), MESSAGE)
    copied = manager.get_messages(admin.path("INBOX"))[0].message_id
    manager.copy(admin.path("INBOX"), admin.path("Other"), [1])   # the same message in both: the copy stays
    report = admin.await_task(admin.client.delete(f"{admin.base}/INBOX/messages"))
    assert report["type"] == "ClearMailboxContentTask" and report["status"] == "completed"
    info = report["additionalInformation"]
    assert {k: v for k, v in info.items() if k != "timestamp"} == {
        "type": "ClearMailboxContentTask", "username": admin.user, "mailboxName": "INBOX",
        "messagesSuccessCount": 4, "messagesFailCount": 0}
    assert manager.get_messages(admin.path("INBOX")) == []
    assert [m.message_id for m in manager.get_messages(admin.path("Other"))] == [kept.id.message_id, copied]
    assert manager.read_message(copied) == MESSAGE   # its content is still referenced, so still there
    assert names(admin) == ["INBOX", "Other"]   # the mailbox stays
    assert admin.mailbox.quota.current(QuotaRoot.for_user(Username.of(admin.user))).count == 2


def test_clear_of_an_empty_mailbox_completes_with_zero_counts(admin):
    no_content(admin.client.put(f"{admin.base}/Empty"))
    info = admin.await_task(admin.client.delete(f"{admin.base}/Empty/messages"))["additionalInformation"]
    assert (info["messagesSuccessCount"], info["messagesFailCount"]) == (0, 0)


def test_clear_counts_a_message_it_could_not_delete_and_fails(admin, monkeypatch):
    manager = admin.mailbox.manager
    no_content(admin.client.put(f"{admin.base}/INBOX"))
    for _ in range(3):
        manager.append(admin.path("INBOX"), MESSAGE)
    expunge = manager.expunge

    def failing_on_uid_2(p, uids=None):
        if uids == [2]:
            raise RuntimeError("backend refused")
        return expunge(p, uids)

    monkeypatch.setattr(manager, "expunge", failing_on_uid_2)
    report = admin.await_task(admin.client.delete(f"{admin.base}/INBOX/messages"))
    assert report["status"] == "failed"
    info = report["additionalInformation"]
    assert (info["messagesSuccessCount"], info["messagesFailCount"]) == (2, 1)
    assert [m.uid for m in manager.get_messages(admin.path("INBOX"))] == [2]   # nothing else lost, nothing half-done


def test_clear_of_a_missing_mailbox_is_404_and_creates_no_task(admin):
    assert error(admin.client.delete(f"{admin.base}/Nope/messages")) == {
        "statusCode": 404, "type": "notFound", "message": "Invalid get on user mailboxes",
        "details": f"Mailbox does not exist. #private:{admin.user}:Nope"}
    assert all(t["additionalInformation"]["username"] != admin.user for t in admin.client.get("/tasks").json())


# ------------------------------------------------------------------ subscribeAll (task)
def test_subscribe_all_subscribes_every_mailbox_and_drops_the_rest(admin):
    for name in ("INBOX", "Work"):
        no_content(admin.client.put(f"{admin.base}/{name}"))
    user = Username.of(admin.user)
    admin.subscriptions.subscribe(user, "INBOX")
    admin.subscriptions.subscribe(user, "Deleted long ago")
    report = admin.await_task(admin.client.post(f"{admin.base}?task=subscribeAll"))
    assert (report["type"], report["status"]) == ("SubscribeAllTask", "completed")
    info = report["additionalInformation"]
    assert {k: v for k, v in info.items() if k != "timestamp"} == {
        "type": "SubscribeAllTask", "username": admin.user, "subscribedCount": 1, "unsubscribedCount": 1}
    assert admin.subscriptions.subscriptions(user) == ["INBOX", "Work"]


def test_subscribe_all_of_an_unknown_user_is_404(admin):
    assert error(admin.client.post("/users/nobody@example.test/mailboxes?task=subscribeAll")) == {
        "statusCode": 404, "type": "notFound", "message": "User 'nobody@example.test' does not exist",
        "details": None}


def test_the_task_selector_lists_subscribe_all(admin):
    body = error(admin.client.post(f"{admin.base}?task=nope"))
    assert body["details"] == ("Invalid value supplied for query parameter 'task': nope. Supported values are "
                               "[recomputeFastViewProjectionItems, reIndex, subscribeAll]")


# ------------------------------------------------------------------ createMissingParents (task)
def test_create_missing_parents_creates_the_parents_a_child_lost(admin):
    manager = admin.mailbox.manager
    manager.create_mailbox(admin.path("lost.child.leaf"))
    manager.delete_mailbox(admin.path("lost"), keep_children=True)   # IMAP's DELETE: the children stay
    manager.delete_mailbox(admin.path("lost.child"), keep_children=True)
    report = admin.await_task(admin.client.post("/mailboxes?task=createMissingParents"))
    assert (report["type"], report["status"]) == ("CreateMissingParentsTask", "completed")
    info = report["additionalInformation"]
    ids = {m.path.name: str(m.id) for m in manager.list_mailboxes(Username.of(admin.user))}
    assert sorted(ids) == ["lost", "lost.child", "lost.child.leaf"]
    assert {ids["lost"], ids["lost.child"]} <= set(info["created"])
    assert (info["type"], info["totalCreated"], info["failures"], info["totalFailure"]) == (
        "CreateMissingParentsTask", len(info["created"]), [], 0)
    again = admin.await_task(admin.client.post("/mailboxes?task=createMissingParents"))
    assert again["additionalInformation"]["created"] == []   # nothing missing any more


def test_the_mailboxes_task_selector_lists_create_missing_parents(admin):
    assert error(admin.client.post("/mailboxes?task=nope"))["details"].endswith(
        ", createMissingParents, SolveMessageDeletedInconsistencies, SolveMessageRecentInconsistencies]")
