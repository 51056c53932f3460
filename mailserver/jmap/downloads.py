"""What a download URL's blob id names (RFC 8620 6.2), resolved as James's ``BlobResolvers``: an
upload of the user (``uploads-<id>``), a whole message (its message id, ``message/rfc822``), or a
leaf part of one (``<messageId>_<partId>``, as ``Email/get`` hands out, the body decoded).

A message is readable by the owner of a mailbox holding it and by a user granted the ``r`` right
on such a mailbox (James's ``MessageIdManager`` with the user's session); for anyone else it does
not exist (404, never 403: an id tells nothing).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from mailserver.jmap.account import MailServices
from mailserver.jmap.methods.email_body import structure
from mailserver.jmap.uploads import upload_id
from mailserver.mailbox.errors import MailboxNotFound
from mailserver.mailbox.manager import MailboxManager
from mailserver.model.address import Username
from mailserver.model.ids import MailboxId, MessageId
from mailserver.model.message import MessageMetadata

MESSAGE_TYPE = "message/rfc822"
CHUNK = 64 * 1024
READ_RIGHT = "r"


@dataclass(frozen=True)
class Blob:
    content_type: str
    size: int
    chunks: Iterator[bytes]   # read while the response is sent


def resolve(blob_id: str, user: Username, services: MailServices) -> Blob | None:
    """The blob, or None when it does not exist for this user."""
    if (uploaded := upload_id(blob_id)) is not None:
        return _upload(uploaded, user, services)
    message, separator, part = blob_id.partition("_")
    if separator and not part:
        return None
    try:
        message_id = MessageId.of(message)
    except ValueError:
        return None
    if not readable_copies(services.manager, user, message_id):
        return None
    if not separator:
        return _message(services.manager, message_id)
    return _part(services.manager, message_id, part)


def readable_copies(manager: MailboxManager, user: Username, message_id: MessageId) -> list[MessageMetadata]:
    readable: dict[MailboxId, bool] = {}
    found = []
    for copy in manager.find_message(message_id):
        if copy.mailbox_id not in readable:
            readable[copy.mailbox_id] = _may_read(manager, user, copy.mailbox_id)
        if readable[copy.mailbox_id]:
            found.append(copy)
    return found


def _may_read(manager: MailboxManager, user: Username, mailbox_id: MailboxId) -> bool:
    try:
        mailbox = manager.get_mailbox_by_id(mailbox_id)
    except MailboxNotFound:   # deleted while we looked
        return False
    if mailbox.path.user == user:
        return True
    return READ_RIGHT in manager.get_acl(mailbox.path).get(str(user), "")


def _upload(id_: uuid.UUID, user: Username, services: MailServices) -> Blob | None:
    if services.uploads is None:
        return None
    found = services.uploads.retrieve(user, id_)
    if found is None:
        return None
    content = services.uploads.content(found)
    return Blob(found.content_type, len(content), iter([content]))


def _message(manager: MailboxManager, message_id: MessageId) -> Blob:
    copy = manager.find_message(message_id)[0]

    def chunks() -> Iterator[bytes]:
        with manager.open_message(message_id) as stream:
            while chunk := stream.read(CHUNK):
                yield chunk

    return Blob(MESSAGE_TYPE, copy.size, chunks())


def _part(manager: MailboxManager, message_id: MessageId, part_id: str) -> Blob | None:
    found = structure(manager.read_message(message_id))
    for part in (*found.text_body, *found.html_body, *found.attachments):
        if part.part_id == part_id:
            content = part.decoded()
            return Blob(part.type, len(content), iter([content]))
    return None
