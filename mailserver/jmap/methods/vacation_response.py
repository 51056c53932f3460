"""``VacationResponse/get`` and ``/set`` (RFC 8621 8) on the ``VacationRepository``, as James serves
them: one object per account (stored under the username, as WebAdmin's ``/vacation/{user}``), id
``singleton``; ``create`` and ``destroy`` refused for it, ``update``
a patch of its properties. Its state never changes (James answers its initial state constant).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from mailserver.jmap.account import CallContext
from mailserver.jmap.changes.model import INITIAL
from mailserver.jmap.errors import MethodError, invalid_arguments
from mailserver.jmap.methods.arguments import (
    PROPERTIES_DO_NOT_EXIST,
    check_get_size,
    is_id,
    only,
    properties,
    set_objects,
)
from mailserver.jmap.methods.email_headers import utc_date
from mailserver.vacation.api import Vacation, VacationRepository

SINGLETON = "singleton"
STATE = str(INITIAL)
PROPERTIES = ("id", "isEnabled", "fromDate", "toDate", "subject", "textBody", "htmlBody")
# JMAP property -> Vacation field; ``id`` is server-set.
FIELDS = {"isEnabled": "enabled", "fromDate": "from_date", "toDate": "to_date", "subject": "subject",
          "textBody": "text_body", "htmlBody": "html_body"}


def repository(context: CallContext) -> VacationRepository:
    vacations = context.services.vacations
    if vacations is None:
        raise MethodError("unknownMethod", "this server offers no VacationResponse")
    return vacations


def as_jmap(vacation: Vacation) -> dict[str, Any]:
    """Fields not set are left out, as James writes them."""
    body: dict[str, Any] = {"id": SINGLETON, "isEnabled": vacation.enabled}
    for name, field in FIELDS.items():
        value = getattr(vacation, field)
        if name != "isEnabled" and value is not None:
            body[name] = utc_date(value) if isinstance(value, datetime) else value
    return body


def get(arguments: dict[str, Any], context: CallContext) -> dict[str, Any]:
    only(arguments, {"accountId", "ids", "properties"})
    account = context.check_account(arguments)
    vacations = repository(context)
    ids = arguments.get("ids")
    if ids is not None and (not isinstance(ids, list) or not all(is_id(i) for i in ids)):
        raise invalid_arguments("ids must be null or an array of ids")
    wanted = properties(arguments, PROPERTIES, PROPERTIES, unknown_message=PROPERTIES_DO_NOT_EXIST)
    check_get_size(ids, 1, context.limits.max_objects_in_get)
    found = ids is None or SINGLETON in ids
    shown = {"id", *wanted}
    listed = [{k: v for k, v in as_jmap(vacations.get(str(context.user))).items() if k in shown}] if found else []
    return {"accountId": account, "state": STATE, "list": listed,
            "notFound": [i for i in dict.fromkeys(ids) if i != SINGLETON] if ids else []}


def set_(arguments: dict[str, Any], context: CallContext) -> dict[str, Any]:
    only(arguments, {"accountId", "ifInState", "create", "update", "destroy"})
    account = context.check_account(arguments)
    vacations = repository(context)
    create, update, destroy = set_objects(arguments, context.limits.max_objects_in_set)
    expected = arguments.get("ifInState")
    if expected is not None and expected != STATE:
        raise MethodError("stateMismatch", f"the state is {STATE}, not {expected}")
    answer: dict[str, Any] = {"accountId": account, "newState": STATE}
    updated: dict[str, Any] = {}
    not_updated: dict[str, Any] = {}
    for id_, patch in update.items():
        try:
            vacations.modify(str(context.user), vacation_patch(id_, patch))
        except ValueError as refused:
            not_updated[id_] = _refusal(str(refused))
        else:
            updated[id_] = {}
    if updated:
        answer["updated"] = updated
    if not_updated:
        answer["notUpdated"] = not_updated
    if create:
        answer["notCreated"] = {c: _refusal("'create' is not supported on singleton objects") for c in create}
    if destroy:
        answer["notDestroyed"] = {d: _refusal("'destroy' is not supported on singleton objects") for d in destroy}
    return answer


def _refusal(description: str) -> dict[str, str]:
    """James's ``VacationResponseSetError``: no ``properties``, the type spelled as the method error's."""
    return {"type": "invalidArguments", "description": description}


def vacation_patch(id_: str, patch: Mapping[str, Any]) -> dict[str, object]:
    """A PatchObject read as James's ``VacationResponsePatchObject``: null removes a field; any
    mistake refuses the whole patch (ValueError, its message James's description)."""
    if id_ != SINGLETON:
        raise ValueError(f"id {id_} must be singleton")
    changes: dict[str, object] = {}
    for name, value in patch.items():
        if name == "id":
            raise ValueError("id is server-set thus cannot be changed")
        if name not in FIELDS:
            raise ValueError(f"{name} is an unknown property")
        changes[FIELDS[name]] = _value(name, value)
    start, end = changes.get("from_date"), changes.get("to_date")
    if isinstance(start, datetime) and isinstance(end, datetime) and start > end:
        raise ValueError("fromDate must be older than toDate")
    return changes


def _value(name: str, value: Any) -> object:
    if value is None:
        return None
    if name == "isEnabled":
        if not isinstance(value, bool):
            raise ValueError("isEnabled must be a boolean")
        return value
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string")
    if name in ("fromDate", "toDate"):
        return _zoned(name, value)
    return value


def _zoned(name: str, value: str) -> datetime:
    """ISO 8601 with an offset (``Z`` or ``+02:00``): the offset is kept, as James's ZonedDateTime."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{name}: Text '{value}' could not be parsed") from None
    if moment.tzinfo is None:
        raise ValueError(f"{name}: Text '{value}' has no offset")
    return moment
