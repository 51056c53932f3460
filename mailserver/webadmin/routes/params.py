"""James's query-parameter parsing: durations, positive integers, task selectors (reference §1.4, §3.1).

Each parser raises ``WebAdminError`` with the message James answers, so routes stay one-liners
and scripts matching on ``message``/``details`` keep working.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from mailserver.model import james_units
from mailserver.model.james_units import InvalidDuration
from mailserver.model.java_numbers import JAVA_INT_MAX, NotAnInteger, OutOfRange, parse_integer
from mailserver.webadmin.errors import WebAdminError, bad_request


def parse_duration(raw: str, default_unit: str) -> timedelta:
    """James's DurationParser (``model.james_units``); a bare number is in ``default_unit``. The
    ValueError carries the message WebAdmin answers in ``details``."""
    try:
        return james_units.parse_duration(raw, default_unit)
    except InvalidDuration as exc:
        if exc.problem == InvalidDuration.UNIT:
            raise ValueError(f"Unknown unit: {exc.unit}") from None
        if exc.problem == InvalidDuration.TOO_LARGE:
            raise ValueError(f"Duration too large: {raw.strip()}") from None
        raise ValueError(f"The supplied String is not a supported format {raw}") from None


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
