"""Protocol bugs that James's MPT scripts found, each checked with imaplib against the memory server."""

from __future__ import annotations

import base64
import imaplib

import pytest

from mailserver.imap import mime
from mailserver.imap.bodystructure import body_structure
from mailserver.imap.fetch import parse_request, parse_section
from mailserver.imap.listing import lsub_entries
from mailserver.imap.names import ListPattern
from mailserver.imap.parser import ParseError, tokenize
from mailserver.imap.sequence import SequenceSet
from tests.unit.imap.conftest import PASSWORD, USER
from tests.unit.imap.raw_client import RawImap


def test_fetch_one_to_star_on_an_empty_mailbox_answers_ok(world):
    client = world.client()
    assert client.select("INBOX") == ("OK", [b"0"])
    status, data = client.fetch("1:*", "(UID)")
    assert status == "OK" and data == [None]
    status, _ = client.uid("FETCH", "1:*", "(UID)")
    assert status == "OK"
    client.logout()


def test_a_set_without_star_beyond_an_empty_mailbox_is_still_refused():
    with pytest.raises(ParseError):
        SequenceSet.parse("1").sequence_numbers(0)
    assert SequenceSet.parse("1:*").sequence_numbers(0) == []


def test_delete_of_the_selected_mailbox_answers_ok_and_the_session_goes_on(world):
    client = world.client()
    assert client.create("doomed")[0] == "OK"
    assert client.append("doomed", None, None, b"Subject: x\r\n\r\nbody\r\n")[0] == "OK"
    assert client.select("doomed") == ("OK", [b"1"])
    assert client.delete("doomed") == ("OK", [b"DELETE completed"])
    assert client.noop()[0] == "OK"
    with pytest.raises(imaplib.IMAP4.error, match="authenticated state"):   # the server deselected it
        client.check()
    assert not any(b"doomed" in line for line in client.list()[1])
    assert client.select("INBOX")[0] == "OK"
    client.logout()


def test_delete_of_a_mailbox_with_children_leaves_a_noselect_name(world):
    client = world.client()
    for name in ("parent", "parent.child"):
        assert client.create(name)[0] == "OK"
    assert client.append("parent", None, None, b"Subject: x\r\n\r\nbody\r\n")[0] == "OK"
    assert client.delete("parent") == ("OK", [b"DELETE completed"])
    listed = client.list()[1]
    assert b'(\\Noselect \\HasChildren) "." parent' in listed
    assert b'(\\HasNoChildren) "." parent.child' in listed
    status, data = client.select("parent")
    assert status == "NO" and b"#private" not in data[0]
    assert client.select("parent.child")[0] == "OK"
    assert client.create("parent")[0] == "OK", "the name can be created again"
    client.logout()


def test_errors_name_mailboxes_as_the_client_does(world):
    client = world.client()
    status, data = client.create("#any.hello")
    assert status == "NO" and b"#private" not in data[0] and b"@" not in data[0]
    assert not any(b"hello" in line for line in client.list()[1])
    status, data = client.select("missing")
    assert status == "NO" and b"#private" not in data[0]
    client.logout()


def test_appended_messages_are_recent_for_the_first_session_to_select(world):
    client, other = world.client(), world.client()
    assert client.append("INBOX", None, None, b"Subject: x\r\n\r\nbody\r\n")[0] == "OK"
    assert client.select("INBOX")[0] == "OK"
    assert client.untagged_responses.get("RECENT") == [b"1"]
    assert b"\\Recent" in client.fetch("1", "(FLAGS)")[1][0]
    assert other.select("INBOX")[0] == "OK"
    assert other.untagged_responses.get("RECENT") == [b"0"], "the first SELECT took the \\Recent flags"
    other.logout()
    client.logout()


def test_a_message_appended_to_the_selected_mailbox_is_recent_for_this_session(world):
    client = world.client()
    assert client.select("INBOX")[0] == "OK"
    assert client.append("INBOX", None, None, b"Subject: x\r\n\r\nbody\r\n")[0] == "OK"
    assert client.untagged_responses.get("RECENT")[-1] == b"1"
    assert b"\\Recent" in client.fetch("1", "(FLAGS)")[1][0]
    other = world.client()
    assert other.select("INBOX")[0] == "OK"
    assert other.untagged_responses.get("RECENT") == [b"0"]
    other.logout()
    client.logout()


def test_store_right_after_another_session_appended_names_the_new_message(world):
    client, other = world.client(), world.client()
    assert client.select("INBOX") == ("OK", [b"0"])
    assert other.append("INBOX", None, None, b"Subject: x\r\n\r\nbody\r\n")[0] == "OK"
    status, _ = client.store("1", "+FLAGS.SILENT", "(\\Flagged)")   # no NOOP in between
    assert status == "OK"
    assert client.untagged_responses.get("EXISTS")[-1] == b"1", "the new message is announced before the reply"
    assert client.fetch("1", "(FLAGS)")[1][0].count(b"\\Flagged") == 1
    other.logout()
    client.logout()


def test_a_second_select_of_the_same_mailbox_keeps_its_recent_messages(world):
    client = world.client()
    assert client.append("INBOX", None, None, b"Subject: x\r\n\r\nbody\r\n")[0] == "OK"
    assert client.select("INBOX")[0] == "OK"
    assert client.select("INBOX")[0] == "OK"
    assert client.untagged_responses.get("RECENT") == [b"1"], "still this session's \\Recent message"
    client.logout()


def test_expunge_of_a_recent_message_announces_the_new_recent_count(world):
    client = world.client()
    assert client.select("INBOX")[0] == "OK"
    for _ in range(2):
        assert client.append("INBOX", None, None, b"Subject: x\r\n\r\nbody\r\n")[0] == "OK"
    assert client.store("1", "+FLAGS.SILENT", "(\\Deleted)")[0] == "OK"
    client.untagged_responses.pop("RECENT", None)
    assert client.expunge() == ("OK", [b"1"])
    assert client.untagged_responses.get("RECENT") == [b"1"]
    client.logout()


def test_a_message_arriving_while_selected_is_recent_in_that_session_only(world):
    client, other = world.client(), world.client()
    assert client.select("INBOX")[0] == "OK"
    assert other.append("INBOX", None, None, b"Subject: x\r\n\r\nbody\r\n")[0] == "OK"
    assert client.noop()[0] == "OK"
    assert client.untagged_responses.get("RECENT")[-1] == b"1"
    third = world.client()
    assert third.select("INBOX")[0] == "OK"
    assert third.untagged_responses.get("RECENT") == [b"0"], "the selected session took \\Recent"
    assert b"\\Recent" in client.fetch("1", "(FLAGS)")[1][0]
    for c in (client, other, third):
        c.logout()


def test_a_failed_select_does_not_lose_the_recent_messages_of_the_mailbox_selected_before(world):
    client = world.client()
    assert client.create("box")[0] == "OK"
    assert client.append("box", None, None, b"Subject: x\r\n\r\nbody\r\n")[0] == "OK"
    assert client.select("box")[0] == "OK"
    assert client.rename("box", "renamed")[0] == "OK"
    assert client.select("box")[0] == "NO"
    assert client.select("renamed")[0] == "OK"
    assert client.untagged_responses.get("RECENT") == [b"1"]
    client.logout()


def test_fetch_of_an_empty_item_list_answers_an_empty_fetch(world):
    client = world.client()
    assert client.append("INBOX", None, None, b"Subject: x\r\n\r\nbody\r\n")[0] == "OK"
    assert client.select("INBOX")[0] == "OK"
    assert client.fetch("1", "()") == ("OK", [b"1 ()"])
    client.logout()


_PREAMBLE = (b"Subject: outer\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\nYet another preamble\r\n"
             b"--b\r\nContent-Type: text/plain\r\n\r\nRhubarb\r\n--b--\r\nan epilogue\r\n")


def test_search_body_reads_the_preamble_and_the_epilogue_of_a_multipart(world):
    client = world.client()
    assert client.append("INBOX", None, None, _PREAMBLE)[0] == "OK"
    assert client.select("INBOX")[0] == "OK"
    assert client.search(None, "BODY", "another") == ("OK", [b"1"])
    assert client.search(None, "BODY", "epilogue") == ("OK", [b"1"])
    assert client.search(None, "BODY", "outer") == ("OK", [b""]), "the header is not the body"
    client.logout()


def test_search_modseq_as_first_condstore_command_announces_highestmodseq(world):
    client = world.client()
    assert client.append("INBOX", None, None, b"Subject: x\r\n\r\nbody\r\n")[0] == "OK"
    assert client.select("INBOX")[0] == "OK"
    client.untagged_responses.pop("OK", None)
    assert client.search(None, "MODSEQ", "1")[0] == "OK"
    assert any(line.startswith(b"[HIGHESTMODSEQ ") for line in client.untagged_responses.get("OK", []))
    client.logout()


def test_header_field_names_are_echoed_as_the_client_asked():
    assert parse_section("HEADER.FIELDS (From to)").spec() == "HEADER.FIELDS (From to)"


def test_uid_fetch_answers_the_uid_after_the_items_asked():
    request = parse_request(tokenize([b"(INTERNALDATE FLAGS)"])).with_uid()
    assert [a.name for a in request.attributes] == ["INTERNALDATE", "FLAGS", "UID"]


def test_a_macro_inside_the_item_list_is_expanded():
    request = parse_request(tokenize([b"(FAST UID)"]))
    assert [a.name for a in request.attributes] == ["FLAGS", "INTERNALDATE", "RFC822.SIZE", "UID"]


def test_bodystructure_parameter_names_are_lower_cased_and_sorted_their_values_kept():
    raw = (b"Content-Type: text/plain; NAME=R.txt; Charset=UTF-8;\r\n"
           b"Content-Disposition: Inline; Size=3; filename=R.txt\r\n"
           b"Content-MD5: Q2hlY2s=\r\nContent-Language: nl-BE\r\n"
           b"Content-Location: (a comment) \"http://example.org/\r\n r.txt\"\r\n\r\nabc")
    assert body_structure(mime.parse(raw)) == (
        b'("TEXT" "PLAIN" ("charset" "UTF-8" "name" "R.txt") NIL NIL "7BIT" 3 0 "Q2hlY2s=" '
        b'("Inline" ("filename" "R.txt" "size" "3")) ("nl-BE") "http://example.org/r.txt")')
    assert body_structure(mime.parse(b"Subject: x\r\n\r\nbody\r\n"), extensible=False) == \
        b'("TEXT" "PLAIN" ("charset" "us-ascii") NIL NIL "7BIT" 6 1)'


def test_a_leaf_body_part_has_no_part_one_below_it():
    raw = (b"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: image/png\r\n\r\nPNG\r\n"
           b"--b\r\nContent-Type: message/rfc822\r\n\r\nSubject: inner\r\n\r\ninner body\r\n--b--\r\n")
    root = mime.parse(raw)
    assert mime.find(root, [1]).body == b"PNG"
    with pytest.raises(mime.NoSuchPart):
        mime.find(root, [1, 1])
    assert mime.find(root, [2, 1]).body == b"inner body", "an attached message has a part 1"
    assert mime.find(mime.parse(b"Subject: x\r\n\r\nbody"), [1]).body == b"body"


def test_authenticate_takes_a_quoted_mechanism_name(world):
    raw = RawImap(world.port)
    response = base64.b64encode(f"\0{USER}\0{PASSWORD}".encode())
    assert raw.command(b"a1", b'AUTHENTICATE "PLAIN" ' + response)[-1].startswith(b"a1 OK ")
    raw.close()


def test_a_name_that_is_no_mailbox_can_be_subscribed(world):
    client = world.client()
    assert client.subscribe("whatever")[0] == "OK"
    assert b'() "." whatever' in client.lsub()[1]
    client.logout()


def test_lsub_percent_answers_the_unsubscribed_parent_of_a_subscription_noselect():
    subscribed = ["INBOX", "a.b", "c", "c.d", "e.f.g"]
    assert lsub_entries(subscribed, ListPattern("", "%")) == [("INBOX", False), ("a", True), ("c", False),
                                                              ("e", True)]
    assert lsub_entries(subscribed, ListPattern("", "*")) == [(name, False) for name in sorted(subscribed)]
    assert lsub_entries(subscribed, ListPattern("", "e.%")) == [("e.f", True)]


def test_an_unsolicited_fetch_carries_the_uid_only_once_condstore_is_on(world):
    client, other = world.client(), world.client()
    assert client.append("INBOX", None, None, b"Subject: x\r\n\r\nbody\r\n")[0] == "OK"
    assert other.select("INBOX")[0] == "OK"
    raw = RawImap(world.port)
    raw.command(b"l", f"LOGIN {USER} {PASSWORD}".encode())
    raw.command(b"s", b"SELECT INBOX")
    other.store("1", "+FLAGS", "(\\Flagged)")
    assert b"* 1 FETCH (FLAGS (\\Flagged))\r\n" in raw.command(b"u", b"UID SEARCH ALL")
    raw.command(b"e", b"ENABLE CONDSTORE")
    other.store("1", "-FLAGS", "(\\Flagged)")
    assert any(line.startswith(b"* 1 FETCH (FLAGS () UID 1 MODSEQ (") for line in raw.command(b"n", b"NOOP"))
    raw.close()
    other.logout()
    client.logout()


def selected_raw(world, messages: int) -> RawImap:
    client = world.client()
    for _ in range(messages):
        assert client.append("INBOX", None, None, b"Subject: x\r\n\r\nbody\r\n")[0] == "OK"
    client.logout()
    raw = RawImap(world.port)
    raw.command(b"l", f"LOGIN {USER} {PASSWORD}".encode())
    raw.command(b"s", b"SELECT INBOX")
    return raw


def test_store_of_a_new_keyword_announces_the_flags_before_the_fetch(world):
    raw = selected_raw(world, 1)
    assert raw.command(b"a", b"STORE 1 +FLAGS (userflag)") == [
        b"* FLAGS (\\Answered \\Flagged \\Deleted \\Seen \\Draft userflag)\r\n",
        b"* OK [PERMANENTFLAGS (\\Answered \\Flagged \\Deleted \\Seen \\Draft userflag \\*)] Flags permitted\r\n",
        b"* 1 FETCH (FLAGS (\\Recent userflag))\r\n", b"a OK STORE completed\r\n"]
    assert raw.command(b"b", b"STORE 1 -FLAGS (userflag)") == [b"* 1 FETCH (FLAGS (\\Recent))\r\n",
                                                               b"b OK STORE completed\r\n"]
    raw.close()


def test_move_of_recent_messages_expunges_them_without_a_recent_count(world):
    raw = selected_raw(world, 3)
    assert raw.command(b"c", b"CREATE moved")[-1].startswith(b"c OK")
    lines = raw.command(b"m", b"MOVE 2:3 moved")
    assert lines[1:] == [b"* 2 EXPUNGE\r\n", b"* 2 EXPUNGE\r\n", b"m OK MOVE completed\r\n"]
    assert lines[0].startswith(b"* OK [COPYUID ")
    raw.close()


def test_internaldate_is_told_in_utc_whatever_the_zone_appended_with(world):
    raw = selected_raw(world, 0)
    message = b"Subject: x\r\n\r\nbody\r\n"
    raw.send(b'a APPEND INBOX "17-Jul-1996 02:44:25 -0700" {%d}\r\n' % len(message))
    assert raw.line().startswith(b"+")
    raw.send(message + b"\r\n")
    assert raw.until_tagged(b"a")[-1].startswith(b"a OK")
    assert b'* 1 FETCH (INTERNALDATE "17-Jul-1996 09:44:25 +0000")\r\n' in raw.command(b"f", b"FETCH 1 INTERNALDATE")
    raw.close()
