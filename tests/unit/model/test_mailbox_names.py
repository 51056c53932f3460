"""The mailbox-name rule, in one place for every path that names a mailbox (IMAP, WebAdmin, mailets).

``MailboxPath.of`` (a name from outside) and ``assert_acceptable`` (before a mailbox gets a name,
James's ``MailboxPath.assertAcceptable`` with its messages) refuse control characters and invalid
UTF-8 on top of James's rules; their messages stay on one line whatever the name holds.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mailserver.model.address import Username
from mailserver.model.mailbox import InvalidMailboxName, MailboxPath, printable

USER = Username.of("alice@example.test")
UNSAFE = ["a\x00b", "a\x01b", "tab\there", "bell\x07", "\x1fx", "a.b\x7f", "a\udcffb"]


@pytest.mark.parametrize("name", UNSAFE, ids=["NUL", "SOH", "TAB", "BEL", "US", "DEL", "invalid UTF-8"])
def test_control_characters_and_invalid_utf8_are_refused_everywhere_a_name_comes_from(name):
    with pytest.raises(InvalidMailboxName, match="contains a control character") as raised:
        MailboxPath.of(USER, name)
    assert printable(str(raised.value)) == str(raised.value), "the message is already one safe line"
    with pytest.raises(InvalidMailboxName, match="contains a control character") as raised:
        MailboxPath("#private", USER, name).assert_acceptable()
    assert printable(str(raised.value)) == str(raised.value)


@pytest.mark.parametrize("name", ["INBOX", "Archive.2026", "Entwürfe", "name&", "a#b", "with space", "日本語"])
def test_ordinary_names_are_acceptable(name):
    assert MailboxPath.of(USER, name).assert_acceptable().name == name


@pytest.mark.parametrize(("name", "message"), [
    ("my..box", "'#private:alice@example.test:my..box' has an empty part within its mailbox name considering . "
                "as a delimiter"),
    ("a. .b", "'#private:alice@example.test:a. .b' has an empty part within its mailbox name considering . "
              "as a delimiter"),
    ("#box", "#private:alice@example.test:#box contains one of the forbidden characters %*\r\n or starts with #"),
    ("x" * 201, "Mailbox name exceeds maximum size of 200 characters"),
])
def test_assert_acceptable_has_james_rules_and_messages(name, message):
    with pytest.raises(InvalidMailboxName) as raised:
        MailboxPath("#private", USER, name).assert_acceptable()
    assert str(raised.value) == message


@given(st.text())
def test_printable_is_always_one_line_without_control_characters(text):
    shown = printable(text)
    assert not any(ord(c) < 0x20 or ord(c) == 0x7F or 0xD800 <= ord(c) <= 0xDFFF for c in shown)
