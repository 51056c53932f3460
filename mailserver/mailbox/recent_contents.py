"""The content rows (``messageV3``) of messages this process stored lately, kept in memory.

Why: each delivered message's row was read back from Cassandra right after it was written, by
LocalDelivery (which blob did the message take?) and by the fast-view and search listeners of
the same process (issue 16: two of the 26 requests per mail).

Why it is safe: a row is immutable once its message is listed; ids are never reused. A row
enters the cache only when the message it belongs to was added to a mailbox by this process
(``staged`` at ``save_content``, ``kept`` once ``add`` succeeded): a row whose append failed
half-way may be written again by a retry elsewhere, with other blobs, and is never served from
here. Entries expire after ``ttl`` seconds and deletes through the store evict them, so a row
deleted by another process is served at most that long (its readers then find its blobs gone,
as they would have a moment earlier).
"""

from __future__ import annotations

import threading

from cachetools import TTLCache

from mailserver.model.ids import MessageId
from mailserver.model.message import MessageContent

DEFAULT_ENTRIES = 10_000
DEFAULT_TTL_SECONDS = 60.0


class RecentContents:
    def __init__(self, entries: int = DEFAULT_ENTRIES, ttl: float = DEFAULT_TTL_SECONDS) -> None:
        self._staged: TTLCache[MessageId, MessageContent] = TTLCache(maxsize=entries, ttl=ttl)
        self._kept: TTLCache[MessageId, MessageContent] = TTLCache(maxsize=entries, ttl=ttl)
        self._lock = threading.Lock()

    def stage(self, content: MessageContent) -> None:
        """A row just written, not served until ``keep`` says its message was added."""
        with self._lock:
            self._kept.pop(content.message_id, None)   # written again: the older row is not the truth
            self._staged[content.message_id] = content

    def keep(self, message_id: MessageId) -> None:
        with self._lock:
            content = self._staged.pop(message_id, None)
            if content is not None:
                self._kept[message_id] = content

    def get(self, message_id: MessageId) -> MessageContent | None:
        with self._lock:
            return self._kept.get(message_id)

    def forget(self, message_id: MessageId) -> None:
        with self._lock:
            self._staged.pop(message_id, None)
            self._kept.pop(message_id, None)
