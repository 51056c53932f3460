"""QRESYNC (RFC 7162 section 3.2): the QRESYNC parameter of SELECT/EXAMINE and the VANISHED responses.

As James, no expunged uid is kept: what vanished is computed from the uids the client says it knows
(``known-uids``, by default ``1:UIDNEXT-1``) against the uids present, never from a record of past
expunges, so the mod-sequence a client gives bounds the flag changes reported, not the vanished ones
(RFC 7162 section 4.1 allows such a server). The message sequence match data narrows them: uids up
to the last pair that still matches the mailbox are known to the client.

Every set a client sends is bounded before any work: sequence sets have at most ``MAX_RANGES``
ranges (``SequenceSet.parse``), overlapping ranges are merged first, the sequence match data names
at most ``MAX_SEQ_MATCH`` numbers, and vanished uids are computed as ranges (``1:4294967295`` on an
empty mailbox costs one range, not four billion uids), in lines of at most ``RANGES_PER_LINE`` ranges.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mailserver.imap.parser import Atom, ParseError, Token
from mailserver.imap.sequence import STAR, SequenceSet

if TYPE_CHECKING:
    from mailserver.imap.fetch import FetchRequest
    from mailserver.imap.selected import SelectedMailbox

MAX_SEQ_MATCH = 1024     # numbers in each set of the sequence match data ("a small sample", RFC 7162)
RANGES_PER_LINE = 500    # VANISHED lines stay within RFC 7162's 8192-octet line recommendation
_UID_VALIDITY = re.compile(r"^[1-9]\d{0,9}$")
_MODSEQ = re.compile(r"^\d{1,19}$")
MAX_MODSEQ = 2**63 - 1

Range = tuple[int, int]


@dataclass(frozen=True)
class Resync:
    """The QRESYNC parameter of SELECT/EXAMINE."""

    uid_validity: int
    modseq: int
    known_uids: tuple[Range, ...] | None = None       # merged, ascending; None: every uid
    seq_match: tuple[tuple[int, ...], tuple[int, ...]] | None = None   # (message numbers, uids)


@dataclass(frozen=True)
class SelectParams:
    condstore: bool = False
    resync: Resync | None = None


def parse_select_params(params: list[Token] | None) -> SelectParams:
    """``(CONDSTORE)``, ``(QRESYNC (uidvalidity modseq [known-uids] [(seq-set uid-set)]))`` or both."""
    if params is None:
        return SelectParams()
    condstore, resync = False, None
    i = 0
    while i < len(params):
        name = str(params[i]).upper() if isinstance(params[i], Atom) else ""
        if name == "CONDSTORE":
            condstore = True
            i += 1
        elif name == "QRESYNC" and resync is None and i + 1 < len(params) and isinstance(params[i + 1], list):
            resync = _parse_resync(params[i + 1])
            i += 2
        else:
            raise ParseError(f"unknown SELECT parameter {params[i]!r}")
    return SelectParams(condstore, resync)


def _parse_resync(tokens: list[Token]) -> Resync:
    if not 2 <= len(tokens) <= 4 or not all(isinstance(t, Atom) for t in tokens[:2]):
        raise ParseError("QRESYNC needs (uidvalidity modseq [known-uids] [(known-sequence-set known-uid-set)])")
    validity, modseq = str(tokens[0]), str(tokens[1])
    if not _UID_VALIDITY.match(validity) or int(validity) > 2**32 - 1:
        raise ParseError(f"invalid UIDVALIDITY {validity!r}")
    if not _MODSEQ.match(modseq) or int(modseq) > MAX_MODSEQ:
        raise ParseError(f"invalid mod-sequence {modseq!r}")
    known_uids = seq_match = None
    rest = tokens[2:]
    if rest and isinstance(rest[0], Atom):
        known_uids = merged(_star_free(rest.pop(0), "known-uids").ranges)
    if rest:
        match = rest.pop(0)
        if rest or not isinstance(match, list) or len(match) != 2:
            raise ParseError("QRESYNC sequence match data must be (known-sequence-set known-uid-set)")
        seq_match = (_ascending(match[0], "known-sequence-set"), _ascending(match[1], "known-uid-set"))
    return Resync(int(validity), int(modseq), known_uids, seq_match)


def _star_free(token: Token, what: str) -> SequenceSet:
    if not isinstance(token, Atom):
        raise ParseError(f"{what}: expected a sequence set")
    seqset = SequenceSet.parse(str(token))
    if seqset.has_star():
        raise ParseError(f"{what}: * is not allowed")
    return seqset


def _ascending(token: Token, what: str) -> tuple[int, ...]:
    """The numbers of a small star-free set in the client's order, which must be ascending."""
    ranges = _star_free(token, what).ranges
    if sum(abs(b - a) + 1 for a, b in ranges) > MAX_SEQ_MATCH:
        raise ParseError(f"{what}: more than {MAX_SEQ_MATCH} numbers")
    numbers = [n for a, b in ranges for n in range(min(a, b), max(a, b) + 1)]
    if any(x >= y for x, y in itertools.pairwise(numbers)):
        raise ParseError(f"{what} must be in ascending order")
    return tuple(numbers)


# -- ranges of uids --------------------------------------------------------------------------------
def merged(ranges: Iterable[Range]) -> tuple[Range, ...]:
    """Ranges (either end first) sorted and merged where they overlap or touch."""
    out: list[Range] = []
    for low, high in sorted((min(a, b), max(a, b)) for a, b in ranges):
        if out and low <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], high))
        else:
            out.append((low, high))
    return tuple(out)


def runs(uids: Iterable[int]) -> list[Range]:
    """Ascending uids as ranges of consecutive ones."""
    out: list[Range] = []
    for uid in sorted(uids):
        if out and uid == out[-1][1] + 1:
            out[-1] = (out[-1][0], uid)
        else:
            out.append((uid, uid))
    return out


def absent(present: Sequence[int], ranges: Iterable[Range], low: int, high: int) -> list[Range]:
    """The parts of ``ranges`` (merged) within ``low..high`` holding none of ``present`` (ascending)."""
    gaps: list[Range] = []
    for a, b in ranges:
        a, b = max(a, low), min(b, high)
        if a > b:
            continue
        cursor = a
        i = bisect.bisect_left(present, a)
        while i < len(present) and present[i] <= b:
            if present[i] > cursor:
                gaps.append((cursor, present[i] - 1))
            cursor = present[i] + 1
            i += 1
        if cursor <= b:
            gaps.append((cursor, b))
    return gaps


def contains(ranges: Sequence[Range], uid: int) -> bool:
    i = bisect.bisect_right(ranges, (uid, 2**32)) - 1
    return i >= 0 and ranges[i][0] <= uid <= ranges[i][1]


def vanished_lines(ranges: Sequence[Range], *, earlier: bool) -> list[bytes]:
    """``* VANISHED [(EARLIER)] uid-set`` lines, none when nothing vanished."""
    head = b"* VANISHED (EARLIER) " if earlier else b"* VANISHED "
    return [head + ",".join(f"{a}" if a == b else f"{a}:{b}" for a, b in ranges[i:i + RANGES_PER_LINE]).encode()
            + b"\r\n" for i in range(0, len(ranges), RANGES_PER_LINE)]


# -- what a session sends --------------------------------------------------------------------------
def matched_floor(uids: Sequence[int], seq_match: tuple[tuple[int, ...], tuple[int, ...]] | None) -> int:
    """The uid up to which the client knows every expunge: that of the last pair of the sequence
    match data before the first that no longer matches the mailbox (0: none matches)."""
    floor = 0
    if seq_match is None:
        return floor
    for seq, uid in zip(*seq_match, strict=False):
        if not 1 <= seq <= len(uids) or uids[seq - 1] != uid:
            break
        floor = uid
    return floor


def select_resync(selected: SelectedMailbox, resync: Resync) -> list[bytes]:
    """What a SELECT/EXAMINE with QRESYNC tells after the usual responses: nothing when the
    UIDVALIDITY differs; else the known uids that vanished, then the messages (of those known)
    changed since the client's mod-sequence, their UIDs, FLAGS and MODSEQ."""
    if resync.uid_validity != selected.mailbox.uid_validity:
        return []
    known = resync.known_uids
    floor = matched_floor(selected.uids, resync.seq_match)
    gone = absent(selected.uids, known if known is not None else ((1, 2**32 - 1),), floor + 1,
                  selected.state.uid_next - 1)
    lines = vanished_lines(gone, earlier=True)
    for uid in selected.uids:
        meta = selected.known[uid]
        if meta.mod_seq > resync.modseq and (known is None or contains(known, uid)):
            lines.append(selected.fetch_flags(meta, with_uid=True, with_modseq=True))
    return lines


def fetch_vanished(selected: SelectedMailbox, uid_set: SequenceSet) -> list[bytes]:
    """``UID FETCH ... (CHANGEDSINCE n VANISHED)``: the uids of the set, up to UIDNEXT-1, no longer there."""
    uids = selected.uids
    last = selected.state.uid_next - 1
    star = uids[-1] if uids else last
    ranges = merged((star if a == STAR else a, star if b == STAR else b) for a, b in uid_set.ranges)
    return vanished_lines(absent(uids, ranges, 1, last), earlier=True)


def check_vanished(command: str, request: FetchRequest, *, qresync: bool) -> None:
    """FETCH's VANISHED modifier is valid only in UID FETCH, with CHANGEDSINCE, once QRESYNC is enabled."""
    if command != "UID FETCH":
        raise ParseError("VANISHED is only valid in UID FETCH")
    if not qresync:
        raise ParseError("QRESYNC is not enabled")
    if request.changed_since is None:
        raise ParseError("VANISHED needs CHANGEDSINCE")
