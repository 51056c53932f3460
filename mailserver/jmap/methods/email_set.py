"""``Email/set`` (RFC 8621 4.6): creations (``email_create``), keyword updates (``$seen`` is IMAP's
``\\Seen``), mailbox changes (moves and copies) and destroys, in that order."""

from __future__ import annotations

from typing import Any

from mailserver.jmap.account import CallContext
from mailserver.jmap.errors import MethodError
from mailserver.jmap.methods.arguments import only, set_objects
from mailserver.jmap.methods.email_create import create as create_email
from mailserver.jmap.methods.email_mailboxes import (
    MAILBOX_PATCH,
    MailboxChangeError,
    change_mailboxes,
    wanted_mailboxes,
)
from mailserver.jmap.methods.keywords import flags_with_keywords, is_valid_keyword, keywords_of
from mailserver.jmap.methods.set_errors import SetError
from mailserver.jmap.methods.user_messages import UserMessages
from mailserver.model.flags import FlagsUpdateMode
from mailserver.model.ids import MessageId

KEYWORD_PATCH = "keywords/"


def set_(arguments: dict[str, Any], context: CallContext) -> dict[str, Any]:
    only(arguments, {"accountId", "ifInState", "create", "update", "destroy"})
    account = context.check_account(arguments)
    create, update, destroy = set_objects(arguments, context.limits.max_objects_in_set)
    manager = context.services.manager
    messages = UserMessages(manager, context.user)
    old_state = context.email_state()
    if_in_state = arguments.get("ifInState")
    if if_in_state is not None and if_in_state != old_state:
        raise MethodError("stateMismatch")
    answer: dict[str, Any] = {"accountId": account, "oldState": old_state, "created": None, "updated": None,
                              "destroyed": None, "notCreated": None, "notUpdated": None, "notDestroyed": None}
    created: dict[str, dict[str, Any]] = {}
    not_created: dict[str, dict[str, Any]] = {}
    for creation_id, email in create.items():
        try:
            created[creation_id] = create_email(context, messages, creation_id, email)
        except SetError as error:
            not_created[creation_id] = error.body
    updated: dict[str, None] = {}
    not_updated: dict[str, dict[str, Any]] = {}
    for email_id, patch in update.items():
        email_id = context.resolve_id(email_id)
        try:
            _update(context, messages, email_id, patch)
            updated[email_id] = None
        except SetError as error:
            not_updated[email_id] = error.body
    destroyed: list[str] = []
    not_destroyed: dict[str, dict[str, Any]] = {}
    for email_id in map(context.resolve_id, destroy):
        email = messages.find(email_id)
        if email is None:
            not_destroyed[email_id] = {"type": "notFound"}
            continue
        manager.delete_messages(context.user, [MessageId.of(email_id)])
        destroyed.append(email_id)
    outcomes = {"created": created, "notCreated": not_created, "updated": updated, "notUpdated": not_updated,
                "destroyed": destroyed, "notDestroyed": not_destroyed}
    answer.update({k: v for k, v in outcomes.items() if v})
    answer["newState"] = context.email_state()
    return answer



def _update(context: CallContext, messages: UserMessages, email_id: str, patch: dict[str, Any]) -> None:
    email = messages.find(email_id)
    if email is None:
        raise SetError("notFound", f"no email {email_id}")
    keyword_patch = {p: v for p, v in patch.items() if p == "keywords" or p.startswith(KEYWORD_PATCH)}
    mailbox_patch = {p: v for p, v in patch.items() if p == "mailboxIds" or p.startswith(MAILBOX_PATCH)}
    others = [p for p in patch if p not in keyword_patch and p not in mailbox_patch]
    if others:
        raise SetError("invalidProperties", "only keywords and mailboxIds can be updated", others)
    for whole, patches in (("keywords", keyword_patch), ("mailboxIds", mailbox_patch)):
        if whole in patches and len(patches) > 1:
            raise SetError("invalidPatch", f"{whole} is replaced whole and patched in one update")
    manager = context.services.manager
    try:   # everything checked before anything is written
        wanted = wanted_mailboxes(email, mailbox_patch, messages) if mailbox_patch else None
    except MailboxChangeError as exc:
        raise SetError("invalidProperties", str(exc), ["mailboxIds"]) from None
    new_flags = [(copy, flags_with_keywords(copy.flags, _patched(keywords_of(copy.flags), keyword_patch)))
                 for copy in email.copies] if keyword_patch else []
    for copy, flags in new_flags:
        manager.set_flags(messages.mailboxes[copy.mailbox_id].path, flags, FlagsUpdateMode.REPLACE, uids=[copy.uid])
    if wanted is not None:
        if new_flags:   # the copies now carry the new flags: moves and copies take them along
            found = messages.find(email_id)
            email = found if found is not None else email
        change_mailboxes(manager, messages, email, wanted)


def _patched(current: dict[str, bool], patch: dict[str, Any]) -> dict[str, bool]:
    if "keywords" in patch:
        whole = patch["keywords"]
        if not isinstance(whole, dict) or not all(v is True for v in whole.values()):
            raise SetError("invalidProperties", "keywords maps keywords to true", ["keywords"])
        _check_keywords(list(whole))
        return {k.lower(): True for k in whole}
    keywords = dict(current)
    for path, value in patch.items():
        keyword = path[len(KEYWORD_PATCH):]
        _check_keywords([keyword])
        if value is True:
            keywords[keyword.lower()] = True
        elif value is None:
            keywords.pop(keyword.lower(), None)
        else:
            raise SetError("invalidPatch", f"{path} must be true or null")
    return keywords


def _check_keywords(keywords: list[str]) -> None:
    invalid = [k for k in keywords if not is_valid_keyword(k)]
    if invalid:
        raise SetError("invalidProperties", f"invalid keywords: {', '.join(invalid)}", ["keywords"])


