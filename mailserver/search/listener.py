"""The indexing group listener (James's ``OpenSearchListeningMessageSearchIndex``).

- Added: the messages are read from the store as they are *now* (flags included, as James's
  ``ListeningMessageSearchIndex.handleAdded``), their documents built and indexed; a mailbox or a
  message already gone is skipped.
- Expunged: the documents are deleted.
- FlagsUpdated: partial update of the flags and modSeq (never back in time); a message with no
  document yet (its Added not handled yet, the bus runs events concurrently) is indexed from the
  store instead.
- MailboxDeletion: delete-by-query on the mailbox id.

Every write is idempotent. An unreachable index raises: the bus retries, then dead-letters the
event for this group (redelivered by WebAdmin ``/events/deadLetter`` or the DAG).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from mailserver.events.api import EventListener
from mailserver.mailbox.errors import MessageNotFound
from mailserver.mailbox.manager import MailboxManager
from mailserver.model.events import Added, Expunged, FlagsUpdated, MailboxDeletion, MailboxEvent
from mailserver.model.ids import MailboxId
from mailserver.model.mailbox import Mailbox
from mailserver.model.message import MessageMetadata
from mailserver.search.api import FlagsUpdate, SearchIndex
from mailserver.search.config import DEFAULT_DOCUMENT_OPTIONS, DocumentOptions
from mailserver.search.document import message_document

log = logging.getLogger(__name__)

GROUP = ("org.apache.james.mailbox.opensearch.events.OpenSearchListeningMessageSearchIndex"
         "$OpenSearchListeningMessageSearchIndexGroup")
BATCH = 50   # documents per bulk request: a copy of thousands of messages is indexed in slices


def build_document(metadata: MessageMetadata, content: bytes, user: object,
                   options: DocumentOptions = DEFAULT_DOCUMENT_OPTIONS) -> dict[str, Any]:
    """``message_document``, and if it fails anyway the document without body and attachments (as James
    falls back to ``convertToJsonWithoutAttachment``)."""
    try:
        return message_document(metadata, content, user, options=options)
    except Exception:
        log.warning("message %s of mailbox %s indexed without its body", metadata.uid, metadata.mailbox_id,
                    exc_info=True)
        reduced = DocumentOptions(index_attachments=False, index_headers=options.index_headers, index_body=False,
                                  index_user=options.index_user)
        return message_document(metadata, content, user, options=reduced)


class OpenSearchListeningMessageSearchIndex(EventListener):
    group = GROUP

    def __init__(self, index: SearchIndex, manager: MailboxManager,
                 options: DocumentOptions = DEFAULT_DOCUMENT_OPTIONS) -> None:
        self.index = index
        self.manager = manager
        self.options = options

    def accepts(self, event: MailboxEvent) -> bool:
        return isinstance(event, Added | Expunged | FlagsUpdated | MailboxDeletion)

    def handle(self, event: MailboxEvent) -> None:
        if isinstance(event, Added):
            indexed = self.index_messages(event.mailbox_id, [m.uid for m in event.added])
            log.debug("indexed %d message(s) of mailbox %s", indexed, event.mailbox_id)
        elif isinstance(event, Expunged):
            self.index.delete(event.mailbox_id, [m.uid for m in event.expunged])
        elif isinstance(event, FlagsUpdated):
            updates = [FlagsUpdate(u.uid, u.new_flags, u.mod_seq) for u in event.updated]
            missing = self.index.update_flags(event.mailbox_id, updates)
            if missing:
                self.index_messages(event.mailbox_id, missing)
        elif isinstance(event, MailboxDeletion):
            self.index.delete_mailbox(event.mailbox_id)

    def index_messages(self, mailbox_id: MailboxId, uids: Iterable[int]) -> int:
        """Index the messages ``uids`` of ``mailbox_id`` from the store; returns how many were found.

        Also what the single-message and mailbox reindex tasks need.
        """
        mailbox = self.manager.mailboxes.find_by_id(mailbox_id)
        if mailbox is None:
            log.info("search indexing skipped for deleted mailbox %s", mailbox_id)
            return 0
        batch: list[dict[str, Any]] = []
        indexed = 0
        for uid in uids:
            document = self.document(mailbox, uid)
            if document is None:
                continue
            batch.append(document)
            if len(batch) >= BATCH:
                indexed += self._flush(batch)
        return indexed + self._flush(batch)

    def document(self, mailbox: Mailbox, uid: int) -> dict[str, Any] | None:
        """The document of message ``uid`` as stored now; None if it is gone."""
        rows = self.manager.messages.list(mailbox.id, uid, uid)
        if not rows:
            return None
        try:
            content = self.manager.read_message(rows[0].message_id)
        except MessageNotFound:
            return None
        return build_document(rows[0], content, mailbox.path.user, self.options)

    def _flush(self, batch: list[dict[str, Any]]) -> int:
        if not batch:
            return 0
        self.index.index_documents(batch).raise_for_failures()
        count = len(batch)
        batch.clear()
        return count
