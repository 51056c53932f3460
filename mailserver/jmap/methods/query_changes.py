"""``Mailbox/queryChanges`` and ``Email/queryChanges`` (RFC 8620 5.6): always
``cannotCalculateChanges``, so the client queries again. James answers so for Mailbox/queryChanges
("Naive implementation"); it has no Email/queryChanges (``unknownMethod``), which answers the same
way here: every ``/query`` says ``canCalculateChanges: false``.

The arguments are checked first, as James reads the request before answering.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mailserver.jmap.account import CallContext
from mailserver.jmap.errors import MethodError, invalid_arguments
from mailserver.jmap.methods import email_filter
from mailserver.jmap.methods.arguments import boolean, only, unsigned

ARGUMENTS = {"accountId", "filter", "sort", "sinceQueryState", "maxChanges", "upToId", "calculateTotal"}

Method = Callable[[dict[str, Any], CallContext], dict[str, Any]]


def _query_changes(name: str, check_filter: Callable[[Any], object]) -> Method:
    def answer(arguments: dict[str, Any], context: CallContext) -> dict[str, Any]:
        only(arguments, ARGUMENTS)
        context.check_account(arguments)
        if not isinstance(arguments.get("sinceQueryState"), str):
            raise invalid_arguments("sinceQueryState must be a state string")
        unsigned(arguments, "maxChanges", None)
        boolean(arguments, "calculateTotal")
        if arguments.get("upToId") is not None and not isinstance(arguments["upToId"], str):
            raise invalid_arguments("upToId must be an id")
        check_filter(arguments.get("filter"))
        raise MethodError("cannotCalculateChanges", f"Naive implementation for {name}")

    return answer


def _any_filter(value: Any) -> object:
    if value is not None and not isinstance(value, dict):
        raise invalid_arguments("filter must be an object")
    return value


mailbox_query_changes = _query_changes("Mailbox/queryChanges", _any_filter)
email_query_changes = _query_changes("Email/queryChanges", email_filter.parse)
