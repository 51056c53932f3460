"""James's parameter parsing: durations, positive integers, task selectors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mailserver.webadmin.errors import WebAdminError
from mailserver.webadmin.routes import params


@pytest.mark.parametrize(("raw", "unit", "expected"), [
    ("30", "seconds", timedelta(seconds=30)),
    ("2d", "seconds", timedelta(days=2)),
    (" 5 MINUTES ", "seconds", timedelta(minutes=5)),
    ("100ms", "days", timedelta(milliseconds=100)),
    ("1", "days", timedelta(days=1)),
    ("2w", "seconds", timedelta(weeks=2)),
    ("1y", "seconds", timedelta(seconds=31556952)),
    ("1month", "seconds", timedelta(seconds=2629746)),
    ("3h", "seconds", timedelta(hours=3)),
])
def test_durations(raw, unit, expected):
    assert params.parse_duration(raw, unit) == expected


@pytest.mark.parametrize(("raw", "message"), [
    ("-1", "The supplied String is not a supported format -1"),
    ("abc", "The supplied String is not a supported format abc"),
    ("1 parsec", "Unknown unit: parsec"),
    ("", "The supplied String is not a supported format "),
])
def test_invalid_durations(raw, message):
    with pytest.raises(ValueError) as caught:
        params.parse_duration(raw, "seconds")
    assert str(caught.value) == message


@pytest.mark.parametrize("raw", ["999999999999999999999999999999", "99999999999999999999 years"])
def test_a_duration_past_any_date_is_invalid_not_an_overflow(raw):
    # Found by the WebAdmin fuzz run: DELETE /tasks?olderThan=<30 nines> answered 500 (OverflowError).
    with pytest.raises(ValueError, match="Duration too large"):
        params.parse_duration(raw, "seconds")
    with pytest.raises(ValueError, match="Duration too large"):
        params.ago(raw, "seconds", datetime.now(UTC))


def test_ago_reaching_before_year_one_is_invalid():
    # A valid timedelta (999,999,999 days at most) can still lead before the first date.
    with pytest.raises(ValueError, match="Duration too large: 5000 years"):
        params.ago("5000 years", "days", datetime.now(UTC))
    now = datetime.now(UTC)
    assert params.ago("2d", "seconds", now) == now - timedelta(days=2)


def test_positive_integers():
    assert params.limit(None) is None and params.limit("") is None and params.limit("5") == 5
    assert params.offset(None) == 0 and params.offset("3") == 3
    for raw, message in (("abc", "Can not parse limit"), ("-2", "limit can not be negative"),
                         ("0", "limit can not be equal to zero"), ("1.5", "Can not parse limit"),
                         ("99999999999", "Can not parse limit")):
        with pytest.raises(WebAdminError) as caught:
            params.limit(raw)
        assert (caught.value.status, caught.value.message) == (400, message)


def test_selectors():
    assert params.selector("reprocess", "action", ["reprocess"]) == "reprocess"
    cases = [(None, "'action' query parameter is compulsory. Supported values are [a, b]"),
             (" ", "'action' query parameter cannot be empty or blank. Supported values are [a, b]"),
             ("A", "Invalid value supplied for query parameter 'action': A. Supported values are [a, b]")]
    for raw, details in cases:
        with pytest.raises(WebAdminError) as caught:
            params.selector(raw, "action", ["a", "b"])
        assert (caught.value.status, caught.value.type, caught.value.details) == (400, "InvalidArgument", details)
        assert caught.value.message == "Invalid arguments supplied in the user request"
