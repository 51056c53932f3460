"""End to end through the shipped chain (include/mailetcontainer.yaml) and the spool, on memory adapters."""

from __future__ import annotations

import pytest

from mailserver.mailets.container import MailetContainer
from mailserver.mailets.headers import AddDeliveredToHeader
from mailserver.mailets.reprocess import reprocess, reprocess_all
from mailserver.model.address import Username
from mailserver.model.mail import ERROR, REPROCESSING, SMTP_AUTH_USER, SMTP_IS_AUTH_NETWORK, Mail
from mailserver.model.quota import QuotaLimits, QuotaRoot
from tests.unit.mailets.support import Env, container_of, make_mail, run_spool

ADDRESS_ERROR = "cassandra://var/mail/address-error/"
RELAY_DENIED = "cassandra://var/mail/relay-denied/"
RRT_ERROR = "cassandra://var/mail/rrt-error/"
ERROR_REPO = "cassandra://var/mail/error/"


@pytest.fixture
def chain(env: Env) -> MailetContainer:
    return container_of(env)


def submit(env: Env, chain: MailetContainer, mail: Mail) -> None:
    env.spool.enqueue(mail)
    run_spool(env, chain)


def stored_count(env: Env) -> int:
    return sum(env.repositories.select(url).size() for url in env.repositories.urls())


def outgoing(env: Env) -> list[Mail]:
    return env.drain("outgoing")


def test_local_recipient_is_delivered_to_inbox(env: Env, chain: MailetContainer):
    submit(env, chain, make_mail("alice@example.com", data=b"From: s@remote.org\r\nBcc: hidden@x.org\r\n"
                                                         b"Subject: hi\r\n\r\nbody\r\n"))
    (stored,) = env.inbox("alice@example.com")
    assert b"Delivered-To: alice@example.com" in stored and b"Return-Path: <sender@remote.org>" in stored
    assert b"Bcc" not in stored  # transport removes it
    assert outgoing(env) == [] and stored_count(env) == 0


def test_alias_is_resolved_through_the_rrt(env: Env, chain: MailetContainer):
    env.rrt.add_alias("sales@example.com", "alice@example.com")
    env.rrt.add_forward("fwd@example.com", "someone@remote.org")
    submit(env, chain, make_mail("sales@example.com", "fwd@example.com"))
    (stored,) = env.inbox("alice@example.com")
    assert b"Delivered-To: alice@example.com" in stored
    (relayed,) = outgoing(env)  # the forward leaves through the spool, relay allowed (SentByMailet)
    assert [str(r) for r in relayed.recipients] == ["someone@remote.org"]
    assert relayed.name.endswith("-to-remote.org")


def test_postmaster_without_an_account_reaches_the_postmaster(env: Env, chain: MailetContainer):
    env.users.add_user("postmaster@example.com", "secret")
    submit(env, chain, make_mail("PostMaster@example.com"))
    assert len(env.inbox("postmaster@example.com")) == 1


def test_unknown_local_recipient_goes_to_local_address_error(env: Env, chain: MailetContainer):
    mail = make_mail("nobody@example.com", "alice@example.com")
    submit(env, chain, mail)
    assert len(env.inbox("alice@example.com")) == 1  # the split copy went on
    (kept,) = env.repository(ADDRESS_ERROR)
    assert [str(r) for r in kept.recipients] == ["nobody@example.com"]
    assert "550 - Requested action not taken: no such user here" in kept.error_message
    assert kept.state == "local-address-error"
    assert outgoing(env) == [] and env.spool.size() == 0   # no backscatter to an unauthenticated sender
    assert env.context.counters["mailetContainerLocalAddressError"] == 1


# Issue 16: only a sender known to be real gets a bounce for what SMTP could have refused.
KNOWN_SENDERS = [
    pytest.param("alice@example.com", {SMTP_AUTH_USER: "alice@example.com"}, id="authenticated"),
    pytest.param("someone@remote.org", {SMTP_IS_AUTH_NETWORK: True}, id="authorized-network"),
    pytest.param("bob@example.com", {}, id="local-account"),
]


def bounces_to(env: Env, sender: str) -> list[bytes]:
    """Bounces sent to ``sender``: relayed (outgoing queue) or delivered to its local inbox."""
    relayed = [env.contents.read(m.content) for m in outgoing(env) if [str(r) for r in m.recipients] == [sender]]
    return relayed + (env.inbox(sender) if sender.endswith("@example.com") else [])


@pytest.mark.parametrize(("sender", "attributes"), KNOWN_SENDERS)
def test_unknown_local_recipient_bounces_to_a_known_sender(env: Env, chain: MailetContainer, sender, attributes):
    submit(env, chain, make_mail("nobody@example.com", sender=sender, attributes=attributes))
    assert len(env.repository(ADDRESS_ERROR)) == 1
    (bounce,) = bounces_to(env, sender)
    assert b"nobody@example.com" in bounce


def test_relay_is_denied_to_an_unauthenticated_remote_sender(env: Env, chain: MailetContainer):
    submit(env, chain, make_mail("victim@elsewhere.org", sender="spammer@remote.org"))
    (kept,) = env.repository(RELAY_DENIED)
    assert [str(r) for r in kept.recipients] == ["victim@elsewhere.org"]
    assert outgoing(env) == [] and env.spool.size() == 0   # no backscatter to a possibly forged sender


def test_relay_denied_bounces_to_a_local_sender(env: Env, chain: MailetContainer):
    submit(env, chain, make_mail("victim@elsewhere.org", sender="bob@example.com"))
    assert len(env.repository(RELAY_DENIED)) == 1
    (bounce,) = env.inbox("bob@example.com")
    assert b"victim@elsewhere.org" in bounce and outgoing(env) == []


@pytest.mark.parametrize("attribute", [SMTP_AUTH_USER, SMTP_IS_AUTH_NETWORK])
def test_relay_is_allowed_when_authenticated(env: Env, chain: MailetContainer, attribute: str):
    value = "alice@example.com" if attribute == SMTP_AUTH_USER else True
    mail = make_mail("friend@elsewhere.org", sender="alice@example.com", attributes={attribute: value})
    submit(env, chain, mail)
    (queued,) = outgoing(env)
    assert queued.name == f"{mail.name}-to-elsewhere.org"
    assert stored_count(env) == 0


def test_rrt_loop_goes_to_rrt_error_and_bounces(env: Env, chain: MailetContainer):
    env.rrt.add_alias("loop1@example.com", "loop2@example.com")
    env.rrt.add_alias("loop2@example.com", "loop1@example.com")
    submit(env, chain, make_mail("loop1@example.com", attributes={SMTP_AUTH_USER: "sender@remote.org"}))
    (kept,) = env.repository(RRT_ERROR)
    assert [str(r) for r in kept.recipients] == ["loop1@example.com"]
    assert "Too many mappings" in kept.error_message
    (bounce,) = outgoing(env)
    assert [str(r) for r in bounce.recipients] == ["sender@remote.org"]


def test_rrt_loop_does_not_bounce_to_an_unauthenticated_remote_sender(env: Env, chain: MailetContainer):
    env.rrt.add_alias("loop1@example.com", "loop2@example.com")
    env.rrt.add_alias("loop2@example.com", "loop1@example.com")
    submit(env, chain, make_mail("loop1@example.com"))
    assert len(env.repository(RRT_ERROR)) == 1
    assert outgoing(env) == [] and env.spool.size() == 0


def test_no_bounce_when_the_sender_is_in_the_loop(env: Env, chain: MailetContainer):
    env.rrt.add_alias("loop1@example.com", "loop2@example.com")
    env.rrt.add_alias("loop2@example.com", "loop1@example.com")
    submit(env, chain, make_mail("loop1@example.com", sender="loop2@example.com"))
    assert len(env.repository(RRT_ERROR)) == 1 and outgoing(env) == [] and env.spool.size() == 0


def test_over_quota_goes_to_error_and_bounces(env: Env, chain: MailetContainer):
    env.mailbox.quota.set_user_limits(QuotaRoot.for_user(Username.of("bob@example.com")), QuotaLimits(count=0))
    mail = make_mail("alice@example.com", "bob@example.com")
    submit(env, chain, mail)
    assert len(env.inbox("alice@example.com")) == 1
    (kept,) = env.repository(ERROR_REPO)
    assert kept.name == f"error-{mail.name}" and [str(r) for r in kept.recipients] == ["bob@example.com"]
    assert "quota exceeded" in kept.error_message
    (bounce,) = outgoing(env)
    assert [str(r) for r in bounce.recipients] == ["sender@remote.org"]


def test_failing_mailet_goes_to_error_then_reprocessing_delivers(env: Env, chain: MailetContainer, monkeypatch):
    def broken(self, mail):
        raise OSError("disk on fire")

    monkeypatch.setattr(AddDeliveredToHeader, "service", broken)
    mail = make_mail("alice@example.com")
    submit(env, chain, mail)
    assert env.inbox("alice@example.com") == []
    (kept,) = env.repository(ERROR_REPO)
    assert kept.state == ERROR and kept.name == mail.name
    assert kept.error_message.startswith("Exception calling AddDeliveredToHeader: disk on fire")
    assert "org.apache.james.MailetError" not in kept.attributes  # not serialisable: dropped
    assert env.context.counters["mailetContainerErrors"] == 1
    (bounce,) = outgoing(env)
    assert [str(r) for r in bounce.recipients] == ["sender@remote.org"]

    monkeypatch.undo()  # the fault is fixed
    repository = env.repositories.select(ERROR_REPO)
    reprocessed = reprocess(repository, mail.name, "transport", env.spool)
    assert reprocessed is not None and reprocessed.attributes[REPROCESSING] is True
    assert repository.size() == 0
    run_spool(env, chain)
    (stored,) = env.inbox("alice@example.com")
    assert b"Delivered-To: alice@example.com" in stored
    assert reprocess(repository, "missing", None, env.spool) is None


def test_a_reprocessed_mail_failing_again_is_not_bounced_twice(env: Env, chain: MailetContainer, monkeypatch):
    monkeypatch.setattr(AddDeliveredToHeader, "service", lambda self, mail: 1 / 0)
    submit(env, chain, make_mail("alice@example.com"))
    assert len(outgoing(env)) == 1
    repository = env.repositories.select(ERROR_REPO)
    assert reprocess_all(repository, "local-delivery", chain) == 1  # straight into the container
    assert outgoing(env) == [] and env.spool.size() == 0  # not-reprocessed: no second bounce
    (kept,) = env.repository(ERROR_REPO)
    assert "ZeroDivisionError" in kept.error_message and kept.attributes[REPROCESSING] is True


def test_relay_limit_stores_looping_mails(env: Env, chain: MailetContainer):
    data = b"".join(b"Received: from hop%d\r\n" % i for i in range(30)) + b"Subject: loop\r\n\r\nx\r\n"
    submit(env, chain, make_mail("alice@example.com", data=data))
    assert env.inbox("alice@example.com") == []
    assert len(env.repository("cassandra://var/mail/relay-limit-exceeded/")) == 1
