"""11 -> 12: copy the legacy ``attachmentMessageId`` table into ``attachmentV2.message_id``
(James's AttachmentMessageIdMigration).

An attachment listed under several messages keeps the first one (the legacy partition is in
messageId = time order); an owner already recorded is never overwritten, so re-runs change nothing.
"""

from __future__ import annotations

from collections import Counter

from mailserver.cassandra.migrations.base import Migration, MigrationResult, scan, table_exists
from mailserver.cassandra.migrations.legacy import ATTACHMENT_MESSAGE_ID

SCAN = "SELECT attachmentIdAsUUID, messageId, attachmentId FROM attachmentMessageId"
SELECT = "SELECT id, blobId, message_id FROM attachmentV2 WHERE idAsUUID = ?"
UPDATE = "UPDATE attachmentV2 SET message_id = ? WHERE idAsUUID = ?"


class AttachmentMessageIdMigration(Migration):
    from_version = 11
    to_version = 12

    def run(self) -> MigrationResult:
        counters: Counter[str] = Counter(processed=0, updated=0, already_set=0, missing_attachment=0, errors=0)
        if not table_exists(self.s, ATTACHMENT_MESSAGE_ID.name):
            self.log.info("No %s table: nothing to migrate", ATTACHMENT_MESSAGE_ID.name)
            return MigrationResult.of(counters)
        for row in scan(self.s, SCAN):
            counters["processed"] += 1
            try:
                counters[self._migrate(row)] += 1
            except Exception:
                self.log.exception("Failed to migrate attachment %s of message %s", row["attachmentid"],
                                   row["messageid"])
                counters["errors"] += 1
        return MigrationResult.of(counters)

    def _migrate(self, row: dict) -> str:
        attachment = self.s.one(SELECT, (row["attachmentidasuuid"],))
        if attachment is None or attachment["id"] is None or attachment["blobid"] is None:
            # No attachment (or only a partial write James ignores): writing would create a partial row.
            self.log.warning("Attachment %s of message %s has no attachmentV2 row: skipped",
                             row["attachmentid"], row["messageid"])
            return "missing_attachment"
        if attachment["message_id"] is not None:
            return "already_set"
        self.s.execute(UPDATE, (row["messageid"], row["attachmentidasuuid"]))
        return "updated"
