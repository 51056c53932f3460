"""``Thread/get`` (RFC 8621 3.1) for single-message threads.

Messages are not threaded here (``thread_2`` and ``thread_lookup_3`` are not written, see
docs/compatibility.md): a message's thread id is its own message id, as James's with
``james.mailbox.threads.disable`` answers ``getMessageIdsInThread``. So a thread is found when the
user holds the message of that id and that message's thread id is the id; its only email is it.
"""

from __future__ import annotations

from typing import Any

from mailserver.jmap.account import CallContext
from mailserver.jmap.methods.arguments import check_get_size, only, optional_ids, properties
from mailserver.jmap.methods.user_messages import UserEmail, UserMessages

PROPERTIES = ("id", "emailIds")
GET_ARGUMENTS = {"accountId", "ids", "properties"}


def get(arguments: dict[str, Any], context: CallContext) -> dict[str, Any]:
    only(arguments, GET_ARGUMENTS)
    account = context.check_account(arguments)
    ids = optional_ids(arguments)
    wanted = set(properties(arguments, PROPERTIES, PROPERTIES)) | {"id"}
    messages = UserMessages(context.services.manager, context.user)
    if ids is None:
        everything = messages.in_mailboxes(list(messages.mailboxes.values()))
        check_get_size(None, len(everything), context.limits.max_objects_in_get)
        found = {e.id: e for e in everything if _heads_its_thread(e)}
        asked = list(found)
    else:
        check_get_size(ids, 0, context.limits.max_objects_in_get)
        asked = list(dict.fromkeys(ids))
        found = {i: e for i in asked if (e := messages.find(i)) is not None and _heads_its_thread(e)}
    threads = [{"id": i, "emailIds": [found[i].id]} for i in asked if i in found]
    # The emails' state: a thread changes exactly when its (single) email does.
    return {"accountId": account, "state": context.email_state(),
            "list": [{k: v for k, v in t.items() if k in wanted} for t in threads],
            "notFound": [i for i in asked if i not in found]}


def _heads_its_thread(email: UserEmail) -> bool:
    return str(email.first.thread_id) == email.id
