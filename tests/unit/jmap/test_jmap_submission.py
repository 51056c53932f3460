"""Email/set create, Email/import and EmailSubmission/set (RFC 8621 4.6, 4.8, 7.5) over the memory
mailbox layer and a memory spool, through the HTTP application."""

from __future__ import annotations

import hashlib
import uuid
from datetime import timedelta
from email import message_from_bytes, policy
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mailserver.identities.api import EmailAddress, Identity
from mailserver.identities.memory import MemoryCustomIdentityStore
from mailserver.identities.repository import IdentityRepository
from mailserver.jmap.account import Submission
from mailserver.jmap.app import create_app
from mailserver.model.address import MailAddress, Username
from mailserver.model.flags import SystemFlag
from mailserver.model.ids import MessageId
from mailserver.model.mail import JMAP_AUTH_USER, Mail
from mailserver.model.mailbox import MailboxPath
from mailserver.model.quota import LimitKey, QuotaRoot, QuotaType
from mailserver.queue.memory import MemoryMailQueue
from mailserver.rrt.can_send_from import CanSendFrom
from mailserver.rrt.memory import MemoryRecipientRewriteTable
from tests.support.jmap_world import DOMAIN, OTHER, USER, USING, World, bearer, mailbox_id, plain

SUBMISSION = "urn:ietf:params:jmap:submission"
ALL = [*USING, SUBMISSION]
SALES = f"sales@{DOMAIN}"


class Jmap:
    def __init__(self, world: World, submission: Submission | None) -> None:
        self.world = world
        self.client = TestClient(create_app(world.context(submission=submission)))

    def request(self, *calls: list[Any], using: list[str] = ALL, **extra: Any) -> dict[str, Any]:
        response = self.client.post("/jmap", headers=bearer(), json={"using": using, "methodCalls": list(calls),
                                                                      **extra})
        assert response.status_code == 200, response.text
        return response.json()

    def call(self, method: str, **arguments: Any) -> dict[str, Any]:
        name, answer, _ = self.request([method, {"accountId": self.world.account, **arguments}, "c1"])[
            "methodResponses"][0]
        assert name == method, answer
        return answer


@pytest.fixture
def rrt() -> MemoryRecipientRewriteTable:
    return MemoryRecipientRewriteTable()


@pytest.fixture
def spool() -> MemoryMailQueue:
    return MemoryMailQueue("spool")


@pytest.fixture
def jmap(world, spool, rrt) -> Jmap:
    return Jmap(world, Submission(spool, CanSendFrom(rrt)))


def draft(world: World, **overrides: Any) -> dict[str, Any]:
    """RFC 8621 4.6's kind of creation: a plain text draft in Drafts."""
    return {"mailboxIds": {mailbox_id(world, "Drafts"): True}, "keywords": {"$draft": True},
            "from": [{"name": "Alice", "email": USER}], "to": [{"name": "Bob", "email": OTHER}],
            "subject": "Hello", "textBody": [{"partId": "1", "type": "text/plain"}],
            "bodyValues": {"1": {"value": "Hi Bob,\nsee you.\n"}}, **overrides}


def spooled(spool: MemoryMailQueue) -> list[Any]:
    return [view.mail for view in spool.browse()]


# ------------------------------------------------------------------ Email/set create

def test_email_set_creates_a_draft_from_jmap_properties(jmap, world):
    answer = jmap.request(["Email/set", {"accountId": world.account, "create": {"k1": draft(world)}}, "c1"],
                          ["Email/get", {"accountId": world.account, "ids": ["#k1"],
                                         "properties": ["subject", "from", "to", "keywords", "mailboxIds",
                                                        "bodyValues", "textBody"],
                                         "fetchTextBodyValues": True}, "c2"],
                          createdIds={})
    (_, created, _), get = answer["methodResponses"][0], answer["methodResponses"][1]
    made = created["created"]["k1"]
    assert set(made) == {"id", "blobId", "threadId", "size"} and made["size"] > 0
    assert answer["createdIds"] == {"k1": made["id"]}
    email = get[1]["list"][0]   # "#k1" is the id k1 created (RFC 8620 5.3)
    assert email["id"] == made["id"]
    assert email["subject"] == "Hello" and email["from"] == [{"name": "Alice", "email": USER}]
    assert email["to"] == [{"name": "Bob", "email": OTHER}] and email["keywords"] == {"$draft": True}
    assert email["mailboxIds"] == {mailbox_id(world, "Drafts"): True}
    part = email["textBody"][0]["partId"]
    assert email["bodyValues"][part]["value"].replace("\r\n", "\n") == "Hi Bob,\nsee you.\n"
    (stored,) = world.mailbox.manager.get_messages(MailboxPath.of(USER, "Drafts"))
    assert stored.flags.has(SystemFlag.DRAFT)
    raw = world.mailbox.manager.read_message(stored.message_id)
    assert b"Message-ID: <" in raw and b"Date: " in raw


def test_a_creation_id_is_usable_by_a_later_set_of_the_same_request(jmap, world):
    answer = jmap.request(["Email/set", {"accountId": world.account, "create": {"k1": draft(world)}}, "c1"],
                          ["Email/set", {"accountId": world.account, "update": {"#k1": {"keywords/$seen": True}}},
                           "c2"])
    created = answer["methodResponses"][0][1]["created"]["k1"]["id"]
    assert answer["methodResponses"][1][1]["updated"] == {created: None}
    assert "createdIds" not in answer   # not given in the request, so not answered


def test_empty_address_lists_write_no_field(jmap, world):
    made = jmap.call("Email/set", create={"k1": draft(world, to=[], cc=None)})["created"]["k1"]
    raw = world.mailbox.manager.read_message(world.mailbox.manager.get_messages(
        MailboxPath.of(USER, "Drafts"))[0].message_id)
    assert b"\r\nTo:" not in raw and b"\r\nCc:" not in raw and made["size"] == len(raw)


def test_email_set_creates_html_alternatives_and_attachments(jmap, world):
    held = world.deliver(plain("to attach"))
    creation = draft(world, htmlBody=[{"partId": "2", "type": "text/html"}],
                     bodyValues={"1": {"value": "text"}, "2": {"value": "<p>html</p>"}},
                     attachments=[{"blobId": held, "type": "message/rfc822", "name": "fwd.eml"}],
                     mailboxIds={mailbox_id(world, "Drafts"): True, mailbox_id(world, "Projects"): True})
    made = jmap.call("Email/set", create={"k1": creation})["created"]["k1"]
    message = message_from_bytes(world.mailbox.manager.read_message(
        world.mailbox.manager.get_messages(MailboxPath.of(USER, "Projects"))[0].message_id), policy=policy.default)
    assert message.get_content_type() == "multipart/mixed"
    types = [p.get_content_type() for p in message.walk()]
    assert "multipart/alternative" in types and "text/html" in types and "message/rfc822" in types
    got = jmap.call("Email/get", ids=[made["id"]], properties=["mailboxIds", "attachments"])["list"][0]
    assert len(got["mailboxIds"]) == 2
    assert [(a["type"], a["name"]) for a in got["attachments"]] == [("message/rfc822", "fwd.eml")]


@pytest.mark.parametrize("overrides, error, properties", [
    ({"id": "x"}, "invalidProperties", ["id"]),
    ({"header:X-Foo": "bar"}, "invalidProperties", ["header:X-Foo"]),
    ({"mailboxIds": {}}, "invalidProperties", ["mailboxIds"]),
    ({"mailboxIds": {"unknown": True}}, "invalidProperties", ["mailboxIds"]),
    ({"keywords": {"a(b": True}}, "invalidProperties", ["keywords"]),
    ({"from": [{"email": "not an address"}]}, "invalidProperties", ["from"]),
    ({"subject": "two\r\nlines"}, "invalidProperties", ["subject"]),
    ({"textBody": [{"partId": "9"}]}, "invalidProperties", ["textBody"]),
    ({"htmlBody": [{"partId": "1", "type": "text/plain"}]}, "invalidProperties", ["htmlBody"]),
    ({"bodyValues": {"1": {"value": "x", "isTruncated": True}}}, "invalidProperties", ["bodyValues"]),
    ({"sentAt": "2026-11-01T10:00:00"}, "invalidProperties", ["sentAt"]),
    ({"attachments": [{"blobId": "no-such-blob"}]}, "blobNotFound", None),
])
def test_email_set_create_refusals(jmap, world, overrides, error, properties):
    answer = jmap.call("Email/set", create={"k1": draft(world, **overrides)})
    refused = answer["notCreated"]["k1"]
    assert refused["type"] == error and refused.get("properties") == properties
    assert answer["created"] is None
    assert world.mailbox.manager.get_messages(MailboxPath.of(USER, "Drafts")) == []


def test_email_set_create_beyond_the_users_quota_is_over_quota(jmap, world):
    world.mailbox.quota.set_limit(LimitKey.user(QuotaRoot.for_user(world.user)), QuotaType.COUNT, 0)
    answer = jmap.call("Email/set", create={"k1": draft(world)})
    assert answer["created"] is None
    assert answer["notCreated"]["k1"]["type"] == "overQuota"
    assert world.mailbox.manager.mailbox_state(MailboxPath.of(USER, "Drafts")).count == 0


# ------------------------------------------------------------------ Email/import

def test_email_import_stores_a_held_blob_in_the_given_mailboxes(jmap, world):
    held = world.deliver(plain("original", "imported body"))
    archive = {mailbox_id(world, "Archive"): True}
    answer = jmap.call("Email/import", emails={"i1": {"blobId": held, "mailboxIds": archive,
                                                      "keywords": {"$seen": True},
                                                      "receivedAt": "2026-10-01T08:00:00Z"}})
    made = answer["created"]["i1"]
    assert made["id"] != held and answer["notCreated"] is None and answer["oldState"] != answer["newState"]
    got = jmap.call("Email/get", ids=[made["id"]], properties=["subject", "keywords", "receivedAt", "size"])["list"][0]
    assert got == {"id": made["id"], "subject": "original", "keywords": {"$seen": True},
                   "receivedAt": "2026-10-01T08:00:00Z", "size": made["size"]}


def test_email_import_and_attachments_take_uploaded_blobs(jmap, world):
    raw = plain("uploaded", "from an upload")
    message = jmap.client.post(f"/upload/{world.account}", content=raw,
                               headers={**bearer(), "Content-Type": "message/rfc822"}).json()["blobId"]
    picture = jmap.client.post(f"/upload/{world.account}", content=b"\x89PNG data",
                               headers={**bearer(), "Content-Type": "image/png"}).json()["blobId"]
    imported = jmap.call("Email/import", emails={"i1": {"blobId": message,
                                                        "mailboxIds": {mailbox_id(world, "Archive"): True}}})
    email_id = imported["created"]["i1"]["id"]
    assert world.mailbox.manager.read_message(MessageId.of(email_id)) == raw
    made = jmap.call("Email/set", create={"k1": draft(world, attachments=[{"blobId": picture, "name": "p.png"}])})
    got = jmap.call("Email/get", ids=[made["created"]["k1"]["id"]], properties=["attachments"])["list"][0]
    assert [(a["type"], a["name"], a["size"]) for a in got["attachments"]] == [("image/png", "p.png", 9)]


def test_email_import_refusals(jmap, world):
    held = world.deliver(plain("x"))
    bobs = str(world.mailbox.manager.append(MailboxPath.of(OTHER, "INBOX"), plain("bob's")).id.message_id)
    archive = {mailbox_id(world, "Archive"): True}
    answer = jmap.call("Email/import", emails={
        "unknown": {"blobId": "nope", "mailboxIds": archive},
        "not-mine": {"blobId": bobs, "mailboxIds": archive},
        "no-mailbox": {"blobId": held, "mailboxIds": {}},
        "extra": {"blobId": held, "mailboxIds": archive, "subject": "x"}})
    refused = {k: v["type"] for k, v in answer["notCreated"].items()}
    assert refused == {"unknown": "notFound", "not-mine": "notFound", "no-mailbox": "invalidProperties",
                       "extra": "invalidProperties"}
    stale = jmap.request(["Email/import", {"accountId": world.account, "ifInState": "old", "emails": {}}, "c1"])
    assert stale["methodResponses"][0][1]["type"] == "stateMismatch"


# ------------------------------------------------------------------ EmailSubmission/set

def test_the_session_announces_submission_only_when_it_is_offered(world, spool, rrt):
    offered = Jmap(world, Submission(spool, CanSendFrom(rrt))).client.get("/jmap/session", headers=bearer()).json()
    assert offered["capabilities"][SUBMISSION] == {}
    account = offered["accounts"][world.account]["accountCapabilities"][SUBMISSION]
    assert account == {"maxDelayedSend": 0, "submissionExtensions": {}}
    assert offered["primaryAccounts"][SUBMISSION] == world.account
    plain_server = Jmap(world, None)
    assert SUBMISSION not in plain_server.client.get("/jmap/session", headers=bearer()).json()["capabilities"]
    refused = plain_server.request(["EmailSubmission/set", {"accountId": world.account}, "c1"])
    assert refused["methodResponses"][0][1]["type"] == "unknownMethod"


def test_submitting_a_draft_enqueues_it_on_the_spool_and_moves_it_to_sent(jmap, world, spool):
    drafts, sent = mailbox_id(world, "Drafts"), mailbox_id(world, "Sent")
    answer = jmap.request(
        ["Email/set", {"accountId": world.account, "create": {"draft": draft(world)}}, "c0"],
        ["EmailSubmission/set", {"accountId": world.account,
                                 "create": {"s1": {"emailId": "#draft", "identityId": "any"}},
                                 "onSuccessUpdateEmail": {"#s1": {f"mailboxIds/{drafts}": None,
                                                                  f"mailboxIds/{sent}": True,
                                                                  "keywords/$draft": None}}}, "c1"])
    (_, created, _), (name, submitted, call_id), (implicit, email_set, implicit_id) = answer["methodResponses"]
    email_id = created["created"]["draft"]["id"]
    assert (name, call_id, implicit, implicit_id) == ("EmailSubmission/set", "c1", "Email/set", "c1")
    submission = submitted["created"]["s1"]
    assert set(submission) == {"id", "sendAt"} and submitted["notCreated"] is None
    assert email_set["updated"] == {email_id: None}
    (mail,) = spooled(spool)
    assert mail.name == submission["id"] and mail.sender == MailAddress.of(USER)
    assert mail.recipients == [MailAddress.of(OTHER)]
    assert mail.attributes[JMAP_AUTH_USER] == USER
    assert b"Subject: Hello" in mail.content.data
    got = jmap.call("Email/get", ids=[email_id], properties=["mailboxIds", "keywords"])["list"][0]
    assert got == {"id": email_id, "mailboxIds": {sent: True}, "keywords": {}}


def test_an_explicit_envelope_and_on_success_destroy(jmap, world, spool, rrt):
    rrt.add_alias(SALES, USER)
    email_id = jmap.call("Email/set", create={"d": draft(world, **{"from": [{"email": SALES}]})})["created"]["d"]["id"]
    envelope = {"mailFrom": {"email": SALES},
                "rcptTo": [{"email": "carol@remote.example"}, {"email": OTHER}]}
    answer = jmap.request(["EmailSubmission/set", {"accountId": world.account,
                                                   "create": {"s1": {"emailId": email_id, "envelope": envelope}},
                                                   "onSuccessDestroyEmail": ["#s1"]}, "c1"])
    responses = answer["methodResponses"]
    assert responses[1][0] == "Email/set" and responses[1][1]["destroyed"] == [email_id]
    (mail,) = spooled(spool)
    assert str(mail.sender) == SALES
    assert [str(r) for r in mail.recipients] == ["carol@remote.example", OTHER]
    assert world.mailbox.manager.get_messages(MailboxPath.of(USER, "Drafts")) == []


def raw_email(world: World, headers: str) -> str:
    return world.deliver(f"{headers}Subject: s\r\n\r\nbody\r\n".encode(), mailbox="Drafts")


@pytest.mark.parametrize("headers, envelope, error, properties", [
    (f"From: mallory@evil.example\r\nTo: {OTHER}\r\n", None, "forbiddenMailFrom", None),
    (f"From: {USER}\r\nSender: {OTHER}\r\nTo: {OTHER}\r\n", None, "forbiddenMailFrom", None),
    (f"To: {OTHER}\r\n", None, "forbiddenFrom", None),
    (f"From: {USER}\r\n", None, "noRecipients", None),
    (f"From: {USER}\r\nTo: {OTHER}\r\n", {"mailFrom": {"email": OTHER}, "rcptTo": [{"email": OTHER}]},
     "forbiddenFrom", ["envelope.mailFrom"]),
    (f"From: {USER}\r\nTo: {OTHER}\r\n", {"mailFrom": {"email": USER}, "rcptTo": []}, "noRecipients", None),
    (f"From: {USER}\r\nTo: {OTHER}\r\n",
     {"mailFrom": {"email": USER, "parameters": {"holdFor": "60"}}, "rcptTo": [{"email": OTHER}]},
     "invalidArguments", ["envelope.mailFrom"]),
    (f"From: {USER}\r\nTo: {OTHER}\r\n", {"mailFrom": {"email": USER}, "rcptTo": [{"email": "x@@y"}]},
     "invalidArguments", ["envelope.rcptTo"]),
    (f"From: {USER}\r\nTo: bob@@broken\r\n", None, "invalidEmail", ["to"]),
])
def test_submission_refusals_send_nothing(jmap, world, spool, headers, envelope, error, properties):
    email_id = raw_email(world, headers)
    create: dict[str, Any] = {"emailId": email_id}
    if envelope is not None:
        create["envelope"] = envelope
    answer = jmap.call("EmailSubmission/set", create={"s1": create})
    refused = answer["notCreated"]["s1"]
    assert refused["type"] == error and refused.get("properties") == properties, refused
    assert answer["created"] is None and spooled(spool) == []


class UnavailableSpool(MemoryMailQueue):
    def enqueue(self, mail: Mail, delay: timedelta | None = None, *, hand_over: bool = False) -> None:
        raise OSError("the spool is down")


def test_a_spool_that_cannot_take_the_mail_answers_server_fail(world):
    jmap = Jmap(world, Submission(UnavailableSpool("spool"), CanSendFrom(MemoryRecipientRewriteTable())))
    email_id = raw_email(world, f"From: {USER}\r\nTo: {OTHER}\r\n")
    answer = jmap.call("EmailSubmission/set", create={"s1": {"emailId": email_id}})
    assert answer["created"] is None
    assert answer["notCreated"]["s1"] == {"type": "serverFail", "description": "the mail could not be queued"}


def test_submission_of_an_email_that_is_not_the_users(jmap, world, spool):
    bobs = str(world.mailbox.manager.append(MailboxPath.of(OTHER, "INBOX"), plain("bob's")).id.message_id)
    answer = jmap.call("EmailSubmission/set", create={"a": {"emailId": bobs}, "b": {"emailId": "x", "color": 1}})
    assert answer["notCreated"]["a"] == {"type": "invalidArguments", "properties": ["emailId"],
                                         "description": "The email to be sent cannot be found"}
    assert answer["notCreated"]["b"]["type"] == "invalidArguments"
    assert answer["notCreated"]["b"]["properties"] == ["color"]
    assert spooled(spool) == []


def test_on_success_takes_only_creation_ids_of_the_call(jmap, world, spool):
    email_id = raw_email(world, f"From: {USER}\r\nTo: {OTHER}\r\n")
    for on_success in ({"onSuccessDestroyEmail": [email_id]}, {"onSuccessUpdateEmail": {"#other": {}}}):
        answer = jmap.request(["EmailSubmission/set", {"accountId": world.account,
                                                       "create": {"s1": {"emailId": email_id}}, **on_success}, "c1"])
        assert answer["methodResponses"][0][1]["type"] == "invalidArguments"
    assert spooled(spool) == []   # refused whole, before anything is sent
    not_stored = jmap.call("EmailSubmission/set", update={"sub": {}}, destroy=["sub2"])
    assert not_stored["notUpdated"]["sub"]["type"] == "notFound"
    assert not_stored["notDestroyed"]["sub2"]["type"] == "notFound"


def test_submission_needs_the_submission_capability(jmap, world):
    answer = jmap.request(["EmailSubmission/set", {"accountId": world.account, "create": {}}, "c1"], using=USING)
    assert answer["methodResponses"][0][1]["type"] == "unknownMethod"


def java_name_uuid(name: str) -> str:
    """Java's ``UUID.nameUUIDFromBytes``, step by step: MD5, then version 3 and the IETF variant."""
    digest = bytearray(hashlib.md5(name.encode(), usedforsecurity=False).digest())
    digest[6] = (digest[6] & 0x0F) | 0x30
    digest[8] = (digest[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(digest)))


def test_identity_get_lists_the_users_address_and_its_aliases(jmap, world, rrt):
    rrt.add_alias(SALES, USER)
    answer = jmap.call("Identity/get", ids=None)
    assert answer["state"] == "2c9f1b12-b35a-43e6-9af2-0106fb53a943"
    assert answer["notFound"] == []
    assert answer["list"] == [
        {"id": java_name_uuid(address), "name": address, "email": address, "replyTo": None, "bcc": None,
         "textSignature": "", "htmlSignature": "", "mayDelete": False, "sortOrder": 100}
        for address in sorted([USER, SALES])]


def test_identity_get_includes_the_stored_identities(world, spool, rrt):
    can_send_from = CanSendFrom(rrt)
    repository = IdentityRepository(MemoryCustomIdentityStore(), can_send_from.addresses)
    stored = repository.create(Username(USER), Identity(uuid.uuid4(), USER, name="Bob", sort_order=1,
                                                        reply_to=(EmailAddress(SALES, "Sales"),)))
    client = TestClient(create_app(world.context(submission=Submission(spool, can_send_from), identities=repository)))
    response = client.post("/jmap", headers=bearer(), json={"using": ALL, "methodCalls": [
        ["Identity/get", {"accountId": world.account}, "c1"]]})
    listed = response.json()["methodResponses"][0][1]["list"]
    assert [i["id"] for i in listed] == [java_name_uuid(USER), str(stored.id)]
    assert listed[1] == {"id": str(stored.id), "name": "Bob", "email": USER,
                         "replyTo": [{"name": "Sales", "email": SALES}], "bcc": None,
                         "textSignature": "", "htmlSignature": "", "mayDelete": True, "sortOrder": 1}


def test_identity_get_by_ids_and_properties(jmap, world):
    mine = java_name_uuid(USER)
    answer = jmap.call("Identity/get", ids=[mine, "unknown"], properties=["email"])
    assert answer["list"] == [{"id": mine, "email": USER}]
    assert answer["notFound"] == ["unknown"]


@pytest.mark.parametrize("arguments, error", [
    ({"properties": ["email", "color"]}, "invalidArguments"),
    ({"ids": "all"}, "invalidArguments"),
    ({"sort": []}, "invalidArguments"),
])
def test_identity_get_refusals(jmap, world, arguments, error):
    name, answer, _ = jmap.request(["Identity/get", {"accountId": world.account, **arguments}, "c1"])[
        "methodResponses"][0]
    assert (name, answer["type"]) == ("error", error)


def test_identity_get_needs_the_submission_capability_and_the_account(jmap, world):
    for arguments, using, error in (({"accountId": world.account}, USING, "unknownMethod"),
                                    ({"accountId": "nope"}, ALL, "accountNotFound")):
        answer = jmap.request(["Identity/get", arguments, "c1"], using=using)["methodResponses"][0][1]
        assert answer["type"] == error


def test_submission_takes_an_identity_id_as_james_does(jmap, world, spool):
    email_id = raw_email(world, f"From: {USER}\r\nTo: {OTHER}\r\n")
    answer = jmap.call("EmailSubmission/set", create={
        "ok": {"emailId": email_id, "identityId": java_name_uuid(USER)},
        "bad": {"emailId": email_id, "identityId": "not an id!"}})
    assert answer["notCreated"]["bad"]["type"] == "invalidArguments"
    assert answer["notCreated"]["bad"]["properties"] == ["identityId"]
    assert list(answer["created"]) == ["ok"] and len(spooled(spool)) == 1
