"""James's durations and sizes: one grammar for WebAdmin, the settings, the Spark jobs and the DAGs.

Durations are ``org.apache.james.util.DurationParser`` (with its ``UnitParser``): an amount, then
optionally a unit in any case, spaces around both. The amount is read as a Java ``int`` and must
not be negative; a bare number is in the caller's default unit (milliseconds unless told). Weeks,
months and years are Java's ``ChronoUnit`` estimates: a week is 7 days, a year 365.2425 days and
a month a twelfth of that (30.436875 days), not 30 days.

Sizes are ``org.apache.james.util.Size``: a Java ``long`` ending with ``B``, ``K``, ``M`` or ``G``
(any case, powers of 1024) or with a digit (then in the default unit), or the words
``unlimited`` (-1) and ``unknown`` (``Long.MIN_VALUE``), any case. Nothing is trimmed.

Where James would go past what Python holds or silently overflow (a duration of more than
999,999,999 days, a size beyond a Java ``long``), the text is refused instead.
"""

from __future__ import annotations

import re
from datetime import timedelta

from mailserver.model.java_numbers import JAVA_INT_MAX, JAVA_LONG_MAX, JAVA_LONG_MIN, OutOfRange, parse_integer

_JAVA_SPACE = "[ \\t\\n\\x0b\\f\\r]*"   # Java's \s is ASCII only; Python's would take any Unicode space
# UnitParser's pattern, the comma of its ``[a-z,A-Z]`` included (such a "unit" is then unknown).
_DURATION = re.compile(f"{_JAVA_SPACE}(-?[0-9]+){_JAVA_SPACE}([a-zA-Z,]*){_JAVA_SPACE}")

_YEAR_MS = 31_556_952_000   # ChronoUnit.YEARS: 365.2425 days
ONE_YEAR = timedelta(milliseconds=_YEAR_MS)   # James's ChronoUnit.YEARS (the vault's default retention)
# DurationParser.Unit: each unit's spellings (matched lower-cased) and its length in milliseconds.
DURATION_UNITS: dict[tuple[str, ...], int] = {
    ("ms", "msec", "msecs"): 1,
    ("s", "sec", "secs", "second", "seconds"): 1000,
    ("m", "min", "mins", "minute", "minutes"): 60_000,
    ("h", "hour", "hours"): 3_600_000,
    ("d", "day", "days"): 86_400_000,
    ("w", "week", "weeks"): 7 * 86_400_000,
    ("month", "months"): _YEAR_MS // 12,   # ChronoUnit.MONTHS: a twelfth of a year, exactly
    ("y", "year", "years"): _YEAR_MS,
}
_UNIT_MS = {spelling: ms for spellings, ms in DURATION_UNITS.items() for spelling in spellings}


def _any_case(word: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" for c in word)


# The same grammar as a JSON-schema pattern (Airflow params): no flags there, so each letter is
# spelled in both cases. It cannot bound the amount: parse_duration still has the last word.
DURATION_PATTERN = (f"^{_JAVA_SPACE}[0-9]+{_JAVA_SPACE}"
                    f"({'|'.join(_any_case(s) for s in sorted(_UNIT_MS, key=len, reverse=True))})?"
                    f"{_JAVA_SPACE}$")


class InvalidDuration(ValueError):
    """``text`` is not a James duration. ``problem`` is one of the constants below; ``unit`` is the
    unknown unit when that is the problem (WebAdmin answers with these, in James's words)."""

    FORMAT, UNIT, NEGATIVE, TOO_LARGE = "format", "unit", "negative", "too large"

    def __init__(self, text: str, problem: str, unit: str = "") -> None:
        self.text, self.problem, self.unit = text, problem, unit
        why = {
            self.FORMAT: "expected a number optionally followed by a unit (e.g. 500ms, 30s, 2h, 1d, 1y)",
            self.UNIT: f"unknown unit {unit!r} (ms, s, m, h, d, w, month, y or their long forms)",
            self.NEGATIVE: "the amount should be positive",
            self.TOO_LARGE: f"too large (at most {JAVA_INT_MAX} of a unit, and 999999999 days)",
        }[problem]
        super().__init__(f"{text!r} is not a duration: {why}")


def unit_milliseconds(unit: str) -> int:
    """The length of a James duration unit (any spelling, any case) in milliseconds; KeyError if unknown."""
    return _UNIT_MS[unit.lower()]


def parse_duration(text: str, default_unit: str = "ms") -> timedelta:
    """``DurationParser.parse(text, defaultUnit)``: ``"2 hours"``, ``"30s"``, ``"1 Month"``; a bare
    number is in ``default_unit`` (a unit spelling: ``"ms"``, ``"seconds"``, ``"days"`` ...).
    Raises InvalidDuration (a ValueError) naming the text."""
    default_ms = unit_milliseconds(default_unit)
    match = _DURATION.fullmatch(text)
    if match is None:
        raise InvalidDuration(text, InvalidDuration.FORMAT)
    amount_text, unit = match.groups()
    try:
        amount = parse_integer(amount_text, -JAVA_INT_MAX - 1, JAVA_INT_MAX)   # Integer.parseInt
    except OutOfRange:
        raise InvalidDuration(text, InvalidDuration.TOO_LARGE) from None
    unit_ms = _UNIT_MS.get(unit.lower()) if unit else default_ms
    if unit_ms is None:
        raise InvalidDuration(text, InvalidDuration.UNIT, unit)
    if amount < 0:
        raise InvalidDuration(text, InvalidDuration.NEGATIVE)
    try:
        return timedelta(milliseconds=amount * unit_ms)
    except OverflowError:   # Java's Duration holds it; no date is that far from another
        raise InvalidDuration(text, InvalidDuration.TOO_LARGE) from None


KIB, MIB, GIB = 1024, 1024**2, 1024**3
UNLIMITED = -1                  # Size.UNLIMITED_VALUE
UNKNOWN = JAVA_LONG_MIN         # Size.UNKNOWN_VALUE
SIZE_UNITS = {"B": 1, "K": KIB, "M": MIB, "G": GIB}


class InvalidSize(ValueError):
    """``text`` is not a James size."""

    def __init__(self, text: str, why: str) -> None:
        self.text = text
        super().__init__(f"{text!r} is not a size: {why}")


def parse_size(text: str, default_unit: str = "B") -> int:
    """``Size.parse(text, defaultUnit).asBytes()``: ``"1024"``, ``"5K"``, ``"25m"``, ``"1G"`` -> bytes;
    ``"unlimited"`` -> UNLIMITED (-1), ``"unknown"`` -> UNKNOWN. A negative amount is a negative
    size, as in James: callers that need a limit refuse it. Raises InvalidSize naming the text."""
    default = SIZE_UNITS[default_unit.upper()]
    if text.lower() == "unlimited":
        return UNLIMITED
    if text.lower() == "unknown":
        return UNKNOWN
    if not text:
        raise InvalidSize(text, "empty")
    last = text[-1]
    if "0" <= last <= "9":
        number, unit = text, default
    elif last.upper() in SIZE_UNITS:
        number, unit = text[:-1], SIZE_UNITS[last.upper()]
    else:
        raise InvalidSize(text, f"no unit corresponding to char {last!r} (B, K, M or G, powers of 1024)")
    try:
        value = parse_integer(number, JAVA_LONG_MIN, JAVA_LONG_MAX)   # Long.parseLong
    except OutOfRange:
        raise InvalidSize(text, "too large") from None
    except ValueError:
        raise InvalidSize(text, "expected a whole number then optionally B, K, M or G (e.g. 512K, 25M)") from None
    if not JAVA_LONG_MIN <= value * unit <= JAVA_LONG_MAX:   # James would overflow silently
        raise InvalidSize(text, "too large")
    return value * unit
