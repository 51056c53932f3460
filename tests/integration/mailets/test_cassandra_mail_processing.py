"""The shipped chain on the Cassandra mailbox, Cassandra mail repositories and S3 blobs.

Domain, users and rewrite table stay in memory (they are not what is tested here); the spool
is the memory queue. Each test uses its own domain, so the shared keyspace needs no cleanup.
"""

from __future__ import annotations

import uuid

import pytest

from mailserver.events.in_process import InProcessEventBus
from mailserver.mailbox.wiring import cassandra_context
from mailserver.mailets.headers import AddDeliveredToHeader
from mailserver.mailets.reprocess import reprocess
from mailserver.model.address import Username
from mailserver.model.mail import ERROR, Mail
from mailserver.model.quota import QuotaLimits, QuotaRoot
from mailserver.queue.content import MimeMessageStore
from mailserver.queue.memory import MemoryMailQueueFactory
from mailserver.repository.api import MailRepository
from mailserver.repository.cassandra import CassandraMailRepositoryStore
from tests.unit.mailets.support import Env, container_of, make_mail, memory_env, run_spool

pytestmark = pytest.mark.integration

ERROR_REPO = "cassandra://var/mail/error/"
ADDRESS_ERROR = "cassandra://var/mail/address-error/"


@pytest.fixture
def env(cassandra, s3_blobs) -> Env:
    domain = f"m{uuid.uuid4().hex[:10]}.test"
    env = memory_env(blobs=s3_blobs, mailbox=cassandra_context(cassandra, s3_blobs, InProcessEventBus()),
                     domain=domain)
    env.repositories = CassandraMailRepositoryStore(cassandra, MimeMessageStore(s3_blobs))
    env.context.repositories = env.repositories
    # Queue entries own their blobs as the distributed queue's do: the repositories delete theirs.
    env.queues = env.context.queues = MemoryMailQueueFactory(contents=env.contents)
    return env


def submit(env: Env, mail: Mail) -> Mail:
    """As SMTP intake does: content in the blob store, then the spool; then one spooler pass."""
    mail.content = env.contents.save(mail.content)
    env.spool.enqueue(mail, hand_over=True)
    run_spool(env, container_of(env))
    return mail


def user(env: Env, name: str) -> str:
    return f"{name}@{env.domains.list()[0]}"


def test_local_delivery_into_the_cassandra_inbox(env: Env):
    alice = user(env, "alice")
    submit(env, make_mail(alice, data=b"From: s@remote.org\r\nSubject: hi\r\n\r\n" + b"body line\r\n" * 1000))
    (stored,) = env.inbox(alice)
    assert stored.startswith(b"Return-Path: <sender@remote.org>\r\n")
    assert f"Delivered-To: {alice}\r\n\r\nbody line".encode() in stored
    assert stored.count(b"body line") == 1000


def test_alias_through_the_rrt(env: Env):
    alice = user(env, "alice")
    env.rrt.add_alias(user(env, "sales"), alice)
    submit(env, make_mail(user(env, "sales")))
    (stored,) = env.inbox(alice)
    assert f"Delivered-To: {alice}".encode() in stored


def test_unknown_recipient_is_kept_in_the_cassandra_repository(env: Env):
    mail = submit(env, make_mail(user(env, "nobody")))
    kept = env.repositories.select(ADDRESS_ERROR).retrieve(mail.name)
    assert kept is not None and kept.state == "local-address-error"
    assert "no such user here" in kept.error_message
    assert b"Subject: Hello" in env.contents.read(kept.content)
    env.repositories.select(ADDRESS_ERROR).remove(mail.name)


def test_over_quota_then_reprocessing_delivers(env: Env):
    bob = user(env, "bob")
    root = QuotaRoot.for_user(Username.of(bob))
    env.mailbox.quota.set_user_limits(root, QuotaLimits(count=0))
    mail = submit(env, make_mail(bob, user(env, "alice")))
    assert len(env.inbox(user(env, "alice"))) == 1 and env.inbox(bob) == []
    repository = env.repositories.select(ERROR_REPO)
    kept = repository.retrieve(f"error-{mail.name}")
    assert kept is not None and kept.state == ERROR and "quota exceeded" in kept.error_message

    env.mailbox.quota.set_user_limits(root, QuotaLimits())
    assert reprocess(repository, kept.name, "local-delivery", env.spool) is not None
    run_spool(env, container_of(env))
    assert len(env.inbox(bob)) == 1
    assert repository.retrieve(kept.name) is None


def kept_after_a_failing_mailet(env: Env, recipient: str) -> tuple[MailRepository, Mail]:
    """A mail to ``recipient`` that AddDeliveredToHeader failed on (a division by zero), as the error repository
    keeps it; the mailet works again afterwards."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(AddDeliveredToHeader, "service", lambda self, mail: 1 / 0)
        mail = submit(env, make_mail(recipient))
    repository = env.repositories.select(ERROR_REPO)
    kept = repository.retrieve(mail.name)
    assert kept is not None
    return repository, kept


def test_failing_mailet_error_repository_then_reprocessing(env: Env):
    alice = user(env, "alice")
    repository, kept = kept_after_a_failing_mailet(env, alice)
    assert kept.error_message.startswith("Exception calling AddDeliveredToHeader: division by zero")
    assert "org.apache.james.MailetError" not in kept.attributes
    reprocess(repository, kept.name, "transport", env.spool)
    run_spool(env, container_of(env))
    assert len(env.inbox(alice)) == 1


def test_reprocessing_in_this_thread_reads_the_content_before_the_repository_deletes_it(env: Env):
    """The container target: the entry is removed first, its blobs only once the chain is done with them
    (without deduplication they are really deleted: nothing may be left behind either)."""
    alice = user(env, "alice")
    repository, kept = kept_after_a_failing_mailet(env, alice)
    reprocess(repository, kept.name, "transport", container_of(env))
    assert len(env.inbox(alice)) == 1 and repository.retrieve(kept.name) is None
    blobs = env.contents.blobs
    assert [blobs.exists(blobs.default_bucket, b) for b in (kept.content.header_blob_id, kept.content.body_blob_id)] \
        == [blobs.deduplicating] * 2
