"""Octets the IMAP grammar has no place for, found by the fuzzers: a control character outside a quoted
string, an 8-bit octet inside a FETCH section. Each is a BAD for its command and the session goes on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mailserver.imap.parser import ParseError, parse_command
from tests.unit.imap.raw_client import RawImap
from tests.unit.imap.test_imap_protocol import login

# Run apart, in a process that bounds its own memory: a tokenizer that loops on the octet appends empty
# atoms until memory runs out, which must fail this test, not take the machine's memory.
CONTROL_CHARACTER_CHILD = """
import resource
resource.setrlimit(resource.RLIMIT_AS, (512 * 1024 * 1024, 512 * 1024 * 1024))
from mailserver.imap.parser import ParseError, parse_command
for line in (b"a1 NOOP \\x01", b"a1 LOGIN alice\\x7fbob secret", b"a1 NOOP \\x00", b"a1 NOOP \\x1b[31m"):
    try:
        parse_command([line])
    except ParseError as refused:
        print("refused:", refused)
"""


def test_control_characters_outside_a_quoted_string_are_refused_not_tokenized_forever():
    child = subprocess.run([sys.executable, "-c", CONTROL_CHARACTER_CHILD], capture_output=True, text=True,
                           timeout=300, check=False, cwd=Path(__file__).resolve().parents[3])
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout.splitlines() == [f"refused: control character 0x{c:02x} outside a quoted string (use a literal)"
                                         for c in (0x01, 0x7F, 0x00, 0x1B)]


def test_an_8bit_octet_inside_a_fetch_section_is_a_parse_error():
    with pytest.raises(ParseError, match="8-bit character in a section"):
        parse_command([b"a1 FETCH 1 (BODY.PEEK[HEADER.FIELDS (Subj\xc3\xa9ct)])"])


def test_a_fetch_section_with_an_8bit_octet_is_answered_bad_and_the_session_goes_on(world):
    client = RawImap(world.port)
    try:
        login(client)
        assert client.command(b"a2", b"SELECT INBOX")[-1].startswith(b"a2 OK")
        answer = client.command(b"a3", b"FETCH 1 BODY[\xff]")
        assert answer[-1].startswith(b"a3 BAD"), answer
        assert not any(line.startswith(b"* BYE") for line in answer), answer
        assert client.command(b"a4", b"NOOP")[-1].startswith(b"a4 OK")
    finally:
        client.close()
