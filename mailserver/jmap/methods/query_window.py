"""What every ``/query`` shares (RFC 8620 5.5): the window (position, negative from the end, and limit)
and the simple filter."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mailserver.jmap.errors import MethodError, invalid_arguments
from mailserver.jmap.methods.arguments import boolean, integer, unsigned


def window(ids: list[str], arguments: dict[str, Any], query_state: str, account_id: str) -> dict[str, Any]:
    position = integer(arguments, "position", 0)
    limit = unsigned(arguments, "limit", None)
    anchor = arguments.get("anchor")
    if anchor is not None:   # the anchor's index plus anchorOffset, and position is ignored
        if not isinstance(anchor, str):
            raise invalid_arguments("anchor must be an id")
        if anchor not in ids:
            raise MethodError("anchorNotFound")
        position = max(0, ids.index(anchor) + integer(arguments, "anchorOffset", 0))
    elif position < 0:
        position = max(0, len(ids) + position)
    selected = ids[position:] if limit is None else ids[position:position + limit]
    answer: dict[str, Any] = {"accountId": account_id, "queryState": query_state, "canCalculateChanges": False,
                              "position": position, "ids": selected}
    if boolean(arguments, "calculateTotal"):
        answer["total"] = len(ids)
    if limit is not None:
        answer["limit"] = limit
    return answer


def simple_filter(value: Any, supported: Iterable[str]) -> dict[str, Any]:
    """A ``/query`` filter that is one FilterCondition of ``supported`` properties (no operators):
    anything else is ``unsupportedFilter`` (RFC 8620 5.5)."""
    supported = set(supported)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid_arguments("filter must be an object")
    if "operator" in value or set(value) - supported:
        raise MethodError("unsupportedFilter", f"supported conditions: {', '.join(sorted(supported))}")
    return value
