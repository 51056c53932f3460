"""``EmailSubmission/set`` (RFC 8621 7.5), as James's ``EmailSubmissionSetMethod``.

A creation sends an Email of the user: the message is enqueued, as it is, on the spool the SMTP
intake enqueues on, so the mailet container processes it as any mail (relay allowed by
``SentByJmap``: the mail carries the user in James's ``JMAP_AUTH_USER`` attribute). Nothing is
delivered from here.

The envelope is the one given, else ``From``'s first address and every ``To``, ``Cc`` and ``Bcc``
address. Refused, each in ``notCreated``: an Email that is not the user's (``invalidArguments`` on
``emailId``), no ``From`` (``forbiddenFrom``), an invalid address in a header (``invalidEmail``),
a ``From`` or ``Sender`` address the user may not send from (``forbiddenMailFrom``), no recipient
(``noRecipients``), an envelope sender the user may not send from (``forbiddenFrom`` on
``envelope.mailFrom``), SMTP parameters (``invalidArguments``: no delayed sending here).

Submissions are not stored (as James): an ``update`` or ``destroy`` is ``notFound``, and
``onSuccessUpdateEmail`` / ``onSuccessDestroyEmail`` take only ``#creationId`` keys of this call;
their ``Email/set`` answer follows this method's, under the same call id.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from email.headerregistry import Address
from email.message import EmailMessage
from typing import Any

from mailserver.jmap.account import CallContext, Submission
from mailserver.jmap.engine import Followed
from mailserver.jmap.errors import MethodError, invalid_arguments
from mailserver.jmap.methods import email_set
from mailserver.jmap.methods.arguments import is_id, only
from mailserver.jmap.methods.email_headers import ADDRESS_FIELDS, parse_header
from mailserver.jmap.methods.email_headers import utc_date as utc
from mailserver.jmap.methods.set_errors import SetError
from mailserver.jmap.methods.user_messages import UserMessages
from mailserver.model.address import InvalidAddress, MailAddress
from mailserver.model.mail import JMAP_AUTH_USER, Mail, MailContent

log = logging.getLogger(__name__)

ARGUMENTS = {"accountId", "ifInState", "create", "update", "destroy", "onSuccessUpdateEmail",
             "onSuccessDestroyEmail"}
CREATE_PROPERTIES = frozenset({"emailId", "identityId", "envelope"})
STATE = "0"   # submissions are not stored: their state never changes


def set_(arguments: dict[str, Any], context: CallContext) -> dict[str, Any] | Followed:
    only(arguments, ARGUMENTS)
    account = context.check_account(arguments)
    submission = context.services.submission
    if submission is None:
        raise MethodError("unknownMethod", "this server offers no EmailSubmission")
    create = arguments.get("create") or {}
    if not isinstance(create, dict):
        raise invalid_arguments("create must be an object")
    if len(create) > context.limits.max_objects_in_set:
        raise MethodError("requestTooLarge", f"{len(create)} objects to set, at most "
                          f"{context.limits.max_objects_in_set} per call (maxObjectsInSet)")
    if_in_state = arguments.get("ifInState")
    if if_in_state is not None and if_in_state != STATE:
        raise MethodError("stateMismatch")
    on_update, on_destroy = _on_success(arguments, create)
    messages = UserMessages(context.services.manager, context.user)
    created: dict[str, dict[str, Any]] = {}
    not_created: dict[str, dict[str, Any]] = {}
    sent: dict[str, str] = {}   # creation id -> the id of the Email it sent
    for creation_id, request in create.items():
        try:
            created[creation_id], sent[creation_id] = _send(context, submission, messages, request)
            context.created_ids[creation_id] = created[creation_id]["id"]
        except SetError as error:
            not_created[creation_id] = error.body
    answer: dict[str, Any] = {"accountId": account, "oldState": STATE, "newState": STATE,
                              "created": created or None, "updated": None, "destroyed": None,
                              "notCreated": not_created or None}
    not_stored = {"type": "notFound", "description": "submissions are not stored"}
    answer.update({"notUpdated": {str(i): not_stored for i in arguments.get("update") or {}} or None,
                   "notDestroyed": {str(i): not_stored for i in arguments.get("destroy") or []} or None})
    update = {sent[key]: patch for key, patch in on_update.items() if key in sent}
    destroy = [sent[key] for key in on_destroy if key in sent]
    if not update and not destroy:
        return answer
    implicit = email_set.set_({"accountId": account, "update": update or None, "destroy": destroy or None}, context)
    return Followed(answer, [("Email/set", implicit)])


def _on_success(arguments: dict[str, Any], create: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The creation ids (without ``#``) whose Email is updated or destroyed once sent."""
    update = arguments.get("onSuccessUpdateEmail") or {}
    destroy = arguments.get("onSuccessDestroyEmail") or []
    if not isinstance(update, dict) or not all(isinstance(p, dict) for p in update.values()):
        raise invalid_arguments("onSuccessUpdateEmail maps #creationIds to Email patches")
    if not isinstance(destroy, list) or not all(isinstance(i, str) for i in destroy):
        raise invalid_arguments("onSuccessDestroyEmail is an array of #creationIds")
    for key in [*update, *destroy]:
        if not key.startswith("#"):
            raise invalid_arguments(f"{key} cannot be retrieved as storage for EmailSubmission is not implemented")
        if key[1:] not in create:
            raise invalid_arguments(f"{key} cannot be referenced in current method call")
    return {k[1:]: v for k, v in update.items()}, [k[1:] for k in destroy]


def _send(context: CallContext, submission: Submission, messages: UserMessages,
          request: Any) -> tuple[dict[str, Any], str]:
    if not isinstance(request, dict):
        raise SetError("invalidArguments", "an EmailSubmission is an object")
    unknown = sorted(set(request) - CREATE_PROPERTIES)
    if unknown:
        raise SetError("invalidArguments", "Some unknown properties were specified", unknown)
    email_id = request.get("emailId")
    identity_id = request.get("identityId")
    if not isinstance(email_id, str):
        raise SetError("invalidArguments", "emailId is an id", ["emailId"])
    if identity_id is not None and not is_id(identity_id):   # James reads it as an Id, and no further
        raise SetError("invalidArguments", "identityId is an id", ["identityId"])
    email = messages.find(context.resolve_id(email_id))
    if email is None:
        raise SetError("invalidArguments", "The email to be sent cannot be found", ["emailId"])
    raw = messages.manager.read_message(email.first.message_id)
    header = parse_header(raw)
    header_addresses = _header_addresses(header)
    if not header_addresses["from"]:
        raise SetError("forbiddenFrom", "Attempt to send a mail whose MimeMessage From is missing")
    mail_from, rcpt_to = _envelope(request.get("envelope"), header_addresses)
    user = context.user
    forbidden = [str(a) for a in [*header_addresses["sender"], *header_addresses["from"]]
                 if not submission.can_send_from(user, a)]
    if forbidden:
        raise SetError("forbiddenMailFrom", "Attempt to send a mail whose MimeMessage From and Sender fields not "
                       f"allowed for connected user: {', '.join(forbidden)}")
    if not rcpt_to:
        raise SetError("noRecipients", "Attempt to send a mail with no recipients")
    if not submission.can_send_from(user, mail_from):
        raise SetError("forbiddenFrom", f"Attempt to send a mail whose envelope From not allowed for connected "
                       f"user: {mail_from}", ["envelope.mailFrom"])
    submission_id = str(uuid.uuid4())
    mail = Mail(name=submission_id, sender=mail_from, recipients=rcpt_to, content=MailContent.of_bytes(raw))
    mail.set_attribute(JMAP_AUTH_USER, str(user))
    try:
        submission.spool.enqueue(mail)
    except Exception:
        log.exception("EmailSubmission of %s by %s: enqueue on the spool failed", email.id, user)
        raise SetError("serverFail", "the mail could not be queued") from None
    log.info("JMAP mail %s spooled for %s: from <%s> to %s (%d bytes)", submission_id, user, mail_from,
             ",".join(str(r) for r in rcpt_to), len(raw))
    return {"id": submission_id, "sendAt": utc(datetime.now(UTC))}, email.id


def _header_addresses(header: EmailMessage) -> dict[str, list[MailAddress]]:
    """Each address field's addresses; ``invalidEmail`` naming the property of one that is not valid."""
    found: dict[str, list[MailAddress]] = {}
    for prop, name in ADDRESS_FIELDS.items():
        try:
            field = header.get(name)
            addresses: list[Address] = [a for g in field.groups for a in g.addresses] if field is not None else []
            found[prop] = [MailAddress.of(a.addr_spec) for a in addresses]
        except (InvalidAddress, ValueError, AttributeError, IndexError):
            raise SetError("invalidEmail", f"Invalid mail address in {name} header", [prop]) from None
    return found


def _envelope(value: Any, header: dict[str, list[MailAddress]]) -> tuple[MailAddress, list[MailAddress]]:
    if value is None:
        return header["from"][0], list(dict.fromkeys([*header["to"], *header["cc"], *header["bcc"]]))
    if not isinstance(value, dict) or set(value) != {"mailFrom", "rcptTo"} or not isinstance(value["rcptTo"], list):
        raise SetError("invalidArguments", "envelope is {mailFrom, rcptTo}", ["envelope"])
    return _address(value["mailFrom"], "envelope.mailFrom"), [_address(a, "envelope.rcptTo") for a in value["rcptTo"]]


def _address(value: Any, prop: str) -> MailAddress:
    if not isinstance(value, dict) or not isinstance(value.get("email"), str) or set(value) - {"email", "parameters"}:
        raise SetError("invalidArguments", f"{prop} is {{email, parameters}}", [prop])
    if value.get("parameters"):   # holdFor / holdUntil (delayed sending) and SMTP extensions: none offered
        raise SetError("invalidArguments", f"{prop}: no SMTP parameter is supported (maxDelayedSend is 0)", [prop])
    try:
        return MailAddress.of(value["email"])
    except InvalidAddress:
        raise SetError("invalidArguments", f"{prop}: {value['email']!r} is not a mail address", [prop]) from None
