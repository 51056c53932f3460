"""Mail through the whole server with smtplib as the client: SMTP, spool, mailet chain, storage;
and with jmapc (a JMAP client written elsewhere) reading, flagging, moving and submitting mail."""

from __future__ import annotations

import imaplib
import queue
import smtplib
import threading
import time
from collections.abc import Iterator

import pytest
from jmapc import (
    Address,
    Client,
    Email,
    EmailAddress,
    EmailBodyPart,
    EmailBodyValue,
    EmailQueryFilterCondition,
    EmailSubmission,
    Envelope,
    Event,
    EventSourceConfig,
    MailboxQueryFilterCondition,
    Ref,
)
from jmapc.methods import (
    EmailGet,
    EmailGetResponse,
    EmailQuery,
    EmailSet,
    EmailSetResponse,
    EmailSubmissionSet,
    EmailSubmissionSetResponse,
    MailboxGet,
    MailboxGetResponse,
    MailboxQuery,
    MailboxQueryResponse,
)

from mailserver.events.registration_keys import account_key
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


# ---------------------------------------------------------------- JMAP, with jmapc

JMAP_PASSWORD = "jmap-e2e-pw"


@pytest.fixture(scope="module")
def jmap_users(mail_world: MailWorld) -> tuple[str, str]:
    alice, bob = mail_world.add_user("jmap-alice", JMAP_PASSWORD), mail_world.add_user("jmap-bob", JMAP_PASSWORD)
    for user in (alice, bob):   # as a mail client creates them at first login
        for name in ("INBOX", "Drafts", "Sent", "Archive"):
            mail_world.backends.mailbox.manager.create_mailbox(MailboxPath.of(user, name))
    return alice, bob


@pytest.fixture(scope="module")
def jmap(mail_world: MailWorld, jmap_users) -> Iterator[Client]:
    client = Client.create_with_password(mail_world.jmap_host, jmap_users[0], JMAP_PASSWORD)
    client.requests_session.trust_env = False   # REQUESTS_CA_BUNDLE would win over verify
    client.requests_session.verify = mail_world.jmap_certificate
    yield client
    client.requests_session.close()


def jmap_mailboxes(client: Client) -> dict[str, str]:
    answer = client.request(MailboxGet(ids=None))
    assert isinstance(answer, MailboxGetResponse)
    return {m.name: m.id for m in answer.data if m.name and m.id}


def text_draft(sender: str, recipient: str, subject: str, drafts: str, body: str) -> Email:
    return Email(mail_from=[EmailAddress(email=sender)], to=[EmailAddress(email=recipient)], subject=subject,
                 keywords={"$draft": True}, mailbox_ids={drafts: True},
                 body_values={"body": EmailBodyValue(value=body)},
                 text_body=[EmailBodyPart(part_id="body", type="text/plain")])


def test_jmap_reads_flags_and_moves_a_mail_delivered_over_smtp(mail_world: MailWorld, jmap_users, jmap: Client):
    alice, _ = jmap_users
    assert jmap.jmap_session.username == alice
    assert jmap.jmap_session.primary_accounts.submission == jmap.account_id
    ids = jmap_mailboxes(jmap)
    assert {"INBOX", "Drafts", "Sent", "Archive"} <= set(ids)
    inbox_query = jmap.request(MailboxQuery(filter=MailboxQueryFilterCondition(role="inbox")))
    assert isinstance(inbox_query, MailboxQueryResponse) and inbox_query.ids == [ids["INBOX"]]

    mail_world.send(REMOTE_SENDER, [alice], "Over SMTP, read over JMAP.", subject="jmap-read")
    assert eventually(lambda: mail_world.inbox(alice)), "the mail was not delivered"
    found = jmap.request([
        EmailQuery(filter=EmailQueryFilterCondition(in_mailbox=ids["INBOX"])),
        EmailGet(ids=Ref("/ids"), properties=["id", "subject", "from", "keywords", "bodyValues", "textBody"],
                 fetch_text_body_values=True),
    ])
    got = found[1].response
    assert isinstance(got, EmailGetResponse)
    (email,) = got.data
    assert email.id and email.subject == "jmap-read" and email.keywords == {}
    assert email.mail_from == [EmailAddress(name=None, email=REMOTE_SENDER)]
    assert email.text_body and email.body_values
    assert "Over SMTP, read over JMAP." in (email.body_values[email.text_body[0].part_id or ""].value or "")

    seen = jmap.request(EmailSet(update={email.id: {"keywords/$seen": True}}))
    assert isinstance(seen, EmailSetResponse) and seen.updated is not None and email.id in seen.updated
    imap = imaplib.IMAP4("127.0.0.1", int(mail_world.env["MAILSERVER_IMAP_PORT"]), timeout=30)
    try:
        assert imap.login(alice, JMAP_PASSWORD)[0] == "OK"
        assert imap.select("INBOX", readonly=True)[0] == "OK"
        _, flags = imap.fetch("1", "(FLAGS)")
        assert b"\\Seen" in bytes(flags[0] or b"")   # $seen is IMAP's \Seen
    finally:
        imap.logout()

    moved = jmap.request(EmailSet(update={email.id: {"mailboxIds": {ids["Archive"]: True}}}))
    assert isinstance(moved, EmailSetResponse) and moved.updated is not None and email.id in moved.updated
    manager = mail_world.backends.mailbox.manager
    assert manager.get_messages(MailboxPath.inbox(Username.of(alice))) == []
    assert len(manager.get_messages(MailboxPath.of(alice, "Archive"))) == 1


def test_jmap_submission_goes_through_the_mail_flow_into_another_users_inbox(mail_world: MailWorld, jmap_users,
                                                                             jmap: Client):
    alice, bob = jmap_users
    ids = jmap_mailboxes(jmap)
    results = jmap.request([
        EmailSet(create={"draft": text_draft(alice, bob, "jmap-submitted", ids["Drafts"], "Sent with jmapc.")}),
        EmailSubmissionSet(
            create={"send": EmailSubmission(email_id="#draft", envelope=Envelope(
                mail_from=Address(email=alice), rcpt_to=[Address(email=bob)]))},
            on_success_update_email={"#send": {f"mailboxIds/{ids['Drafts']}": None,
                                               f"mailboxIds/{ids['Sent']}": True, "keywords/$draft": None}}),
    ])
    created, submitted = results[0].response, results[1].response
    assert isinstance(created, EmailSetResponse) and created.created and created.created["draft"]
    assert isinstance(submitted, EmailSubmissionSetResponse) and submitted.created and submitted.created["send"]
    implicit = results[2].response   # onSuccessUpdateEmail's Email/set, under the submission's call id
    assert isinstance(implicit, EmailSetResponse) and implicit.updated

    delivered = eventually(lambda: [m for m in mail_world.inbox(bob) if b"Subject: jmap-submitted" in m])
    assert delivered, "the submitted mail did not reach the other user's INBOX"
    assert b"Sent with jmapc." in delivered[0] and f"Delivered-To: {bob}".encode() in delivered[0]
    assert delivered[0].startswith(f"Return-Path: <{alice}>".encode())
    manager = mail_world.backends.mailbox.manager
    assert len(manager.get_messages(MailboxPath.of(alice, "Sent"))) == 1
    assert manager.get_messages(MailboxPath.of(alice, "Drafts")) == []


def test_jmap_submission_from_another_users_address_is_refused(jmap_users, jmap: Client):
    _, bob = jmap_users
    ids = jmap_mailboxes(jmap)
    results = jmap.request([
        EmailSet(create={"forged": text_draft(bob, "x@remote.example", "forged", ids["Drafts"], "no")}),
        EmailSubmissionSet(create={"send": EmailSubmission(email_id="#forged")}),
    ])
    refused = results[1].response
    assert isinstance(refused, EmailSubmissionSetResponse) and refused.not_created
    assert refused.not_created["send"].type == "forbiddenMailFrom"


def test_jmap_event_source_pushes_the_email_state_of_a_mail_delivered_over_smtp(mail_world: MailWorld, monkeypatch):
    # A user of its own: the other JMAP tests' mail changes alice's Email state, and a StateChange
    # of theirs arriving late would be pushed here first (and close the stream).
    carol = mail_world.add_user("jmap-carol", JMAP_PASSWORD)
    mail_world.backends.mailbox.manager.create_mailbox(MailboxPath.inbox(Username.of(carol)))
    # jmapc's EventSource client (sseclient) takes no ``verify``: the CA bundle comes from the environment.
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", mail_world.jmap_certificate)
    listening = Client.create_with_password(mail_world.jmap_host, carol, JMAP_PASSWORD,
                                            event_source_config=EventSourceConfig(types="Email", closeafter="state"))
    received: queue.Queue[Event | BaseException] = queue.Queue()

    def listen() -> None:
        try:
            received.put(next(iter(listening.events)))
        except BaseException as failure:   # shown by the test instead of a wait for nothing
            received.put(failure)
    # sseclient reads without a timeout: a thread reads, the test waits on the queue with a deadline.
    threading.Thread(target=listen, daemon=True).start()
    push_bus = mail_world.backends.push_bus
    assert push_bus is not None
    assert eventually(lambda: account_key(Username.of(carol)) in push_bus.key_listeners.keys()
                      or not received.empty(), timeout=30)
    assert received.empty(), f"pushed before any mail was sent: {received.get()!r}"

    mail_world.send(REMOTE_SENDER, [carol], "Pushed to the event source.", subject="jmap-push")

    event = received.get(timeout=60)
    assert isinstance(event, Event), f"the event source failed: {event!r}"
    assert list(event.data.changed) == [listening.account_id]
    now = listening.request(EmailGet(ids=[]))
    assert isinstance(now, EmailGetResponse)
    assert event.data.changed[listening.account_id].email == now.state   # the delivery's Email state
