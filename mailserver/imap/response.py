"""Formatting of response data (RFC 3501 §4, §7): atoms, quoted strings, literals, NIL, flag lists.

Everything is bytes. Strings go out as a quoted string when they can (7-bit, no CR/LF/NUL,
not too long) and as a literal otherwise, so any value, even 8-bit header text, is sent intact.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime

from mailserver.model.flags import Flags, SystemFlag

MAX_QUOTED = 1024
_ATOM_SAFE = re.compile(rb"^[!#$&'+-Z^-z|}~]+$")   # ATOM-CHAR without '\' ']' '%' '*' '"' '(' ')' '{'
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
SYSTEM_FLAGS = (SystemFlag.ANSWERED, SystemFlag.FLAGGED, SystemFlag.DELETED, SystemFlag.SEEN, SystemFlag.DRAFT)


def _bytes(value: str | bytes) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8", "surrogateescape")


def quoted(value: str | bytes) -> bytes:
    raw = _bytes(value)
    return b'"' + raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'


def literal(value: str | bytes) -> bytes:
    raw = _bytes(value)
    return b"{%d}\r\n" % len(raw) + raw


def string(value: str | bytes) -> bytes:
    """A ``string``: quoted when possible, else a literal."""
    raw = _bytes(value)
    if len(raw) > MAX_QUOTED or any(b > 0x7E or b in (0x0D, 0x0A, 0x00) for b in raw):
        return literal(raw)
    return quoted(raw)


def nstring(value: str | bytes | None) -> bytes:
    return b"NIL" if value is None else string(value)


def astring(value: str | bytes) -> bytes:
    """An ``astring``: a bare atom when it is one (and not NIL), else a string."""
    raw = _bytes(value)
    if raw and _ATOM_SAFE.match(raw) and raw.upper() != b"NIL":
        return raw
    return string(raw)


def number(value: int) -> bytes:
    return str(int(value)).encode()


def paren(items: Iterable[bytes]) -> bytes:
    return b"(" + b" ".join(items) + b")"


def nil_or_list(items: list[bytes]) -> bytes:
    return paren(items) if items else b"NIL"


def flag_names(flags: Flags, *, recent: bool = False) -> list[str]:
    names = [f"\\{flag.value}" for flag in SYSTEM_FLAGS if flags.has(flag)]
    if recent:
        names.append("\\Recent")
    names.extend(sorted(flags.user))
    return names


def flag_list(flags: Flags, *, recent: bool = False) -> bytes:
    return paren(name.encode("utf-8", "surrogateescape") for name in flag_names(flags, recent=recent))


def date_time(value: datetime) -> bytes:
    """``"17-Jul-1996 09:44:25 +0000"`` (INTERNALDATE), always in UTC as James (in a UTC JVM): the
    Cassandra backend keeps the instant, not the zone it was appended with, so every backend says the
    same. Naive values are UTC."""
    value = value.astimezone(UTC) if value.tzinfo is not None else value
    text = (f"{value.day:02d}-{_MONTHS[value.month - 1]}-{value.year:04d} {value.hour:02d}:{value.minute:02d}:"
            f"{value.second:02d} +0000")
    return b'"' + text.encode() + b'"'


def parse_date_time(text: str) -> datetime:
    """APPEND's ``date-time``: ``17-Jul-1996 02:44:25 -0700`` (day may be space-padded); ValueError else."""
    match = re.fullmatch(r" ?(\d{1,2})-([A-Za-z]{3})-(\d{4}) (\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})", text)
    if not match:
        raise ValueError(f"invalid date-time {text!r}")
    day, month, year, hh, mm, ss, sign, zh, zm = match.groups()
    months = [m.lower() for m in _MONTHS]
    if month.lower() not in months:
        raise ValueError(f"invalid month in {text!r}")
    from datetime import timedelta, timezone

    offset = timedelta(hours=int(zh), minutes=int(zm)) * (-1 if sign == "-" else 1)
    return datetime(int(year), months.index(month.lower()) + 1, int(day), int(hh), int(mm), int(ss),
                    tzinfo=timezone(offset))


def parse_date(text: str) -> datetime:
    """SEARCH's ``date``: ``1-Feb-1994`` -> a date (as a midnight datetime, no zone); ValueError else."""
    match = re.fullmatch(r"(\d{1,2})-([A-Za-z]{3})-(\d{4})", text.strip('"'))
    if not match:
        raise ValueError(f"invalid date {text!r}")
    day, month, year = match.groups()
    months = [m.lower() for m in _MONTHS]
    if month.lower() not in months:
        raise ValueError(f"invalid month in {text!r}")
    return datetime(int(year), months.index(month.lower()) + 1, int(day))
