"""``Mailbox/get`` and ``Mailbox/query`` (RFC 8621 2.1, 2.3) over the user's personal mailboxes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mailserver.jmap.account import CallContext
from mailserver.jmap.errors import MethodError, invalid_arguments
from mailserver.jmap.methods.arguments import check_get_size, only, optional_ids, properties
from mailserver.jmap.methods.query_window import simple_filter, window
from mailserver.jmap.methods.states import mailbox_state
from mailserver.mailbox.manager import MailboxState
from mailserver.mailbox.roles import role_of, sort_order_of
from mailserver.model.ids import MailboxId
from mailserver.model.mailbox import DELIMITER, Mailbox

PROPERTIES = ("id", "name", "parentId", "role", "sortOrder", "totalEmails", "unreadEmails", "totalThreads",
              "unreadThreads", "myRights", "isSubscribed")
# The owner's rights on a personal mailbox: everything.
OWNER_RIGHTS = {right: True for right in ("mayReadItems", "mayAddItems", "mayRemoveItems", "maySetSeen",
                                          "maySetKeywords", "mayCreateChild", "mayRename", "mayDelete", "maySubmit")}
FILTERS = frozenset({"parentId", "name", "role", "hasAnyRole", "isSubscribed"})
SORTS = frozenset({"name", "sortOrder"})


class MailboxView:
    """The user's mailboxes, read once per call, and their JMAP properties."""

    def __init__(self, context: CallContext) -> None:
        self.context = context
        self.mailboxes = context.services.manager.list_mailboxes(context.user)
        self.by_path = {m.path.name: m for m in self.mailboxes}
        subscriptions = context.services.subscriptions
        self.subscribed = set(subscriptions.subscriptions(context.user)) if subscriptions is not None else set()
        self._states: dict[MailboxId, MailboxState] = {}

    def state(self, mailbox: Mailbox) -> MailboxState:
        """Its counts, read once per call (the properties and the call's state both need them)."""
        if mailbox.id not in self._states:
            self._states[mailbox.id] = self.context.services.manager.mailbox_state(mailbox.path)
        return self._states[mailbox.id]

    @property
    def fingerprint(self) -> str:
        return mailbox_state(self.mailboxes, self.state)

    def parent_id(self, mailbox: Mailbox) -> str | None:
        name = mailbox.path.name
        parent = self.by_path.get(name.rsplit(DELIMITER, 1)[0]) if DELIMITER in name else None
        return str(parent.id) if parent is not None else None

    def properties(self, mailbox: Mailbox, wanted: list[str]) -> dict[str, Any]:
        values: dict[str, Any] = {"id": str(mailbox.id)}
        if {"totalEmails", "unreadEmails", "totalThreads", "unreadThreads"} & set(wanted):
            state = self.state(mailbox)
            # A thread per message: threads are not grouped yet (docs/compatibility.md).
            values.update(totalEmails=state.count, unreadEmails=state.unseen, totalThreads=state.count,
                          unreadThreads=state.unseen)
        values.update(name=mailbox.path.name.rsplit(DELIMITER, 1)[-1], parentId=self.parent_id(mailbox),
                      role=role_of(mailbox), sortOrder=sort_order_of(mailbox), myRights=dict(OWNER_RIGHTS),
                      isSubscribed=mailbox.path.name in self.subscribed)
        return {p: values[p] for p in wanted}


def get(arguments: dict[str, Any], context: CallContext) -> dict[str, Any]:
    only(arguments, {"accountId", "ids", "properties"})
    account = context.check_account(arguments)
    ids = optional_ids(arguments)
    wanted = properties(arguments, PROPERTIES, PROPERTIES)
    if "id" not in wanted:
        wanted.insert(0, "id")   # always returned (RFC 8620 5.1)
    view = MailboxView(context)
    check_get_size(ids, len(view.mailboxes), context.limits.max_objects_in_get)
    by_id = {str(m.id): m for m in view.mailboxes}
    asked = list(by_id) if ids is None else list(dict.fromkeys(ids))
    found = [view.properties(by_id[i], wanted) for i in asked if i in by_id]
    return {"accountId": account, "state": context.mailbox_state(),
            "list": found, "notFound": [i for i in asked if i not in by_id]}


def query(arguments: dict[str, Any], context: CallContext) -> dict[str, Any]:
    only(arguments, {"accountId", "filter", "sort", "position", "anchor", "anchorOffset", "limit",
                     "calculateTotal", "sortAsTree", "filterAsTree"})
    account = context.check_account(arguments)
    view = MailboxView(context)
    conditions = _filter(arguments.get("filter"))
    sort = _sort(arguments.get("sort"))
    wanted = ["id", "name", "parentId", "role", "sortOrder", "isSubscribed"]
    rows = [view.properties(m, wanted) for m in view.mailboxes]
    rows = [row for row in rows if all(_matches(row, key, value) for key, value in conditions.items())]
    for prop, ascending in reversed(sort):   # stable sorts, last comparator first
        rows.sort(key=_sort_key(prop), reverse=not ascending)
    return window([row["id"] for row in rows], arguments, view.fingerprint,
                  account)


def _filter(value: Any) -> dict[str, Any]:
    return simple_filter(value, FILTERS)


def _matches(row: dict[str, Any], key: str, value: Any) -> bool:
    if key == "name":
        return isinstance(value, str) and value.casefold() in row["name"].casefold()
    if key == "hasAnyRole":
        return (row["role"] is not None) == bool(value)
    return bool(row[key] == value)


def _sort_key(prop: str) -> Callable[[dict[str, Any]], Any]:
    if prop == "name":
        return lambda row: row["name"].casefold()
    return lambda row: row[prop]


def _sort(value: Any) -> list[tuple[str, bool]]:
    if value is None:
        return [("sortOrder", True), ("name", True)]
    if not isinstance(value, list) or not all(isinstance(c, dict) and isinstance(c.get("property"), str)
                                              for c in value):
        raise invalid_arguments("sort must be an array of comparators")
    unsupported = [c["property"] for c in value if c["property"] not in SORTS]
    if unsupported:
        raise MethodError("unsupportedSort", f"cannot sort mailboxes by {', '.join(unsupported)}")
    return [(c["property"], c.get("isAscending", True) is not False) for c in value]
