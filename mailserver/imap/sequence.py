"""Sequence sets (RFC 3501 §9 ``sequence-set``): ``1:3,5,7:*``, for sequence numbers or uids.

``*`` is the largest number in use. A range is unordered (``7:3`` is ``3:7``). For uids a range
past the largest uid still matches that uid when ``*`` is involved (``UID FETCH 9:*`` returns the
last message even if its uid is below 9, as RFC 3501 says); for sequence numbers a number
beyond the mailbox size is an error (RFC 9051 §6.4.5: tagged BAD).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mailserver.imap.parser import ParseError

STAR = 0   # stands for '*' inside a range (real numbers start at 1)
_NUMBER = re.compile(r"^(\*|[1-9]\d{0,9})$")
MAX_RANGES = 10_000


@dataclass(frozen=True)
class SequenceSet:
    ranges: tuple[tuple[int, int], ...]

    @classmethod
    def parse(cls, text: str) -> SequenceSet:
        if not text:
            raise ParseError("empty sequence set")
        parts = text.split(",")
        if len(parts) > MAX_RANGES:
            raise ParseError(f"sequence set with more than {MAX_RANGES} ranges")
        ranges = []
        for part in parts:
            low, sep, high = part.partition(":")
            if not _NUMBER.match(low) or (sep and not _NUMBER.match(high)):
                raise ParseError(f"invalid sequence set {text!r}")
            a = STAR if low == "*" else int(low)
            b = (STAR if high == "*" else int(high)) if sep else a
            if a > 2**32 - 1 or b > 2**32 - 1:
                raise ParseError(f"number out of range in sequence set {text!r}")
            ranges.append((a, b))
        return cls(tuple(ranges))

    @classmethod
    def is_sequence_set(cls, text: str) -> bool:
        try:
            cls.parse(text)
        except ParseError:
            return False
        return True

    def _bounds(self, largest: int) -> list[tuple[int, int]]:
        out = []
        for a, b in self.ranges:
            a = largest if a == STAR else a
            b = largest if b == STAR else b
            out.append((min(a, b), max(a, b)))
        return out

    def has_star(self) -> bool:
        return any(STAR in r for r in self.ranges)

    def sequence_numbers(self, count: int) -> list[int]:
        """The sequence numbers 1..count it names, ascending; ParseError when one is beyond count.

        On an empty mailbox a set with ``*`` names nothing (``FETCH 1:*`` is OK, as in James)."""
        if count == 0 and self.has_star():
            return []
        wanted: set[int] = set()
        for low, high in self._bounds(count):
            if low < 1 or high > count:
                raise ParseError(f"message sequence number out of range (the mailbox has {count} messages)")
            wanted.update(range(low, high + 1))
        return sorted(wanted)

    def fits(self, count: int) -> bool:
        """True when every sequence number it names is within 1..count."""
        try:
            self.sequence_numbers(count)
        except ParseError:
            return False
        return True

    def uids(self, uids: Sequence[int]) -> list[int]:
        """The uids among ``uids`` (ascending) that it names."""
        if not uids:
            return []
        largest = uids[-1]
        found: set[int] = set()
        for low, high in self._bounds(largest):
            start = bisect.bisect_left(uids, low)
            stop = bisect.bisect_right(uids, high)
            found.update(uids[start:stop])
        return sorted(found)

    def contains(self, number: int, largest: int) -> bool:
        return any(low <= number <= high for low, high in self._bounds(largest))


def format_set(numbers: Iterable[int]) -> str:
    """``[1, 2, 3, 5]`` -> ``1:3,5`` (the order is kept: COPYUID pairs source and target by position)."""
    out: list[str] = []
    run: list[int] = []
    for n in numbers:
        if run and n == run[-1] + 1:
            run.append(n)
            continue
        if run:
            out.append(_run(run))
        run = [n]
    if run:
        out.append(_run(run))
    return ",".join(out)


def _run(run: list[int]) -> str:
    return str(run[0]) if len(run) == 1 else f"{run[0]}:{run[-1]}"
