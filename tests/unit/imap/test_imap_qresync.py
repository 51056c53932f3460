"""QRESYNC (RFC 7162 section 3.2): ENABLE, SELECT/EXAMINE with QRESYNC (VANISHED (EARLIER) and the
messages changed since a mod-sequence), UID FETCH (CHANGEDSINCE n VANISHED), VANISHED instead of
EXPUNGE once enabled, the CLOSED response code, and the bounds on what a client sends."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from imapclient import IMAPClient

from mailserver.imap.parser import ParseError, tokenize
from mailserver.imap.qresync import (
    MAX_SEQ_MATCH,
    RANGES_PER_LINE,
    absent,
    matched_floor,
    merged,
    parse_select_params,
    vanished_lines,
)
from mailserver.mailbox.manager import MailboxManager
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.mailbox import MailboxPath
from tests.unit.imap.conftest import DOMAIN, PASSWORD, World, make_world
from tests.unit.imap.imap_sessions import REPORT
from tests.unit.imap.raw_client import RawImap


def params(text: str):
    return parse_select_params(tokenize([text.encode()])[0])


# -- parsing ---------------------------------------------------------------------------------------
def test_the_qresync_parameter_is_read_with_its_optional_known_uids_and_sequence_match_data():
    resync = params("(QRESYNC (67890007 90060115194045000 41:211,214:541 (1,5 2,7)))").resync
    assert resync is not None
    assert (resync.uid_validity, resync.modseq) == (67890007, 90060115194045000)
    assert resync.known_uids == ((41, 211), (214, 541))
    assert resync.seq_match == ((1, 5), (2, 7))
    assert params("(QRESYNC (1 0))").resync.known_uids is None
    assert params("(qresync (1 5 (1:3 4:6)) CONDSTORE)").condstore


@pytest.mark.parametrize("text", [
    "(QRESYNC (0 5))",                       # UIDVALIDITY is a nz-number
    "(QRESYNC (4294967296 5))",
    "(QRESYNC (1 99999999999999999999))",    # beyond 63 bits
    "(QRESYNC (1))",
    "(QRESYNC (1 5 1:*))",                   # known-uids: * is not allowed
    "(QRESYNC (1 5 1:3 (1:3 4:*)))",
    "(QRESYNC (1 5 (3,1 4,6)))",             # the sequence match data must ascend
    "(QRESYNC (1 5 (1:3 4:6) extra))",
    "(QRESYNC (1 5) QRESYNC (1 5))",
    "(FROB)",
])
def test_malformed_qresync_parameters_are_refused(text):
    with pytest.raises(ParseError):
        params(text)


def test_the_sequence_match_data_is_a_small_sample_and_a_bigger_one_is_refused_before_any_expansion():
    started = time.monotonic()
    with pytest.raises(ParseError, match="more than"):
        params(f"(QRESYNC (1 5 (1:4294967295 1:{MAX_SEQ_MATCH + 1})))")
    assert time.monotonic() - started < 0.5


# -- vanished uids as ranges ---------------------------------------------------------------------
def test_the_vanished_uids_are_the_gaps_of_the_known_ranges_between_the_present_uids():
    assert absent([2, 3, 7, 9], merged([(1, 10)]), 1, 9) == [(1, 1), (4, 6), (8, 8)]
    assert absent([2, 3, 7, 9], merged([(1, 10)]), 4, 9) == [(4, 6), (8, 8)]   # below the floor: known


def test_hostile_sets_cost_their_ranges_and_the_messages_not_the_uids_they_name():
    started = time.monotonic()
    everything = merged([(4_294_967_295, 1)] * 10_000)   # ten thousand copies of the widest range
    assert everything == ((1, 4_294_967_295),)
    assert absent([], everything, 1, 4_294_967_295) == [(1, 4_294_967_295)]
    assert len(absent(list(range(2, 200_000, 2)), everything, 1, 200_000)) == 100_000
    assert time.monotonic() - started < 2


def test_long_vanished_sets_are_split_into_lines_of_bounded_length():
    lines = vanished_lines([(n, n) for n in range(1, 2 * RANGES_PER_LINE + 2, 2)], earlier=False)
    assert len(lines) == 2 and all(len(line) < 8192 for line in lines)
    assert vanished_lines([(1, 3), (5, 5)], earlier=True) == [b"* VANISHED (EARLIER) 1:3,5\r\n"]
    assert vanished_lines([], earlier=True) == []


def test_the_sequence_match_floor_is_the_last_pair_matching_before_the_first_mismatch():
    # James's example: MSN 1 => UID 2 and MSN 13 => UID 17 match, MSN 28 => UID 30 does not.
    uids = [u for u in range(2, 38) if u not in (10, 11, 12, 25, 26, 32)]
    assert matched_floor(uids, ((1, 13, 28), (2, 17, 30))) == 17
    assert matched_floor(uids, ((1, 13, 99), (2, 99, 17))) == 2
    assert matched_floor(uids, ((9999,), (2,))) == 0
    assert matched_floor(uids, None) == 0


# -- over a session ------------------------------------------------------------------------------
# One server for the module, a user of its own for each test: a server start per test costs more
# than the tests themselves.
@pytest.fixture(scope="module")
def server() -> Iterator[World]:
    world = make_world()
    try:
        yield world
    finally:
        world.thread.stop()


ACCOUNTS = itertools.count(1)


@dataclass
class Account:
    world: World
    user: str

    @property
    def inbox(self) -> MailboxPath:
        return MailboxPath.inbox(self.user)

    @property
    def manager(self) -> MailboxManager:
        return self.world.ctx.manager

    def client(self, count: int = 0) -> tuple[RawImap, int]:
        """A logged-in client and INBOX's UIDVALIDITY, INBOX holding ``count`` messages (uids 1..count)."""
        raw = RawImap(self.world.port)
        assert raw.command(b"L", f"LOGIN {self.user} {PASSWORD}".encode())[-1].startswith(b"L OK")
        self.append(count)
        return raw, self.manager.get_mailbox(self.inbox).uid_validity

    def append(self, count: int) -> None:
        for _ in range(count):
            self.manager.append(self.inbox, REPORT)

    def flag(self, uids: list[int], flag: SystemFlag) -> None:
        self.manager.set_flags(self.inbox, Flags.of(flag), FlagsUpdateMode.ADD, uids)

    def expunge_elsewhere(self, uids: list[int]) -> None:
        self.flag(uids, SystemFlag.DELETED)
        self.manager.expunge(self.inbox, uids)

    @property
    def highest_modseq(self) -> int:
        return self.manager.mailbox_state(self.inbox).highest_modseq


@pytest.fixture
def account(server: World) -> Account:
    user = f"qresync{next(ACCOUNTS)}@{DOMAIN}"
    server.users.add_user(user, PASSWORD)
    return Account(server, user)


def untagged(lines: list[bytes]) -> list[bytes]:
    return [line for line in lines if line.startswith(b"* ")]


def test_qresync_is_announced_its_commands_are_bad_until_enabled_and_enabling_implies_condstore(account):
    raw, validity = account.client(2)
    assert b" QRESYNC" in raw.command(b"c", b"CAPABILITY")[0]
    assert raw.command(b"a", b"SELECT INBOX (QRESYNC (%d 1))" % validity)[-1].startswith(b"a BAD")
    raw.command(b"s", b"SELECT INBOX")
    assert raw.command(b"b", b"UID FETCH 1:* (FLAGS) (CHANGEDSINCE 1 VANISHED)")[-1].startswith(b"b BAD")
    raw.command(b"d", b"STORE 1 +FLAGS.SILENT (\\Deleted)")
    assert untagged(raw.command(b"x", b"EXPUNGE")) == [b"* 1 EXPUNGE\r\n"]   # not enabled: EXPUNGE as before
    enabled = raw.command(b"e", b"ENABLE QRESYNC QRESYNC")
    assert enabled[0] == b"* ENABLED QRESYNC\r\n"
    assert enabled[1].startswith(b"* OK [HIGHESTMODSEQ ")   # CONDSTORE enabled with a mailbox selected
    assert raw.command(b"f", b"FETCH 1:* (FLAGS) (CHANGEDSINCE 1 VANISHED)")[-1].startswith(b"f BAD")
    assert raw.command(b"g", b"UID FETCH 1:* (FLAGS) (VANISHED)")[-1].startswith(b"g BAD")


def test_select_tells_the_vanished_known_uids_and_the_messages_changed_since_the_modseq(account):
    raw, validity = account.client(10)
    modseq = account.highest_modseq
    account.expunge_elsewhere([3, 4, 9])
    account.flag([5], SystemFlag.FLAGGED)
    raw.command(b"e", b"ENABLE QRESYNC")
    lines = raw.command(b"s", b"EXAMINE INBOX (QRESYNC (%d %d 1:10))" % (validity, modseq))
    assert lines[-1].startswith(b"s OK [READ-ONLY]")
    resync = untagged(lines)[-2:]
    assert resync[0] == b"* VANISHED (EARLIER) 3:4,9\r\n"
    assert resync[1].startswith(b"* 3 FETCH (") and b"UID 5" in resync[1] and b"\\Flagged" in resync[1] \
        and b"MODSEQ (" in resync[1]


def test_known_uids_and_sequence_match_data_narrow_the_vanished_uids(account):
    raw, validity = account.client(12)
    account.expunge_elsewhere([2, 8, 12])
    raw.command(b"e", b"ENABLE QRESYNC")
    # The last message vanished too: unlike James, it is reported (uids up to UIDNEXT-1 count).
    lines = raw.command(b"a", b"EXAMINE INBOX (QRESYNC (%d 1))" % validity)
    assert b"* VANISHED (EARLIER) 2,8,12\r\n" in lines
    # Only the known uids count.
    lines = raw.command(b"b", b"EXAMINE INBOX (QRESYNC (%d 1 5:12))" % validity)
    assert b"* VANISHED (EARLIER) 8,12\r\n" in lines
    # Message 1 is uid 1 and message 6 is uid 7: the client knows every expunge up to uid 7.
    lines = raw.command(b"c", b"EXAMINE INBOX (QRESYNC (%d 1 1:12 (1,6 1,7)))" % validity)
    assert b"* VANISHED (EARLIER) 8,12\r\n" in lines


def test_james_qresync_examples_give_the_same_vanished_uids(account):
    # IMAPServerQResyncTest's mailbox: 37 messages, uid 1 expunged, then 10:12, 25:26 and 32.
    raw, validity = account.client(37)
    account.expunge_elsewhere([1])
    modseq = account.highest_modseq
    account.expunge_elsewhere([10, 11, 12, 25, 26, 32])
    raw.command(b"e", b"ENABLE QRESYNC")
    for known, vanished in [(b"1:37 (1,13,28 2,17,30)", b"25:26,32"),     # pairs 1 and 2 match, 3 does not
                            (b"1:37 (1,13,28 2,17,32)", b"25:26,32"),
                            (b"5:11,28:36 (1,10,28 2,11,29)", b"10:11,32"),
                            (b"2:37 (1,10,28 2,11,29)", b"10:12,25:26,32"),
                            (b"2:37", b"10:12,25:26,32"),
                            (b"", b"1,10:12,25:26,32")]:   # James clips to the first uid present: no 1
        lines = raw.command(b"s", b"EXAMINE INBOX (QRESYNC (%d %d %s))" % (validity, modseq, known))
        assert lines[-1].startswith(b"s OK")
        assert [line for line in lines if b"VANISHED" in line] == [b"* VANISHED (EARLIER) " + vanished + b"\r\n"]
    # A sample of four billion pairs is refused before it is expanded.
    hostile = b"EXAMINE INBOX (QRESYNC (%d 1 1:4294967295 (1:4294967295 1:4294967295)))" % validity
    assert raw.command(b"h", hostile)[-1].startswith(b"h BAD")


def test_a_wrong_uidvalidity_gives_no_resync_data_and_a_reselect_says_closed(account):
    raw, validity = account.client(3)
    account.expunge_elsewhere([2])
    raw.command(b"e", b"ENABLE QRESYNC")
    first = raw.command(b"a", b"SELECT INBOX (QRESYNC (%d 1))" % (validity + 1))
    assert first[-1].startswith(b"a OK") and not any(b"VANISHED" in line or b"FETCH" in line for line in first)
    assert not any(b"[CLOSED]" in line for line in first)
    account.manager.create_mailbox(MailboxPath.of(account.user, "Other"))
    second = raw.command(b"b", b"SELECT Other")
    assert second[0] == b"* OK [CLOSED] Previous mailbox is now closed\r\n" and second[-1].startswith(b"b OK")


def test_uid_fetch_vanished_reports_the_expunged_uids_of_the_set_before_the_changed_messages(account):
    raw, _ = account.client(6)
    raw.command(b"e", b"ENABLE QRESYNC")
    raw.command(b"s", b"SELECT INBOX")
    modseq = account.highest_modseq
    account.expunge_elsewhere([2, 6])
    raw.command(b"n", b"NOOP")
    account.flag([4], SystemFlag.SEEN)
    lines = untagged(raw.command(b"f", b"UID FETCH 1:4294967295 (FLAGS) (CHANGEDSINCE %d VANISHED)" % modseq))
    assert lines[0] == b"* VANISHED (EARLIER) 2,6\r\n"
    assert len(lines) >= 2 and b"UID 4" in lines[1] and b"\\Seen" in lines[1]
    assert not any(b"UID 1 " in line or b"UID 3 " in line for line in lines)


def test_once_enabled_expunges_are_announced_as_vanished_with_the_highestmodseq(account):
    raw, _ = account.client(5)
    raw.command(b"e", b"ENABLE QRESYNC")
    raw.command(b"s", b"SELECT INBOX")
    raw.command(b"d", b"STORE 2:3 +FLAGS.SILENT (\\Deleted)")
    lines = raw.command(b"x", b"EXPUNGE")
    assert untagged(lines) == [b"* VANISHED 2:3\r\n"]
    assert lines[-1].startswith(b"x OK [HIGHESTMODSEQ ")
    # Another session's expunge, learnt at the next command; a MOVE announces its own.
    account.expunge_elsewhere([5])
    assert untagged(raw.command(b"n", b"NOOP")) == [b"* VANISHED 5\r\n"]
    account.manager.create_mailbox(MailboxPath.of(account.user, "Archive"))
    assert b"* VANISHED 1\r\n" in raw.command(b"m", b"MOVE 1 Archive")
    # FETCH keeps them for later, as it does EXPUNGE; its FETCH responses carry the UID.
    account.expunge_elsewhere([4])
    fetched = untagged(raw.command(b"f", b"FETCH 1 (FLAGS)"))
    assert len(fetched) == 1 and fetched[0].startswith(b"* 1 FETCH (FLAGS (") and b" UID 4 " in fetched[0]
    assert untagged(raw.command(b"o", b"NOOP")) == [b"* VANISHED 4\r\n"]
    # And while idling.
    account.append(1)
    raw.command(b"n", b"NOOP")
    raw.send(b"i IDLE\r\n")
    assert raw.line() == b"+ idling\r\n"
    account.expunge_elsewhere([6])
    assert raw.line() == b"* VANISHED 6\r\n"
    raw.send(b"DONE\r\n")
    assert raw.line() == b"i OK IDLE terminated\r\n"


class QresyncClient(IMAPClient):
    """imapclient has ENABLE but no QRESYNC parameter to SELECT: that SELECT goes through imaplib."""

    def select_qresync(self, folder: str, uid_validity: int, modseq: int) -> dict[str, list]:
        typ, data = self._imap.xatom("SELECT", f"{folder} (QRESYNC ({uid_validity} {modseq}))")
        assert typ == "OK", data
        self._imap.state = "SELECTED"   # imaplib tracks the state of its own SELECT only
        responses = self._imap.untagged_responses
        taken = {name: list(values) for name, values in responses.items()}
        responses.clear()   # else imapclient's next FETCH would read these FETCH responses as its own
        return taken


def test_a_real_client_resyncs_with_qresync_after_changes_made_while_it_was_away(account):
    user, port = account.user, account.world.port
    account.manager.create_mailbox(account.inbox)
    account.append(4)
    with IMAPClient("127.0.0.1", port=port, ssl=False, timeout=10) as client:
        client.login(user, PASSWORD)
        assert b"QRESYNC" in client.capabilities()
        known = client.select_folder("INBOX")
        client.logout()
    account.expunge_elsewhere([2])
    account.flag([3], SystemFlag.FLAGGED)
    with QresyncClient("127.0.0.1", port=port, ssl=False, timeout=10) as client:
        client.login(user, PASSWORD)
        assert client.enable("QRESYNC") == [b"QRESYNC"]
        resync = client.select_qresync("INBOX", known[b"UIDVALIDITY"], known[b"HIGHESTMODSEQ"])
        assert resync["VANISHED"] == [b"(EARLIER) 2"]
        assert [f.split(b" MODSEQ")[0] for f in resync["FETCH"]] == [b"2 (FLAGS (\\Flagged) UID 3"]
        account.expunge_elsewhere([4])
        assert client.noop()[1] == [(b"VANISHED", 4)]
        modseq = account.highest_modseq
        account.flag([1], SystemFlag.SEEN)
        changed = client.fetch([1, 3], ["FLAGS"], modifiers=[f"CHANGEDSINCE {modseq}", "VANISHED"])
        assert list(changed) == [1] and changed[1][b"FLAGS"] == (b"\\Seen",)
        client.logout()
