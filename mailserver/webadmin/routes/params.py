"""James's query-parameter parsing: durations, positive integers, task selectors (reference §1.4, §3.1).

Each parser raises ``WebAdminError`` with the message James answers, so routes stay one-liners
and scripts matching on ``message``/``details`` keep working.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from mailserver.model.java_numbers import JAVA_INT_MAX, JAVA_LONG_MAX, NotAnInteger, OutOfRange, parse_integer
from mailserver.webadmin.errors import WebAdminError, bad_request

_DURATION = re.compile(r"\s*([0-9]+)\s*([a-zA-Z]*)\s*")
_SECONDS = {
    **dict.fromkeys(("ms", "msec", "msecs"), 0.001),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60),
    **dict.fromkeys(("h", "hour", "hours"), 3600),
    **dict.fromkeys(("d", "day", "days"), 86400),
    **dict.fromkeys(("w", "week", "weeks"), 7 * 86400),
    # Java's estimated ChronoUnit durations (a year is 365.2425 days, a month a twelfth of it).
    **dict.fromkeys(("month", "months"), 31556952 // 12),
    **dict.fromkeys(("y", "year", "years"), 31556952),
}


def parse_duration(raw: str, default_unit: str) -> timedelta:
    """``<N><unit>`` (James's DurationParser); a bare number is in ``default_unit``. ValueError otherwise."""
    match = _DURATION.fullmatch(raw)
    if match is None:
        raise ValueError(f"The supplied String is not a supported format {raw}")
    unit = match.group(2).lower() or default_unit
    if unit not in _SECONDS:
        raise ValueError(f"Unknown unit: {match.group(2)}")
    try:   # James's DurationParser reads the amount as a long
        amount = parse_integer(match.group(1), 0, JAVA_LONG_MAX)
    except OutOfRange:
        raise ValueError(f"Duration too large: {raw.strip()}") from None
    try:
        return timedelta(seconds=amount * _SECONDS[unit])
    except OverflowError:   # more than 999,999,999 days: no instant is that far from another
        raise ValueError(f"Duration too large: {raw.strip()}") from None


def ago(raw: str, default_unit: str, now: datetime) -> datetime:
    """``now`` minus the duration ``raw`` (``olderThan``, ``updatedBefore`` ...). ValueError for a
    bad duration or one reaching back before year 1, where dates end."""
    duration = parse_duration(raw, default_unit)
    try:
        return now - duration
    except OverflowError:
        raise ValueError(f"Duration too large: {raw.strip()}") from None


def positive_int(raw: str | None, name: str) -> int | None:
    """James's ParametersExtractor: absent or empty -> None; not a number or negative -> 400."""
    if raw is None or raw == "":
        return None
    try:
        value = parse_integer(raw, -JAVA_INT_MAX, JAVA_INT_MAX)
    except NotAnInteger:
        raise WebAdminError(400, f"Can not parse {name}", f'For input string: "{raw}"') from None
    except OutOfRange:   # an int in James
        raise WebAdminError(400, f"Can not parse {name}", f"'{name}' must be at most {JAVA_INT_MAX}") from None
    if value < 0:
        raise WebAdminError(400, f"{name} can not be negative")
    return value


def limit(raw: str | None) -> int | None:
    value = positive_int(raw, "limit")
    if value == 0:
        raise WebAdminError(400, "limit can not be equal to zero")
    return value


def offset(raw: str | None) -> int:
    return positive_int(raw, "offset") or 0


def selector(raw: str | None, name: str, supported: list[str]) -> str:
    """The task selector (``action``, ``task`` ...): compulsory, case-sensitive (TaskFromRequestRegistry)."""
    values = f"Supported values are [{', '.join(supported)}]"
    if raw is None:
        raise bad_request(f"'{name}' query parameter is compulsory. {values}")
    if not raw.strip():
        raise bad_request(f"'{name}' query parameter cannot be empty or blank. {values}")
    if raw not in supported:
        raise bad_request(f"Invalid value supplied for query parameter '{name}': {raw}. {values}")
    return raw


_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)[fFdD]?)")


def positive_double(raw: str | None, name: str) -> float | None:
    """James's ``extractPositiveDouble`` (``Double.valueOf``): absent or empty -> None; not a number or
    negative -> 400."""
    if raw is None or raw == "":
        return None
    text = raw.strip()
    if not _DOUBLE.fullmatch(text):
        raise WebAdminError(400, f"Can not parse {name}", f'For input string: "{raw}"')
    value = float(text.rstrip("fFdD").replace("Infinity", "inf"))
    if value < 0:
        raise WebAdminError(400, f"{name} can not be negative")
    return value
