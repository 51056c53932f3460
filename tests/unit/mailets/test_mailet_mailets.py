"""Each standard mailet on memory adapters."""

from __future__ import annotations

import copy
import email
import email.policy
import logging

from mailserver.mailets.bounce import Bounce, DSNBounce
from mailserver.mailets.delivery import LocalDelivery
from mailserver.mailets.headers import AddDeliveredToHeader, AddHeader, RemoveMimeHeader, SetMimeHeader
from mailserver.mailets.mailets import (
    LogMessage,
    MetricsMailet,
    Null,
    RemoveMailAttribute,
    SetMailAttribute,
    ToProcessor,
    ToRepository,
)
from mailserver.mailets.remote import RemoteDelivery
from mailserver.mailets.rewrite import PostmasterAlias, RecipientRewriteTable
from mailserver.model.address import Username
from mailserver.model.flags import SystemFlag
from mailserver.model.mail import (
    DELIVERY_ERROR,
    DELIVERY_ERROR_CODE,
    ERROR,
    GHOST,
    MAILET_ERROR,
    SENT_BY_MAILET,
    TRANSPORT,
)
from mailserver.model.mailbox import MailboxPath
from mailserver.model.quota import QuotaLimits, QuotaRoot
from tests.unit.mailets.support import MESSAGE, Env, mailet, make_mail

REPO = "memory://var/mail/test/"


# -- flow control -----------------------------------------------------------------------------------
def test_to_processor_sets_state_and_appends_notice(env: Env):
    mail = make_mail("a@x.org", state="transport")
    mail.error_message = "first"
    mailet(ToProcessor, env, processor="relay-denied", notice="550 no relay").service(mail)
    assert mail.state == "relay-denied"
    assert mail.error_message == "first\r\n550 no relay"
    assert env.spool.size() == 0  # in memory, no queue round-trip


def test_to_repository_stores_and_ghosts_unless_pass_through(env: Env):
    mail = make_mail("a@x.org", state="error")
    mail.attributes[MAILET_ERROR] = RuntimeError("boom")  # not serialisable: dropped when stored
    mail.set_attribute("kept", "yes")
    mailet(ToRepository, env, repositoryPath=REPO).service(mail)
    assert mail.state == GHOST
    (stored,) = env.repository(REPO)
    assert stored.name == mail.name and stored.state == "error"
    assert stored.attributes == {"kept": "yes"}
    other = make_mail("b@x.org", state="rrt-error")
    mailet(ToRepository, env, repositoryPath=REPO, passThrough=True).service(other)
    assert other.state == "rrt-error" and len(env.repository(REPO)) == 2


def test_null_ghosts(env: Env):
    mail = make_mail("a@x.org")
    mailet(Null, env).service(mail)
    assert mail.state == GHOST


def test_attributes(env: Env):
    mail = make_mail("a@x.org", attributes={"old": "1", "older": "2"})
    mailet(SetMailAttribute, env, **{"org.example.flag": "on", "other": "x"}).service(mail)
    assert mail.attributes["org.example.flag"] == "on" and mail.attributes["other"] == "x"
    mailet(RemoveMailAttribute, env, name="old, older").service(mail)
    assert "old" not in mail.attributes and "older" not in mail.attributes


def test_metrics_and_log_message(env: Env, caplog):
    mail = make_mail("a@x.org")
    mailet(MetricsMailet, env, metricName="mailetContainerErrors").service(mail)
    assert env.context.counters["mailetContainerErrors"] == 1
    with caplog.at_level(logging.INFO, logger="tests.mailets"):
        mailet(LogMessage, env, comment="seen here", bodyMax=5).service(mail)
    lines = [r.getMessage() for r in caplog.records]
    assert all(f"mail={mail.name}" in line for line in lines)
    assert any("seen here" in line for line in lines)
    assert any("Subject: Hello" in line for line in lines)
    assert any(line.endswith("Hello") for line in lines)  # bodyMax=5


# -- headers ----------------------------------------------------------------------------------------
def test_set_and_remove_header_on_inline_content(env: Env):
    data = b"Subject: x\r\nBcc: a@x.org,\r\n b@x.org\r\nX-Tag: old\r\n\r\nbody\r\n"
    mail = make_mail("a@x.org", data=data)
    mailet(SetMimeHeader, env, name="X-Tag", value="new").service(mail)
    mailet(RemoveMimeHeader, env, name="bcc").service(mail)
    assert env.contents.read(mail.content) == b"Subject: x\r\nX-Tag: new\r\n\r\nbody\r\n"
    mailet(AddHeader, env, name="X-Added", value="é").service(mail)
    raw = env.contents.read(mail.content)
    assert email.message_from_bytes(raw, policy=email.policy.default)["X-Added"] == "é"


def test_header_rewrite_keeps_the_stored_body_blob(env: Env):
    mail = make_mail("a@x.org")
    mail.content = env.contents.save(mail.content)
    body_blob = mail.content.body_blob_id
    mailet(SetMimeHeader, env, name="X-Scanned", value="yes").service(mail)
    assert mail.content.body_blob_id == body_blob and mail.content.stored
    raw = env.contents.read(mail.content)
    assert raw.endswith(b"X-Scanned: yes\r\n\r\nHello Alice.\r\n")
    assert mail.content.size == len(raw)


# -- local delivery ---------------------------------------------------------------------------------
def test_local_delivery_to_inbox_created_on_first_delivery(env: Env):
    mail = make_mail("alice@example.com", "bob@example.com", state="local-delivery")
    mailet(AddDeliveredToHeader, env).service(mail)
    mailet(LocalDelivery, env).service(mail)
    assert mail.state == GHOST
    (alice,) = env.inbox("alice@example.com")
    assert alice.startswith(b"Return-Path: <sender@remote.org>\r\nFrom: sender@remote.org")
    assert b"Delivered-To: alice@example.com\r\n\r\nHello Alice." in alice
    assert b"bob@example.com" not in alice.split(b"\r\n\r\n")[0].split(b"To: alice")[1]
    (bob,) = env.inbox("bob@example.com")
    assert b"Delivered-To: bob@example.com" in bob
    (meta,) = env.mailbox.manager.get_messages(MailboxPath.inbox("bob@example.com"))
    assert SystemFlag.RECENT in meta.flags.system  # delivered with is_delivery
    assert env.context.counters["localDeliveredMails"] == 2


def test_local_delivery_of_a_mail_seen_again_after_a_crash_stores_no_second_copy(env: Env):
    mail = make_mail("alice@example.com", "bob@example.com", state="local-delivery")
    again = copy.deepcopy(mail)    # the same spool item, delivered again (never acknowledged)
    mailet(LocalDelivery, env).service(mail)

    mailet(LocalDelivery, env).service(again)

    assert len(env.inbox("alice@example.com")) == len(env.inbox("bob@example.com")) == 1
    assert env.context.counters["localDeliveredMails"] == 4   # each recipient handled twice...
    assert env.context.counters["localDeliveryDuplicates"] == 2   # ...stored once


def test_local_delivery_of_another_mail_with_the_same_content_stores_it_again(env: Env):
    mailet(LocalDelivery, env).service(make_mail("alice@example.com", state="local-delivery"))
    mailet(LocalDelivery, env).service(make_mail("alice@example.com", state="local-delivery"))

    assert len(env.inbox("alice@example.com")) == 2
    assert env.context.counters["localDeliveryDuplicates"] == 0


def test_local_delivery_over_quota_sends_the_failed_recipients_to_error(env: Env):
    env.mailbox.quota.set_user_limits(QuotaRoot.for_user(Username.of("bob@example.com")), QuotaLimits(size=10))
    mail = make_mail("alice@example.com", "bob@example.com", state="local-delivery")
    mailet(LocalDelivery, env, retries=0).service(mail)
    assert mail.state == GHOST
    assert len(env.inbox("alice@example.com")) == 1 and env.inbox("bob@example.com") == []
    (failed,) = env.drain()
    assert failed.name == f"error-{mail.name}" and failed.state == ERROR
    assert [str(r) for r in failed.recipients] == ["bob@example.com"]
    assert "quota exceeded" in failed.error_message
    assert failed.attributes[SENT_BY_MAILET] is True


def test_local_delivery_unknown_user_fails_that_recipient(env: Env):
    mail = make_mail("nobody@example.com", state="local-delivery")
    mailet(LocalDelivery, env, retries=0, onMailetException="custom").service(mail)
    (failed,) = env.drain()
    assert failed.state == "custom" and "no such local user" in failed.error_message


def test_local_delivery_retries_storage_errors(env: Env, monkeypatch):
    calls = []
    original = env.mailbox.manager.append

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("timeout")
        return original(*args, **kwargs)

    monkeypatch.setattr(env.mailbox.manager, "append", flaky)
    monkeypatch.setattr("time.sleep", lambda s: None)   # tenacity waits with time.sleep
    mailet(LocalDelivery, env, retries=1).service(make_mail("alice@example.com"))
    # failed, retried (INBOX missing), then appended once the INBOX was created
    assert len(calls) == 3 and len(env.inbox("alice@example.com")) == 1 and env.drain() == []


def test_local_delivery_can_resolve_recipients(env: Env):
    env.rrt.add_alias("sales@example.com", "alice@example.com")
    env.rrt.add_forward("fwd@example.com", "someone@remote.org")
    env.rrt.add_alias("loop1@example.com", "loop2@example.com")
    env.rrt.add_alias("loop2@example.com", "loop1@example.com")
    mail = make_mail("sales@example.com", "fwd@example.com", "loop1@example.com")
    mailet(LocalDelivery, env, resolveRecipients=True).service(mail)
    assert len(env.inbox("alice@example.com")) == 1
    by_state = {m.state: m for m in env.drain()}
    assert [str(r) for r in by_state["rrt-error"].recipients] == ["loop1@example.com"]
    assert "Too many mappings" in by_state["rrt-error"].error_message
    assert [str(r) for r in by_state[TRANSPORT].recipients] == ["someone@remote.org"]


# -- recipient rewriting ----------------------------------------------------------------------------
def test_recipient_rewrite_table(env: Env):
    env.rrt.add_alias("sales@example.com", "alice@example.com")
    env.rrt.add_group("team@example.com", "bob@example.com")
    env.rrt.add_group("team@example.com", "partner@remote.org")
    env.rrt.add_error_mapping("closed@example.com", "550 closed account")
    mail = make_mail("sales@example.com", "team@example.com", "closed@example.com", "x@remote.org",
                     state=TRANSPORT)
    rrt = mailet(RecipientRewriteTable, env, errorProcessor="rrt-error")
    assert rrt.referenced_processors() == ["rrt-error"]
    rrt.service(mail)
    assert [str(r) for r in mail.recipients] == ["alice@example.com", "bob@example.com", "x@remote.org"]
    assert mail.state == TRANSPORT
    by_state = {m.state: m for m in env.drain()}
    assert [str(r) for r in by_state["rrt-error"].recipients] == ["closed@example.com"]
    assert "550 closed account" in by_state["rrt-error"].error_message
    assert [str(r) for r in by_state[TRANSPORT].recipients] == ["partner@remote.org"]


def test_recipient_rewrite_table_ghosts_when_nothing_is_left(env: Env):
    env.rrt.add_error_mapping("closed@example.com", "550 closed")
    mail = make_mail("closed@example.com", state=TRANSPORT)
    mailet(RecipientRewriteTable, env).service(mail)
    assert mail.state == GHOST and mail.recipients == []
    assert env.drain()[0].state == ERROR  # default errorProcessor


def test_postmaster_alias(env: Env):
    mail = make_mail("PostMaster@example.com", "postmaster@remote.org", "alice@example.com")
    mailet(PostmasterAlias, env).service(mail)
    assert [str(r) for r in mail.recipients] == ["postmaster@example.com", "postmaster@remote.org",
                                                 "alice@example.com"]
    env.context.postmaster = env.context.postmaster.__class__.of("admin@example.com")
    mailet(PostmasterAlias, env).service(mail)
    assert str(mail.recipients[0]) == "admin@example.com"


# -- remote delivery --------------------------------------------------------------------------------
def test_remote_delivery_splits_per_domain_on_outgoing(env: Env):
    mail = make_mail("a@one.org", "b@two.org", "c@one.org", state="relay", attributes={"MAIL_PRIORITY": 9})
    rd = mailet(RemoteDelivery, env, outgoing="outgoing", bounceProcessor="bounces", delayTime="5000, 100000",
                maxRetries=3, sendpartial=True)
    assert rd.referenced_processors() == ["bounces"]
    rd.service(mail)
    assert mail.state == GHOST
    queued = {m.name: [str(r) for r in m.recipients] for m in env.drain("outgoing")}
    assert queued == {f"{mail.name}-to-one.org": ["a@one.org", "c@one.org"], f"{mail.name}-to-two.org": ["b@two.org"]}
    assert env.spool.size() == 0


def test_remote_delivery_gateway_enqueues_once(env: Env):
    mail = make_mail("a@one.org", "b@two.org", state="relay")
    mailet(RemoteDelivery, env, gateway="smarthost.example.net").service(mail)
    (queued,) = env.drain("outgoing")
    assert queued.name == mail.name and len(queued.recipients) == 2


# -- bounces ----------------------------------------------------------------------------------------
def _parse(raw: bytes) -> email.message.EmailMessage:
    return email.message_from_bytes(raw, policy=email.policy.default)


def test_bounce_goes_to_the_sender_with_a_null_reverse_path(env: Env):
    mail = make_mail("nobody@example.com", state="local-address-error")
    mail.error_message = "550 - Requested action not taken: no such user here"
    mailet(Bounce, env).service(mail)
    assert mail.state == "local-address-error"  # passThrough defaults to true
    (bounce,) = env.drain()
    assert bounce.sender is None and [str(r) for r in bounce.recipients] == ["sender@remote.org"]
    assert bounce.state == "root" and bounce.attributes[SENT_BY_MAILET] is True
    message = _parse(env.contents.read(bounce.content))
    assert message["From"] == "postmaster@example.com" and message["Subject"] == "[BOUNCE] Hello"
    assert message["In-Reply-To"] == "<m1@remote.org>"
    assert message.get_content_type() == "multipart/mixed"
    text, original = message.iter_parts()
    assert "no such user here" in text.get_content() and "nobody@example.com" in text.get_content()
    assert original.get_content_type() == "message/rfc822"
    assert MESSAGE in env.contents.read(bounce.content)  # the original, byte for byte


def test_bounce_attachment_none_and_pass_through_false(env: Env):
    mail = make_mail("nobody@example.com")
    mailet(Bounce, env, attachment="none", passThrough=False).service(mail)
    assert mail.state == GHOST
    (bounce,) = env.drain()
    assert len(list(_parse(env.contents.read(bounce.content)).iter_parts())) == 1


def test_no_bounce_for_a_null_sender(env: Env):
    mail = make_mail("nobody@example.com", sender=None)
    mailet(Bounce, env).service(mail)
    mailet(DSNBounce, env).service(mail)
    assert env.drain() == []


def test_dsn_bounce_is_a_delivery_status_report(env: Env):
    mail = make_mail("a@one.org", "b@one.org", state="bounces",
                     attributes={DELIVERY_ERROR: "550 5.1.1 user unknown", DELIVERY_ERROR_CODE: 550})
    mailet(DSNBounce, env, passThrough=False, attachment="heads").service(mail)
    assert mail.state == GHOST
    (dsn,) = env.drain()
    assert dsn.sender is None
    message = _parse(env.contents.read(dsn.content))
    assert message.get_content_type() == "multipart/report"
    assert message.get_param("report-type") == "delivery-status"
    _, status, headers = message.iter_parts()
    assert status.get_content_type() == "message/delivery-status"
    raw_status = env.contents.read(dsn.content).decode()
    assert "Reporting-MTA: dns; mx.example.com" in raw_status
    assert "Final-Recipient: rfc822; a@one.org\r\nAction: failed\r\nStatus: 5.0.0" in raw_status
    assert "Final-Recipient: rfc822; b@one.org" in raw_status
    assert "Diagnostic-Code: smtp; 550 5.1.1 user unknown" in raw_status
    assert headers.get_content_type() == "text/rfc822-headers"
    assert "Hello Alice." not in raw_status
