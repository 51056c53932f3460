"""One real-client session per extension the server offers, through imapclient, or imaplib where
imapclient has no call for it (extended LIST, ESEARCH, COMPRESS). One server for the module; each
session works in mailboxes of its own. MOVE, UNSELECT and CHILDREN have theirs in test_imap_sessions."""

from __future__ import annotations

import logging
import re
import threading

import pytest
from imapclient import IMAPClient

from mailserver.model.address import Username
from mailserver.model.quota import QuotaLimits, QuotaRoot
from tests.unit.imap.conftest import PASSWORD, USER, make_world
from tests.unit.imap.deflate_client import DeflateIMAP4
from tests.unit.imap.imap_sessions import NOTE, REPORT, ok


@pytest.fixture(scope="module")
def server():
    w = make_world(compress=True)
    try:
        yield w
    finally:
        w.thread.stop()


@pytest.fixture
def client(server):
    with IMAPClient("127.0.0.1", port=server.port, ssl=False, timeout=10) as c:
        c.login(USER, PASSWORD)
        yield c   # leaving the block logs out


def test_literal_plus_imapclient_sends_8bit_search_strings_as_non_synchronizing_literals(client, caplog):
    client.create_folder("LiteralPlus")
    client.append("LiteralPlus", "Subject: =?utf-8?q?r=C3=A9sum=C3=A9?=\r\n\r\nvoilà\r\n".encode())
    client.append("LiteralPlus", NOTE)
    client.select_folder("LiteralPlus")
    with caplog.at_level(logging.DEBUG, logger="imapclient"):
        assert client.search(["SUBJECT", "résumé"], charset="UTF-8") == [1]
    assert any("+}" in record.getMessage() for record in caplog.records), "sent as {n+}, no continuation"
    client.close_folder()
    client.delete_folder("LiteralPlus")


def test_special_use_list_extended_and_list_status_through_imaplib(server):
    imap = server.client()
    for name in ("Sent", "Trash", "Projects", "Projects.Q4"):
        ok(imap.create(name))
    ok(imap.subscribe("Projects"))
    ok(imap.append("Projects", None, None, NOTE))
    ok(imap.xatom("LIST", "(SPECIAL-USE)", '""', "*"))
    assert sorted(imap.response("LIST")[1]) == [b'(\\HasNoChildren \\Sent) "." Sent',
                                                b'(\\HasNoChildren \\Trash) "." Trash']
    ok(imap.xatom("LIST", "(SUBSCRIBED)", '""', "Pro*", "RETURN", "(CHILDREN STATUS (MESSAGES UNSEEN))"))
    assert imap.response("LIST")[1] == [b'(\\HasChildren \\Subscribed) "." Projects']
    assert imap.response("STATUS")[1] == [b"Projects (MESSAGES 1 UNSEEN 1)"]
    for name in ("Projects.Q4", "Projects", "Trash", "Sent"):
        ok(imap.delete(name))
    imap.logout()


def test_esearch_through_imaplib(server):
    imap = server.client()
    ok(imap.create("Esearch"))
    for _ in range(3):
        ok(imap.append("Esearch", None, None, NOTE))
    ok(imap.select("Esearch"))
    ok(imap.uid("SEARCH", "RETURN", "(MIN MAX COUNT ALL)", "ALL"))
    [answer] = imap.response("ESEARCH")[1]
    assert re.fullmatch(rb'\(TAG "\w+"\) UID MIN 1 MAX 3 COUNT 3 ALL 1:3', answer), answer
    ok(imap.close())
    ok(imap.delete("Esearch"))
    imap.logout()


def test_quota_imapclient_reads_the_users_root_and_its_usage(server, client):
    root = QuotaRoot.for_user(Username.of(USER))
    server.ctx.manager.quota.set_user_limits(root, QuotaLimits(count=1000, size=None))
    client.create_folder("Quota")
    client.append("Quota", REPORT)
    roots, quotas = client.get_quota_root("Quota")
    assert roots.mailbox == "Quota" and roots.quota_roots == [root.value]
    assert [(q.resource, q.usage, q.limit) for q in quotas] == [("MESSAGE", 1, 1000)]
    assert [(q.quota_root, q.resource, q.limit) for q in client.get_quota("Quota")] == [(root.value, "MESSAGE", 1000)]
    client.delete_folder("Quota")
    server.ctx.manager.quota.set_user_limits(root, QuotaLimits(count=None, size=None))


def test_enable_and_condstore_imapclient_fetches_what_changed_since_a_modseq(client):
    assert client.enable("CONDSTORE", "X-NOT-OFFERED") == [b"CONDSTORE"]
    client.create_folder("Condstore")
    client.append("Condstore", NOTE)
    client.append("Condstore", REPORT)
    selected = client.select_folder("Condstore")
    before = selected[b"HIGHESTMODSEQ"]
    client.add_flags([2], [b"\\Seen"])
    changed = client.fetch([1, 2], ["FLAGS"], modifiers=[f"CHANGEDSINCE {before}"])
    assert list(changed) == [2] and changed[2][b"MODSEQ"][0] > before
    client.close_folder()
    client.delete_folder("Condstore")


def test_uidplus_imaplib_gets_appenduid_copyuid_and_uid_expunges(server):
    imap = server.client()   # imapclient hides COPYUID (imaplib files it as an untagged response)
    ok(imap.create("Uidplus"))
    ok(imap.create("Uidplus.Copies"))
    assert re.fullmatch(rb"\[APPENDUID \d+ 1\] APPEND completed", ok(imap.append("Uidplus", None, None, NOTE))[0])
    ok(imap.append("Uidplus", None, None, REPORT))
    ok(imap.select("Uidplus"))
    ok(imap.uid("COPY", "1:2", "Uidplus.Copies"))
    [copied] = imap.response("COPYUID")[1]
    assert re.fullmatch(rb"\d+ 1:2 1:2", copied), copied
    ok(imap.uid("STORE", "1:2", "+FLAGS.SILENT", "(\\Deleted)"))
    ok(imap.xatom("UID", "EXPUNGE", "2"))   # only 2 goes, though 1 is \Deleted too
    assert imap.response("EXPUNGE")[1] == [b"2"]
    assert ok(imap.uid("SEARCH", "ALL")) == [b"1"]
    ok(imap.close())
    for name in ("Uidplus.Copies", "Uidplus"):
        ok(imap.delete(name))
    imap.logout()


def test_id_and_namespace_imapclient(server, client):
    assert dict(client.id_({"name": "imapclient"}))[b"name"] == server.thread.server.config.software_name.encode()
    namespaces = client.namespace()
    assert namespaces.personal == (("", "."),) and namespaces.other is None and namespaces.shared is None


def test_idle_imapclient_is_told_of_a_delivery(server, client):
    client.create_folder("Idle")
    client.select_folder("Idle")
    client.idle()
    delivered = threading.Thread(target=lambda: _append(server, "Idle"))
    delivered.start()
    responses = client.idle_check(timeout=10)
    delivered.join()
    client.idle_done()
    assert (1, b"EXISTS") in responses
    client.close_folder()
    client.delete_folder("Idle")


def _append(server, name: str) -> None:
    imap = server.client()
    ok(imap.append(name, None, None, NOTE))
    imap.logout()


def test_compress_imaplib_session_with_a_deflate_socket(server):
    imap = DeflateIMAP4("127.0.0.1", server.port, timeout=10)
    assert "COMPRESS=DEFLATE" in imap.capabilities
    imap.login(USER, PASSWORD)
    ok(imap.compress())
    ok(imap.create("Compressed"))
    ok(imap.append("Compressed", None, None, REPORT))
    ok(imap.select("Compressed"))
    assert ok(imap.fetch("1", "(BODY.PEEK[])"))[0][1] == REPORT
    ok(imap.close())
    ok(imap.delete("Compressed"))
    assert imap.logout()[0] == "BYE"
