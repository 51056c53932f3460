"""The body written at intake becomes the stored message's body: one copy, one owner at a time."""

from __future__ import annotations

import pytest

from mailserver.blob.memory import MemoryBlobStore
from mailserver.mailets import blob_handover
from mailserver.mailets.api import Mailet
from mailserver.mailets.delivery import LocalDelivery
from mailserver.mailets.registry import MAILETS
from mailserver.mailets.spooler import MailSpooler
from mailserver.model.address import Username
from mailserver.model.mail import Mail
from mailserver.model.mailbox import MailboxPath
from mailserver.model.quota import QuotaLimits, QuotaRoot
from mailserver.observability.metrics import Metrics
from mailserver.queue.api import MailQueueError, Outcome
from tests.unit.mailets.support import MESSAGE, Env, container_of, mailet, make_mail, memory_env, run_spool


@pytest.fixture
def blobs() -> MemoryBlobStore:
    return MemoryBlobStore()


@pytest.fixture
def env(blobs: MemoryBlobStore) -> Env:
    return memory_env(blobs, queues_own_content=True)


def spooled(env: Env, *recipients: str) -> Mail:
    """A mail as the SMTP intake leaves it: content in the blob store, handed over to the spool entry."""
    mail = make_mail(*recipients)
    mail.content = env.contents.save(MESSAGE)
    env.spool.enqueue(mail, hand_over=True)
    return mail


def exists(blobs: MemoryBlobStore, blob_id: str | None) -> bool:
    return blob_id is not None and blobs.exists(blobs.default_bucket, blob_id)


def stored(env: Env, user: str) -> list[tuple[bytes, str | None]]:
    """(full message, body blob id) of each message in the user's INBOX."""
    manager = env.mailbox.manager
    return [(manager.read_message(m.message_id), manager.body_blob_id(m.message_id))
            for m in manager.get_messages(MailboxPath.inbox(user))]


def test_a_claim_is_taken_once_and_only_inside_a_processing_scope():
    assert not blob_handover.claim("b1")
    with blob_handover.processing() as scope:
        assert blob_handover.claim("b1")
        assert not blob_handover.claim("b1")     # a second message must not share it
        blob_handover.release("b1")
        assert blob_handover.claim("b1")
        assert scope.claimed == {"b1"}
    assert not blob_handover.claim("b1")


def test_the_stored_message_takes_the_intake_body_and_the_spool_deletes_only_the_header(env, blobs):
    mail = spooled(env, "alice@example.com")

    run_spool(env, container_of(env))

    [(message, body_blob)] = stored(env, "alice@example.com")
    assert body_blob == mail.content.body_blob_id and exists(blobs, body_blob)
    assert message.endswith(b"\r\n\r\nHello Alice.\r\n") and b"Delivered-To: alice@example.com" in message
    assert not exists(blobs, mail.content.header_blob_id)   # the spool entry's own part is gone


def delete_all(env: Env, user: str) -> None:
    manager = env.mailbox.manager
    manager.delete_messages(Username.of(user), [m.message_id for m in manager.get_messages(MailboxPath.inbox(user))])


def test_the_message_deleted_later_deletes_the_body_it_took(env, blobs):
    mail = spooled(env, "alice@example.com")
    run_spool(env, container_of(env))

    delete_all(env, "alice@example.com")

    assert stored(env, "alice@example.com") == []
    assert not exists(blobs, mail.content.body_blob_id)


def test_two_local_recipients_never_share_a_body_blob(env, blobs):
    mail = spooled(env, "alice@example.com", "bob@example.com")

    run_spool(env, container_of(env))

    [(_, alice_body)] = stored(env, "alice@example.com")
    [(bob, bob_body)] = stored(env, "bob@example.com")
    assert alice_body != bob_body and mail.content.body_blob_id in (alice_body, bob_body)
    delete_all(env, "alice@example.com")
    assert not exists(blobs, alice_body)
    [(bob_again, _)] = stored(env, "bob@example.com")
    assert bob_again == bob and bob.endswith(b"Hello Alice.\r\n")   # Alice's deletion took only her blob


def test_a_spool_entry_delivered_again_after_a_crash_keeps_the_body_its_first_run_handed_over(env, blobs):
    mail = spooled(env, "alice@example.com")
    container = container_of(env)
    first = env.spool.dequeue(timeout=0)
    with blob_handover.processing():
        container.service(first.mail)      # stored, then the process died before acknowledging
    first.done(Outcome.RETRY)              # the broker gives the same entry (same blobs) again

    run_spool(env, container)

    [(message, body_blob)] = stored(env, "alice@example.com")   # once
    assert body_blob == mail.content.body_blob_id and exists(blobs, body_blob)
    assert message.endswith(b"Hello Alice.\r\n")
    assert env.context.counters["localDeliveryDuplicates"] == 1


def test_a_delivery_that_fails_hands_nothing_over(env, blobs):
    env.mailbox.quota.set_user_limits(QuotaRoot.for_user(Username.of("alice@example.com")), QuotaLimits(size=10))
    mail = spooled(env, "alice@example.com")

    run_spool(env, container_of(env))

    assert stored(env, "alice@example.com") == []
    # The claim was given back: the spool entry deleted both of its blobs, nothing leaks.
    assert not exists(blobs, mail.content.header_blob_id) and not exists(blobs, mail.content.body_blob_id)
    kept = [m.name for u in env.repositories.urls() if u.endswith("/error/") for m in env.repository(u)]
    assert kept == [f"error-{mail.name}"]    # the failure went the usual way (error processor)


def test_local_delivery_outside_the_spooler_copies_the_body(env, blobs):
    mail = make_mail("alice@example.com", state="local-delivery")
    mail.content = env.contents.save(MESSAGE)

    mailet(LocalDelivery, env).service(mail)

    [(_, body_blob)] = stored(env, "alice@example.com")
    assert body_blob != mail.content.body_blob_id


class FailsAfterDelivery(Mailet):
    """A mailet after LocalDelivery that fails while ``failing`` (a storage outage, say)."""

    name = "FailsAfterDelivery"
    failing = True

    def service(self, mail: Mail) -> None:
        if FailsAfterDelivery.failing:
            raise ConnectionError("cassandra timeout")


@pytest.fixture
def failing_after_delivery(monkeypatch):
    monkeypatch.setitem(MAILETS, "FailsAfterDelivery", FailsAfterDelivery)
    monkeypatch.setattr(FailsAfterDelivery, "failing", True)


def refuse_enqueue(mail, delay=None, *, hand_over=False):
    """The spool while RabbitMQ is down: neither a retry nor the error processor can take a mail."""
    raise MailQueueError("rabbitmq down")


DELIVER_THEN_FAIL = """\
processors:
  root:
    - mailet: LocalDelivery
      params: {consume: false}
    - mailet: FailsAfterDelivery
      onMailetException: propagate
    - mailet: Null
  error:
    - mailet: Null
"""


def test_an_entry_whose_body_a_stored_message_took_is_given_back_not_dead_lettered(env, blobs, monkeypatch,
                                                                                    failing_after_delivery):
    mail = spooled(env, "alice@example.com")
    container = container_of(env, DELIVER_THEN_FAIL)
    metrics = Metrics()
    spooler = MailSpooler(container, env.spool, env.repositories.select("memory://var/mail/error/"), threads=0,
                          metrics=metrics, give_back_pause=0)
    enqueue = env.spool.enqueue
    monkeypatch.setattr(env.spool, "enqueue", refuse_enqueue)
    outcome = spooler.process(env.spool.dequeue(timeout=0))

    # A dead letter would keep pointing at the body Alice's message owns (and deletes with it).
    assert outcome is Outcome.RETRY and env.spool.dead_letters == [] and env.spool.size() == 1
    [(_, body_blob)] = stored(env, "alice@example.com")
    assert body_blob == mail.content.body_blob_id
    assert b"spoolGivenBack_total 1.0" in metrics.exposition()

    monkeypatch.setattr(env.spool, "enqueue", enqueue)   # the outage is over
    monkeypatch.setattr(FailsAfterDelivery, "failing", False)
    run_spool(env, container)

    [(message, body_blob)] = stored(env, "alice@example.com")   # still once
    assert body_blob == mail.content.body_blob_id and message.endswith(b"Hello Alice.\r\n")
    assert env.context.counters["localDeliveryDuplicates"] == 1
    assert not exists(blobs, mail.content.header_blob_id)   # the entry's own part went with it
    delete_all(env, "alice@example.com")
    assert not exists(blobs, mail.content.body_blob_id)


REWRITE_THEN_DELIVER = """\
processors:
  root:
    - mailet: SetMimeHeader
      params: {name: X-First, value: one}
    - match: RecipientIs=bob@example.com
      mailet: SetMimeHeader
      params: {name: X-Bob, value: two}
    - mailet: SetMimeHeader
      params: {name: X-Last, value: three}
    - mailet: LocalDelivery
  error:
    - mailet: Null
"""


def test_headers_rewritten_while_processing_leave_no_blob_behind(env, blobs):
    spooled(env, "alice@example.com", "bob@example.com")

    run_spool(env, container_of(env, REWRITE_THEN_DELIVER))   # Bob's copy is split off and rewritten apart

    [(alice, _)] = stored(env, "alice@example.com")
    [(bob, _)] = stored(env, "bob@example.com")
    assert b"X-First: one" in alice and b"X-Last: three" in alice and b"X-Bob" not in alice
    assert b"X-First: one" in bob and b"X-Bob: two" in bob and b"X-Last: three" in bob
    delete_all(env, "alice@example.com")
    delete_all(env, "bob@example.com")
    # Every header written on the way (X-First before the split, X-Last on Alice's path, X-Bob and
    # X-Last on Bob's copy) went with the mail.
    assert list(blobs.list_blobs(blobs.default_bucket)) == []


def test_a_header_rewritten_by_a_mail_given_back_is_deleted_too(env, blobs, monkeypatch, failing_after_delivery):
    mail = spooled(env, "alice@example.com")
    container = container_of(env, DELIVER_THEN_FAIL.replace(
        "  root:\n", "  root:\n    - mailet: SetMimeHeader\n      params: {name: X-Seen, value: seen}\n"))
    spooler = MailSpooler(container, env.spool, env.repositories.select("memory://var/mail/error/"), threads=0,
                          give_back_pause=0)
    monkeypatch.setattr(env.spool, "enqueue", refuse_enqueue)

    assert spooler.process(env.spool.dequeue(timeout=0)) is Outcome.RETRY

    [(message, _)] = stored(env, "alice@example.com")
    assert b"X-Seen: seen" in message
    manager = env.mailbox.manager
    [meta] = manager.get_messages(MailboxPath.inbox("alice@example.com"))
    alice = manager.messages.get_content(meta.message_id)
    # Left: the entry's header (given back as dequeued) and Alice's message (her header, the body she
    # took from the entry); the header rewritten on the way is gone.
    assert alice.body_blob_id == mail.content.body_blob_id
    assert {str(b) for b in blobs.list_blobs(blobs.default_bucket)} == {
        mail.content.header_blob_id, alice.header_blob_id, alice.body_blob_id}
