"""James's vault query: ``{"combinator": "and", "criteria": [...], "limit": n}`` or one criterion.

The pairs of field and operator accepted, and how values are parsed, are James's
``QueryTranslator``; a message lacking a field (no subject, the null sender) never matches a
criterion on it. ``InvalidQuery`` is what WebAdmin answers 400 for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from typing import Any

from mailserver.model.address import InvalidAddress, MailAddress
from mailserver.model.ids import MailboxId
from mailserver.model.java_numbers import JAVA_LONG_MAX, is_integer, is_long
from mailserver.vault.model import DeletedMessage, parse_zoned

Predicate = Callable[[DeletedMessage], bool]


class InvalidQuery(ValueError):
    pass


@dataclass(frozen=True)
class Criterion:
    field_name: str
    operator: str
    value: str
    matches: Predicate

    def to_json(self) -> dict[str, str]:
        return {"fieldName": self.field_name, "operator": self.operator, "value": self.value}


@dataclass(frozen=True)
class Query:
    criteria: tuple[Criterion, ...] = ()
    limit: int | None = None

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit <= 0:
            raise InvalidQuery("Limit should be strictly positive")

    def matches(self, message: DeletedMessage) -> bool:
        return all(c.matches(message) for c in self.criteria)

    def filter(self, messages: Iterable[DeletedMessage]) -> Iterator[DeletedMessage]:
        matching = (m for m in messages if self.matches(m))
        return islice(matching, self.limit) if self.limit is not None else matching

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"combinator": "and", "criteria": [c.to_json() for c in self.criteria]}
        if self.limit is not None:
            body["limit"] = self.limit
        return body

    @classmethod
    def parse(cls, body: Any) -> Query:
        """A query from its JSON (already decoded); InvalidQuery when James would refuse it."""
        if not isinstance(body, dict):
            raise InvalidQuery("the query must be a JSON object")
        if "combinator" not in body and "criteria" not in body:
            return cls((criterion(body),))
        combinator = body.get("combinator")
        if combinator is not None and combinator != "and":
            raise InvalidQuery(f"combinator '{combinator}' is not yet handled")
        items = body.get("criteria") or []
        if not isinstance(items, list):
            raise InvalidQuery("'criteria' must be a list")
        if any(isinstance(i, dict) and ("combinator" in i or "criteria" in i) for i in items):
            raise InvalidQuery("nested query structure is not yet handled")
        limit = body.get("limit")
        if is_integer(limit) and not is_long(limit):   # a Long in James
            raise InvalidQuery(f"limit must be at most {JAVA_LONG_MAX}")
        if limit is not None and not is_long(limit):
            raise InvalidQuery(f"limit must be an integer, got {limit!r}")
        return cls(tuple(criterion(i) for i in items), limit)


def _address(raw: str) -> MailAddress:
    try:
        return MailAddress.of(raw)
    except InvalidAddress as exc:
        raise InvalidQuery(f"mailAddress({raw}) parsing got error: {exc}") from exc


def _date(raw: str) -> datetime:
    try:
        return parse_zoned(raw)
    except ValueError as exc:
        raise InvalidQuery(f"'{raw}' is not an ISO-8601 date with an offset") from exc


def _mailbox_id(raw: str) -> MailboxId:
    try:
        return MailboxId.of(raw)
    except ValueError as exc:
        raise InvalidQuery(f"'{raw}' is not a mailbox id") from exc


def _subject(op: Callable[[str, str], bool]) -> Callable[[str], Predicate]:
    return lambda expected: lambda m: m.subject is not None and op(m.subject, expected)


def _before(field: str) -> Callable[[str], Predicate]:
    def build(raw: str) -> Predicate:
        bound = _date(raw)
        return lambda m: getattr(m, field) <= bound
    return build


def _after(field: str) -> Callable[[str], Predicate]:
    def build(raw: str) -> Predicate:
        bound = _date(raw)
        return lambda m: getattr(m, field) >= bound
    return build


def _recipient(raw: str) -> Predicate:
    address = _address(raw)
    return lambda m: address in m.recipients


def _sender(raw: str) -> Predicate:
    address = _address(raw)
    return lambda m: m.sender == address


def _has_attachment(raw: str) -> Predicate:
    expected = raw.strip().lower() == "true"   # Java's Boolean.valueOf: anything else is false
    return lambda m: m.has_attachment == expected


def _origin(raw: str) -> Predicate:
    mailbox_id = _mailbox_id(raw)
    return lambda m: mailbox_id in m.origin_mailboxes


_REGISTRY: dict[tuple[str, str], Callable[[str], Predicate]] = {
    ("deletionDate", "beforeOrEquals"): _before("deletion_date"),
    ("deletionDate", "afterOrEquals"): _after("deletion_date"),
    ("deliveryDate", "beforeOrEquals"): _before("delivery_date"),
    ("deliveryDate", "afterOrEquals"): _after("delivery_date"),
    ("recipients", "contains"): _recipient,
    ("sender", "equals"): _sender,
    ("hasAttachment", "equals"): _has_attachment,
    ("originMailboxes", "contains"): _origin,
    ("subject", "equals"): _subject(lambda value, expected: value == expected),
    ("subject", "equalsIgnoreCase"): _subject(lambda value, expected: value.lower() == expected.lower()),
    ("subject", "contains"): _subject(lambda value, expected: expected in value),
    ("subject", "containsIgnoreCase"): _subject(lambda value, expected: expected.lower() in value.lower()),
    ("messageId", "equals"): lambda expected: lambda m: str(m.message_id) == expected,
}
FIELDS = tuple(dict.fromkeys(f for f, _ in _REGISTRY))
OPERATORS = ("equals", "equalsIgnoreCase", "contains", "containsIgnoreCase", "beforeOrEquals", "afterOrEquals")


def criterion(body: Any) -> Criterion:
    if not isinstance(body, dict):
        raise InvalidQuery("a criterion must be a JSON object")
    field_name, operator, value = body.get("fieldName"), body.get("operator"), body.get("value")
    if field_name not in FIELDS:
        raise InvalidQuery(f"fieldName: '{field_name}' is not supported")
    if operator not in OPERATORS:
        raise InvalidQuery(f"operator: '{operator}' is not supported")
    build = _REGISTRY.get((field_name, operator))
    if build is None:
        raise InvalidQuery(f"pair of fieldName: '{field_name}' and operator: '{operator}' is not supported")
    if not isinstance(value, str):
        raise InvalidQuery(f"value of '{field_name}' must be a string, got {value!r}")
    return Criterion(field_name, operator, value, build(value))
