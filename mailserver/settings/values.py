"""The value types of the settings: one boolean, whole numbers, limits, and James's durations and sizes.

Each parser takes the variable's text and raises ValueError in words that quote it; the area's
``from_env`` prefixes the variable's name (``base.describe``). Values that are not text (defaults,
keyword arguments) pass through.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator

from mailserver.model.james_units import parse_duration, parse_size

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})
_DECIMAL = re.compile(r"[0-9]*\.?[0-9]+")


def parse_boolean(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    word = raw.strip().lower()
    if word in TRUE_WORDS or word in FALSE_WORDS:
        return word in TRUE_WORDS
    raise ValueError(f"{raw!r} is not a boolean (true/false)")


def whole(minimum: int | None = None) -> BeforeValidator:
    def parse(raw: Any) -> Any:
        if not isinstance(raw, str):
            return raw
        value = _integer(raw)
        if minimum is not None and value < minimum:
            raise ValueError(f"must be 0 or more, got {value}" if minimum == 0
                             else f"must be at least {minimum}, got {value}")
        return value
    return BeforeValidator(parse)


def parse_cap(raw: Any) -> Any:
    """A limit: a positive number, or 0 for none (None)."""
    if not isinstance(raw, str):
        return raw
    value = _integer(raw)
    if value < 0:
        raise ValueError(f"{value} is negative (0 lifts the limit)")
    return value or None


def _integer(raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{raw!r} is not an integer") from None


def size(minimum: int = 0) -> BeforeValidator:
    """James's sizes (``26214400``, ``512K``, ``25M``, ``1G``; bytes when no unit)."""
    def parse(raw: Any) -> Any:
        if not isinstance(raw, str):
            return raw
        value = parse_size(raw)   # InvalidSize is a ValueError that quotes the text
        if value < minimum:   # "unlimited", "unknown" or a negative amount: James's values, not a limit here
            raise ValueError(f"{raw!r} is not a size of {minimum} or more bytes")
        return value
    return BeforeValidator(parse)


def duration(bare_unit: str, *, decimal: bool = False) -> BeforeValidator:
    """James's durations (``500ms``, ``30s``, ``2h``, ``1d``); a bare number is in ``bare_unit``.
    ``decimal``: a bare decimal number of that unit is accepted too (``0.5``), as it always was."""
    def parse(raw: Any) -> Any:
        if not isinstance(raw, str):
            return raw
        if decimal and _DECIMAL.fullmatch(raw):
            return float(raw) * parse_duration("1", bare_unit)
        return parse_duration(raw, bare_unit)   # InvalidDuration is a ValueError that quotes the text
    return BeforeValidator(parse)


def one_of(*choices: str) -> BeforeValidator:
    def parse(raw: Any) -> Any:
        if not isinstance(raw, str):
            return raw
        value = raw.lower()
        if value not in choices:
            raise ValueError(f"{value!r} is not one of {', '.join(choices)}")
        return value
    return BeforeValidator(parse)


def comma_list(raw: Any) -> Any:
    """``a, b,c`` -> ``("a", "b", "c")``, empty items dropped."""
    if not isinstance(raw, str):
        return raw
    return tuple(item.strip() for item in raw.split(",") if item.strip())


def _positive(value: timedelta) -> timedelta:
    if value <= timedelta(0):
        raise ValueError("must be strictly positive")
    return value


Flag = Annotated[bool, BeforeValidator(parse_boolean)]
Cap = Annotated[int | None, BeforeValidator(parse_cap)]
CommaList = Annotated[tuple[str, ...], BeforeValidator(comma_list)]
Whole = Annotated[int, whole()]
NonNegative = Annotated[int, whole(0)]
Positive = Annotated[int, whole(1)]
Bytes = Annotated[int, size()]
Milliseconds = Annotated[timedelta, duration("ms")]
Seconds = Annotated[timedelta, duration("seconds")]
DecimalSeconds = Annotated[timedelta, duration("seconds", decimal=True)]
PositiveSeconds = Annotated[timedelta, duration("seconds"), AfterValidator(_positive)]
PositiveDecimalSeconds = Annotated[timedelta, duration("seconds", decimal=True), AfterValidator(_positive)]
Days = Annotated[timedelta, duration("days")]
