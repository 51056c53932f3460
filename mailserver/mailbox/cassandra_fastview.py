"""``message_fast_view_projection``: a pure cache of preview and hasAttachment per message."""

from __future__ import annotations

from mailserver.cassandra.session import CassandraSession
from mailserver.mailbox.store import FastViewStore
from mailserver.model.ids import MessageId


class CassandraFastViewStore(FastViewStore):
    def __init__(self, session: CassandraSession) -> None:
        self.s = session

    def store(self, message_id: MessageId, preview: str, has_attachment: bool) -> None:
        self.s.execute("INSERT INTO message_fast_view_projection (messageId, preview, hasAttachment) VALUES (?, ?, ?)",
                       (message_id.value, preview, has_attachment))

    def retrieve(self, message_id: MessageId) -> tuple[str, bool] | None:
        row = self.s.one("SELECT preview, hasAttachment FROM message_fast_view_projection WHERE messageId = ?",
                         (message_id.value,))
        return (row["preview"], bool(row["hasattachment"])) if row else None

    def delete(self, message_id: MessageId) -> None:
        self.s.execute("DELETE FROM message_fast_view_projection WHERE messageId = ?", (message_id.value,))
