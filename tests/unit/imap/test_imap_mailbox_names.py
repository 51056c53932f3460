"""Mailbox names from IMAP clients: control characters (raw, in a literal, or encoded in modified
UTF-7) and non-canonical modified UTF-7 never name a mailbox, and the refusal is one clean line."""

from __future__ import annotations

import pytest

from mailserver.model.address import Username
from tests.unit.imap.conftest import USER
from tests.unit.imap.raw_client import RawImap
from tests.unit.imap.test_imap_protocol import login

CONTROL = b"contains a control character (U+0000 to U+001F, U+007F) or invalid UTF-8"


def names(world) -> list[str]:
    return [m.path.name for m in world.ctx.manager.list_mailboxes(Username.of(USER))]


def literal_command(raw: RawImap, tag: bytes, head: bytes, payload: bytes, tail: bytes = b"") -> list[bytes]:
    raw.send(tag + b" " + head + b" {%d}\r\n" % len(payload))
    assert raw.line() == b"+ Ready for literal data\r\n"
    raw.send(payload + tail + b"\r\n")
    return raw.until_tagged(tag)


@pytest.mark.parametrize("payload", [b"a\x00b", b"Work.a\x1bb", b"del\x7f", b"bad\xffutf8"],
                         ids=["NUL", "ESC", "DEL", "invalid UTF-8"])
def test_create_from_a_literal_with_a_control_character_is_refused(world, payload):
    raw = RawImap(world.port)
    login(raw)
    reply = literal_command(raw, b"a", b"CREATE", payload)[-1]
    assert reply.startswith(b"a NO [CANNOT] mailbox name ") and CONTROL in reply, reply
    assert reply.count(b"\r\n") == 1 and b"\x00" not in reply
    assert names(world) == ["INBOX"]
    assert raw.command(b"n", b"NOOP")[-1] == b"n OK NOOP completed\r\n"


def test_create_of_a_quoted_name_with_a_control_character_is_refused(world):
    raw = RawImap(world.port)
    login(raw)
    reply = raw.command(b"a", b'CREATE "a\x01b"')[-1]
    assert reply == b"a NO [CANNOT] mailbox name 'a\\x01b' " + CONTROL + b"\r\n"
    assert names(world) == ["INBOX"]


def test_a_control_character_encoded_in_modified_utf7_is_refused_too(world):
    raw = RawImap(world.port)
    login(raw)
    reply = raw.command(b"a", b"CREATE a&AAA-b")[-1]   # &AAA- is U+0000
    assert reply == b"a NO [CANNOT] mailbox name 'a\\x00b' " + CONTROL + b"\r\n"
    assert names(world) == ["INBOX"]


def test_rename_to_a_name_with_a_control_character_is_refused(world):
    raw = RawImap(world.port)
    login(raw)
    assert raw.command(b"c", b"CREATE Work")[-1] == b"c OK CREATE completed\r\n"
    reply = literal_command(raw, b"a", b"RENAME Work", b"Play\x00")[-1]
    assert reply.startswith(b"a NO [CANNOT]") and CONTROL in reply
    assert names(world) == ["INBOX", "Work"]


def test_james_forbidden_characters_message_stays_on_one_line(world):
    raw = RawImap(world.port)
    login(raw)
    reply = raw.command(b"a", b"CREATE #news")[-1]
    assert reply == b"a NO [CANNOT] #news contains one of the forbidden characters %*\\r\\n or starts with #\r\n"
    assert raw.command(b"n", b"NOOP")[-1] == b"n OK NOOP completed\r\n"


@pytest.mark.parametrize(("wire", "why"), [
    (b"&AGE-", b"&AGE- is not the RFC 3501 encoding of 'a'"),      # printable ASCII must stand for itself
    (b"&AOk-&AOk-", b"two shifts in a row must be one"),            # "&AOkA6Q-" is the one spelling
    (b"&AOl-", b"&AOl- is not the RFC 3501 encoding of '\xc3\xa9'"),  # stray bits after U+00E9
    (b"&2AA-", b"not base64 of UTF-16"),                             # a lone surrogate
])
def test_non_canonical_modified_utf7_is_refused(world, wire, why):
    raw = RawImap(world.port)
    login(raw)
    reply = raw.command(b"a", b"CREATE " + wire)[-1]
    assert reply == b"a BAD invalid modified UTF-7 in mailbox name '" + wire + b"': " + why + b"\r\n"
    assert names(world) == ["INBOX"]
