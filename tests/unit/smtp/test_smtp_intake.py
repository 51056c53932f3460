"""SMTP intake against an in-process aiosmtpd server on a loopback port, memory adapters."""

from __future__ import annotations

import logging
import re
import smtplib
import threading
import time

import pytest

from mailserver.blob.memory import MemoryBlobStore
from mailserver.model.mail import (
    HELO,
    ROOT,
    SMTP_AUTH_USER,
    SMTP_IS_AUTH_NETWORK,
    SMTP_SESSION_ID,
)
from mailserver.observability.logging import MdcFilter
from mailserver.queue.content import MimeMessageStore
from mailserver.queue.memory import MemoryMailQueue
from mailserver.smtp import BackPressure, SmtpConfig, SpoolSizeCondition
from mailserver.smtp.handler import SSL_CIPHER, SSL_PROTOCOL
from tests.unit.smtp.smtp_helpers import (
    LOCAL,
    PASSWORD,
    USER,
    FailingQueue,
    RawClient,
    drain,
    insecure_client_context,
    make_server,
    self_signed,
)

MESSAGE = b"From: bob@remote.test\r\nTo: alice@local.test\r\nSubject: hello\r\n\r\nHello Alice.\r\n"
NAME = re.compile(r"queued as (Mail\d+-[A-Za-z0-9]{20})")


@pytest.fixture
def servers():
    started = []

    def start(queue=None, **config):
        thread, q = make_server(queue, **config)
        started.append(thread)
        return thread, q

    yield start
    for thread in started:
        thread.stop()


def send(port: int, rcpts: list[str], *, sender: str = "bob@remote.test", message: bytes = MESSAGE,
         tls: bool = False, login: tuple[str, str] | None = None) -> tuple[int, bytes]:
    with smtplib.SMTP("127.0.0.1", port, local_hostname="client.remote.test", timeout=10) as client:
        client.ehlo()
        if tls:
            client.starttls(context=insecure_client_context())
            client.ehlo()
        if login:
            client.login(*login)
        code, text = client.mail(sender)
        if code != 250:
            return code, text
        for rcpt in rcpts:
            code, text = client.rcpt(rcpt)
            if code != 250:
                return code, text
        return client.data(message)


def test_accepts_mail_for_a_local_domain(servers):
    thread, queue = servers()
    code, text = send(thread.port, [f"alice@{LOCAL}"])
    assert code == 250
    name = NAME.search(text.decode()).group(1)
    [mail] = drain(queue)
    assert mail.name == name
    assert mail.state == ROOT
    assert str(mail.sender) == "bob@remote.test"
    assert [str(r) for r in mail.recipients] == [f"alice@{LOCAL}"]
    assert mail.remote_addr == "127.0.0.1"
    assert mail.attributes[HELO] == "client.remote.test"
    assert mail.attributes[SMTP_SESSION_ID]
    assert SMTP_AUTH_USER not in mail.attributes
    assert SMTP_IS_AUTH_NETWORK not in mail.attributes
    content = mail.content.data
    assert content.startswith(b"Received: from 127.0.0.1 (EHLO client.remote.test) ([127.0.0.1])\r\n"
                              b"          by mx.local.test (JAMES SMTP Server) with ESMTP ID ")
    assert f"          for <alice@{LOCAL}>;\r\n".encode() in content
    assert content.endswith(MESSAGE)
    assert mail.content.size == len(content)


def test_null_sender_is_accepted(servers):
    thread, queue = servers()
    with smtplib.SMTP("127.0.0.1", thread.port, timeout=10) as client:
        client.ehlo("client")
        assert client.mail("<>")[0] == 250
        assert client.rcpt(f"alice@{LOCAL}")[0] == 250
        assert client.data(MESSAGE)[0] == 250
    [mail] = drain(queue)
    assert mail.sender is None


def test_relay_denied_without_auth_or_authorized_network(servers):
    thread, queue = servers()
    code, text = send(thread.port, ["carol@elsewhere.test"])
    assert (code, text) == (550, b"5.7.1 Requested action not taken: relaying denied")
    assert queue.size() == 0


def test_relay_allowed_from_an_authorized_network(servers):
    thread, queue = servers(authorized_networks=["10.0.0.0/8", "127.0.0.0/8"])
    assert send(thread.port, ["carol@elsewhere.test"])[0] == 250
    [mail] = drain(queue)
    assert mail.attributes[SMTP_IS_AUTH_NETWORK] is True


def test_auth_is_not_offered_before_starttls_by_default(servers, tmp_path):
    cert, key = self_signed(tmp_path)
    thread, _ = servers(tls_cert=cert, tls_key=key)
    with smtplib.SMTP("127.0.0.1", thread.port, timeout=10) as client:
        client.ehlo("client")
        assert client.has_extn("starttls")
        assert not client.has_extn("auth")
        code, text = client.docmd("AUTH", "PLAIN AGFsaWNlQGxvY2FsLnRlc3QAeA==")
        assert code == 538 and text.startswith(b"5.7.11")


def test_relay_allowed_after_starttls_and_auth(servers, tmp_path):
    cert, key = self_signed(tmp_path)
    thread, queue = servers(tls_cert=cert, tls_key=key)
    code, text = send(thread.port, ["carol@elsewhere.test"], tls=True, login=(USER, PASSWORD))
    assert code == 250, text
    [mail] = drain(queue)
    assert mail.attributes[SMTP_AUTH_USER] == USER
    assert mail.attributes[SSL_PROTOCOL].startswith("TLSv1")
    assert mail.attributes[SSL_CIPHER]
    assert b" with ESMTPSA ID " in mail.content.data


def test_auth_login_without_tls_when_allowed(servers):
    thread, queue = servers(auth_require_tls=False)
    with smtplib.SMTP("127.0.0.1", thread.port, timeout=10) as client:
        client.ehlo("client")
        assert client.esmtp_features["auth"].split() == ["LOGIN", "PLAIN"]
        client.user, client.password = USER, PASSWORD
        assert client.auth("LOGIN", client.auth_login)[0] == 235
        client.mail("alice@local.test")
        assert client.rcpt("carol@elsewhere.test")[0] == 250
        assert client.data(MESSAGE)[0] == 250
    [mail] = drain(queue)
    assert mail.attributes[SMTP_AUTH_USER] == USER
    assert b" with ESMTPA ID " in mail.content.data


def test_wrong_password_is_refused_and_relay_stays_denied(servers):
    thread, queue = servers(auth_require_tls=False)
    with smtplib.SMTP("127.0.0.1", thread.port, timeout=10) as client:
        client.ehlo("client")
        with pytest.raises(smtplib.SMTPAuthenticationError) as refused:
            client.login(USER, "wrong")
        assert refused.value.smtp_code == 535
        client.mail("alice@local.test")
        assert client.rcpt("carol@elsewhere.test")[0] == 550
    assert queue.size() == 0


def test_size_is_advertised_and_enforced(servers):
    thread, queue = servers(max_message_size=1000)
    with smtplib.SMTP("127.0.0.1", thread.port, timeout=10) as client:
        client.ehlo("client")
        assert client.esmtp_features["size"] == "1000"
        code, text = client.mail("bob@remote.test", ["SIZE=5000"])
        assert code == 552 and text.startswith(b"5.3.4")
        client.rset()
        client.mail("bob@remote.test")
        client.rcpt(f"alice@{LOCAL}")
        code, text = client.data(MESSAGE + b"x" * 60 + (b"y" * 70 + b"\r\n") * 20)
        assert code == 552 and text.startswith(b"5.3.4")
    assert queue.size() == 0


def test_451_when_the_queue_cannot_make_the_mail_durable(servers):
    queue = FailingQueue()
    thread, _ = servers(queue)
    code, text = send(thread.port, [f"alice@{LOCAL}"])
    assert code == 451 and text.startswith(b"4.3.0")
    assert queue.size() == 0
    queue.fail = False
    assert send(thread.port, [f"alice@{LOCAL}"])[0] == 250
    assert queue.size() == 1


def test_content_goes_through_the_mime_message_store(servers):
    store = MimeMessageStore(MemoryBlobStore())
    thread, queue = servers(store=store)
    big = MESSAGE + (b"z" * 998 + b"\r\n") * 3000
    assert send(thread.port, [f"alice@{LOCAL}"], message=big)[0] == 250
    [mail] = drain(queue)
    assert mail.content.stored
    raw = store.read(mail.content)
    assert raw.startswith(b"Received: ") and raw.endswith(big)
    assert mail.content.size == len(raw)


def test_the_intake_hands_its_blobs_over_to_the_spool_and_deletes_them_when_refused(servers):
    """Without deduplication the spool would otherwise copy the blobs and leave the intake's behind."""
    class RecordingQueue(FailingQueue):
        def enqueue(self, mail, delay=None, *, hand_over=False) -> None:
            self.handed_over = hand_over
            super().enqueue(mail, delay, hand_over=hand_over)

    blobs = MemoryBlobStore(deduplication=False)
    queue = RecordingQueue()
    thread, _ = servers(queue, store=MimeMessageStore(blobs))
    assert send(thread.port, [f"alice@{LOCAL}"])[0] == 451
    assert list(blobs.list_blobs(blobs.default_bucket)) == []   # refused: the intake deleted what it wrote
    queue.fail = False
    assert send(thread.port, [f"alice@{LOCAL}"])[0] == 250
    assert queue.handed_over
    [mail] = drain(queue)
    assert sorted(map(str, blobs.list_blobs(blobs.default_bucket))) == sorted(
        [mail.content.header_blob_id, mail.content.body_blob_id])


def test_content_the_store_cannot_split_is_refused_for_good(servers):
    thread, queue = servers(store=MimeMessageStore(MemoryBlobStore()))
    header_only = b"X-Filler: " + b"f" * 80 + b"\r\n"
    code, text = send(thread.port, [f"alice@{LOCAL}"], message=header_only * 13000)   # 1.2 MiB, no body
    assert code == 554 and text.startswith(b"5.6.0 Message content not accepted: no end of header")
    assert queue.size() == 0


def test_maintenance_refuses_connections_with_421_and_recovers(servers):
    maintenance = {"on": True}
    thread, queue = servers(maintenance=lambda: maintenance["on"])
    raw = RawClient(thread.port)
    assert raw.reply().startswith("421 4.3.2")
    raw.close()
    maintenance["on"] = False
    assert send(thread.port, [f"alice@{LOCAL}"])[0] == 250
    # switched on while a session is open: refused at EHLO
    raw = RawClient(thread.port)
    assert raw.reply().startswith("220 ")
    maintenance["on"] = True
    assert raw.command("EHLO client").startswith("421 4.3.2")
    raw.close()
    assert queue.size() == 1


def test_unhealthy_backend_refuses_with_421(servers):
    healthy = {"ok": False}
    thread, _ = servers(healthy=lambda: healthy["ok"])
    raw = RawClient(thread.port)
    assert raw.reply().startswith("421 4.3.2")
    raw.close()
    healthy["ok"] = True
    assert send(thread.port, [f"alice@{LOCAL}"])[0] == 250


def test_checks_known_without_blocking_are_answered_on_the_event_loop(servers):
    asked: list[tuple[str, str]] = []

    def healthy() -> bool:
        asked.append(("healthy", threading.current_thread().name))
        return True

    def in_maintenance() -> bool:
        asked.append(("maintenance", threading.current_thread().name))
        return False
    thread, _ = servers(healthy=healthy, healthy_in_memory=True, maintenance=in_maintenance,
                        maintenance_known=lambda: False)
    assert send(thread.port, [f"alice@{LOCAL}"])[0] == 250

    assert asked and {what for what, _ in asked} == {"healthy"}   # the cached maintenance verdict sufficed
    assert not any(name.startswith("smtp-io") for _, name in asked)


def test_a_check_that_must_read_goes_to_the_io_pool_and_its_refusal_holds(servers):
    asked: list[str] = []

    def in_maintenance() -> bool:
        asked.append(threading.current_thread().name)
        return True
    thread, _ = servers(maintenance=in_maintenance, maintenance_known=lambda: None)   # stale: must read
    raw = RawClient(thread.port)
    assert raw.reply().startswith("421 4.3.2")
    raw.close()
    assert asked and all(name.startswith("smtp-io") for name in asked)


def test_spool_over_its_limit_answers_452_at_mail_from_and_recovers(servers):
    clock = {"now": 0.0}
    queue = MemoryMailQueue("spool")
    bp = BackPressure([SpoolSizeCondition(queue, 2, cache_seconds=1.0, clock=lambda: clock["now"])])
    thread, _ = servers(queue, back_pressure=bp)
    for _ in range(2):
        assert send(thread.port, [f"alice@{LOCAL}"])[0] == 250
        clock["now"] += 2  # past the cache
    with smtplib.SMTP("127.0.0.1", thread.port, timeout=10) as client:
        client.ehlo("client")
        code, text = client.mail("bob@remote.test")
        assert code == 452 and text.startswith(b"4.3.1")
        drain(queue)
        assert client.mail("bob@remote.test")[0] == 452  # cached size, still over
        clock["now"] += 2
        assert client.mail("bob@remote.test")[0] == 250
        assert client.rcpt(f"alice@{LOCAL}")[0] == 250
        assert client.data(MESSAGE)[0] == 250


def test_spool_size_limit_from_config(servers):
    thread, _ = servers(spool_size_limit=0)
    code, _text = send(thread.port, [f"alice@{LOCAL}"])
    assert code == 452


def test_too_many_connections(servers):
    thread, _ = servers(max_connections=1)
    first = RawClient(thread.port)
    assert first.reply().startswith("220 ")
    second = RawClient(thread.port)
    assert second.reply() == "421 4.7.0 Too many connections, try again later"
    second.close()
    first.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        third = RawClient(thread.port)
        greeting = third.reply()
        third.close()
        if greeting.startswith("220 "):
            break
        time.sleep(0.05)
    assert greeting.startswith("220 ")


def test_mail_id_in_the_reply_and_in_the_log_records(servers, caplog):
    caplog.handler.addFilter(MdcFilter())
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.INFO, logger="mail.log")   # aiosmtpd's trace, quiet in a configured server
    thread, queue = servers()
    code, text = send(thread.port, [f"alice@{LOCAL}", f"bob@{LOCAL}"])
    assert code == 250
    name = NAME.search(text.decode()).group(1)
    records = [r for r in caplog.records if r.name.startswith("mailserver.smtp")]
    transaction = [r for r in records if r.getMessage().startswith(("MAIL FROM", "RCPT TO", "mail "))]
    assert len(transaction) == 4
    assert all(r.mdc.get("mailId") == name for r in transaction)
    session = [r for r in caplog.records if r.name == "mailserver.smtp.handler" or " >> " in r.getMessage()]
    assert session and all(r.mdc.get("protocol") == "SMTP" and r.mdc.get("sessionId") for r in session)
    # aiosmtpd's own lines of the transaction carry it too
    assert any(r.name == "mail.log" and r.mdc.get("mailId") == name for r in caplog.records)
    assert drain(queue)[0].name == name


def test_config_defaults_are_secure():
    config = SmtpConfig()
    assert (config.host, config.port, config.max_message_size) == ("127.0.0.1", 2525, 25 * 1024 * 1024)
    assert config.auth_require_tls and config.authorized_networks == () and config.strict_crlf
    with pytest.raises(ValueError):
        SmtpConfig(authorized_networks=["not-a-network"])


def test_a_failing_backend_during_a_command_is_a_temporary_error(servers):
    thread, queue = servers()
    domains = thread.server.handler.domains

    def broken(domain):
        raise ConnectionError("cassandra unreachable")

    domains.contains = broken
    code, text = send(thread.port, [f"alice@{LOCAL}"])
    assert code == 451 and text.startswith(b"4.3.0")
    assert queue.size() == 0


def test_auth_is_not_advertised_without_a_users_repository(servers):
    thread, _ = servers(users=False, auth_require_tls=False)
    with smtplib.SMTP("127.0.0.1", thread.port, timeout=10) as client:
        client.ehlo("client")
        assert not client.has_extn("auth")


def test_helo_session_gets_an_smtp_received_header(servers):
    thread, queue = servers()
    with smtplib.SMTP("127.0.0.1", thread.port, timeout=10) as client:
        assert client.helo("old.client")[0] == 250
        client.mail("bob@remote.test")
        client.rcpt(f"alice@{LOCAL}")
        client.rcpt(f"bob@{LOCAL}")
        assert client.data(MESSAGE)[0] == 250
    [mail] = drain(queue)
    header = mail.content.data.split(b"\r\n")[:3]
    assert header[0] == b"Received: from 127.0.0.1 (HELO old.client) ([127.0.0.1])"
    assert re.fullmatch(rb"          by mx\.local\.test \(JAMES SMTP Server\) with SMTP ID [0-9a-f]{16};", header[1])
    assert mail.attributes[HELO] == "old.client"
