"""``Identity/get`` (RFC 8621 6.2) as James's ``DefaultIdentitySupplier`` serves it: one Identity
per address the user may send from (their own and the aliases leading to it), server-set, so
none may be deleted. No custom identities are stored: ``Identity/set`` is not served.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from mailserver.jmap.account import CallContext
from mailserver.jmap.changes.model import INITIAL
from mailserver.jmap.errors import MethodError, invalid_arguments
from mailserver.jmap.methods.arguments import check_get_size, only, optional_ids
from mailserver.model.address import InvalidAddress, MailAddress

PROPERTIES = ("id", "name", "email", "replyTo", "bcc", "textSignature", "htmlSignature", "mayDelete", "sortOrder")
SORT_ORDER = 100   # James's Identity.DEFAULT_SORTORDER
# Identities never change here (no Identity/set): James's constant state, its initial one.
STATE = str(INITIAL)


def identity_id(address: MailAddress) -> str:
    """Java's ``UUID.nameUUIDFromBytes`` of the address: an MD5 name-based (version 3) UUID."""
    return str(uuid.UUID(bytes=hashlib.md5(str(address).encode(), usedforsecurity=False).digest(), version=3))


def identities(context: CallContext) -> list[dict[str, Any]]:
    """The user's identities, by address; none for a user who is no mail address."""
    submission = context.services.submission
    if submission is None:
        raise MethodError("unknownMethod", "this server offers no EmailSubmission")
    try:
        addresses = submission.can_send_from.addresses(context.user)
    except InvalidAddress:
        return []
    return [{"id": identity_id(a), "name": str(a), "email": str(a), "replyTo": None, "bcc": None,
             "textSignature": "", "htmlSignature": "", "mayDelete": False, "sortOrder": SORT_ORDER}
            for a in sorted(addresses, key=str)]


def get(arguments: dict[str, Any], context: CallContext) -> dict[str, Any]:
    only(arguments, {"accountId", "ids", "properties"})
    account = context.check_account(arguments)
    ids = optional_ids(arguments)
    wanted = arguments.get("properties")
    if wanted is None:
        wanted = list(PROPERTIES)
    if not isinstance(wanted, list) or not all(isinstance(p, str) for p in wanted):
        raise invalid_arguments("properties must be null or an array of property names")
    unknown = [p for p in wanted if p not in PROPERTIES]
    if unknown:
        raise invalid_arguments(f"The following properties [{', '.join(unknown)}] do not exist.")
    check_get_size(ids, 0, context.limits.max_objects_in_get)
    every = identities(context)
    found = [i for i in every if ids is None or i["id"] in ids]
    shown = {"id", *wanted}
    return {"accountId": account, "state": STATE,
            "list": [{k: v for k, v in i.items() if k in shown} for i in found],
            "notFound": [i for i in dict.fromkeys(ids) if i not in {f["id"] for f in found}] if ids else []}
