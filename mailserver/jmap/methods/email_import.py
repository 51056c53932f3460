"""``Email/import`` (RFC 8621 4.8): a blob stored as an Email in the given mailboxes.

The blob is an upload of the user, or a message (or part) the user may read, as the download
endpoint resolves it; a blob that does not exist for the user is ``notFound`` as in James.
"""

from __future__ import annotations

from typing import Any

from mailserver.jmap.account import CallContext
from mailserver.jmap.errors import MethodError, invalid_arguments
from mailserver.jmap.methods.arguments import only
from mailserver.jmap.methods.blobs import read_blob
from mailserver.jmap.methods.email_store import keyword_flags, received_at, store, target_mailboxes
from mailserver.jmap.methods.set_errors import SetError
from mailserver.jmap.methods.user_messages import UserMessages

IMPORT_PROPERTIES = frozenset({"blobId", "mailboxIds", "keywords", "receivedAt"})


def import_(arguments: dict[str, Any], context: CallContext) -> dict[str, Any]:
    only(arguments, {"accountId", "ifInState", "emails"})
    account = context.check_account(arguments)
    emails = arguments.get("emails")
    if not isinstance(emails, dict):
        raise invalid_arguments("emails must map creation ids to EmailImport objects")
    if len(emails) > context.limits.max_objects_in_set:
        raise MethodError("requestTooLarge", f"{len(emails)} emails to import, at most "
                          f"{context.limits.max_objects_in_set} per call (maxObjectsInSet)")
    manager = context.services.manager
    messages = UserMessages(manager, context.user)
    old_state = context.email_state()
    if arguments.get("ifInState") is not None and arguments["ifInState"] != old_state:
        raise MethodError("stateMismatch")
    created: dict[str, dict[str, Any]] = {}
    not_created: dict[str, dict[str, Any]] = {}
    for creation_id, email in emails.items():
        try:
            created[creation_id] = _import_one(context, messages, creation_id, email)
        except SetError as error:
            not_created[creation_id] = error.body
    return {"accountId": account, "oldState": old_state, "newState": context.email_state(),
            "created": created or None, "notCreated": not_created or None}


def _import_one(context: CallContext, messages: UserMessages, creation_id: str, email: Any) -> dict[str, Any]:
    if not isinstance(email, dict):
        raise SetError("invalidArguments", "an EmailImport is an object")
    unknown = sorted(set(email) - IMPORT_PROPERTIES)
    if unknown:
        raise SetError("invalidProperties", f"unknown properties: {', '.join(unknown)}", unknown)
    blob_id = email.get("blobId")
    if not isinstance(blob_id, str):
        raise SetError("invalidProperties", "blobId is required", ["blobId"])
    mailboxes = target_mailboxes(context, messages, email.get("mailboxIds"))
    flags = keyword_flags(email.get("keywords"))
    received = received_at(email.get("receivedAt"))
    blob = read_blob(context, blob_id)
    if blob is None:
        raise SetError("notFound", f"Blob {blob_id} could not be found")
    return store(context, messages, creation_id, blob.data, mailboxes, flags, received)
