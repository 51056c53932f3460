"""``Email/get`` and ``Email/query`` (RFC 8621 4.2, 4.4) over the mailbox manager.

Metadata (ids, mailboxes, keywords, size, dates) comes from the message rows; header properties
from the header blob alone; preview and hasAttachment from the fast view projection, computed
and stored when its row is missing; body parts and values from the whole message, read only when
asked for.
"""

from __future__ import annotations

from typing import Any

from mailserver.jmap.account import CallContext
from mailserver.jmap.errors import MethodError, invalid_arguments
from mailserver.jmap.methods import email_filter, email_search
from mailserver.jmap.methods.arguments import boolean, check_get_size, only, optional_ids, properties, unsigned
from mailserver.jmap.methods.email_body import PART_PROPERTIES, Part, body_value, structure
from mailserver.jmap.methods.email_headers import HEADER_PROPERTIES, header_properties, parse_header, utc_date
from mailserver.jmap.methods.keywords import keywords_of
from mailserver.jmap.methods.query_window import window
from mailserver.jmap.methods.states import email_state
from mailserver.jmap.methods.user_messages import UserEmail, UserMessages
from mailserver.mailbox.content import preview

METADATA = ("id", "blobId", "threadId", "mailboxIds", "keywords", "size", "receivedAt")
FAST_VIEW = ("preview", "hasAttachment")
BODY = ("bodyValues", "textBody", "htmlBody", "attachments")
PROPERTIES = (*METADATA, *sorted(HEADER_PROPERTIES), *FAST_VIEW, *BODY)
DEFAULT_PROPERTIES = PROPERTIES
GET_ARGUMENTS = {"accountId", "ids", "properties", "bodyProperties", "fetchTextBodyValues", "fetchHTMLBodyValues",
                 "fetchAllBodyValues", "maxBodyValueBytes"}
QUERY_ARGUMENTS = {"accountId", "filter", "sort", "position", "anchor", "anchorOffset", "limit", "calculateTotal",
                   "collapseThreads"}


def get(arguments: dict[str, Any], context: CallContext) -> dict[str, Any]:
    only(arguments, GET_ARGUMENTS)
    account = context.check_account(arguments)
    ids = optional_ids(arguments)
    if ids is not None:   # creation ids of this request (RFC 8620 5.3) read as the ids they created
        ids = [context.resolve_id(i) for i in ids]
    wanted = properties(arguments, PROPERTIES, DEFAULT_PROPERTIES)
    part_properties = properties(arguments, PART_PROPERTIES, PART_PROPERTIES, "bodyProperties")
    fetch = BodyValues(arguments)
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


class BodyValues:
    def __init__(self, arguments: dict[str, Any]) -> None:
        self.text = boolean(arguments, "fetchTextBodyValues")
        self.html = boolean(arguments, "fetchHTMLBodyValues")
        self.all = boolean(arguments, "fetchAllBodyValues")
        self.max_bytes = unsigned(arguments, "maxBodyValueBytes", 0) or 0


class _EmailReader:
    def __init__(self, context: CallContext, wanted: set[str], part_properties: list[str],
                 fetch: BodyValues) -> None:
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
        raw = self.context.services.manager.read_message(email.first.message_id)
        return body_properties(raw, email.id, self.part_properties, self.fetch)


def body_properties(raw: bytes, blob_id: str, part_properties: list[str], fetch: BodyValues) -> dict[str, Any]:
    """textBody, htmlBody, attachments (their parts' blob ids under ``blob_id``) and bodyValues."""
    found = structure(raw)

    def described(parts: list[Part]) -> list[dict[str, Any]]:
        return [{k: v for k, v in p.properties(blob_id).items() if k in part_properties} for p in parts]

    chosen: list[Part] = []
    if fetch.text or fetch.all:
        chosen += found.text_body
    if fetch.html or fetch.all:
        chosen += found.html_body
    values = {p.part_id: body_value(p, fetch.max_bytes) for p in chosen if p.type.startswith("text/")}
    return {"textBody": described(found.text_body), "htmlBody": described(found.html_body),
            "attachments": described(found.attachments), "bodyValues": values}


def query(arguments: dict[str, Any], context: CallContext) -> dict[str, Any]:
    only(arguments, QUERY_ARGUMENTS)
    account = context.check_account(arguments)
    boolean(arguments, "collapseThreads")   # threads are single messages here: nothing to collapse
    filter_ = email_filter.parse(arguments.get("filter"))
    ascending = _sort(arguments.get("sort"))
    messages = UserMessages(context.services.manager, context.user)
    if filter_ is not None and email_filter.needs_index(filter_):
        index = context.services.search
        if index is None:
            raise MethodError("unsupportedFilter", "text filters need the search index (OpenSearch)")
        ids = email_search.search(index, list(messages.mailboxes), filter_, ascending)
    else:
        ids = _listed(messages, filter_, ascending)
    return window(ids, arguments, email_state(context.services.manager, list(messages.mailboxes.values())), account)


def _listed(messages: UserMessages, filter_: email_filter.Filter | None, ascending: bool) -> list[str]:
    """The matching emails read from the message rows (of the one mailbox the filter names, if any)."""
    only_in = email_filter.only_mailbox(filter_)
    if only_in is None:
        mailboxes = list(messages.mailboxes.values())
    else:
        mailbox = messages.mailbox(only_in)
        mailboxes = [mailbox] if mailbox is not None else []
    emails = [e for e in messages.in_mailboxes(mailboxes) if email_filter.holds(filter_, e)]
    emails.sort(key=lambda e: (e.first.internal_date, e.id), reverse=not ascending)
    return [e.id for e in emails]


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
