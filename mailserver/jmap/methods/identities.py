"""``Identity/get`` (RFC 8621 6.2) as James's ``IdentityRepository`` serves it: one server-set
Identity per address the user may send from (their own and the aliases leading to it, not
deletable), merged with the identities stored for the user (through WebAdmin's
``/users/{u}/identities``) when the services have the store. ``Identity/set`` is not served.
"""

from __future__ import annotations

from typing import Any

from mailserver.identities.api import EmailAddress, Identity, server_set_id
from mailserver.identities.memory import MemoryCustomIdentityStore
from mailserver.identities.repository import IdentityRepository
from mailserver.jmap.account import CallContext
from mailserver.jmap.changes.model import INITIAL
from mailserver.jmap.errors import MethodError
from mailserver.jmap.methods.arguments import PROPERTIES_DO_NOT_EXIST, check_get_size, only, optional_ids, properties
from mailserver.model.address import MailAddress

PROPERTIES = ("id", "name", "email", "replyTo", "bcc", "textSignature", "htmlSignature", "mayDelete", "sortOrder")
# Identities never change here (no Identity/set): James's constant state, its initial one.
STATE = str(INITIAL)


def identity_id(address: MailAddress) -> str:
    return str(server_set_id(address))


def identities(context: CallContext) -> list[dict[str, Any]]:
    """The user's identities, server-set ones first by address; none for a user who is no mail address."""
    submission = context.services.submission
    if submission is None:
        raise MethodError("unknownMethod", "this server offers no EmailSubmission")
    repository = context.services.identities or IdentityRepository(MemoryCustomIdentityStore(),
                                                                   submission.can_send_from.addresses)
    return [as_jmap(identity) for identity in repository.list(context.user)]


def as_jmap(identity: Identity) -> dict[str, Any]:
    return {"id": str(identity.id), "name": identity.name, "email": identity.email,
            "replyTo": _addresses(identity.reply_to), "bcc": _addresses(identity.bcc),
            "textSignature": identity.text_signature, "htmlSignature": identity.html_signature,
            "mayDelete": identity.may_delete, "sortOrder": identity.sort_order}


def _addresses(addresses: tuple[EmailAddress, ...] | None) -> list[dict[str, str | None]] | None:
    return None if addresses is None else [{"name": a.name, "email": a.email} for a in addresses]


def get(arguments: dict[str, Any], context: CallContext) -> dict[str, Any]:
    only(arguments, {"accountId", "ids", "properties"})
    account = context.check_account(arguments)
    ids = optional_ids(arguments)
    wanted = properties(arguments, PROPERTIES, PROPERTIES, unknown_message=PROPERTIES_DO_NOT_EXIST)
    check_get_size(ids, 0, context.limits.max_objects_in_get)
    every = identities(context)
    found = [i for i in every if ids is None or i["id"] in ids]
    shown = {"id", *wanted}
    return {"accountId": account, "state": STATE,
            "list": [{k: v for k, v in i.items() if k in shown} for i in found],
            "notFound": [i for i in dict.fromkeys(ids) if i not in {f["id"] for f in found}] if ids else []}
