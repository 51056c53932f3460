"""Strict reading of decoded JSON for the model's ``from_json`` methods, and James's instant format.

Every error is a ``ValueError`` naming the field, so a caller can turn it into its own error
type (the event bus dead-letters undecodable bodies) without guessing what was wrong.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

_MISSING: Any = object()
# ISO 8601 date-time as James and play-json write or accept it: seconds and fraction optional,
# 'Z' or a numeric offset (absent means UTC). Python's fromisoformat alone also takes dates only.
_INSTANT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)?$")


class Fields:
    """Typed access to one JSON object; ``where`` prefixes every error message."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected a JSON object, got {_kind(data)}")
        self.data, self.where = data, where

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        value = self.data.get(key)
        if value is None:
            if default is _MISSING:
                raise ValueError(f"{self.where}: field '{key}' is missing or null")
            return default
        return value

    def text(self, key: str, default: Any = _MISSING) -> Any:
        value = self.raw(key, default)
        if value is not default and not isinstance(value, str):
            raise ValueError(f"{self.where}: field '{key}' must be a string, got {_kind(value)}")
        return value

    def integer(self, key: str, default: Any = _MISSING) -> Any:
        value = self.raw(key, default)
        if value is not default and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValueError(f"{self.where}: field '{key}' must be an integer, got {_kind(value)}")
        return value

    def boolean(self, key: str, default: Any = _MISSING) -> Any:
        value = self.raw(key, default)
        if value is not default and not isinstance(value, bool):
            raise ValueError(f"{self.where}: field '{key}' must be a boolean, got {_kind(value)}")
        return value

    def obj(self, key: str) -> Fields:
        return Fields(self.raw(key), f"{self.where}.{key}")

    def items(self, key: str) -> list[Any]:
        value = self.raw(key)
        if not isinstance(value, list):
            raise ValueError(f"{self.where}: field '{key}' must be an array, got {_kind(value)}")
        return value

    def texts(self, key: str) -> list[str]:
        values = self.items(key)
        if not all(isinstance(v, str) for v in values):
            raise ValueError(f"{self.where}: field '{key}' must be an array of strings")
        return values

    def uuid(self, key: str) -> uuid.UUID:
        value = self.text(key)
        try:
            return uuid.UUID(value)
        except ValueError:
            raise ValueError(f"{self.where}: field '{key}' is not a UUID: {value!r}") from None

    def instant(self, key: str, default: Any = _MISSING) -> Any:
        value = self.text(key, default)
        return value if value is default else parse_instant(value, f"{self.where}.{key}")


def parse_instant(text: str, where: str = "instant") -> datetime:
    """James's ISO forms, 'Z' or offset, with or without fraction (beyond microseconds truncated)."""
    if not isinstance(text, str) or not _INSTANT.match(text):
        raise ValueError(f"{where}: not an ISO-8601 instant: {text!r}")
    head, sep, rest = text.partition(".")
    if sep:  # Python keeps microseconds: cut nanoseconds before parsing
        digits = len(rest) - len(rest.lstrip("0123456789"))
        text = head + "." + rest[:min(digits, 6)] + rest[digits:]
    return as_utc(datetime.fromisoformat(text))


def format_instant(value: datetime) -> str:
    """Java's ``DateTimeFormatter.ISO_INSTANT``: UTC, 'Z', fraction in groups of three digits, if any."""
    value = as_utc(value)
    text = value.replace(tzinfo=None, microsecond=0).isoformat()
    micros = value.microsecond
    if micros:
        text += f".{micros // 1000:03d}" if micros % 1000 == 0 else f".{micros:06d}"
    return text + "Z"


def whole_milliseconds(value: datetime) -> datetime:
    """Cut to the millisecond, as a Java ``Date`` and a Cassandra ``timestamp`` hold it (time zone kept)."""
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def as_utc(value: datetime) -> datetime:
    """Aware UTC; a naive value (the Cassandra driver returns naive timestamps) is taken as UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
