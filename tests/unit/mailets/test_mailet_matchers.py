"""Each standard matcher: which recipients it returns."""

from __future__ import annotations

import pytest

from mailserver.mailets import matchers as m
from mailserver.mailets.api import ConfigError
from mailserver.model.address import MailAddress, Username
from mailserver.model.mail import (
    IS_DELIVERY_PERMANENT_ERROR,
    SENT_BY_MAILET,
    SMTP_AUTH_USER,
    SMTP_IS_AUTH_NETWORK,
)
from mailserver.model.quota import QuotaLimits, QuotaRoot
from tests.unit.mailets.support import Env, make_mail


def names(addresses: list[MailAddress]) -> list[str]:
    return [str(a) for a in addresses]


def test_all(env: Env):
    mail = make_mail("a@x.org", "b@y.org")
    assert names(m.All(None, env.context).match(mail)) == ["a@x.org", "b@y.org"]


def test_recipient_is_local_host_is_local(env: Env):
    mail = make_mail("alice@example.com", "ghost@example.com", "x@remote.org")
    assert names(m.RecipientIsLocal(None, env.context).match(mail)) == ["alice@example.com"]
    assert names(m.HostIsLocal(None, env.context).match(mail)) == ["alice@example.com", "ghost@example.com"]


def test_sender_is_local_and_null(env: Env):
    assert m.SenderIsLocal(None, env.context).match(make_mail("x@remote.org", sender="bob@example.com"))
    assert not m.SenderIsLocal(None, env.context).match(make_mail("x@remote.org", sender="nobody@example.com"))
    assert not m.SenderIsLocal(None, env.context).match(make_mail("x@remote.org", sender=None))
    assert m.SenderIsNull(None, env.context).match(make_mail("x@remote.org", sender=None))
    assert not m.SenderIsNull(None, env.context).match(make_mail("x@remote.org"))


def test_recipient_is_and_sender_is(env: Env):
    mail = make_mail("A@x.org", "b@x.org", "c@x.org", sender="Boss@Corp.com")
    assert names(m.RecipientIs("a@x.org, c@x.org", env.context).match(mail)) == ["A@x.org", "c@x.org"]
    assert m.SenderIs("boss@corp.com", env.context).match(mail) == mail.recipients
    assert m.SenderIs("other@corp.com", env.context).match(mail) == []
    with pytest.raises(ConfigError):
        m.SenderIs(None, env.context)
    with pytest.raises(ConfigError):
        m.RecipientIs("not-an-address", env.context)


def test_attribute_matchers(env: Env):
    plain = make_mail("a@x.org")
    authed = make_mail("a@x.org", attributes={SMTP_AUTH_USER: "alice@example.com", SMTP_IS_AUTH_NETWORK: True,
                                              SENT_BY_MAILET: True, "k": "v"})
    for cls in (m.SMTPAuthSuccessful, m.SMTPIsAuthNetwork, m.SentByMailet):
        assert cls(None, env.context).match(authed) == authed.recipients
        assert cls(None, env.context).match(plain) == []
    assert m.HasMailAttribute("k", env.context).match(authed)
    assert not m.HasMailAttribute("k", env.context).match(plain)
    assert m.HasMailAttributeWithValue("k, v", env.context).match(authed)
    assert not m.HasMailAttributeWithValue("k, w", env.context).match(authed)
    with pytest.raises(ConfigError):
        m.HasMailAttributeWithValue("k", env.context)


def test_remote_addr_in_network(env: Env):
    mail = make_mail("a@x.org")
    mail.remote_addr = "192.168.3.4"
    assert m.RemoteAddrInNetwork("127.0.0.1, 192.168.0.0/16", env.context).match(mail)
    assert m.RemoteAddrInNetwork("192.168.*", env.context).match(mail)
    assert m.RemoteAddrInNetwork("192.168.3.0/255.255.255.0", env.context).match(mail)
    assert not m.RemoteAddrInNetwork("10.0.0.0/8 ::1", env.context).match(mail)
    assert m.RemoteAddrNotInNetwork("10.0.0.0/8", env.context).match(mail)
    mail.remote_addr = "::1"
    assert m.RemoteAddrInNetwork("::1/128", env.context).match(mail)
    with pytest.raises(ConfigError):
        m.RemoteAddrInNetwork("192.*.3", env.context)


def test_relay_limit_counts_received_headers(env: Env):
    data = b"Received: from a\r\nReceived: from b\r\n\tby c\r\nSubject: x\r\n\r\nReceived: not a header\r\n"
    mail = make_mail("a@x.org", data=data)
    assert m.RelayLimit("2", env.context).match(mail)
    assert not m.RelayLimit("3", env.context).match(mail)
    with pytest.raises(ConfigError):
        m.RelayLimit("0", env.context)


def test_has_header(env: Env):
    mail = make_mail("a@x.org", data=b"X-Spam: yes\r\nSubject: =?utf-8?q?caf=C3=A9?=\r\n\r\nbody\r\n")
    assert m.HasHeader("X-Spam", env.context).match(mail)
    assert m.HasHeader("x-spam=yes", env.context).match(mail)
    assert not m.HasHeader("X-Spam=no", env.context).match(mail)
    assert m.HasHeader("Subject=café+X-Spam", env.context).match(mail)
    assert not m.HasHeader("X-Other", env.context).match(mail)


def test_size_greater_than(env: Env):
    mail = make_mail("a@x.org", data=b"S: x\r\n\r\n" + b"a" * 2000)
    assert m.SizeGreaterThan("1k", env.context).match(mail)
    assert not m.SizeGreaterThan("2k", env.context).match(mail)
    assert not m.SizeGreaterThan("1m", env.context).match(mail)
    assert m.parse_size("t", "1m") == 1024 * 1024
    assert m.SizeGreaterThan("100", env.context).match(mail)


def test_remote_delivery_error_matchers(env: Env):
    permanent = make_mail("a@x.org", attributes={IS_DELIVERY_PERMANENT_ERROR: True})
    temporary = make_mail("a@x.org", attributes={IS_DELIVERY_PERMANENT_ERROR: False})
    assert m.IsRemoteDeliveryPermanentError(None, env.context).match(permanent)
    assert not m.IsRemoteDeliveryPermanentError(None, env.context).match(temporary)
    assert m.IsRemoteDeliveryTemporaryError(None, env.context).match(temporary)


def test_is_sender_in_rrt_loop(env: Env):
    env.rrt.add_alias("loop1@example.com", "loop2@example.com")
    env.rrt.add_alias("loop2@example.com", "loop1@example.com")
    matcher = m.IsSenderInRRTLoop(None, env.context)
    assert matcher.match(make_mail("a@x.org", sender="loop1@example.com"))
    assert not matcher.match(make_mail("a@x.org", sender="alice@example.com"))
    assert not matcher.match(make_mail("a@x.org", sender=None))


def test_composites(env: Env):
    mail = make_mail("a@x.org", "b@x.org", "c@x.org")
    a = m.RecipientIs("a@x.org", env.context)
    ab = m.RecipientIs("a@x.org, b@x.org", env.context)
    assert names(m.Or([a, ab], env.context).match(mail)) == ["a@x.org", "b@x.org"]
    assert names(m.And([a, ab], env.context).match(mail)) == ["a@x.org"]
    assert names(m.Not([ab], env.context).match(mail)) == ["c@x.org"]
    assert names(m.Xor([a, ab], env.context).match(mail)) == ["b@x.org"]


def test_domain_matchers(env: Env):
    mail = make_mail("a@one.org", "b@Two.org", sender="s@Corp.com")
    assert names(m.HostIs("two.org", env.context).match(mail)) == ["b@two.org"]
    assert names(m.RecipientDomainIs("one.org, two.org", env.context).match(mail)) == ["a@one.org", "b@two.org"]
    assert m.SenderHostIs("corp.com", env.context).match(mail) == mail.recipients
    assert m.SenderDomainIs("other.com", env.context).match(mail) == []
    with pytest.raises(ConfigError):
        m.HostIs("bad..domain", env.context)


def test_regex_matchers(env: Env):
    mail = make_mail("news-1@x.org", "alice@x.org", sender="bounce-42@lists.org")
    assert names(m.RecipientIsRegex(r"^news-\d+@", env.context).match(mail)) == ["news-1@x.org"]
    assert m.SenderIsRegex(r"^bounce-", env.context).match(mail) == mail.recipients
    with pytest.raises(ConfigError, match="bad regular expression"):
        m.RecipientIsRegex("(", env.context)


def test_subject_and_auth_user_matchers(env: Env):
    mail = make_mail("a@x.org", attributes={SMTP_AUTH_USER: "Alice@example.com"})
    assert m.SubjectIs("Hello", env.context).match(mail)
    assert not m.SubjectIs("Hell", env.context).match(mail)
    assert m.SubjectStartsWith("Hell", env.context).match(mail)
    assert m.SMTPAuthUserIs("bob@example.com, alice@example.com", env.context).match(mail)
    assert not m.SMTPAuthUserIs("bob@example.com", env.context).match(mail)


def test_is_over_quota(env: Env):
    env.mailbox.quota.set_user_limits(QuotaRoot.for_user(Username.of("bob@example.com")), QuotaLimits(size=10))
    mail = make_mail("alice@example.com", "bob@example.com", "x@remote.org")
    assert names(m.IsOverQuota(None, env.context).match(mail)) == ["bob@example.com"]
