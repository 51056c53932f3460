"""Group listeners of the mailbox layer (James's names): quota, fast view, message deletion.

James runs them asynchronously on the event bus; the in-process bus runs them synchronously,
the RabbitMQ bus from durable group queues, in the processes that have the ``listeners`` role.
They must be idempotent enough to be delivered again, and they are where the guide's "current
quota" and "fast view" projections live.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from mailserver.blob.api import BlobStore
from mailserver.events.api import EventListener
from mailserver.events.latest_only import LatestOnly
from mailserver.mailbox.content import PREVIEW_SCAN_BYTES, preview
from mailserver.mailbox.store import AppliedEvent, FastViewStore, MessageStore, QuotaStore
from mailserver.model.events import Added, Expunged, MailboxDeletion, MailboxEvent, QuotaUsageUpdatedEvent
from mailserver.model.ids import MessageId
from mailserver.model.quota import QuotaRoot, QuotaUsage, effective_limits

log = logging.getLogger(__name__)


class CurrentQuotaUpdater(EventListener):
    """ListeningCurrentQuotaUpdater: +/- count and size on Added, Expunged and MailboxDeletion.

    After each update it publishes a ``QuotaUsageUpdatedEvent`` with the root's usage, effective
    limits (user, else domain, else global) and the limit each scope defines, as James does
    (quota-ratio indexing and threshold mailing consume it). Counting is not idempotent: the store
    records the event with its counts, so an event delivered again after a crash is counted once.
    Changes counted while the same root's usage is being published are published together, with
    the usage read after them (``LatestOnly``): under load, fewer events than changes, the newest
    usage always last.
    """

    group = "org.apache.james.mailbox.store.quota.ListeningCurrentQuotaUpdater$ListeningCurrentQuotaUpdaterGroup"

    def __init__(self, quota: QuotaStore, publish: Callable[[MailboxEvent], None] | None = None) -> None:
        self.quota = quota
        self.publish = publish
        # Changes of one root counted while its usage is being published fold into one more publication.
        self.publications: LatestOnly[QuotaRoot] = LatestOnly()

    def accepts(self, event: MailboxEvent) -> bool:
        return isinstance(event, Added | Expunged | MailboxDeletion)

    def handle(self, event: MailboxEvent) -> None:
        root = QuotaRoot.for_user(event.user)
        if isinstance(event, Added):
            delta = QuotaUsage(len(event.added), sum(m.size for m in event.added))
        elif isinstance(event, Expunged):
            delta = -QuotaUsage(len(event.expunged), sum(m.size for m in event.expunged))
        elif isinstance(event, MailboxDeletion) and event.deleted_message_count:
            delta = -QuotaUsage(event.deleted_message_count, event.total_deleted_size)
        else:
            return
        self.quota.increase(root, delta, once=AppliedEvent(self.group, event.event_id))
        if self.publish is not None:
            self.publications.run(root, lambda: self._publish_usage(event, root))

    def _publish_usage(self, event: MailboxEvent, root: QuotaRoot) -> None:
        assert self.publish is not None
        by_scope = self.quota.limits_by_scope(root)
        self.publish(QuotaUsageUpdatedEvent(
            user=event.user, quota_root=root, usage=self.quota.current(root), limits=effective_limits(by_scope),
            count_limits={s: v.count for s, v in by_scope.items() if v.count is not None},
            size_limits={s: v.size for s, v in by_scope.items() if v.size is not None}))


class FastViewProjectionListener(EventListener):
    """ComputeMessageFastViewProjectionListener: preview and hasAttachment of new content."""

    group = ("org.apache.james.jmap.event.ComputeMessageFastViewProjectionListener"
             "$ComputeMessageFastViewProjectionListenerGroup")

    def __init__(self, messages: MessageStore, blobs: BlobStore, fast_view: FastViewStore) -> None:
        self.messages, self.blobs, self.fast_view = messages, blobs, fast_view

    def accepts(self, event: MailboxEvent) -> bool:
        return isinstance(event, Added) and event.is_appended  # copies and moves reuse the entry

    def handle(self, event: MailboxEvent) -> None:
        assert isinstance(event, Added)
        for metadata in event.added:
            content = self.messages.get_content(metadata.message_id)
            if content is None:
                continue
            prefix = read_prefix(self.blobs, content.header_blob_id, content.body_blob_id, PREVIEW_SCAN_BYTES)
            text, has_attachment = preview(prefix)
            self.fast_view.store(metadata.message_id, text, has_attachment)


class DeleteMessageListener(EventListener):
    """Removes what no mailbox references any more (ADR 0029): blobs, content rows and the fast view.

    As James, the attachment, header and body blobs are deleted first, through the blob store: a real delete
    without deduplication (each append wrote blobs of its own, shared only by the copies of the
    message, which share its id and are checked for), a no-op with it (the blob GC decides).
    """

    group = "org.apache.james.mailbox.cassandra.DeleteMessageListener$DeleteMessageListenerGroup"

    def __init__(self, messages: MessageStore, fast_view: FastViewStore, blobs: BlobStore) -> None:
        self.messages, self.fast_view, self.blobs = messages, fast_view, blobs

    def accepts(self, event: MailboxEvent) -> bool:
        return isinstance(event, Expunged | MailboxDeletion)

    def handle(self, event: MailboxEvent) -> None:
        if isinstance(event, Expunged):
            if event.moved_to is not None:
                return  # a move keeps the content referenced
            for metadata in event.expunged:
                self._delete_if_unreferenced(metadata.message_id)
        elif isinstance(event, MailboxDeletion):
            for stored in self.messages.list(event.mailbox_id):
                self.messages.delete(stored)
                self._delete_if_unreferenced(stored.message_id)
            self.messages.clear_mailbox_indexes(event.mailbox_id)

    def _delete_if_unreferenced(self, message_id: MessageId) -> None:
        if not self.messages.find_by_message_id(message_id):
            content = self.messages.get_content(message_id)
            if content is not None:   # blobs before the row: a failure is retried with the row still there
                attachments = [a.blob_id for a in content.attachments if a.blob_id]
                for blob_id in (*attachments, content.header_blob_id, content.body_blob_id):
                    self.blobs.delete(self.blobs.default_bucket, blob_id)
            self.messages.delete_content(message_id)
            self.fast_view.delete(message_id)


def read_prefix(blobs: BlobStore, header_blob_id: str, body_blob_id: str, limit: int) -> bytes:
    bucket = blobs.default_bucket
    header = blobs.read(bucket, header_blob_id)
    with blobs.read_stream(bucket, body_blob_id) as body:
        return header + body.read(max(0, limit - len(header)))
