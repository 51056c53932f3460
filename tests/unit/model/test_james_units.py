"""James's durations and sizes: the examples of James's DurationParserTest and SizeTest, and the edges
of their grammar (case, Java's ASCII spaces, int/long bounds, ChronoUnit's week, month and year)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from mailserver.model.james_units import (
    DURATION_PATTERN,
    UNKNOWN,
    UNLIMITED,
    InvalidDuration,
    InvalidSize,
    parse_duration,
    parse_size,
)

YEAR = timedelta(seconds=31556952)   # ChronoUnit.YEARS.getDuration(): 365.2425 days

ACCEPTED_DURATIONS = [
    # DurationParserTest: default unit, specified default unit, spaces
    ("2", "ms", timedelta(milliseconds=2)),
    ("2", "seconds", timedelta(seconds=2)),
    ("2 minutes", "seconds", timedelta(minutes=2)),
    ("  2 minutes", "ms", timedelta(minutes=2)),
    ("2 minutes  ", "ms", timedelta(minutes=2)),
    ("0 s", "ms", timedelta(0)),
    # each unit's spellings, in James's test order
    *[(text, "ms", timedelta(milliseconds=2)) for text in ("2ms", "2 ms", "2 msec", "2 msecs", "2 Ms")],
    *[(text, "ms", timedelta(seconds=2)) for text in ("2s", "2 s", "2 sec", "2 Sec", "2 second", "2 seconds",
                                                      "2 secs")],
    *[(text, "ms", timedelta(minutes=2)) for text in ("2m", "2 m", "2 min", "2 mins", "2 minute", "2 Minute",
                                                      "2 minutes")],
    *[(text, "ms", timedelta(hours=2)) for text in ("2h", "2 h", "2 hour", "2 Hour", "2 hours")],
    *[(text, "ms", timedelta(days=2)) for text in ("2d", "2 d", "2 day", "2 Day", "2 days")],
    *[(text, "ms", timedelta(weeks=2)) for text in ("2w", "2 w", "2 week", "2 Week", "2 weeks")],
    *[(text, "ms", 2 * YEAR / 12) for text in ("2months", "2 months", "2 month", "2 Month")],
    *[(text, "ms", 2 * YEAR) for text in ("2y", "2 y", "2 year", "2 Year", "2 years")],
    # edges: any case, Java's whitespace, the int bound, a month is not 30 days
    ("5 MINUTES", "ms", timedelta(minutes=5)),
    ("\t3\nd\r", "ms", timedelta(days=3)),
    ("1 month", "ms", timedelta(seconds=2629746)),
    ("2147483647", "ms", timedelta(milliseconds=2147483647)),
    ("2147483647 s", "ms", timedelta(seconds=2147483647)),
    ("-0", "ms", timedelta(0)),
    ("007", "days", timedelta(days=7)),
]


@pytest.mark.parametrize(("text", "default_unit", "expected"), ACCEPTED_DURATIONS)
def test_accepted_durations(text, default_unit, expected):
    assert parse_duration(text, default_unit) == expected


REFUSED_DURATIONS = [
    ("2 unknown", InvalidDuration.UNIT),
    ("seconds", InvalidDuration.FORMAT),
    (" seconds", InvalidDuration.FORMAT),
    ("", InvalidDuration.FORMAT),
    ("illegal pattern", InvalidDuration.FORMAT),
    ("-2 minutes", InvalidDuration.NEGATIVE),
    ("-1", InvalidDuration.NEGATIVE),
    # not James's spellings, though other parsers took them
    ("2 milliseconds", InvalidDuration.UNIT),
    ("2 millis", InvalidDuration.UNIT),
    ("2 hr", InvalidDuration.UNIT),
    ("2 yr", InvalidDuration.UNIT),
    ("2,s", InvalidDuration.UNIT),
    ("1.5h", InvalidDuration.FORMAT),
    ("2 h 30 m", InvalidDuration.FORMAT),
    ("\u00a02s", InvalidDuration.FORMAT),        # a no-break space is not Java's \s
    ("\u0663s", InvalidDuration.FORMAT),         # nor an Arabic-Indic digit [0-9]
    ("2147483648", InvalidDuration.TOO_LARGE),   # Integer.parseInt
    ("9" * 30, InvalidDuration.TOO_LARGE),
    ("2147483647 years", InvalidDuration.TOO_LARGE),   # past what a timedelta holds
]


@pytest.mark.parametrize(("text", "problem"), REFUSED_DURATIONS)
def test_refused_durations_name_the_text(text, problem):
    with pytest.raises(InvalidDuration) as caught:
        parse_duration(text)
    assert caught.value.problem == problem
    assert isinstance(caught.value, ValueError) and repr(text) in str(caught.value)


def test_the_unknown_unit_is_told():
    with pytest.raises(InvalidDuration, match="unknown unit 'fortnights'") as caught:
        parse_duration("3 fortnights")
    assert caught.value.unit == "fortnights"


def test_an_unknown_default_unit_is_a_programming_error():
    with pytest.raises(KeyError):
        parse_duration("3", "fortnights")


@pytest.mark.parametrize(("text", "accepted"), [
    *[(text, True) for text, _, _ in ACCEPTED_DURATIONS if not text.startswith("-")],
    *[(text, False) for text, problem in REFUSED_DURATIONS if problem != InvalidDuration.TOO_LARGE],
])
def test_the_json_schema_pattern_is_the_same_grammar(text, accepted):
    # The DAG forms' pattern; Airflow validates it with Python's re (jsonschema), as here.
    assert bool(re.search(DURATION_PATTERN, text)) is accepted


ACCEPTED_SIZES = [
    # SizeTest
    ("1024", "B", 1024),
    ("10", "K", 10240),
    ("1024B", "B", 1024),
    ("5K", "B", 5 * 1024),
    ("5M", "B", 5 * 1024 * 1024),
    ("5M", "K", 5 * 1024 * 1024),
    ("1G", "B", 1024**3),
    ("unknown", "B", UNKNOWN),
    ("unlimited", "B", UNLIMITED),
    # edges: any case, Long.parseLong's sign, James's negative sizes
    ("25m", "B", 25 * 1024**2),
    ("512k", "B", 512 * 1024),
    ("2g", "B", 2 * 1024**3),
    ("7b", "B", 7),
    ("UNLIMITED", "B", -1),
    ("Unknown", "B", -(2**63)),
    ("+5", "B", 5),
    ("-5K", "B", -5120),
    ("-1", "B", -1),
    ("0", "K", 0),
    ("8589934591G", "B", (2**33 - 1) * 1024**3),
]


@pytest.mark.parametrize(("text", "default_unit", "expected"), ACCEPTED_SIZES)
def test_accepted_sizes(text, default_unit, expected):
    assert parse_size(text, default_unit) == expected


@pytest.mark.parametrize("text", [
    "42T",            # SizeTest: bad unit
    "42RG",           # SizeTest: wrong number
    "", "K", "-", "25mb", "25MiB", "25 M", " 25M", "25M ", "1.5G", "2^10",
    "\u0663K",        # Long.parseLong would read it; refused here ([0-9] only)
    "9223372036854775808",   # past a Java long
    "8589934592G",           # in bytes past a Java long (James overflows silently)
])
def test_refused_sizes_name_the_text(text):
    with pytest.raises(InvalidSize) as caught:
        parse_size(text)
    assert isinstance(caught.value, ValueError) and repr(text) in str(caught.value)
