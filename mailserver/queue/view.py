"""The Cassandra browse view of a distributed mail queue (James's CassandraMailQueueView).

Tables as James defines them (james-cassandra.md §1.10): ``enqueuedMailsV4`` (time slices x
buckets), ``deletedMailsV2`` (presence = dequeued or deleted), ``browseStart`` and
``contentStart``. Slice = floor(epoch / sliceWindow) * sliceWindow; bucket =
abs(javaHash(name) % bucketCount), Java's ``String.hashCode`` so that rows land where a Java
node would look for them.

Extension: the due time of a delayed mail is kept in the row's ``attributes`` map under
``NEXT_DELIVERY_ATTRIBUTE`` (DateSerializer value), since the table has no column for it; it is
removed again from what browse returns.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from mailserver.cassandra.session import CassandraSession
from mailserver.model.address import MailAddress
from mailserver.model.mail import Mail, MailContent, PerRecipientHeader
from mailserver.queue.serialization import (
    SerializationError,
    deserialize_attributes,
    format_instant,
    parse_instant,
    serialize_attributes,
)

log = logging.getLogger(__name__)

NEXT_DELIVERY_ATTRIBUTE = "mailserver.queue.nextDelivery"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

INSERT_ENQUEUED = (
    "INSERT INTO enqueuedMailsV4 (queueName, timeRangeStart, bucketId, enqueueId, enqueuedTime, name, state, "
    "headerBlobId, bodyBlobId, attributes, errorMessage, sender, recipients, remoteHost, remoteAddr, lastUpdated, "
    "perRecipientSpecificHeaders) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
SELECT_SLICE = "SELECT * FROM enqueuedMailsV4 WHERE queueName = ? AND timeRangeStart = ? AND bucketId = ?"


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, signed 32-bit)."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def bucket_of(name: str, bucket_count: int) -> int:
    return abs(java_string_hash(name)) % bucket_count  # = abs(hash % count) with Java's truncating %


def slice_start(moment: datetime, window: timedelta) -> datetime:
    """Start of the slice holding ``moment`` (millisecond arithmetic, as Cassandra timestamps)."""
    window_ms = int(window.total_seconds() * 1000)
    ms = int((_utc(moment) - EPOCH).total_seconds() * 1000)
    return EPOCH + timedelta(milliseconds=(ms // window_ms) * window_ms)


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _ms(moment: datetime) -> datetime:
    """Truncated to the millisecond, as Cassandra stores timestamps."""
    moment = _utc(moment)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


@dataclass(frozen=True)
class ViewEntry:
    enqueue_id: uuid.UUID
    mail: Mail                       # content = the two blob ids (size unknown here: 0)
    enqueued_time: datetime
    next_delivery: datetime | None   # due time of a delayed mail (extension), else None
    time_range_start: datetime
    bucket_id: int


class CassandraMailQueueView:
    def __init__(self, session: CassandraSession, queue_name: str, *, slice_window: timedelta = timedelta(hours=1),
                 bucket_count: int = 1, update_browse_start_pace: int = 1000,
                 clock: Callable[[], datetime] | None = None, rng: random.Random | None = None) -> None:
        if slice_window.total_seconds() * 1000 < 1 or slice_window.total_seconds() * 1000 % 1:
            raise ValueError(f"slice window must be a positive whole number of milliseconds: {slice_window}")
        if bucket_count < 1:
            raise ValueError(f"bucket count must be at least 1: {bucket_count}")
        if update_browse_start_pace < 1:
            raise ValueError(f"update browse start pace must be at least 1: {update_browse_start_pace}")
        self.s = session
        self.queue_name = queue_name
        self.slice_window = slice_window
        self.bucket_count = bucket_count
        self.pace = update_browse_start_pace
        self._now = clock or (lambda: datetime.now(UTC))
        self._rng = rng or random.Random()  # noqa: S311 - a sampling decision, not security

    # ------------------------------------------------------------------ initialisation
    def initialize(self) -> None:
        """browseStart IF NOT EXISTS = current slice; contentStart IF NOT EXISTS = browseStart."""
        self.s.execute_lwt("INSERT INTO browseStart (queueName, browseStart) VALUES (?, ?) IF NOT EXISTS",
                           (self.queue_name, slice_start(self._now(), self.slice_window)))
        start = self.browse_start()
        if start is not None:
            self.s.execute_lwt("INSERT INTO contentStart (queueName, contentStart) VALUES (?, ?) IF NOT EXISTS",
                               (self.queue_name, start))

    def browse_start(self) -> datetime | None:
        row = self.s.one("SELECT browseStart FROM browseStart WHERE queueName = ?", (self.queue_name,), strong=True)
        return _utc(row["browsestart"]) if row and row["browsestart"] else None

    def content_start(self) -> datetime | None:
        row = self.s.one("SELECT contentStart FROM contentStart WHERE queueName = ?", (self.queue_name,), strong=True)
        return _utc(row["contentstart"]) if row and row["contentstart"] else None

    # ------------------------------------------------------------------ writes
    def store(self, enqueue_id: uuid.UUID, mail: Mail, enqueued_time: datetime,
              next_delivery: datetime | None = None) -> None:
        self.start_store(enqueue_id, mail, enqueued_time, next_delivery)()

    def start_store(self, enqueue_id: uuid.UUID, mail: Mail, enqueued_time: datetime,
                    next_delivery: datetime | None = None) -> Callable[[], None]:
        """``store``, sent now; returns the function that waits for it (and raises its failure)."""
        attributes = serialize_attributes(mail)
        attributes.pop(NEXT_DELIVERY_ATTRIBUTE, None)
        if next_delivery is not None:
            attributes[NEXT_DELIVERY_ATTRIBUTE] = (
                '{"serializer":"DateSerializer","value":"' + format_instant(next_delivery) + '"}')
        headers = [(h.recipient, h.name, h.value) for h in mail.per_recipient_headers] or None
        return self.s.start(INSERT_ENQUEUED, (
            self.queue_name, slice_start(enqueued_time, self.slice_window), bucket_of(mail.name, self.bucket_count),
            enqueue_id, _ms(enqueued_time), mail.name, mail.state, mail.content.header_blob_id,
            mail.content.body_blob_id, {k: v.encode("utf-8") for k, v in attributes.items()} or None,
            mail.error_message, str(mail.sender) if mail.sender else None, [str(r) for r in mail.recipients],
            mail.remote_host, mail.remote_addr, _ms(mail.last_updated), headers))

    def clear_next_delivery(self, enqueue_id: uuid.UUID, name: str, enqueued_time: datetime) -> None:
        """Forget a delayed mail's due time (after a flush); a missing row is ignored."""
        key = (self.queue_name, slice_start(enqueued_time, self.slice_window), bucket_of(name, self.bucket_count),
               enqueue_id)
        row = self.s.one("SELECT attributes FROM enqueuedMailsV4 WHERE queueName = ? AND timeRangeStart = ? "
                         "AND bucketId = ? AND enqueueId = ?", key)
        if row is None or NEXT_DELIVERY_ATTRIBUTE not in (row["attributes"] or {}):
            return
        attributes = {k: v for k, v in row["attributes"].items() if k != NEXT_DELIVERY_ATTRIBUTE}
        self.s.execute("UPDATE enqueuedMailsV4 SET attributes = ? WHERE queueName = ? AND timeRangeStart = ? "
                       "AND bucketId = ? AND enqueueId = ?", (attributes or None, *key))

    def mark_deleted(self, enqueue_id: uuid.UUID) -> None:
        self.s.execute("INSERT INTO deletedMailsV2 (queueName, enqueueId) VALUES (?, ?)",
                       (self.queue_name, enqueue_id))

    def is_deleted(self, enqueue_id: uuid.UUID) -> bool:
        return self.s.one("SELECT enqueueId FROM deletedMailsV2 WHERE queueName = ? AND enqueueId = ?",
                          (self.queue_name, enqueue_id)) is not None

    # ------------------------------------------------------------------ reads
    def _slices(self, start: datetime) -> Iterator[datetime]:
        last = slice_start(self._now(), self.slice_window)
        current = slice_start(start, self.slice_window)
        while current <= last:
            yield current
            current += self.slice_window

    def read_entry(self, time_range_start: datetime, bucket_id: int, enqueue_id: uuid.UUID) -> ViewEntry | None:
        """The row at this key, deleted or not; None when there is none."""
        row = self.s.one("SELECT * FROM enqueuedMailsV4 WHERE queueName = ? AND timeRangeStart = ? AND bucketId = ? "
                         "AND enqueueId = ?", (self.queue_name, _utc(time_range_start), bucket_id, enqueue_id))
        return self._entry(row) if row is not None else None

    def _partition(self, time_range_start: datetime, bucket: int) -> list[dict]:
        return self.s.execute(SELECT_SLICE, (self.queue_name, time_range_start, bucket))

    def browse_references(self, *, pending_deleted: bool = False) -> Iterator[ViewEntry]:
        """Entries from browseStart to now, not deleted, sorted by enqueued time.

        Slices are read in order and each slice is sorted, so the whole sequence is sorted.
        ``pending_deleted`` also yields deleted entries whose delay has not run out: their
        message still waits in a delay queue, so their deleted mark must outlive it.
        """
        start = self.browse_start()
        if start is None:
            self.initialize()
            start = self.browse_start() or slice_start(self._now(), self.slice_window)
        now = self._now()
        for time_range_start in self._slices(start):
            entries = []
            for bucket in range(self.bucket_count):
                for row in self._partition(time_range_start, bucket):
                    try:
                        entry = self._entry(row)
                    except (SerializationError, ValueError) as exc:
                        log.warning("queue %s: unreadable view row %s skipped: %s",
                                    self.queue_name, row.get("enqueueid"), exc)
                        continue
                    if self.is_deleted(entry.enqueue_id) and not (
                            pending_deleted and entry.next_delivery is not None and entry.next_delivery > now):
                        continue
                    entries.append(entry)
            entries.sort(key=lambda e: (e.enqueued_time, str(e.enqueue_id)))
            yield from entries

    def _entry(self, row: dict) -> ViewEntry:
        raw = dict(row["attributes"] or {})
        due_raw = raw.pop(NEXT_DELIVERY_ATTRIBUTE, None)
        next_delivery = None
        if due_raw is not None:
            next_delivery = parse_instant(deserialize_attributes({"d": due_raw})["d"])
        last_updated = row["lastupdated"]
        mail = Mail(
            name=row["name"],
            sender=MailAddress.of(row["sender"]) if row["sender"] else None,
            recipients=[MailAddress.of(r) for r in row["recipients"] or []],
            content=MailContent.of_blobs(row["headerblobid"], row["bodyblobid"], 0),
            state=row["state"] or "root",
            error_message=row["errormessage"],
            attributes=deserialize_attributes({k: v.decode("utf-8") for k, v in raw.items()}),
            remote_host=row["remotehost"] or "localhost",
            remote_addr=row["remoteaddr"] or "127.0.0.1",
            last_updated=_utc(last_updated) if last_updated else _utc(row["enqueuedtime"]),
            per_recipient_headers=[PerRecipientHeader(*h) for h in row["perrecipientspecificheaders"] or []],
        )
        return ViewEntry(row["enqueueid"], mail, _utc(row["enqueuedtime"]), next_delivery,
                         _utc(row["timerangestart"]), row["bucketid"])

    # ------------------------------------------------------------------ browse start and cleanup (ADR 0032)
    def maybe_update_browse_start(self) -> None:
        """With probability 1/pace, update the browse start; failures are logged, never raised."""
        if self._rng.randrange(self.pace) == 0:
            try:
                self.update_browse_start()
            except Exception:  # a failed update is retried implicitly by a later one
                log.warning("queue %s: browse start update failed", self.queue_name, exc_info=True)

    def update_browse_start(self) -> datetime | None:
        """Move browseStart to the slice of the oldest live entry, then clean the slices before it.

        Never moves into the slice of (now - sliceWindow) or later, so a mail being enqueued
        right now (or by a node whose clock lags a little) is never left behind. Returns the new
        browse start, or None when it did not move.
        """
        current = self.browse_start()
        if current is None:
            self.initialize()
            return None
        now = self._now()
        if current >= now - self.slice_window:
            return None
        limit = slice_start(now - self.slice_window, self.slice_window)
        first = next(iter(self.browse_references(pending_deleted=True)), None)
        candidate = min(first.time_range_start, limit) if first is not None else limit
        if candidate <= current:
            return None
        self.s.execute("INSERT INTO browseStart (queueName, browseStart) VALUES (?, ?)", (self.queue_name, candidate))
        self.cleanup(candidate)
        return candidate

    def cleanup(self, up_to: datetime) -> None:
        """Drop deleted marks and partitions of the slices in [contentStart, up_to), then move contentStart."""
        start = self.content_start() or self.browse_start() or up_to
        current = slice_start(start, self.slice_window)
        while current < up_to:
            for bucket in range(self.bucket_count):
                for row in self.s.execute("SELECT enqueueId FROM enqueuedMailsV4 WHERE queueName = ? "
                                          "AND timeRangeStart = ? AND bucketId = ?",
                                          (self.queue_name, current, bucket)):
                    self.s.execute("DELETE FROM deletedMailsV2 WHERE queueName = ? AND enqueueId = ?",
                                   (self.queue_name, row["enqueueid"]))
                self.s.execute("DELETE FROM enqueuedMailsV4 WHERE queueName = ? AND timeRangeStart = ? "
                               "AND bucketId = ?", (self.queue_name, current, bucket))
            current += self.slice_window
        self.s.execute("INSERT INTO contentStart (queueName, contentStart) VALUES (?, ?)", (self.queue_name, up_to))
