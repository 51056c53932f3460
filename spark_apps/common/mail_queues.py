"""The distributed mail queue and the mail repositories as the queue maintenance jobs see them.

Two halves:

* **reading** (driver, Spark): James's browse view (``enqueuedMailsV4`` minus ``deletedMailsV2``,
  from ``browseStart`` on) as a DataFrame, the filters of the queue procedures as Spark columns
  (pure, unit-tested), and a snapshot of the enqueueIds the broker holds;
* **acting** (executors): every change goes through the server's own code, the
  ``DistributedMailQueue`` and ``CassandraMailRepositoryStore`` of ``mailserver``, so broker, view
  and blobs stay as consistent as the server keeps them. ``QueueAccess`` is the picklable recipe
  (connection settings); each Python worker builds the objects once and reuses them. Queues are
  attached to, never declared: a job must not redeclare a queue with arguments of its own.

Lives outside the job modules on purpose: a job runs as ``__main__`` and its globals are pickled
by value, which a lock or a live connection cannot be.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from mailserver.model.james_units import parse_duration

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from mailserver.blob.config import BlobStoreConfig
    from spark_apps.common.settings import JobSettings

NEXT_DELIVERY_ATTRIBUTE = "mailserver.queue.nextDelivery"   # mailserver.queue.view (the delay extension)
WORKQUEUE_PREFIX = "JamesMailQueue-workqueue-"
_QUEUE_NAME = re.compile(r"^[A-Za-z0-9._:@-]{1,180}$")
JOB_DURATION_UNIT = "s"   # a bare number in a job's duration option is seconds

_LOCK = threading.RLock()   # builders nest (the factory builds the session)
_BUILT: dict[tuple[str, Any], Any] = {}


# -- pure helpers --------------------------------------------------------------------------------

def job_duration(raw: str) -> timedelta:
    """A job's duration option: James's durations (``model.james_units``), seconds when no unit."""
    return parse_duration(raw, JOB_DURATION_UNIT)


def validate_queue_name(name: str) -> str:
    """The server's rule (``mailserver.queue.naming``)."""
    if not isinstance(name, str) or not _QUEUE_NAME.match(name):
        raise ValueError(f"invalid mail queue name {name!r}: use 1 to 180 letters, digits or . _ : @ -")
    return name


@dataclass(frozen=True)
class AddressFilter:
    """An exact address (normalised as the server stores it) or every address of a domain (``*@domain``)."""

    address: str | None = None
    domain: str | None = None

    @classmethod
    def parse(cls, raw: str | None) -> AddressFilter | None:
        if raw is None or not raw.strip():
            return None
        text = raw.strip()
        if text.startswith("*@"):
            domain = text[2:].strip().lower().rstrip(".")
            if not domain or "@" in domain:
                raise ValueError(f"invalid domain filter {raw!r}: expected *@domain.tld")
            return cls(domain=domain)
        from mailserver.model.address import InvalidAddress, MailAddress

        try:
            return cls(address=str(MailAddress.of(text)))
        except InvalidAddress as exc:
            raise ValueError(f"invalid address filter {raw!r}: {exc}") from exc

    def matches(self, address: str | None) -> bool:
        if address is None:
            return False
        if self.address is not None:
            return address == self.address
        return address.lower().endswith("@" + (self.domain or ""))

    def column(self, col: Column) -> Column:
        """Spark condition on a string column (the stored, normalised address)."""
        from pyspark.sql import functions as F

        if self.address is not None:
            return col == F.lit(self.address)
        return F.lower(col).endswith("@" + (self.domain or ""))

    def describe(self) -> str:
        return self.address if self.address is not None else f"*@{self.domain}"


@dataclass(frozen=True)
class MailFilters:
    """What the queue and repository procedures select: every given criterion must hold (AND)."""

    sender: AddressFilter | None = None
    recipient: AddressFilter | None = None
    name: str | None = None
    older_than: timedelta | None = None

    @classmethod
    def parse(cls, sender: str | None = None, recipient: str | None = None, name: str | None = None,
              older_than: str | None = None) -> MailFilters:
        return cls(AddressFilter.parse(sender), AddressFilter.parse(recipient), (name or "").strip() or None,
                   job_duration(older_than) if older_than else None)

    @staticmethod
    def add_arguments(group: Any, *, name_means: str, older_than_means: str) -> None:
        """The job options ``from_args`` reads (``group``: an argparse parser or argument group)."""
        group.add_argument("--sender", help="only mails from this sender (address or *@domain)")
        group.add_argument("--recipient", help="only mails with this recipient (address or *@domain)")
        group.add_argument("--name", help=f"only the mail with this {name_means}")
        group.add_argument("--older-than", help=f"only mails {older_than_means} longer ago than this (30m, 2h, 1d)")

    @classmethod
    def from_args(cls, args: Any) -> MailFilters:
        return cls.parse(args.sender, args.recipient, args.name, args.older_than)

    @property
    def empty(self) -> bool:
        return self.sender is None and self.recipient is None and self.name is None and self.older_than is None

    def matches(self, *, sender: str | None, recipients: Iterable[str], name: str, time: datetime,
                now: datetime) -> bool:
        """Pure Python twin of ``condition`` (what the repair re-checks and the tests compare)."""
        if self.sender is not None and not self.sender.matches(sender):
            return False
        if self.recipient is not None and not any(self.recipient.matches(r) for r in recipients):
            return False
        if self.name is not None and name != self.name:
            return False
        return self.older_than is None or time < now - self.older_than

    def condition(self, now_ms: int, *, sender: str = "sender", recipients: str = "recipients", name: str = "name",
                  time_ms: str = "time_ms") -> Column:
        """Spark condition over the given column names (``time_ms``: epoch millis of the mail's date)."""
        from pyspark.sql import functions as F

        cond = F.lit(True)
        if self.sender is not None:
            cond = cond & F.coalesce(self.sender.column(F.col(sender)), F.lit(False))
        if self.recipient is not None:
            wanted = self.recipient
            cond = cond & F.coalesce(F.exists(F.col(recipients), lambda r: wanted.column(r)), F.lit(False))
        if self.name is not None:
            cond = cond & (F.col(name) == F.lit(self.name))
        if self.older_than is not None:
            cond = cond & (F.col(time_ms) < F.lit(now_ms - int(self.older_than.total_seconds() * 1000)))
        return cond

    def as_options(self) -> dict[str, Any]:
        return {"sender": self.sender.describe() if self.sender else None,
                "recipient": self.recipient.describe() if self.recipient else None,
                "name": self.name,
                "olderThan": f"{int(self.older_than.total_seconds())}s" if self.older_than is not None else None}


def epoch_ms(moment: datetime) -> int:
    return int(moment.astimezone(UTC).timestamp() * 1000)


def from_epoch_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def enqueue_id_of(body: bytes) -> str | None:
    """The enqueueId of a broker message body (James's mail reference JSON); None when unreadable."""
    try:
        value = json.loads(body).get("enqueueId")
        return str(uuid.UUID(str(value)))
    except (ValueError, AttributeError, TypeError):
        return None


# -- the browse view as a DataFrame --------------------------------------------------------------

VIEW_COLUMNS = ("queuename", "timerangestart", "bucketid", "enqueueid", "enqueuedtime", "name", "sender",
                "recipients", "attributes")


def live_view_entries(view: DataFrame, deleted: DataFrame, browse_starts: Mapping[str, int]) -> DataFrame:
    """Pure: the entries browse would list (from each queue's browse start, not marked deleted), with
    ``timerangestart_ms``, ``enqueuedtime_ms`` and ``nextdelivery_ms`` (the delay extension; null when none).

    ``view`` has ``VIEW_COLUMNS`` (``enqueuedMailsV4``), ``deleted`` (queuename, enqueueid);
    ``browse_starts`` maps each queue in scope to its browse start (epoch ms); other queues are dropped.
    """
    from pyspark.sql import functions as F

    starts = view.sparkSession.createDataFrame([(q, int(ms)) for q, ms in browse_starts.items()],
                                               "queuename string, browsestart_ms long")
    due = F.get_json_object(F.col("attributes").getItem(NEXT_DELIVERY_ATTRIBUTE).cast("string"), "$.value")
    rows = (view.withColumn("timerangestart_ms", F.unix_millis(F.col("timerangestart")))
            .withColumn("enqueuedtime_ms", F.unix_millis(F.col("enqueuedtime")))
            .withColumn("nextdelivery_ms", F.unix_millis(due.cast("timestamp")))
            .join(F.broadcast(starts), "queuename")
            .filter(F.col("timerangestart_ms") >= F.col("browsestart_ms"))
            .drop("browsestart_ms"))
    return rows.join(deleted.select("queuename", "enqueueid"), ["queuename", "enqueueid"], "left_anti")


def read_live_view(spark: SparkSession, settings: JobSettings, browse_starts: Mapping[str, int]) -> DataFrame:
    from spark_apps.common.cassandra_tables import read_table

    queues = list(browse_starts)
    from pyspark.sql import functions as F

    view = read_table(spark, settings, "enqueuedmailsv4", VIEW_COLUMNS).filter(F.col("queuename").isin(queues))
    deleted = read_table(spark, settings, "deletedmailsv2", ["queuename", "enqueueid"]).filter(
        F.col("queuename").isin(queues))
    return live_view_entries(view, deleted, browse_starts)


def browse_starts(cql: Any, queues: Iterable[str] | None = None) -> dict[str, int]:
    """Browse start (epoch ms) of the given queues, or of every queue that has one (``browseStart``)."""
    rows = cql.execute("SELECT queuename, browsestart FROM browsestart")
    found = {r["queuename"]: epoch_ms(r["browsestart"].replace(tzinfo=UTC) if r["browsestart"].tzinfo is None
                                      else r["browsestart"]) for r in rows if r["browsestart"] is not None}
    if queues is None:
        return found
    return {q: found[q] for q in queues if q in found}


def content_starts(cql: Any) -> dict[str, datetime]:
    rows = cql.execute("SELECT queuename, contentstart FROM contentstart")
    return {r["queuename"]: (r["contentstart"].replace(tzinfo=UTC) if r["contentstart"].tzinfo is None
                             else r["contentstart"]) for r in rows if r["contentstart"] is not None}


# -- acting through the server's code (executors) ------------------------------------------------

@dataclass(frozen=True)
class QueueAccess:
    """Everything an executor needs to act on the queues and repositories: plain, picklable settings."""

    amqp_url: str = field(repr=False)
    cassandra_hosts: str
    cassandra_port: int
    keyspace: str
    s3_endpoint: str
    s3_access_key: str | None
    s3_secret_key: str | None = field(repr=False)
    s3_region: str = "us-east-1"
    blob_bucket: str | None = None          # the server's S3_DEFAULT_BUCKET; None: the server's default
    bucket_prefix: str = ""
    management_url: str | None = None       # lists the delay queues (flush)
    cassandra_username: str | None = None
    cassandra_password: str | None = field(default=None, repr=False)
    blob: BlobStoreConfig | None = None    # the server's MAILSERVER_BLOB_*; None: the defaults (no deduplication)

    @classmethod
    def from_env(cls, settings: JobSettings, env: Mapping[str, str], *, amqp_url: str | None = None,
                 blob_bucket: str | None = None, management_url: str | None = None) -> QueueAccess:
        from mailserver.blob.config import BlobStoreConfig

        url = amqp_url or env.get("AMQP_URL")
        if not url:
            raise ValueError("no broker: give --amqp-url or set AMQP_URL")
        if not env.get("S3_ENDPOINT"):
            raise ValueError("S3_ENDPOINT is not set: the mail contents cannot be reached")
        return cls(url, settings.cassandra_hosts, settings.cassandra_port, settings.keyspace, env["S3_ENDPOINT"],
                   env.get("S3_ACCESS_KEY"), env.get("S3_SECRET_KEY"), env.get("S3_REGION", "us-east-1"),
                   blob_bucket or env.get("S3_DEFAULT_BUCKET") or None, env.get("S3_BUCKET_PREFIX", ""),
                   management_url or env.get("RABBITMQ_MANAGEMENT_URL") or None,
                   env.get("CASSANDRA_USERNAME") or None, env.get("CASSANDRA_PASSWORD") or None,
                   BlobStoreConfig.from_env(env))

    def _built(self, what: str, build: Any) -> Any:
        key = (what, self)
        with _LOCK:
            found = _BUILT.get(key)
            if found is None:
                found = _BUILT[key] = build()
        return found

    def blob_store(self) -> Any:
        def build() -> Any:
            from mailserver.blob.config import BlobStoreConfig
            from mailserver.blob.s3 import S3BlobStore, S3Config

            values: dict[str, Any] = {"endpoint_url": self.s3_endpoint, "access_key": self.s3_access_key,
                                      "secret_key": self.s3_secret_key, "region": self.s3_region,
                                      "bucket_prefix": self.bucket_prefix}
            if self.blob_bucket:
                values["default_bucket"] = self.blob_bucket
            ids = (self.blob or BlobStoreConfig()).id_factory()   # the server's ids and deletes
            return S3BlobStore(S3Config(**values), ids=ids)
        return self._built("blobs", build)

    def session(self) -> Any:
        def build() -> Any:
            import atexit

            from mailserver.cassandra.config import CassandraConfig
            from mailserver.cassandra.session import CassandraSession

            session = CassandraSession.connect(CassandraConfig(
                hosts=tuple(h.strip() for h in self.cassandra_hosts.split(",") if h.strip()),
                port=self.cassandra_port, keyspace=self.keyspace, username=self.cassandra_username,
                password=self.cassandra_password, request_timeout=30.0))
            atexit.register(session.close)
            return session
        return self._built("session", build)

    def factory(self) -> Any:
        def build() -> Any:
            import atexit

            from mailserver.queue.rabbitmq import DistributedMailQueueFactory

            factory = DistributedMailQueueFactory(self.amqp_url, self.session(), self.blob_store(),
                                                  management_url=self.management_url)
            atexit.register(factory.close)
            return factory
        return self._built("factory", build)

    def queue(self, name: str) -> Any:
        """The ``DistributedMailQueue`` called ``name``, attached to (not declared: its arguments are the servers')."""
        def build() -> Any:
            from mailserver.queue.rabbitmq import DistributedMailQueue

            return DistributedMailQueue(self.factory(), validate_queue_name(name))
        return self._built(f"queue:{name}", build)

    def repositories(self) -> Any:
        def build() -> Any:
            from mailserver.queue.content import MimeMessageStore
            from mailserver.repository.cassandra import CassandraMailRepositoryStore

            return CassandraMailRepositoryStore(self.session(), MimeMessageStore(self.blob_store()))
        return self._built("repositories", build)

    def repository(self, url: str) -> Any:
        return self._built(f"repository:{url}", lambda: self.repositories().select(url))


# -- the broker side (driver) ---------------------------------------------------------------------

def work_queue_exists(amqp_url: str, queue: str) -> bool:
    """Whether the broker has the mail queue's work queue (passive declare)."""
    import pika
    import pika.exceptions as px

    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        try:
            connection.channel().queue_declare(WORKQUEUE_PREFIX + queue, passive=True)
            return True
        except px.ChannelClosedByBroker as exc:
            if exc.reply_code == 404:
                return False
            raise
    finally:
        if connection.is_open:
            connection.close()


def ready_count(amqp_url: str, rabbit_queue: str) -> int | None:
    """Ready messages of a RabbitMQ queue (exact, AMQP), None when it does not exist."""
    import pika
    import pika.exceptions as px

    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        try:
            return connection.channel().queue_declare(rabbit_queue, passive=True).method.message_count
        except px.ChannelClosedByBroker as exc:
            if exc.reply_code == 404:
                return None
            raise
    finally:
        if connection.is_open:
            connection.close()


@dataclass
class BrokerSnapshot:
    """The enqueueIds of the messages a set of RabbitMQ queues held, read without acknowledging them."""

    ids: set[str] = field(default_factory=set)
    messages: dict[str, int] = field(default_factory=dict)   # rabbit queue -> messages read
    unreadable: int = 0
    unacknowledged: dict[str, int] = field(default_factory=dict)   # held by consumers: not seen


def snapshot_enqueue_ids(amqp_url: str, rabbit_queues: Iterable[str], *,
                         queue_info: Mapping[str, Mapping[str, Any]] | None = None) -> BrokerSnapshot:
    """Read every ready message of ``rabbit_queues`` with ``basic_get`` and never acknowledge them: closing the
    channel puts them back (RabbitMQ keeps their order). Consumers get none of them meanwhile.

    ``queue_info`` (management records) refuses queues where a redelivery costs something: a quorum queue
    with ``x-delivery-limit`` would dead-letter a message read too often.
    """
    import pika
    import pika.exceptions as px

    snapshot = BrokerSnapshot()
    for queue in rabbit_queues:
        info = (queue_info or {}).get(queue) or {}
        if (info.get("arguments") or {}).get("x-delivery-limit") is not None:
            raise ValueError(f"{queue} has x-delivery-limit: reading its messages without acknowledging them would "
                             "count as deliveries; run without the broker check (check_broker=false)")
        if info:
            snapshot.unacknowledged[queue] = int(info.get("messages_unacknowledged") or 0)
        connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
        try:
            channel = connection.channel()
            count = 0
            while True:
                try:
                    method, _props, body = channel.basic_get(queue, auto_ack=False)
                except px.ChannelClosedByBroker as exc:
                    if exc.reply_code == 404:
                        break
                    raise
                if method is None or body is None:
                    break
                count += 1
                found = enqueue_id_of(body)
                if found is None:
                    snapshot.unreadable += 1
                else:
                    snapshot.ids.add(found)
            snapshot.messages[queue] = count
        finally:
            if connection.is_open:
                connection.close()   # unacknowledged: every message goes back
    return snapshot


def now_utc() -> datetime:
    return datetime.now(UTC)
