"""The concrete health checks of the distributed server, named exactly as James names them.

Monitoring probes select on the component names (``Cassandra backend`` ...), so they are the
upstream strings; ``MaintenanceMode`` and ``MailQueueSize`` are ours (James has no maintenance
switch and no queue-size check). Checks of this module probe the backends; the others live
beside what they watch: ``observability.lifecycle`` (``Guice application lifecycle``),
``maintenance.health_check``, ``queue.size_check`` and ``events.dead_letters_check``
(``EventDeadLettersHealthCheck``). Observability is a low layer: it names every check here but
imports none of the packages they watch (docs/architecture.md, "Layers").

Slots for the event-bus checks of later issues: the registry is ``HealthCheckRunner`` (unique
names; checks given at construction or added with ``register``). ``mailserver serve`` builds
its list in ``mailserver.runtime.backends.connect`` (``other_checks``), so a later issue adds

* the fast-view projection hit ratio as ``MessageFastViewProjection`` (James: degraded when
  misses exceed 10 % of lookups), and
* the groups-divergence check (required vs registered RabbitMQ groups). James has no such
  check in this snapshot (ADR 0026/0035 are not implemented; the nearest is
  ``EventbusConsumers-<bus>``), so its name is ours to choose when it comes;

by appending to that list (or calling ``register`` on a running WebAdmin's runner,
``app.state.health_runner``). Nothing is registered for them yet.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import httpx
from botocore.exceptions import ClientError

from mailserver.observability.health import HealthCheck, Result

CASSANDRA = "Cassandra backend"
OPENSEARCH = "OpenSearch Backend"
RABBITMQ = "RabbitMQ backend"
OBJECT_STORAGE = "ObjectStorage"
MAINTENANCE = "MaintenanceMode"
LIFECYCLE = "Guice application lifecycle"
EVENT_DEAD_LETTERS = "EventDeadLettersHealthCheck"
MAIL_QUEUE_SIZE = "MailQueueSize"                          # ours
MESSAGE_FAST_VIEW_PROJECTION = "MessageFastViewProjection"  # slot: registered by a later issue

log = logging.getLogger(__name__)

PROBE_TIMEOUT = 3.0
MIN_RABBITMQ = (3, 8, 1)


class CassandraHealthCheck(HealthCheck):
    name = CASSANDRA

    def __init__(self, session: Any) -> None:
        self.session = session   # a CassandraSession

    def check(self) -> Result:
        # The query James runs: it needs a live coordinator, not only an open socket.
        self.session.execute("SELECT now() FROM system.local")
        return self.healthy()


class OpenSearchHealthCheck(HealthCheck):
    """Cluster health: red is unhealthy, yellow and green are healthy (as James)."""

    name = OPENSEARCH

    def __init__(self, url: str, *, timeout: float = PROBE_TIMEOUT, verify: bool = True) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.verify = verify

    def check(self) -> Result:
        response = httpx.get(f"{self.url}/_cluster/health", timeout=self.timeout, verify=self.verify)
        response.raise_for_status()
        status = response.json().get("status")
        if status == "red":
            return self.unhealthy("OpenSearch cluster health is red")
        return self.healthy()


class RabbitMQHealthCheck(HealthCheck):
    """A channel can be opened, and the broker is at least 3.8.1 (as James).

    The probe's connection is kept from one probe to the next, as James probes its pooled
    connection: one opened per probe (every 2 s) was a handshake and an authentication for
    RabbitMQ each time, two lines in its log, and 1 % of the mail server's CPU under load. A
    connection that fails a probe (the broker restarted, or closed it) is replaced within the same
    probe, so only a broker that refuses a fresh connection too is reported unhealthy. The
    connection is named ``connection_name`` in RabbitMQ's management UI.
    """

    name = RABBITMQ

    def __init__(self, amqp_url: str, *, timeout: float = PROBE_TIMEOUT,
                 connection_name: str = "mailserver-healthcheck", probe_lock: threading.Lock | None = None) -> None:
        self.amqp_url = amqp_url
        self.timeout = timeout
        self.connection_name = connection_name
        self._connection: Any = None
        # pika connections are not thread-safe and probes may overlap: one probe at a time holds it
        # (given, to hold it from outside: a stuck probe, a maintenance window).
        self._lock = probe_lock if probe_lock is not None else threading.Lock()

    @property
    def connected(self) -> bool:
        """Whether a connection is kept for the next probe."""
        return self._connection is not None

    def check(self) -> Result:
        if not self._lock.acquire(timeout=self.timeout):
            return self.unhealthy(f"the previous probe has not answered within {self.timeout:g}s")
        try:
            if self._connection is not None:
                try:
                    return self._probe(self._connection)
                except Exception:   # gone since the last probe: one fresh connection decides
                    log.info("RabbitMQ health probe: connection lost, opening a new one", exc_info=True)
                    self._discard()
            self._connection = self._connect()
            try:
                return self._probe(self._connection)
            except Exception:
                self._discard()
                raise
        finally:
            self._lock.release()

    def _connect(self) -> Any:
        import pika

        params = pika.URLParameters(self.amqp_url)
        params.connection_attempts = 1
        params.retry_delay = 0
        params.socket_timeout = self.timeout
        params.stack_timeout = self.timeout
        params.blocked_connection_timeout = self.timeout
        params.client_properties = {"connection_name": self.connection_name}
        return pika.BlockingConnection(params)

    def _probe(self, connection: Any) -> Result:
        connection.channel().close()
        version = _version(connection)
        if version is not None and version < MIN_RABBITMQ:
            return self.unhealthy(f"RabbitMQ {'.'.join(map(str, version))} is older than 3.8.1")
        return self.healthy()

    def _discard(self) -> None:
        connection, self._connection = self._connection, None
        try:
            if connection is not None and connection.is_open:
                connection.close()
        except Exception:   # already broken: nothing to give back
            log.debug("closing the health probe's connection failed", exc_info=True)

    def close(self) -> None:
        # Never wait on a probe that hangs (an unresponsive broker): stopping must not hang with it.
        if self._lock.acquire(timeout=self.timeout):
            try:
                self._discard()
            finally:
                self._lock.release()


def _version(connection: Any) -> tuple[int, ...] | None:
    props = getattr(getattr(connection, "_impl", None), "server_properties", None) or {}
    raw = props.get("version")
    if isinstance(raw, bytes):
        raw = raw.decode("ascii", "replace")
    try:
        return tuple(int(p) for p in str(raw).split(".")[:3])
    except (TypeError, ValueError):
        return None


class ObjectStorageHealthCheck(HealthCheck):
    """The object store answers an authenticated ``HeadBucket`` of the default bucket.

    James lists the buckets instead. A listing grows with the buckets (the vault adds one a month;
    a shared S3Proxy here held 62, 15 ms of CPU to parse) and this check runs every 2 s for the
    intake's back-pressure, so it probes one bucket: the same cost whatever the store holds. A
    missing bucket is healthy (the store answered; the blob store creates it on first write).
    """

    name = OBJECT_STORAGE

    def __init__(self, s3_client: Any, bucket: str) -> None:
        self.client = s3_client   # a boto3 S3 client, built with short timeouts and one attempt
        self.bucket = bucket

    def check(self) -> Result:
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except ClientError as exc:
            if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") != 404:
                raise   # 403 (credentials), 5xx ...: unhealthy, with the cause
        return self.healthy()
