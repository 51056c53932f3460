"""Whole numbers as James's Java types hold them: parsed with their bounds, never converted unbounded.

James reads its admin parameters into ``int`` and ``long`` fields, so a value past the bound is
refused there. Python's ``int()`` has no such bound: it accepts a 10^23 rate, and on a number of
more than 4,300 digits raises its own ``ValueError`` ("Exceeds the limit (4300 digits) for
integer string conversion"), which a route would turn into a 500. Here a decimal is checked
digit by digit against the bound before it is converted, and JSON integers longer than any
Java ``long`` are kept as ``Oversized`` markers, so the caller names the field in its 400.
"""

from __future__ import annotations

import json
import re
from typing import Any

JAVA_INT_MAX = 2**31 - 1
JAVA_INT_MIN = -(2**31)
JAVA_LONG_MAX = 2**63 - 1
JAVA_LONG_MIN = -(2**63)

_DECIMAL = re.compile(r"[+-]?[0-9]+")
# Digits of the longest Java long; a JSON integer with more is never converted.
_LONG_DIGITS = len(str(JAVA_LONG_MAX))


class NotAnInteger(ValueError):
    """Not a decimal whole number (Java's ``NumberFormatException`` for a malformed value)."""


class OutOfRange(ValueError):
    """A whole number past the bounds of its type."""

    def __init__(self, minimum: int, maximum: int) -> None:
        super().__init__(f"must be between {minimum} and {maximum}")
        self.minimum, self.maximum = minimum, maximum


def parse_integer(text: str, minimum: int = JAVA_LONG_MIN, maximum: int = JAVA_LONG_MAX) -> int:
    """``Integer.parseInt`` / ``Long.parseLong`` with explicit bounds: NotAnInteger or OutOfRange."""
    if not _DECIMAL.fullmatch(text):
        raise NotAnInteger(text)
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > max(len(str(abs(minimum))), len(str(abs(maximum)))):
        raise OutOfRange(minimum, maximum)   # too long for the bounds: not worth converting
    value = int(text)
    if not minimum <= value <= maximum:
        raise OutOfRange(minimum, maximum)
    return value


class Oversized:
    """A JSON integer with more digits than any Java ``long`` (kept as text, never converted)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"<a {len(self.text.lstrip('-'))}-digit integer>"


def _json_integer(text: str) -> int | Oversized:
    return Oversized(text) if len(text.lstrip("-")) > _LONG_DIGITS else int(text)


def loads(document: str | bytes) -> Any:
    """``json.loads`` that never converts an integer longer than a Java long (``Oversized`` instead).

    A document nested deeper than the interpreter's stack allows is a ``ValueError`` like any other
    invalid document (``json`` raises RecursionError, which callers would not expect from a body).
    """
    try:
        return json.loads(document, parse_int=_json_integer)
    except RecursionError:
        raise ValueError("JSON document nested too deeply") from None


def is_integer(value: Any) -> bool:
    """A JSON integer of any size (not a boolean), as ``loads`` returns them."""
    return isinstance(value, Oversized) or (isinstance(value, int) and not isinstance(value, bool))


def is_long(value: Any) -> bool:
    """A JSON integer (not a boolean) that fits a Java ``long``."""
    return isinstance(value, int) and not isinstance(value, bool) and JAVA_LONG_MIN <= value <= JAVA_LONG_MAX
