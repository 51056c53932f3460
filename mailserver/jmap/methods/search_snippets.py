"""``SearchSnippet/get`` (RFC 8621 5.1): the subject and a body fragment of emails with the words of
a filter highlighted, through the search index's highlighting, as James's ``SearchSnippetGetMethod``.

As James: only ``text``, ``subject`` and ``body`` count at the top of the filter (its other
conditions are left out, nested ones are kept); an email that does not match the filter, or is
not the user's, is in ``notFound``; with no filter every email is; ``notFound`` is an array,
empty when all were found.
"""

from __future__ import annotations

from typing import Any

from mailserver.jmap.account import CallContext
from mailserver.jmap.errors import MethodError, invalid_arguments
from mailserver.jmap.methods import email_filter, email_search
from mailserver.jmap.methods.arguments import check_get_size, only
from mailserver.jmap.methods.user_messages import UserMessages
from mailserver.model.ids import MessageId
from mailserver.search.api import MAX_LIMIT, SearchQuery, Snippet

ARGUMENTS = {"accountId", "filter", "emailIds"}
HIGHLIGHTED = frozenset({"text", "subject", "body"})   # SearchSnippetGetRequest.FILTER_SUPPORT_LIST


def get(arguments: dict[str, Any], context: CallContext) -> dict[str, Any]:
    only(arguments, ARGUMENTS)
    account = context.check_account(arguments)
    asked = arguments.get("emailIds")
    if not isinstance(asked, list) or not all(isinstance(i, str) for i in asked):
        raise invalid_arguments("emailIds must be an array of ids")
    check_get_size(asked, 0, context.limits.max_objects_in_get)
    filter_ = email_filter.parse(arguments.get("filter"))
    index = context.services.search
    if index is None:
        raise MethodError("unsupportedFilter", "search snippets need the search index (OpenSearch)")
    ids = _message_ids(asked)
    snippets: dict[str, Snippet] = {}
    if filter_ is not None and ids:
        mailboxes = list(UserMessages(context.services.manager, context.user).mailboxes)
        query = SearchQuery.of(mailboxes, all_of=(email_search.criteria(_highlighted(filter_)),), limit=MAX_LIMIT,
                               any_of=tuple(SearchQuery.criteria(message_id=i) for i in ids))
        for snippet in index.highlight(query):   # one per copy of a message: the first is kept
            snippets.setdefault(str(snippet.message_id), snippet)
    return {"accountId": account,
            "list": [{"emailId": i, "subject": s.subject, "preview": s.body}
                     for i in dict.fromkeys(asked) if (s := snippets.get(i)) is not None],
            "notFound": [i for i in dict.fromkeys(asked) if i not in snippets]}


def _highlighted(filter_: email_filter.Filter) -> email_filter.Filter:
    if isinstance(filter_, email_filter.Operator):
        return filter_
    return {name: value for name, value in filter_.items() if name in HIGHLIGHTED}


def _message_ids(asked: list[str]) -> list[MessageId]:
    """The asked ids that can be message ids (the others are simply not found)."""
    ids = []
    for value in dict.fromkeys(asked):
        try:
            ids.append(MessageId.of(value))
        except ValueError:
            continue
    return ids
