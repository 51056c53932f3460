"""Mail through the whole server with smtplib as the client: SMTP, spool, mailet chain, storage."""

from __future__ import annotations

import smtplib
import time

import pytest

from mailserver.mailets.headers import AddDeliveredToHeader
from mailserver.mailets.reprocess import reprocess_all
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from mailserver.model.quota import QuotaRoot
from mailserver.runtime.serve import Server
from mailserver.runtime.settings import ServeSettings
from tests.e2e.mailflow.conftest import MailWorld, eventually
from tests.support.clients import s3_client
from tests.support.ports import unused_port

pytestmark = pytest.mark.integration

REMOTE_SENDER = "someone@sender.example"


def test_mail_for_a_local_user_is_stored_in_cassandra_and_s3(mail_world: MailWorld, stack):
    alice = mail_world.add_user("alice")
    assert mail_world.send(REMOTE_SENDER, [alice], "Hello Alice, body text.", subject="first") == {}
    (stored,) = eventually(lambda: mail_world.inbox(alice))
    assert b"Subject: first" in stored and b"Hello Alice, body text." in stored
    assert f"Delivered-To: {alice}".encode() in stored
    assert stored.startswith(f"Return-Path: <{REMOTE_SENDER}>".encode())

    manager = mail_world.backends.mailbox.manager
    path = MailboxPath.inbox(Username.of(alice))
    (metadata,) = manager.get_messages(path)                      # imapUidTable / messageIdTable rows
    counters = manager.counters(path)                             # mailboxCounters
    assert (counters.count, counters.unseen) == (1, 1)
    quota, root = mail_world.backends.mailbox.quota, QuotaRoot.for_user(Username.of(alice))
    usage = eventually(lambda: (u := quota.current(root)).count and u)   # the listeners role updates it
    assert (usage.count, usage.size) == (1, metadata.size)        # currentQuota
    bucket = mail_world.env["S3_DEFAULT_BUCKET"]
    head = s3_client(stack).head_object(Bucket=bucket, Key=metadata.header_blob_id)   # content in S3
    assert head["ContentLength"] == metadata.body_start_octet


def test_alias_and_group_expand_through_the_rewrite_table(mail_world: MailWorld):
    bob, carol = mail_world.add_user("bob"), mail_world.add_user("carol")
    rrt = mail_world.backends.rrt
    rrt.add_alias(mail_world.address("robert"), bob)
    team = mail_world.address("team")
    rrt.add_group(team, bob)
    rrt.add_group(team, carol)
    mail_world.send(REMOTE_SENDER, [mail_world.address("robert")], "for the alias", subject="alias")
    mail_world.send(REMOTE_SENDER, [team], "for the group", subject="group")

    def subjects(address: str) -> set[bytes]:
        return {line for m in mail_world.inbox(address) for line in m.split(b"\r\n") if line.startswith(b"Subject:")}

    assert eventually(lambda: subjects(bob) == {b"Subject: alias", b"Subject: group"})
    assert eventually(lambda: subjects(carol) == {b"Subject: group"})


def test_unknown_local_recipient_is_refused_at_rcpt(mail_world: MailWorld):
    nobody = mail_world.address("nobody-here")
    with mail_world.smtp() as client:
        client.mail(REMOTE_SENDER)
        code, reply = client.rcpt(nobody)
    assert (code, reply.decode()) == (550, f"5.1.1 Unknown user: {nobody}")   # James's ValidRcptHandler


def test_alias_to_a_missing_account_lands_in_address_error(mail_world: MailWorld):
    ghost, alias = mail_world.address("ghost-account"), mail_world.address("ghost-alias")
    mail_world.backends.rrt.add_alias(alias, ghost)   # a mapping: accepted at RCPT, as James does
    assert mail_world.send(REMOTE_SENDER, [alias], "lost", subject="unknown") == {}
    kept = eventually(lambda: [m for m in mail_world.repository("address-error")
                               if [str(r) for r in m.recipients] == [ghost]])
    assert kept and "no such user here" in kept[0].error_message


def test_unauthenticated_relay_is_refused_at_rcpt(mail_world: MailWorld):
    with mail_world.smtp() as client:
        client.mail(REMOTE_SENDER)
        code, reply = client.rcpt("victim@remote.example")
    assert code == 550 and b"relaying denied" in reply


def test_relay_decided_by_the_container_is_denied_and_recorded(mail_world: MailWorld):
    # James with authRequired=false: SMTP accepts, the relay-denied processor refuses and records.
    env = {**mail_world.env, "MAILSERVER_SMTP_AUTH_REQUIRED": "false", "MAILSERVER_SMTP_PORT": str(unused_port()),
           "MAILSERVER_ROLES": "smtp"}
    intake = Server(ServeSettings.from_env(env), env).start()
    try:
        with smtplib.SMTP("127.0.0.1", int(env["MAILSERVER_SMTP_PORT"]), timeout=30) as client:
            client.sendmail(REMOTE_SENDER, ["victim@remote.example"], b"Subject: relay me\r\n\r\nspam\r\n")
    finally:
        intake.stop()
    kept = eventually(lambda: [m for m in mail_world.repository("relay-denied")
                               if [str(r) for r in m.recipients] == ["victim@remote.example"]])
    assert kept and kept[0].state == "relay-denied"
    assert not mail_world.sink.handler.messages or all(
        "victim@remote.example" not in rcpts for _, rcpts, _, _ in mail_world.sink.handler.messages)


def test_rewrite_loop_lands_in_rrt_error(mail_world: MailWorld):
    ping, pong = mail_world.address("ping"), mail_world.address("pong")
    mail_world.backends.rrt.add_alias(ping, pong)
    mail_world.backends.rrt.add_alias(pong, ping)
    mail_world.send(REMOTE_SENDER, [ping], "loop", subject="loop")
    kept = eventually(lambda: [m for m in mail_world.repository("rrt-error")
                               if [str(r) for r in m.recipients] == [ping]])
    assert kept and kept[0].error_message.startswith(f"{ping}: 554 Too many mappings to process"), kept[0].error_message


def test_failing_mailet_lands_in_error_then_reprocessing_delivers(mail_world: MailWorld, monkeypatch):
    dave = mail_world.add_user("dave")
    monkeypatch.setattr(AddDeliveredToHeader, "service", lambda self, mail: 1 / 0)
    mail_world.send(REMOTE_SENDER, [dave], "fragile", subject="fault")
    kept = eventually(lambda: [m for m in mail_world.repository("error")
                               if [str(r) for r in m.recipients] == [dave]])
    assert kept and "division by zero" in kept[0].error_message
    assert mail_world.inbox(dave) == []

    monkeypatch.undo()   # the fault is repaired
    repository = mail_world.backends.repositories.select("cassandra://var/mail/error/")
    spool = mail_world.backends.queues.get("spool")
    assert reprocess_all(repository, "transport", spool) >= 1
    assert eventually(lambda: len(mail_world.inbox(dave)) == 1)


def test_remote_delivery_retries_a_temporary_failure_after_its_delay(mail_world: MailWorld):
    erin = mail_world.add_user("erin", "erin-pw")
    sink = mail_world.sink.handler
    sink.data_replies = ["451 4.3.0 try again later"]
    started = time.monotonic()
    mail_world.send(erin, ["friend@remote.example"], "see you", subject="retry", login=(erin, "erin-pw"))
    delivered = eventually(lambda: [m for m in sink.messages if m[1] == ["friend@remote.example"]])
    assert delivered and b"Subject: retry" in delivered[0][2]
    assert time.monotonic() - started >= 2.0        # the first delay of "2s, 2s"
    assert sink.data_replies == []                  # the 451 was really served once


def test_remote_permanent_failure_is_bounced_to_the_sender(mail_world: MailWorld):
    frank = mail_world.add_user("frank", "frank-pw")
    mail_world.sink.handler.rcpt_replies["ghost@remote.example"] = "550 5.1.1 no such user"
    mail_world.send(frank, ["ghost@remote.example"], "hello?", subject="bounce me", login=(frank, "frank-pw"))
    (bounce,) = eventually(lambda: mail_world.inbox(frank))
    assert b"ghost@remote.example" in bounce and b"550" in bounce
