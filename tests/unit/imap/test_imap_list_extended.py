"""LIST-EXTENDED (RFC 5258), SPECIAL-USE (RFC 6154) and LIST-STATUS (RFC 5819): the arguments
parsed, the entries chosen (a pure function, no server), and one session over the wire."""

from __future__ import annotations

import pytest

from mailserver.imap.list_request import MAX_PATTERNS, ListRequest, parse_list
from mailserver.imap.listing import list_entries
from mailserver.imap.names import ListPattern
from mailserver.imap.parser import Args, ParseError, tokenize
from mailserver.imap.special_use import special_use
from tests.unit.imap.raw_client import RawImap
from tests.unit.imap.test_imap_protocol import login


def parse(text: str) -> ListRequest:
    return parse_list(Args(tokenize([text.encode()])))


# ------------------------------------------------------------------ parsing
def test_a_basic_list_is_not_extended():
    request = parse('"" "%"')
    assert (request.reference, request.patterns, request.extended) == ("", ("%",), False)


def test_selecting_subscribed_or_special_use_implies_returning_it():
    request = parse('(subscribed SPECIAL-USE) "" *')
    assert request.select == {"SUBSCRIBED", "SPECIAL-USE"} and request.returns == {"SUBSCRIBED", "SPECIAL-USE"}


def test_return_options_with_status_items_and_several_patterns():
    request = parse('"" (INBOX "Arch%") RETURN (CHILDREN STATUS (MESSAGES unseen) SPECIAL-USE)')
    assert request.patterns == ("INBOX", "Arch%")
    assert request.returns == {"CHILDREN", "STATUS", "SPECIAL-USE"}
    assert request.status_items == ("MESSAGES", "UNSEEN")


@pytest.mark.parametrize("text", [
    '(RECURSIVEMATCH) "" *',                 # RFC 5258 3.1: never alone
    '(BOGUS) "" *',                          # unknown selection option
    '"" * RETURN (MYRIGHTS)',                # no ACL here
    '"" * RETURN (STATUS)',                  # STATUS without items
    '"" * RETURN (STATUS (SIZE))',           # an item this server does not answer
    '"" * RETURN SUBSCRIBED',                # not a list
    '"" * EXTRA (SUBSCRIBED)',               # not RETURN
    '"" ()',                                 # no pattern
    '"" (' + " ".join(["x"] * (MAX_PATTERNS + 1)) + ")",
])
def test_malformed_or_unsupported_options_are_refused(text):
    with pytest.raises(ParseError):
        parse(text)


# ------------------------------------------------------------------ entries
MAILBOXES = ["INBOX", "Sent", "Spam", "Drafts", "Trash", "Archive", "Other", "a.b.c"]


def entries(text: str, subscribed=(), mailboxes=MAILBOXES) -> dict[str, bytes]:
    request = parse(text)
    matchers = [ListPattern(request.reference, pattern) for pattern in request.patterns]
    found = list_entries(request, matchers, mailboxes, subscribed)
    return {e.name: b" ".join(e.attributes) + (b" CHILDINFO" if e.child_info_subscribed else b"") for e in found}


def test_special_use_follows_the_role_of_the_name_as_james_types_it():
    assert [special_use(n) for n in ("Sent", "Drafts", "Trash", "Spam", "Archive", "INBOX", "Other", "sent")] == \
        [b"\\Sent", b"\\Drafts", b"\\Trash", b"\\Junk", b"\\Archive", None, None, None]


def test_special_use_attributes_only_when_returned():
    assert entries('"" Sent') == {"Sent": b"\\HasNoChildren"}
    assert entries('"" Sent RETURN (SPECIAL-USE)') == {"Sent": b"\\HasNoChildren \\Sent"}


def test_the_special_use_selection_lists_only_special_mailboxes():
    assert entries('(SPECIAL-USE) "" *') == {
        "Archive": b"\\HasNoChildren \\Archive", "Drafts": b"\\HasNoChildren \\Drafts",
        "Sent": b"\\HasNoChildren \\Sent", "Spam": b"\\HasNoChildren \\Junk", "Trash": b"\\HasNoChildren \\Trash"}


def test_hierarchy_levels_are_noselect_with_children():
    assert entries('"" a*') == {"a": b"\\Noselect \\HasChildren", "a.b": b"\\Noselect \\HasChildren",
                                "a.b.c": b"\\HasNoChildren"}


def test_return_subscribed_marks_subscriptions_among_all_mailboxes():
    assert entries('"" * RETURN (SUBSCRIBED)', subscribed=["Sent"])["Sent"] == b"\\HasNoChildren \\Subscribed"
    assert entries('"" * RETURN (SUBSCRIBED)', subscribed=["Sent"])["Other"] == b"\\HasNoChildren"


def test_the_subscribed_selection_lists_subscriptions_and_flags_the_missing_ones_nonexistent():
    assert entries('(SUBSCRIBED) "" *', subscribed=["Sent", "gone", "Other"]) == {
        "Sent": b"\\HasNoChildren \\Subscribed", "Other": b"\\HasNoChildren \\Subscribed",
        "gone": b"\\Subscribed \\NonExistent"}
    assert entries('(SUBSCRIBED SPECIAL-USE) "" *', subscribed=["Sent", "gone", "Other"]) == {
        "Sent": b"\\HasNoChildren \\Sent \\Subscribed"}


def test_recursivematch_reports_the_parent_of_a_subscription_the_pattern_hides():
    mailboxes = ["INBOX", "listtest", "listtest.subfolder"]
    assert entries('(SUBSCRIBED RECURSIVEMATCH) "" %', subscribed=["INBOX", "listtest.subfolder"],
                   mailboxes=mailboxes) == {"INBOX": b"\\HasNoChildren \\Subscribed",
                                            "listtest": b"\\HasChildren CHILDINFO"}
    assert entries('(SUBSCRIBED) "" %', subscribed=["listtest.subfolder"], mailboxes=mailboxes) == {}


# ------------------------------------------------------------------ over the wire
def test_list_extended_special_use_and_status_over_a_session(world):
    raw = RawImap(world.port)
    login(raw)
    capabilities = raw.command(b"c", b"CAPABILITY")[0].split()
    assert {b"LIST-EXTENDED", b"LIST-STATUS", b"SPECIAL-USE", b"LITERAL+"} <= set(capabilities)
    for name in (b"Sent", b"Other"):
        assert raw.command(b"m", b"CREATE " + name)[-1].startswith(b"m OK")
    raw.send(b"a APPEND Sent {12+}\r\nSubject: x\r\n\r\n")
    assert raw.until_tagged(b"a")[-1].startswith(b"a OK")
    assert raw.command(b"l", b'LIST (SPECIAL-USE) "" "*" RETURN (STATUS (MESSAGES UIDNEXT))') == [
        b'* LIST (\\HasNoChildren \\Sent) "." Sent\r\n', b"* STATUS Sent (MESSAGES 1 UIDNEXT 2)\r\n",
        b"l OK LIST completed\r\n"]
    assert raw.command(b"s", b'LIST (SUBSCRIBED) "" "*"') == [
        b'* LIST (\\HasNoChildren \\Subscribed) "." INBOX\r\n', b"s OK LIST completed\r\n"], \
        "INBOX is subscribed when it is provisioned, as James does"
    assert raw.command(b"r", b'LIST (REMOTE) "" "Other"') == [b'* LIST (\\HasNoChildren) "." Other\r\n',
                                                             b"r OK LIST completed\r\n"]
    assert raw.command(b"b", b'LIST (RECURSIVEMATCH) "" "*"')[-1].startswith(b"b BAD")
