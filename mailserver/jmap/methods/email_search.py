"""``Email/query`` through the search index, for filters with text conditions, as James's
``MailboxFilter`` turns them into a ``SearchQuery``.

``text`` is any of the ``From``, ``To``, ``Cc``, ``Bcc`` addresses, the subject, the body, an
attachment's text or file name; ``body`` any of the body, an attachment's text or file name;
``header`` the field's presence or one word of its value. ``inMailbox`` and
``inMailboxOtherThan`` give the mailboxes searched, at the top of the filter or in a top AND
(elsewhere they are ``unsupportedFilter``).
"""

from __future__ import annotations

from typing import Any

from mailserver.jmap.errors import MethodError, invalid_arguments
from mailserver.jmap.methods.email_filter import Filter, Operator
from mailserver.jmap.methods.keywords import SYSTEM_KEYWORDS
from mailserver.model.ids import MailboxId
from mailserver.search.api import MAX_LIMIT, SearchIndex, SearchQuery, Sort, SortClause

NOTHING = SearchQuery.criteria(uids=())   # an OR of no conditions holds for no email
SCOPE = ("inMailbox", "inMailboxOtherThan")


def search(index: SearchIndex, mailboxes: list[MailboxId], filter_: Filter, ascending: bool) -> list[str]:
    """The ids of the emails matching, by receivedAt; at most ``MAX_LIMIT`` message copies are read."""
    scope = _scope(filter_, {str(m): m for m in mailboxes})
    if not scope:
        return []
    try:
        query = SearchQuery.of(scope, all_of=(_criteria(filter_, top=True),),
                               sort=(Sort(SortClause.ARRIVAL, reverse=not ascending),), limit=MAX_LIMIT)
    except ValueError as error:
        raise invalid_arguments(str(error)) from None
    return list(dict.fromkeys(str(hit.message_id) for hit in index.search(query)))


def criteria(filter_: Filter) -> SearchQuery:
    """The filter's criteria, its top-level mailbox scope aside (for ``SearchSnippet/get``)."""
    try:
        return _criteria(filter_, top=True)
    except ValueError as error:
        raise invalid_arguments(str(error)) from None


def _scope(filter_: Filter, mailboxes: dict[str, MailboxId]) -> list[MailboxId]:
    tops = filter_.conditions if isinstance(filter_, Operator) and filter_.operator == "AND" else (filter_,)
    wanted = set(mailboxes)
    for condition in tops:
        if isinstance(condition, dict):
            if "inMailbox" in condition:
                wanted &= {condition["inMailbox"]}
            wanted -= set(condition.get("inMailboxOtherThan", []))
    return [mailboxes[i] for i in sorted(wanted)]


def _criteria(filter_: Filter, top: bool = False) -> SearchQuery:
    if isinstance(filter_, Operator):
        children = tuple(_criteria(c, top and filter_.operator == "AND") for c in filter_.conditions)
        if filter_.operator == "AND":
            return SearchQuery.criteria(all_of=children)
        if filter_.operator == "OR":
            return SearchQuery.criteria(any_of=children) if children else NOTHING
        return SearchQuery.criteria(none_of=children)
    if not top and set(filter_) & set(SCOPE):
        raise MethodError("unsupportedFilter", "inMailbox and inMailboxOtherThan go at the top of a text "
                          "filter or in its top AND")
    return SearchQuery.criteria(all_of=tuple(_condition(name, value) for name, value in filter_.items()
                                             if name not in SCOPE))


def _condition(name: str, value: Any) -> SearchQuery:
    c = SearchQuery.criteria
    if name == "text":
        return c(any_of=(c(from_=value), c(to=value), c(cc=value), c(bcc=value), c(subject=value), c(body=value),
                         c(attachment_text=value), c(attachment_file_name=value)))
    if name == "body":
        return c(any_of=(c(body=value), c(attachment_text=value), c(attachment_file_name=value)))
    if name in ("from", "to", "cc", "bcc", "subject"):
        return c(**{"from_" if name == "from" else name: value})
    if name == "header":
        return c(headers=((value[0], value[1] if len(value) > 1 else None),))
    if name == "hasAttachment":
        return c(has_attachment=value)
    if name == "before":
        return c(internal_date_before=value)
    if name == "after":
        return c(internal_date_from=value)
    if name == "minSize":
        return c(size_greater_than=value - 1) if value > 0 else c()
    if name == "maxSize":
        return c(size_less_than=value)
    keyword = value.lower()
    flag = SYSTEM_KEYWORDS.get(keyword)
    if name == "hasKeyword":
        return c(flags_set=frozenset({flag})) if flag else c(user_flags_set=frozenset({keyword}))
    return c(flags_unset=frozenset({flag})) if flag else c(user_flags_unset=frozenset({keyword}))
