"""``/deletedMessages`` in-process: validation, task JSON, restore and export end to end on memory adapters.

The mailbox layer has the vault hook enabled, so the vault is filled the way users fill it:
by expunging. A task worker runs what the routes submit; exports land in the memory spool.
"""

from __future__ import annotations

import email
import email.policy
import io
import warnings
import zipfile
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from mailserver.blob.memory import MemoryBlobStore
from mailserver.events.in_process import InProcessEventBus
from mailserver.mailbox.wiring import memory_context
from mailserver.model.address import MailAddress, Username
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.mail import SENT_BY_MAILET
from mailserver.model.mailbox import MailboxPath
from mailserver.queue.memory import MemoryMailQueueFactory
from mailserver.tasks.builtin.registration import register_builtin
from mailserver.tasks.builtin.vault import VaultParts, java_zoned_string
from mailserver.tasks.manager import TaskManager
from mailserver.tasks.memory import MemoryTaskStore
from mailserver.tasks.registry import TaskRegistry
from mailserver.tasks.worker import TaskWorker
from mailserver.users.memory import MemoryUsersRepository
from mailserver.vault.api import BlobStoreDeletedMessageVault
from mailserver.vault.config import VaultConfiguration
from mailserver.vault.memory import memory_vault
from mailserver.vault.query import Query
from mailserver.vault.wiring import install_vault
from mailserver.webadmin.app import create_app
from tests.contract.vault_contract import deleted
from tests.unit.mailets.support import FastHasher
from tests.unit.webadmin.webadmin_support import FULL, error, make_context

NOW = datetime(2026, 11, 25, 8, 0, tzinfo=UTC)
USER = "bob@example.com"
POSTMASTER = MailAddress.of("postmaster@example.com")


def raw(subject: str, sender: str = "alice@example.com", n: int = 0) -> bytes:
    return (f"From: {sender}\r\nTo: {USER}\r\nSubject: {subject}\r\nMessage-ID: <{n}.{subject.replace(' ', '-')}@x>\r\n"
            f"Content-Type: text/plain\r\n\r\nbody {n} of {subject}\r\n.\r\nline after a dot\r\n").encode()


@contextmanager
def vault_env():
    mailbox = memory_context(MemoryBlobStore(), InProcessEventBus())
    vault = memory_vault(clock=lambda: NOW)
    config = VaultConfiguration(enabled=True)
    install_vault(mailbox, vault, config, clock=lambda: NOW)
    queues = MemoryMailQueueFactory()
    parts = VaultParts(vault, mailbox.manager, config, queues, POSTMASTER, clock=lambda: NOW)
    store = TaskStoreAndWorker(parts)
    ctx = make_context(tasks=store.manager, queues=queues, vault=parts)
    ctx.domains.add("example.com")
    ctx.users = MemoryUsersRepository(ctx.domains, hasher=FastHasher())   # no real hashing: not verified here
    ctx.users.add_user(USER, "secret-password")
    client = TestClient(create_app(ctx), headers={"Password": FULL}, raise_server_exceptions=False)
    try:
        yield client, mailbox, vault, queues
    finally:
        store.worker.stop()


@pytest.fixture
def env():
    with vault_env() as parts:
        yield parts


@pytest.fixture(scope="module")
def validation_env():
    """Refused requests change nothing: one app for all of them (an app takes half a second to build)."""
    with vault_env() as parts:
        yield parts


class TaskStoreAndWorker:
    def __init__(self, parts: VaultParts) -> None:
        store = MemoryTaskStore()
        registry = register_builtin(TaskRegistry(), vault=parts)
        self.manager = TaskManager(store, "vault-node")
        self.worker = TaskWorker(store, registry, "vault-node", poll_interval=0.02, heartbeat_interval=0.05)
        self.worker.start()


def expunge_all(mailbox, messages: list[bytes]) -> dict[str, bytes]:
    """Deliver ``messages`` to the user's INBOX and expunge them: the vault receives them. By message id."""
    inbox = MailboxPath.inbox(USER)
    if not mailbox.manager.mailbox_exists(inbox):
        mailbox.manager.create_mailbox(inbox)
    ids = {str(mailbox.manager.append(inbox, m, internal_date=NOW).id.message_id): m for m in messages}
    mailbox.manager.set_flags(inbox, Flags({SystemFlag.DELETED}), FlagsUpdateMode.ADD)
    mailbox.manager.expunge(inbox)
    return ids


def await_task(client, response) -> dict:
    assert response.status_code == 201, response.text
    task_id = response.json()["taskId"]
    assert response.headers["location"] == f"/tasks/{task_id}"
    return client.get(f"/tasks/{task_id}/await?timeout=30").json()


ALL = {"combinator": "and", "criteria": []}


def subject_query(value: str) -> dict:
    return {"combinator": "and", "criteria": [{"fieldName": "subject", "operator": "containsIgnoreCase",
                                               "value": value}]}


# ---------------------------------------------------------------------------- browse
def test_browse_lists_descriptors(env):
    client, mailbox, _, _ = env
    ids = expunge_all(mailbox, [raw("Invoice 1"), raw("holiday")])
    response = client.post(f"/deletedMessages/users/{USER}/messages", json=subject_query("invoice"))
    assert response.status_code == 200
    [entry] = response.json()
    assert entry["messageId"] in ids and ids[entry["messageId"]] == raw("Invoice 1")
    assert entry == {"messageId": entry["messageId"], "originMailboxes": entry["originMailboxes"], "owner": USER,
                     "deliveryDate": "2026-11-25T08:00:00Z", "deletionDate": "2026-11-25T08:00:00Z",
                     "sender": "alice@example.com", "recipients": [USER], "subject": "Invoice 1",
                     "hasAttachment": False, "size": len(raw("Invoice 1"))}


# ---------------------------------------------------------------------------- restore
def test_restore_by_subject_brings_back_exactly_the_matching_messages(env):
    client, mailbox, vault, _ = env
    originals = [raw("Invoice March", n=1), raw("invoice April", n=2), raw("holiday", n=3)]
    expunge_all(mailbox, originals)
    report = await_task(client, client.post(f"/deletedMessages/users/{USER}?action=restore",
                                            json=subject_query("invoice")))
    assert report["status"] == "completed", report
    assert report["type"] == "deleted-messages-restore"
    info = report["additionalInformation"]
    assert {k: v for k, v in info.items() if k != "timestamp"} == {
        "type": "deleted-messages-restore", "username": USER, "successfulRestoreCount": 2, "errorRestoreCount": 0}
    restored = MailboxPath.of(USER, "Restored-Messages")
    contents = sorted(mailbox.manager.read_message(m.message_id) for m in mailbox.manager.get_messages(restored))
    assert contents == sorted(originals[:2])
    assert all(m.internal_date == NOW for m in mailbox.manager.get_messages(restored))
    assert len(list(vault.search(Username.of(USER), Query()))) == 3   # the vault keeps its copies


def test_restore_by_sender_brings_back_exactly_the_matching_messages(env):
    client, mailbox, _, _ = env
    originals = [raw("one", sender="carol@example.org", n=1), raw("two", n=2),
                 raw("three", sender="carol@example.org", n=3)]
    expunge_all(mailbox, originals)
    query = {"fieldName": "sender", "operator": "equals", "value": "carol@example.org"}   # no wrapper: allowed
    report = await_task(client, client.post(f"/deletedMessages/users/{USER}?action=restore", json=query))
    assert report["additionalInformation"]["successfulRestoreCount"] == 2
    restored = MailboxPath.of(USER, "Restored-Messages")
    assert sorted(mailbox.manager.read_message(m.message_id) for m in mailbox.manager.get_messages(restored)) == \
        sorted([originals[0], originals[2]])


# ---------------------------------------------------------------------------- export
def test_export_mails_a_zip_of_byte_identical_messages_through_the_spool(env):
    client, mailbox, _, queues = env
    originals = [raw("Invoice March", n=1), raw("invoice April", n=2), raw("holiday", n=3)]
    ids = expunge_all(mailbox, originals)
    report = await_task(client, client.post(
        f"/deletedMessages/users/{USER}?action=export&exportTo=auditor@example.org", json=subject_query("invoice")))
    assert report["status"] == "completed", report
    assert report["type"] == "deleted-messages-export"
    info = report["additionalInformation"]
    assert {k: v for k, v in info.items() if k != "timestamp"} == {
        "type": "deleted-messages-export", "userExportFrom": USER, "exportTo": "auditor@example.org",
        "totalExportedMessages": 2}
    item = queues.get("spool").dequeue(timeout=1)
    mail = item.mail
    assert mail.sender == POSTMASTER and mail.recipients == [MailAddress.of("auditor@example.org")]
    assert mail.attributes[SENT_BY_MAILET] is True
    message = email.message_from_bytes(mail.content.data, policy=email.policy.default)
    assert message["To"] == "auditor@example.org"
    [attachment] = list(message.iter_attachments())
    assert attachment.get_content_type() == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(attachment.get_content()))
    entries = {name: archive.read(name) for name in archive.namelist()}
    expected = {f"{mid}.eml": content for mid, content in ids.items() if b"nvoice" in content}
    assert entries == expected


def test_export_without_match_mails_an_empty_zip(env):
    client, mailbox, _, queues = env
    expunge_all(mailbox, [raw("holiday")])
    report = await_task(client, client.post(
        f"/deletedMessages/users/{USER}?action=export&exportTo=auditor@example.org", json=subject_query("nothing")))
    assert report["additionalInformation"]["totalExportedMessages"] == 0
    mail = queues.get("spool").dequeue(timeout=1).mail
    [attachment] = list(email.message_from_bytes(mail.content.data, policy=email.policy.default).iter_attachments())
    assert zipfile.ZipFile(io.BytesIO(attachment.get_content())).namelist() == []


# ---------------------------------------------------------------------------- delete one, purge
def test_delete_one_message(env):
    client, mailbox, vault, _ = env
    ids = expunge_all(mailbox, [raw("a"), raw("b")])
    gone, kept = list(ids)
    report = await_task(client, client.delete(f"/deletedMessages/users/{USER}/messages/{gone}"))
    assert report["status"] == "completed"
    assert {k: v for k, v in report["additionalInformation"].items() if k != "timestamp"} == {
        "type": "deleted-messages-delete", "username": USER, "deleteMessageId": gone}
    assert [str(m.message_id) for m in vault.search(Username.of(USER), Query())] == [kept]


def test_purge_expired(env):
    client, mailbox, vault, _ = env
    old = BlobStoreDeletedMessageVault(vault.metadata, vault.blobs, clock=lambda: datetime(2025, 10, 3, tzinfo=UTC))
    user = Username.of(USER)
    old.append(deleted(user, "old"), b"old")
    expunge_all(mailbox, [raw("recent")])
    report = await_task(client, client.delete("/deletedMessages?scope=expired"))
    assert report["status"] == "completed", report
    assert report["type"] == "deleted-messages-blob-store-based-garbage-collection"
    info = report["additionalInformation"]
    # One year of retention (365.2425 days) before NOW: 2025-11-25T02:10:48Z; October 2025 ended before it.
    assert info["beginningOfRetentionPeriod"] == "2025-11-25T02:10:48Z"
    assert info["deletedBuckets"] == ["deleted-messages-2025-10-01"]
    assert [m.subject for m in vault.search(user, Query())] == ["recent"]


def test_java_zoned_string():
    assert java_zoned_string(datetime(2025, 11, 24, 20, 10, tzinfo=UTC)) == "2025-11-24T20:10Z"
    assert java_zoned_string(datetime(2025, 11, 24, 20, 10, 48, 120000, tzinfo=UTC)) == "2025-11-24T20:10:48.120Z"
    assert java_zoned_string(datetime(2025, 11, 24, 20, 10, 48, 120001, tzinfo=UTC)) == \
        "2025-11-24T20:10:48.120001Z"


# ---------------------------------------------------------------------------- validation
@pytest.mark.parametrize(("method", "path", "body", "status", "message"), [
    ("post", f"/deletedMessages/users/{USER}", ALL, 400,
     "'action' query parameter is compulsory. Supported values are [export, restore]"),
    ("post", f"/deletedMessages/users/{USER}?action=Restore", ALL, 400,
     "Invalid value supplied for query parameter 'action': Restore. Supported values are [export, restore]"),
    ("post", "/deletedMessages/users/nobody@example.com?action=restore", ALL, 404,
     "User 'nobody@example.com' does not exist in the system"),
    ("post", "/deletedMessages/users/bad%20user?action=restore", ALL, 400, "Invalid 'user' parameter"),
    ("post", f"/deletedMessages/users/{USER}?action=restore",
     {"criteria": [{"fieldName": "subject", "operator": "beforeOrEquals", "value": "x"}]}, 400,
     "Invalid payload passing to the route"),
    ("post", f"/deletedMessages/users/{USER}?action=restore", {"combinator": "or", "criteria": []}, 400,
     "Invalid payload passing to the route"),
    ("post", f"/deletedMessages/users/{USER}?action=export", ALL, 400,
     "Invalid 'exportTo' parameter, null or blank value is not accepted"),
    ("post", f"/deletedMessages/users/{USER}?action=export&exportTo=not-an-address", ALL, 400,
     "Invalid 'exportTo' parameter"),
    ("post", f"/deletedMessages/users/{USER}/messages",
     {"criteria": [{"fieldName": "sender", "operator": "equals", "value": "nope"}]}, 400,
     "Invalid payload passing to the route"),
    ("post", f"/deletedMessages/users/{USER}/messages", {"criteria": [], "limit": 10**30}, 400,
     "limit must be at most 9223372036854775807"),   # a Long in James
    ("post", f"/deletedMessages/users/{USER}?action=restore", {"criteria": [], "limit": 2**63}, 400,
     "limit must be at most 9223372036854775807"),
    ("delete", "/deletedMessages", None, 400,
     "'scope' query parameter is compulsory. Supported values are [expired]"),
    ("delete", "/deletedMessages?scope=EXPIRED", None, 400,
     "Invalid value supplied for query parameter 'scope': EXPIRED. Supported values are [expired]"),
    ("delete", f"/deletedMessages/users/{USER}/messages/not-a-uuid", None, 400,
     "Can not deserialize the supplied messageId: not-a-uuid"),
    ("delete", "/deletedMessages/users/nobody@example.com/messages/b0aa4f54-e9ab-11f1-a163-02fc00000001", None, 404,
     "User 'nobody@example.com' does not exist in the system"),
])
def test_validation(validation_env, method, path, body, status, message):
    client = validation_env[0]
    response = client.request(method.upper(), path, json=body) if body is not None else \
        client.request(method.upper(), path)
    payload = error(response)
    assert payload["statusCode"] == status
    assert message in (payload["message"], payload["details"])   # selectors: James's text is the details


def test_unparseable_body_is_400(env):
    client = env[0]
    response = client.post(f"/deletedMessages/users/{USER}?action=restore", content=b"{not json")
    assert (error(response)["statusCode"], error(response)["message"]) == (400,
                                                                           "JSON payload of the request is not valid")


def test_a_limit_of_thousands_of_digits_is_400_naming_the_limit(validation_env):
    response = validation_env[0].post(f"/deletedMessages/users/{USER}/messages",
                                      content=b'{"criteria": [], "limit": ' + b"9" * 5000 + b"}")
    payload = error(response)
    assert (payload["statusCode"], payload["message"]) == (400, "Invalid payload passing to the route")
    assert payload["details"] == "limit must be at most 9223372036854775807"


def test_force_true_skips_the_user_check(env):
    client = env[0]
    response = client.post("/deletedMessages/users/gone@example.com?action=restore&force=true", json=ALL)
    report = await_task(client, response)
    assert report["additionalInformation"]["username"] == "gone@example.com"


def test_without_a_vault_the_routes_answer_503():
    ctx = make_context()
    client = TestClient(create_app(ctx), headers={"Password": FULL}, raise_server_exceptions=False)
    assert error(client.delete("/deletedMessages?scope=expired"))["statusCode"] == 503
