"""``Email/query`` filters (RFC 8621 4.4.1): FilterConditions and AND / OR / NOT operators.

Conditions on what the message rows hold (mailboxes, dates, sizes, keywords) are evaluated over
them (``holds``); text conditions (``text``, addresses, ``subject``, ``body``, ``header``) and
``hasAttachment`` need the search index (``email_search``). Thread keyword conditions are
``unsupportedFilter``, as in James.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mailserver.jmap.errors import MethodError, invalid_arguments
from mailserver.jmap.methods.email_headers import as_utc
from mailserver.jmap.methods.keywords import keywords_of
from mailserver.jmap.methods.user_messages import UserEmail

ROWS = frozenset({"inMailbox", "inMailboxOtherThan", "before", "after", "minSize", "maxSize", "hasKeyword",
                  "notKeyword"})
TEXT = frozenset({"text", "from", "to", "cc", "bcc", "subject", "body"})
INDEXED = TEXT | {"header", "hasAttachment"}
OPERATORS = frozenset({"AND", "OR", "NOT"})
MAX_DEPTH = 16


@dataclass(frozen=True)
class Operator:
    operator: str
    conditions: tuple[Filter, ...]


Condition = dict[str, Any]
Filter = Operator | Condition


def parse(value: Any, depth: int = 0) -> Filter | None:
    """The filter, checked; dates read as datetimes. ``None`` when there is none."""
    if value is None and depth == 0:
        return None
    if not isinstance(value, dict):
        raise invalid_arguments("a filter is a FilterOperator or a FilterCondition object")
    if depth > MAX_DEPTH:
        raise invalid_arguments(f"filters nest at most {MAX_DEPTH} levels")
    if "operator" in value:
        return _operator(value, depth)
    unsupported = sorted(set(value) - ROWS - INDEXED)
    if unsupported:
        raise MethodError("unsupportedFilter", f"unsupported filter conditions: {', '.join(unsupported)}")
    return _condition(value)


def _operator(value: dict[str, Any], depth: int) -> Operator:
    if set(value) != {"operator", "conditions"} or value["operator"] not in OPERATORS:
        raise invalid_arguments("a FilterOperator is {operator: AND | OR | NOT, conditions}")
    if not isinstance(value["conditions"], list):
        raise invalid_arguments("conditions must be an array of filters")
    return Operator(value["operator"], tuple(parse(c, depth + 1) or {} for c in value["conditions"]))


def _condition(value: dict[str, Any]) -> Condition:
    condition = dict(value)
    if "inMailbox" in value and not isinstance(value["inMailbox"], str):
        raise invalid_arguments("inMailbox must be a mailbox id")
    other = value.get("inMailboxOtherThan", [])
    if not isinstance(other, list) or not all(isinstance(i, str) for i in other):
        raise invalid_arguments("inMailboxOtherThan must be an array of mailbox ids")
    for name in ("before", "after"):
        if name in value:
            condition[name] = _utc(value[name], name)
    for name in ("minSize", "maxSize"):
        if name in value and (not isinstance(value[name], int) or isinstance(value[name], bool) or value[name] < 0):
            raise invalid_arguments(f"{name} must be an unsigned integer")
    for name in ("hasKeyword", "notKeyword"):
        if name in value and not isinstance(value[name], str):
            raise invalid_arguments(f"{name} must be a keyword")
    for name in TEXT & set(value):
        if not isinstance(value[name], str) or not value[name].strip():
            raise invalid_arguments(f"{name} must be a non-blank string")
    header = value.get("header", ["x"])
    if (not isinstance(header, list) or len(header) not in (1, 2) or not all(isinstance(h, str) for h in header)
            or not header[0] or (len(header) == 2 and not header[1].strip())):
        raise invalid_arguments("header must be [name] or [name, value]")
    if "hasAttachment" in value and not isinstance(value["hasAttachment"], bool):
        raise invalid_arguments("hasAttachment must be a boolean")
    return condition


def _utc(value: Any, name: str) -> datetime:
    if not isinstance(value, str) or not value.endswith("Z"):
        raise invalid_arguments(f"{name} must be a UTCDate")
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise invalid_arguments(f"{name} must be a UTCDate") from None


def conditions(filter_: Filter) -> Iterator[Condition]:
    if isinstance(filter_, Operator):
        for child in filter_.conditions:
            yield from conditions(child)
    else:
        yield filter_


def needs_index(filter_: Filter) -> bool:
    return any(set(c) & INDEXED for c in conditions(filter_))


def only_mailbox(filter_: Filter | None) -> str | None:
    """The one mailbox every match is in, when the filter says so at its top: a condition, or an AND
    holding one (so only that mailbox's rows are read)."""
    tops = filter_.conditions if isinstance(filter_, Operator) and filter_.operator == "AND" else (filter_,)
    found = [c["inMailbox"] for c in tops if isinstance(c, dict) and "inMailbox" in c]
    return found[0] if len(set(found)) == 1 else None


def holds(filter_: Filter | None, email: UserEmail) -> bool:
    """Whether the email matches a filter of row conditions only."""
    if filter_ is None:
        return True
    if isinstance(filter_, Operator):
        results = (holds(c, email) for c in filter_.conditions)
        if filter_.operator == "AND":
            return all(results)
        if filter_.operator == "OR":
            return any(results)
        return not any(results)
    first = email.first
    received = as_utc(first.internal_date)
    keywords = keywords_of(email.flags)
    held = {str(c.mailbox_id) for c in email.copies}
    checks = {
        "inMailbox": lambda v: v in held,
        "inMailboxOtherThan": lambda v: bool(held - set(v)),
        "before": lambda v: received < v,
        "after": lambda v: received >= v,
        "minSize": lambda v: first.size >= v,
        "maxSize": lambda v: first.size < v,
        "hasKeyword": lambda v: v.lower() in keywords,
        "notKeyword": lambda v: v.lower() not in keywords,
    }
    return all(checks[name](value) for name, value in filter_.items())
