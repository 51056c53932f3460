"""Client sessions shared by the unit (memory) and integration (Cassandra + S3) tests: what a
Thunderbird-like client does, through imaplib and through imapclient."""

from __future__ import annotations

import imaplib
import re
from collections.abc import Callable

from imapclient import IMAPClient

from mailserver.mailbox.manager import MailboxManager
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from mailserver.model.quota import QuotaRoot, QuotaUsage

REPORT = (b"From: Bob <bob@imap.test>\r\nTo: Alice <alice@imap.test>\r\nSubject: =?utf-8?q?Quarterly_r=C3=A9port?=\r\n"
          b"Date: Mon, 23 Nov 2026 10:00:00 +0100\r\nMessage-ID: <q4@imap.test>\r\nMIME-Version: 1.0\r\n"
          b"Content-Type: multipart/mixed; boundary=b1\r\n\r\n--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
          b"Numbers attached.\r\n--b1\r\nContent-Type: application/octet-stream; name=q4.bin\r\n"
          b"Content-Disposition: attachment; filename=q4.bin\r\nContent-Transfer-Encoding: base64\r\n\r\n"
          b"AAECAwQFBgcICQ==\r\n--b1--\r\n")
NOTE = b"From: carol@imap.test\r\nTo: alice@imap.test\r\nSubject: lunch\r\n\r\nNoon?\r\n"


def ok(response: tuple) -> list:
    status, data = response
    assert status == "OK", response
    return data


def imaplib_session(client: imaplib.IMAP4, manager: MailboxManager, user: str,
                    quota: Callable[[], QuotaUsage]) -> None:
    """Login is done; list, create, append, select, fetch byte-identical, flag, move, expunge."""
    owner = Username.of(user)
    inbox, archive = MailboxPath.inbox(owner), MailboxPath.of(owner, "Archive")
    listed = ok(client.list())
    assert any(line.endswith(b'"." INBOX') for line in listed)
    ok(client.create("Archive"))
    ok(client.subscribe("Archive"))
    assert sorted(ok(client.lsub())) == [b'() "." Archive', b'() "." INBOX'], "INBOX is subscribed when provisioned"
    appended = ok(client.append("INBOX", "(\\Flagged)", imaplib.Time2Internaldate(1_700_000_000), REPORT))
    assert re.match(rb"\[APPENDUID \d+ 1\]", appended[0])
    ok(client.append("INBOX", None, None, NOTE))
    assert quota() == QuotaUsage(2, len(REPORT) + len(NOTE))
    assert ok(client.select("INBOX")) == [b"2"]
    assert client.untagged_responses.get("UIDNEXT") == [b"3"]
    data = ok(client.uid("FETCH", "1:*", "(UID FLAGS RFC822.SIZE BODY.PEEK[])"))
    bodies = [part[1] for part in data if isinstance(part, tuple)]
    assert bodies == [REPORT, NOTE], "FETCH returns the octets that were appended"
    assert b"\\Flagged" in data[0][0] and b"\\Seen" not in data[0][0]
    structure = ok(client.fetch("1", "(BODYSTRUCTURE BODY.PEEK[2] ENVELOPE)"))
    assert b'"APPLICATION" "OCTET-STREAM"' in structure[0][0] and structure[0][1] == b"AAECAwQFBgcICQ=="
    assert b'"=?utf-8?q?Quarterly_r=C3=A9port?="' in structure[1]
    assert ok(client.search(None, "UNSEEN")) == [b"1 2"]
    assert ok(client.search("UTF-8", "SUBJECT", "quarterly")) == [b"1"], "encoded words are decoded"
    assert ok(client.uid("SEARCH", "TEXT", "noon")) == [b"2"]
    fetched = ok(client.fetch("2", "(BODY[TEXT])"))   # not PEEK: sets \Seen
    assert fetched[0][1] == b"Noon?\r\n" and b"\\Seen" in fetched[0][0] + fetched[-1]
    assert manager.counters(inbox).unseen == 1
    ok(client.store("1", "+FLAGS", "(\\Answered $Work)"))
    # Appended before this session selected INBOX: \\Recent for this session (RFC 3501 2.3.2, as James).
    assert ok(client.fetch("1", "(FLAGS)")) == [b"1 (FLAGS (\\Answered \\Flagged \\Recent $Work))"]
    moved = client.uid("MOVE", "2", "Archive")
    assert moved[0] == "OK", moved
    assert client.untagged_responses.pop("EXPUNGE", None) == [b"2"]
    assert manager.counters(inbox).count == 1 and manager.counters(archive).count == 1
    assert manager.read_message(manager.get_messages(archive)[0].message_id) == NOTE
    ok(client.store("1", "+FLAGS.SILENT", "(\\Deleted)"))
    assert ok(client.expunge()) == [b"1"]
    assert manager.counters(inbox).count == 0
    assert quota() == QuotaUsage(1, len(NOTE)), "quota follows expunge; a move does not count twice"
    status = ok(client.status("Archive", "(MESSAGES UNSEEN UIDNEXT)"))
    assert status == [b"Archive (MESSAGES 1 UNSEEN 0 UIDNEXT 2)"]
    ok(client.close())
    ok(client.delete("Archive"))
    assert quota() == QuotaUsage(0, 0)
    client.logout()


def imapclient_session(host: str, port: int, user: str, password: str, manager: MailboxManager,
                       quota: Callable[[], QuotaUsage]) -> None:
    owner = Username.of(user)
    with IMAPClient(host, port=port, ssl=False, timeout=10) as client:
        client.login(user, password)
        assert b"IDLE" in client.capabilities() and b"MOVE" in client.capabilities()
        client.create_folder("Work")
        client.create_folder("Work.Projects")
        folders = {name: flags for flags, _, name in client.list_folders()}
        assert set(folders) >= {"INBOX", "Work", "Work.Projects"}
        assert b"\\HasChildren" in folders["Work"]
        client.append("Work", REPORT, flags=[b"\\Seen"])
        client.append("Work", NOTE)
        info = client.select_folder("Work")
        assert info[b"EXISTS"] == 2 and info[b"UIDNEXT"] == 3
        messages = client.fetch([1, 2], ["BODY.PEEK[]", "FLAGS", "RFC822.SIZE"])
        assert [messages[uid][b"BODY[]"] for uid in sorted(messages)] == [REPORT, NOTE]
        assert client.search(["UNSEEN"]) == [2]
        client.add_flags([2], [b"\\Flagged"])
        assert client.get_flags([2])[2] == (b"\\Flagged", b"\\Recent")   # appended before the SELECT
        client.move([1], "Work.Projects")
        assert client.search(["ALL"]) == [2]
        assert manager.counters(MailboxPath.of(owner, "Work.Projects")).count == 1
        client.delete_messages([2])
        client.expunge()
        assert manager.counters(MailboxPath.of(owner, "Work")).count == 0
        assert quota() == QuotaUsage(1, len(REPORT))
        client.unselect_folder()
        client.rename_folder("Work", "Old")
        assert {name for _, _, name in client.list_folders("", "Old*")} == {"Old", "Old.Projects"}
        client.logout()


def quota_of(quota_store, user: str) -> Callable[[], QuotaUsage]:
    return lambda: quota_store.current(QuotaRoot.for_user(Username.of(user)))
