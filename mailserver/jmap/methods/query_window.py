"""The ``/query`` window (RFC 8620 5.5): position (negative counts from the end) and limit."""

from __future__ import annotations

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
