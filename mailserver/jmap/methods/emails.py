"""``Email/get`` and ``Email/query`` (RFC 8621 4.2, 4.4) over the mailbox manager.

Metadata (ids, mailboxes, keywords, size, dates) comes from the message rows; header properties
from the header blob alone; preview and hasAttachment from the fast view projection, computed
and stored when its row is missing; body parts and values from the whole message, read only when
asked for.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mailserver.jmap.account import CallContext
from mailserver.jmap.errors import MethodError, invalid_arguments
from mailserver.jmap.methods.arguments import boolean, check_get_size, only, optional_ids, properties, unsigned
from mailserver.jmap.methods.email_body import PART_PROPERTIES, Part, body_value, structure
from mailserver.jmap.methods.email_headers import HEADER_PROPERTIES, as_utc, header_properties, parse_header, utc_date
from mailserver.jmap.methods.keywords import keywords_of
from mailserver.jmap.methods.query_window import simple_filter, window
from mailserver.jmap.methods.states import email_state
from mailserver.jmap.methods.user_messages import UserEmail, UserMessages
from mailserver.mailbox.content import preview
from mailserver.model.mailbox import Mailbox

METADATA = ("id", "blobId", "threadId", "mailboxIds", "keywords", "size", "receivedAt")
FAST_VIEW = ("preview", "hasAttachment")
BODY = ("bodyValues", "textBody", "htmlBody", "attachments")
PROPERTIES = (*METADATA, *sorted(HEADER_PROPERTIES), *FAST_VIEW, *BODY)
DEFAULT_PROPERTIES = PROPERTIES
GET_ARGUMENTS = {"accountId", "ids", "properties", "bodyProperties", "fetchTextBodyValues", "fetchHTMLBodyValues",
                 "fetchAllBodyValues", "maxBodyValueBytes"}
QUERY_ARGUMENTS = {"accountId", "filter", "sort", "position", "anchor", "anchorOffset", "limit", "calculateTotal",
                   "collapseThreads"}
FILTERS = frozenset({"inMailbox", "inMailboxOtherThan", "before", "after", "minSize", "maxSize", "hasKeyword",
                     "notKeyword"})


def get(arguments: dict[str, Any], context: CallContext) -> dict[str, Any]:
    only(arguments, GET_ARGUMENTS)
    account = context.check_account(arguments)
    ids = optional_ids(arguments)
    if ids is not None:   # creation ids of this request (RFC 8620 5.3) read as the ids they created
        ids = [context.resolve_id(i) for i in ids]
    wanted = properties(arguments, PROPERTIES, DEFAULT_PROPERTIES)
    part_properties = properties(arguments, PART_PROPERTIES, PART_PROPERTIES, "bodyProperties")
    fetch = _BodyValues(arguments)
    messages = UserMessages(context.services.manager, context.user)
    if ids is None:
        everything = messages.in_mailboxes(list(messages.mailboxes.values()))
        check_get_size(None, len(everything), context.limits.max_objects_in_get)
        found = {e.id: e for e in everything}
        asked = list(found)
    else:
        check_get_size(ids, 0, context.limits.max_objects_in_get)
        asked = list(dict.fromkeys(ids))
        found = {i: e for i in asked if (e := messages.find(i)) is not None}
    reader = _EmailReader(context, set(wanted) | {"id"}, part_properties, fetch)
    return {"accountId": account, "state": context.email_state(),
            "list": [reader.read(found[i]) for i in asked if i in found],
            "notFound": [i for i in asked if i not in found]}


class _BodyValues:
    def __init__(self, arguments: dict[str, Any]) -> None:
        self.text = boolean(arguments, "fetchTextBodyValues")
        self.html = boolean(arguments, "fetchHTMLBodyValues")
        self.all = boolean(arguments, "fetchAllBodyValues")
        self.max_bytes = unsigned(arguments, "maxBodyValueBytes", 0) or 0


class _EmailReader:
    def __init__(self, context: CallContext, wanted: set[str], part_properties: list[str],
                 fetch: _BodyValues) -> None:
        self.context, self.wanted, self.part_properties, self.fetch = context, wanted, part_properties, fetch

    def read(self, email: UserEmail) -> dict[str, Any]:
        first = email.first
        values: dict[str, Any] = {
            "id": email.id, "blobId": email.id, "threadId": str(first.thread_id),
            "mailboxIds": {str(c.mailbox_id): True for c in email.copies}, "keywords": keywords_of(email.flags),
            "size": first.size, "receivedAt": utc_date(first.internal_date)}
        manager = self.context.services.manager
        if self.wanted & HEADER_PROPERTIES:
            values.update(header_properties(parse_header(manager.read_header(first)), self.wanted))
        if self.wanted & set(FAST_VIEW):
            values["preview"], values["hasAttachment"] = self._fast_view(email)
        if self.wanted & set(BODY):
            values.update(self._body(email))
        return {p: values[p] for p in PROPERTIES if p in self.wanted}

    def _fast_view(self, email: UserEmail) -> tuple[str, bool]:
        store, manager = self.context.services.fast_view, self.context.services.manager
        found = store.retrieve(email.first.message_id) if store is not None else None
        if found is not None:
            return found
        computed = preview(manager.read_message(email.first.message_id))
        if store is not None:   # the missing projection row is rebuilt on read, as James does
            store.store(email.first.message_id, *computed)
        return computed

    def _body(self, email: UserEmail) -> dict[str, Any]:
        found = structure(self.context.services.manager.read_message(email.first.message_id))

        def described(parts: list[Part]) -> list[dict[str, Any]]:
            return [{k: v for k, v in p.properties(email.id).items() if k in self.part_properties} for p in parts]

        chosen: list[Part] = []
        if self.fetch.text or self.fetch.all:
            chosen += found.text_body
        if self.fetch.html or self.fetch.all:
            chosen += found.html_body
        values = {p.part_id: body_value(p, self.fetch.max_bytes) for p in chosen if p.type.startswith("text/")}
        return {"textBody": described(found.text_body), "htmlBody": described(found.html_body),
                "attachments": described(found.attachments), "bodyValues": values}


def query(arguments: dict[str, Any], context: CallContext) -> dict[str, Any]:
    only(arguments, QUERY_ARGUMENTS)
    account = context.check_account(arguments)
    boolean(arguments, "collapseThreads")   # threads are single messages here: nothing to collapse
    conditions = _filter(arguments.get("filter"))
    ascending = _sort(arguments.get("sort"))
    messages = UserMessages(context.services.manager, context.user)
    mailboxes = _mailboxes(messages, conditions)
    emails = [e for e in messages.in_mailboxes(mailboxes) if _matches(e, conditions)]
    emails.sort(key=lambda e: (e.first.internal_date, e.id), reverse=not ascending)
    return window([e.id for e in emails], arguments,
                  email_state(context.services.manager, list(messages.mailboxes.values())), account)


def _filter(value: Any) -> dict[str, Any]:
    value = simple_filter(value, FILTERS)
    if "inMailbox" in value and not isinstance(value["inMailbox"], str):
        raise invalid_arguments("inMailbox must be a mailbox id")
    other = value.get("inMailboxOtherThan", [])
    if not isinstance(other, list) or not all(isinstance(i, str) for i in other):
        raise invalid_arguments("inMailboxOtherThan must be an array of mailbox ids")
    for name in ("before", "after"):
        if name in value:
            value = {**value, name: _utc(value[name], name)}
    for name in ("minSize", "maxSize"):
        if name in value and (not isinstance(value[name], int) or isinstance(value[name], bool)):
            raise invalid_arguments(f"{name} must be an integer")
    for name in ("hasKeyword", "notKeyword"):
        if name in value and not isinstance(value[name], str):
            raise invalid_arguments(f"{name} must be a keyword")
    return value


def _utc(value: Any, name: str) -> datetime:
    if not isinstance(value, str) or not value.endswith("Z"):
        raise invalid_arguments(f"{name} must be a UTCDate")
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise invalid_arguments(f"{name} must be a UTCDate") from None


def _mailboxes(messages: UserMessages, conditions: dict[str, Any]) -> list[Mailbox]:
    if "inMailbox" in conditions:
        mailbox = messages.mailbox(conditions["inMailbox"])
        return [mailbox] if mailbox is not None else []
    return list(messages.mailboxes.values())


def _matches(email: UserEmail, conditions: dict[str, Any]) -> bool:
    first = email.first
    received = as_utc(first.internal_date)
    keywords = keywords_of(email.flags)
    held = {str(c.mailbox_id) for c in email.copies}
    checks = {
        "inMailboxOtherThan": lambda v: bool(held - set(v)),
        "before": lambda v: received < v,
        "after": lambda v: received >= v,
        "minSize": lambda v: first.size >= v,
        "maxSize": lambda v: first.size < v,
        "hasKeyword": lambda v: v.lower() in keywords,
        "notKeyword": lambda v: v.lower() not in keywords,
    }
    return all(checks[name](value) for name, value in conditions.items() if name in checks)


def _sort(value: Any) -> bool:
    """Whether receivedAt ascends: the only sort; newest first when none is given (as James)."""
    if value is None:
        return False
    if not isinstance(value, list) or not all(isinstance(c, dict) and isinstance(c.get("property"), str)
                                              for c in value):
        raise invalid_arguments("sort must be an array of comparators")
    unsupported = [c["property"] for c in value if c["property"] != "receivedAt"]
    if unsupported or len(value) > 1:
        raise MethodError("unsupportedSort", "Email/query sorts by receivedAt only")
    return value[0].get("isAscending", True) is not False if value else False
