"""``Mailbox/changes`` and ``Email/changes`` (RFC 8620 5.2, RFC 8621 2.2 and 4.3) from the change logs.

As James: a state is unknown (``cannotCalculateChanges``) when nothing at or after it is kept; a
single change larger than ``maxChanges`` cannot be calculated either. ``updatedProperties`` names the
count properties when every mailbox change returned changed counts only, else it is null.
Without ``maxChanges``, James's default of 256; either is capped at ``maxObjectsInGet`` (the client
fetches what it is told changed), and the log is read in pages of that size plus one, so nothing
larger is read whatever the client asks.
"""

from __future__ import annotations

import uuid
from typing import Any

from mailserver.jmap.account import CallContext
from mailserver.jmap.changes.model import CannotCalculateChanges
from mailserver.jmap.changes.repository import ChangeRepository
from mailserver.jmap.errors import MethodError, invalid_arguments
from mailserver.jmap.methods.arguments import only

ARGUMENTS = {"accountId", "sinceState", "maxChanges"}
COUNT_PROPERTIES = ["totalEmails", "unreadEmails", "totalThreads", "unreadThreads"]


def mailbox_changes(arguments: dict[str, Any], context: CallContext) -> dict[str, Any]:
    answer = _changes(arguments, context, context.services.changes.mailboxes)
    count_only = answer.pop("_count_only")
    return {**{k: answer[k] for k in ("accountId", "oldState", "newState", "hasMoreChanges")},
            "updatedProperties": list(COUNT_PROPERTIES) if count_only else None,
            **{k: answer[k] for k in ("created", "updated", "destroyed")}}


def email_changes(arguments: dict[str, Any], context: CallContext) -> dict[str, Any]:
    answer = _changes(arguments, context, context.services.changes.emails)
    answer.pop("_count_only")
    return answer


def _changes(arguments: dict[str, Any], context: CallContext, log: ChangeRepository) -> dict[str, Any]:
    only(arguments, ARGUMENTS)
    account = context.check_account(arguments)
    since_text = arguments.get("sinceState")
    if not isinstance(since_text, str):
        raise invalid_arguments("sinceState must be a state string")
    try:
        since = uuid.UUID(since_text)
    except ValueError:
        raise invalid_arguments(f"sinceState {since_text!r} is not a state of this server") from None
    asked = _max_changes(arguments.get("maxChanges"))
    limit = min(asked if asked is not None else log.default_limit, context.limits.max_objects_in_get)
    try:
        found = log.since(str(context.user), since, limit)
    except CannotCalculateChanges as exc:
        raise MethodError("cannotCalculateChanges", str(exc)) from None
    return {"accountId": account, "oldState": since_text, "newState": str(found.new_state),
            "hasMoreChanges": found.has_more_changes, "created": [str(i) for i in found.created],
            "updated": [str(i) for i in found.updated], "destroyed": [str(i) for i in found.destroyed],
            "_count_only": found.count_changes_only}


def _max_changes(value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise invalid_arguments("maxChanges must be a positive integer")
    return value
