"""The protocol on a real server (memory mailbox layer): states, untagged updates, IDLE, STARTTLS,
maintenance mode, UIDPLUS and CONDSTORE response codes."""

from __future__ import annotations

import imaplib
import re
import threading
import time

import pytest

from mailserver.model.address import Username
from mailserver.model.flags import Flags, SystemFlag
from mailserver.model.mailbox import MailboxPath
from mailserver.model.quota import QuotaLimits, QuotaRoot
from tests.support.events import eventually
from tests.unit.imap.conftest import PASSWORD, USER, make_world
from tests.unit.imap.imap_sessions import NOTE, REPORT
from tests.unit.imap.raw_client import RawImap
from tests.unit.smtp.smtp_helpers import insecure_client_context, self_signed

INBOX = MailboxPath.inbox(Username.of(USER))


def login(raw: RawImap) -> None:
    assert raw.command(b"L", b"LOGIN " + USER.encode() + b" " + PASSWORD.encode())[-1].startswith(b"L OK")


def test_greeting_capabilities_and_states(world):
    raw = RawImap(world.port)
    assert raw.greeting.startswith(b"* OK [CAPABILITY IMAP4rev1 ") and b"AUTH=PLAIN" in raw.greeting
    assert raw.command(b"a", b"SELECT INBOX")[-1].startswith(b"a BAD SELECT is not valid in the not authenticated")
    assert raw.command(b"b", b"FROB")[-1] == b"b BAD Unknown command FROB\r\n"
    assert raw.command(b"c", b"LOGIN alice@imap.test wrong")[-1] == b"c NO [AUTHENTICATIONFAILED] " \
                                                                    b"Authentication failed\r\n"
    login(raw)
    assert raw.command(b"d", b"FETCH 1 FLAGS")[-1].startswith(b"d BAD FETCH is not valid in the authenticated")
    assert raw.command(b"e", b"NAMESPACE") == [b'* NAMESPACE (("" ".")) NIL NIL\r\n', b"e OK NAMESPACE completed\r\n"]
    assert raw.command(b"f", b"LOGOUT")[0] == b"* BYE Logging out\r\n"
    assert raw.closed()


def test_authenticate_plain_with_and_without_initial_response(world):
    import base64

    token = base64.b64encode(f"\0{USER}\0{PASSWORD}".encode())
    raw = RawImap(world.port)
    assert raw.command(b"a", b"AUTHENTICATE PLAIN " + token)[-1].startswith(b"a OK [CAPABILITY")
    raw = RawImap(world.port)
    raw.send(b"b AUTHENTICATE PLAIN\r\n")
    assert raw.line() == b"+ \r\n"
    raw.send(token + b"\r\n")
    assert raw.until_tagged(b"b")[-1].startswith(b"b OK")
    raw = RawImap(world.port)
    raw.send(b"c AUTHENTICATE PLAIN\r\n")
    assert raw.line() == b"+ \r\n"
    raw.send(b"*\r\n")
    assert raw.until_tagged(b"c")[-1] == b"c BAD Authentication cancelled\r\n"


def test_three_failed_logins_end_the_session(world):
    raw = RawImap(world.port)
    for tag in (b"a", b"b"):
        assert raw.command(tag, b"LOGIN alice@imap.test nope")[-1].startswith(tag + b" NO")
    lines = raw.command(b"c", b"LOGIN alice@imap.test nope")
    assert lines[0] == b"* BYE Too many authentication failures\r\n"
    assert raw.closed()


def test_login_needs_starttls_by_default_and_works_after_it(tmp_path):
    cert, key = self_signed(tmp_path)
    w = make_world(auth_require_tls=True, tls_cert=cert, tls_key=key)
    try:
        raw = RawImap(w.port)
        assert b"STARTTLS" in raw.greeting and b"LOGINDISABLED" in raw.greeting and b"AUTH=PLAIN" not in raw.greeting
        assert raw.command(b"a", b"LOGIN " + USER.encode() + b" x")[-1] == \
            b"a NO [PRIVACYREQUIRED] LOGIN is disabled before STARTTLS\r\n"
        assert raw.command(b"b", b"STARTTLS") == [b"b OK Begin TLS negotiation now\r\n"]
        raw.starttls(insecure_client_context())
        capability = raw.command(b"c", b"CAPABILITY")[0]
        assert b"AUTH=PLAIN" in capability and b"STARTTLS" not in capability
        login(raw)
        client = imaplib.IMAP4("127.0.0.1", w.port, timeout=10)
        client.starttls(insecure_client_context())
        client.login(USER, PASSWORD)
        client.logout()
    finally:
        w.thread.stop()


def test_commands_pipelined_before_the_tls_handshake_are_refused(tmp_path):
    cert, key = self_signed(tmp_path)
    w = make_world(auth_require_tls=True, tls_cert=cert, tls_key=key)
    try:
        raw = RawImap(w.port)
        raw.send(b"a STARTTLS\r\nb LOGIN alice@imap.test s3cret\r\n")
        assert raw.line() == b"a OK Begin TLS negotiation now\r\n"
        assert raw.line() == b"* BYE Commands sent before the TLS handshake\r\n"
    finally:
        w.thread.stop()


def test_maintenance_mode_refuses_new_sessions_with_bye(world):
    world.maintenance[0] = True
    raw = RawImap(world.port)
    assert raw.greeting == b"* BYE [UNAVAILABLE] Service temporarily unavailable for maintenance\r\n"
    assert raw.closed()
    world.maintenance[0] = False
    assert RawImap(world.port).greeting.startswith(b"* OK")


def test_connection_cap():
    w = make_world(max_connections=2)
    try:
        first, second = RawImap(w.port), RawImap(w.port)
        third = RawImap(w.port)
        assert third.greeting == b"* BYE [UNAVAILABLE] Too many connections, try again later\r\n"
        first.command(b"a", b"LOGOUT")
        # The freed slot serves a new session once the server has seen the close.
        eventually(lambda: RawImap(w.port).greeting.startswith(b"* OK"), timeout=5)
        assert second.command(b"n", b"NOOP")[-1] == b"n OK NOOP completed\r\n"
    finally:
        w.thread.stop()


def test_changes_made_elsewhere_are_reported_and_expunges_wait_outside_fetch(world):
    manager = world.ctx.manager
    manager.create_mailbox(INBOX) if not manager.mailbox_exists(INBOX) else None
    for _ in range(3):
        manager.append(INBOX, NOTE)
    raw = RawImap(world.port)
    login(raw)
    selected = raw.command(b"s", b"SELECT INBOX")
    assert b"* 3 EXISTS\r\n" in selected and b"* OK [UNSEEN 1] First unseen message\r\n" in selected
    manager.append(INBOX, REPORT, is_delivery=True)
    manager.set_flags(INBOX, Flags.of(SystemFlag.SEEN), _add(), [1])
    manager.set_flags(INBOX, Flags.of(SystemFlag.DELETED), _add(), [2])
    manager.expunge(INBOX)
    fetch = raw.command(b"f", b"FETCH 2 (UID)")
    assert b"* 2 EXPUNGE\r\n" not in fetch, "no EXPUNGE during FETCH (RFC 3501 7.4.1)"
    assert b"* 4 EXISTS\r\n" in fetch and b"* 1 RECENT\r\n" in fetch
    assert any(line.startswith(b"* 1 FETCH (FLAGS (\\Seen)") for line in fetch)
    assert b"* 2 FETCH (UID 2)\r\n" in fetch, "the expunged message keeps its number until told"
    noop = raw.command(b"n", b"NOOP")
    assert noop == [b"* 2 EXPUNGE\r\n", b"n OK NOOP completed\r\n"]
    assert raw.command(b"g", b"FETCH 3 (UID FLAGS)")[0] == b"* 3 FETCH (UID 4 FLAGS (\\Recent))\r\n"


def _add():
    from mailserver.model.flags import FlagsUpdateMode

    return FlagsUpdateMode.ADD


def test_idle_is_woken_by_another_session_at_once_and_by_a_delivery_through_the_poll(world):
    watcher = imaplib.IMAP4("127.0.0.1", world.port, timeout=10)
    watcher.login(USER, PASSWORD)
    watcher.select("INBOX")
    other = imaplib.IMAP4("127.0.0.1", world.port, timeout=10)
    other.login(USER, PASSWORD)
    raw_sock = watcher.sock
    watcher.send(b"i1 IDLE\r\n")
    assert watcher.readline() == b"+ idling\r\n"
    started = time.monotonic()
    other.append("INBOX", None, None, NOTE)
    assert watcher.readline() == b"* 1 EXISTS\r\n"
    assert watcher.readline() == b"* 1 RECENT\r\n"
    woken_locally = time.monotonic() - started
    world.ctx.manager.append(INBOX, REPORT, is_delivery=True)   # as LocalDelivery does: not through IMAP
    assert watcher.readline() == b"* 2 EXISTS\r\n"
    assert watcher.readline() == b"* 2 RECENT\r\n"
    raw_sock.sendall(b"DONE\r\n")
    assert watcher.readline() == b"i1 OK IDLE terminated\r\n"
    assert woken_locally < 5   # loose: the point is that it is not bound to the poll interval
    watcher.logout()
    other.logout()


def test_uidplus_codes_trycreate_and_overquota(world):
    client = world.client()
    assert client.append("Nowhere", None, None, NOTE)[1][0].startswith(b"[TRYCREATE]")
    client.create("Dest")
    client.select("INBOX")
    client.append("INBOX", None, None, NOTE)
    client.append("INBOX", None, None, NOTE)
    assert client.uid("COPY", "1:2", "Dest")[0] == "OK"
    status, data = client.response("COPYUID")   # the tagged OK's response code: [COPYUID validity 1:2 1:2]
    assert status == "COPYUID" and re.fullmatch(rb"\d+ 1:2 1:2", data[0])
    assert client.uid("COPY", "1", "Nope")[1][0].startswith(b"[TRYCREATE]")
    world.ctx.quota.set_user_limits(QuotaRoot.for_user(Username.of(USER)), QuotaLimits(count=4))
    status, data = client.append("INBOX", None, None, NOTE)
    assert status == "NO" and data[0].startswith(b"[OVERQUOTA]")
    status, data = client.uid("COPY", "1", "Dest")
    assert status == "NO" and data[0].startswith(b"[OVERQUOTA]")
    client.logout()


def test_condstore_highestmodseq_changedsince_and_unchangedsince(world):
    raw = RawImap(world.port)
    login(raw)
    raw.command(b"a", b"CREATE Box")
    box = MailboxPath.of(Username.of(USER), "Box")
    for _ in range(2):
        world.ctx.manager.append(box, NOTE)
    selected = raw.command(b"s", b"SELECT Box (CONDSTORE)")
    assert b"* OK [HIGHESTMODSEQ 2] Highest\r\n" in selected
    stored = raw.command(b"t", b"STORE 1 +FLAGS (\\Seen)")
    assert stored[0] == b"* 1 FETCH (FLAGS (\\Seen) MODSEQ (3))\r\n"
    assert raw.command(b"f", b"FETCH 1:* (FLAGS) (CHANGEDSINCE 2)")[0] == b"* 1 FETCH (FLAGS (\\Seen) MODSEQ (3))\r\n"
    refused = raw.command(b"u", b"STORE 1:2 (UNCHANGEDSINCE 2) +FLAGS (\\Flagged)")
    assert refused[-1] == b"u OK [MODIFIED 1] Conditional STORE failed for some messages\r\n"
    assert raw.command(b"q", b"SEARCH MODSEQ 4")[0] == b"* SEARCH 2 (MODSEQ 4)\r\n"
    status = raw.command(b"st", b"STATUS Box (HIGHESTMODSEQ MESSAGES)")[0]
    assert status == b"* STATUS Box (HIGHESTMODSEQ 4 MESSAGES 2)\r\n"


def test_examine_is_read_only_and_close_expunges_silently(world):
    client = world.client()
    client.append("INBOX", "(\\Deleted)", None, NOTE)
    assert client.select("INBOX", readonly=True)[0] == "OK"
    status, data = client.store("1", "+FLAGS", "(\\Seen)")
    assert status == "NO" and data[0].startswith(b"[READ-ONLY]")
    client.fetch("1", "(BODY[])")
    assert not world.ctx.manager.get_messages(INBOX)[0].flags.has(SystemFlag.SEEN), "EXAMINE never sets \\Seen"
    client.close()
    assert world.ctx.manager.counters(INBOX).count == 1, "CLOSE after EXAMINE expunges nothing"
    client.select("INBOX")
    client.close()
    assert world.ctx.manager.counters(INBOX).count == 0
    client.logout()


def test_rename_inbox_moves_its_messages_and_keeps_it(world):
    client = world.client()
    client.append("INBOX", None, None, NOTE)
    assert client.rename("INBOX", "Old")[0] == "OK"
    user = Username.of(USER)
    assert world.ctx.manager.counters(INBOX).count == 0
    assert world.ctx.manager.counters(MailboxPath.of(user, "Old")).count == 1
    assert client.delete("INBOX")[1][0].startswith(b"[CANNOT]")
    client.logout()


def test_mailbox_names_travel_in_modified_utf7(world):
    client = world.client()
    assert client.create("Entw&APw-rfe")[0] == "OK"
    assert world.ctx.manager.mailbox_exists(MailboxPath.of(Username.of(USER), "Entw\u00fcrfe"))
    assert b'(\\HasNoChildren) "." Entw&APw-rfe' in client.list()[1]
    assert client.select("Entw&APw-rfe")[0] == "OK"
    client.logout()


def test_a_server_error_is_a_no_and_the_session_goes_on(world, monkeypatch):
    client = world.client()
    client.select("INBOX")

    def broken(*args, **kwargs):
        raise RuntimeError("backend exploded")

    monkeypatch.setattr(world.ctx.manager, "list_mailboxes", broken)
    status, data = client.list()
    assert status == "NO" and data[0].startswith(b"[SERVERBUG]")
    assert client.noop()[0] == "OK"
    client.logout()


def test_idle_ends_on_autologout():
    w = make_world(idle_timeout=0.5)
    try:
        raw = RawImap(w.port)
        login(raw)
        raw.send(b"i IDLE\r\n")
        assert raw.line() == b"+ idling\r\n"
        assert raw.line() == b"* BYE Autologout; idle for too long\r\n"
        assert raw.closed()
    finally:
        w.thread.stop()


@pytest.mark.parametrize("maintenance_writes", [True])
def test_writes_refused_in_maintenance_mode_answer_unavailable(maintenance_writes):
    from mailserver.mailbox.errors import MaintenanceMode

    state = {"on": False}

    def guard() -> None:
        if state["on"]:
            raise MaintenanceMode("the cluster is in maintenance mode; writes are refused")

    w = make_world(write_guard=guard)
    try:
        client = w.client()
        state["on"] = True
        status, data = client.create("New")
        assert status == "NO" and data[0].startswith(b"[UNAVAILABLE]")
        assert client.list()[0] == "OK", "reads go on"
        client.logout()
    finally:
        w.thread.stop()


def test_metrics_count_commands_and_errors(world):
    raw = RawImap(world.port)
    raw.command(b"a", b"FROB")
    login(raw)
    raw.command(b"b", b"SELECT Nope")
    exposition = world.metrics.exposition().decode()
    assert re.search(r"^IMAP_LOGIN_count 1\.0$", exposition, re.M)
    assert re.search(r"^imapCommandsBad_total 1\.0$", exposition, re.M)
    assert re.search(r"^imapCommandsNo_total 1\.0$", exposition, re.M)
    assert re.search(r"^imap_connections 1\.0$", exposition, re.M)


def test_server_thread_stops_with_sessions_open():
    w = make_world()
    raw = RawImap(w.port)
    login(raw)
    stopper = threading.Thread(target=w.thread.stop)
    stopper.start()
    stopper.join(15)
    assert not stopper.is_alive()
    assert raw.closed()


def test_fetching_a_message_expunged_elsewhere_answers_expungeissued_and_the_stream_stays_intact(world):
    manager = world.ctx.manager
    client = world.client()
    client.append("INBOX", None, None, NOTE)
    client.append("INBOX", None, None, REPORT)
    client.select("INBOX")
    manager.set_flags(INBOX, Flags.of(SystemFlag.DELETED), _add(), [1])
    manager.expunge(INBOX)
    status, data = client.fetch("1:2", "(BODY.PEEK[])")
    assert status == "NO" and data[0].startswith(b"[EXPUNGEISSUED]")
    assert client.untagged_responses.get("FETCH", [None])[0][1] == REPORT
    assert client.noop()[0] == "OK" and client.untagged_responses.get("EXPUNGE") == [b"1"]
    client.logout()


def test_imap_settings_from_the_environment(tmp_path):
    from mailserver.runtime.settings import ROLES, ServeSettings

    assert "imap" in ROLES
    default = ServeSettings.from_env({})
    assert (default.imap.host, default.imap.port, default.imap.auth_require_tls) == ("127.0.0.1", 1143, True)
    assert default.imap.max_append_size == default.smtp.max_message_size
    cert, key = self_signed(tmp_path)
    settings = ServeSettings.from_env({
        "MAILSERVER_IMAP_PORT": "1993", "MAILSERVER_IMAP_AUTH_REQUIRE_TLS": "false",
        "MAILSERVER_SMTP_TLS_CERT": str(cert), "MAILSERVER_SMTP_TLS_KEY": str(key),
        "MAILSERVER_IMAP_APPEND_LIMIT": "10m", "MAILSERVER_IMAP_MAX_CONNECTIONS": "5",
        "MAILSERVER_IMAP_IDLE_TIMEOUT_SECONDS": "2400", "MAILSERVER_IMAP_IDLE_POLL_MS": "500"})
    imap = settings.imap
    assert (imap.port, imap.auth_require_tls, imap.max_append_size) == (1993, False, 10 * 2**20)
    assert imap.max_connections == 5
    assert (imap.idle_timeout, imap.idle_poll_interval) == (2400.0, 0.5)
    assert str(imap.tls_cert) == str(cert), "the SMTP certificate serves IMAP unless it has its own"


def test_the_imap_role_serves_the_backends_mailbox_manager_and_refuses_during_maintenance():
    from types import SimpleNamespace

    from mailserver.blob.memory import MemoryBlobStore
    from mailserver.domains.memory import MemoryDomainList
    from mailserver.imap.config import ImapConfig
    from mailserver.mailbox.wiring import memory_context
    from mailserver.observability.metrics import Metrics
    from mailserver.runtime.roles import ImapRole
    from mailserver.runtime.settings import ServeSettings
    from mailserver.users.memory import MemoryUsersRepository

    users = MemoryUsersRepository(MemoryDomainList(["imap.test"]))
    users.add_user(USER, PASSWORD)
    maintenance = {"on": False}
    backends = SimpleNamespace(mailbox=memory_context(MemoryBlobStore()), users=users, session=None,
                               guard=SimpleNamespace(smtp_allowed=lambda: not maintenance["on"]), metrics=Metrics(),
                               auth_throttle=None)
    role = ImapRole(ServeSettings(imap=ImapConfig(port=0, auth_require_tls=False)), backends)  # type: ignore[arg-type]
    role.start()
    try:
        assert role.alive()
        client = imaplib.IMAP4("127.0.0.1", role.port, timeout=10)
        client.login(USER, PASSWORD)
        assert client.select("INBOX")[0] == "OK", "INBOX is provisioned at login, as James does"
        client.logout()
        maintenance["on"] = True
        assert RawImap(role.port).greeting.startswith(b"* BYE [UNAVAILABLE]")
    finally:
        role.stop()
    assert not role.alive()
