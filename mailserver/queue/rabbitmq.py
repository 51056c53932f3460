"""The distributed mail queue: RabbitMQ messages, a Cassandra browse view, blob-stored content.

James's RabbitMQMailQueue (james-runtime.md §2), plus delays (the delayer pattern):

* Objects, for a mail queue ``Q``: direct durable exchange ``JamesMailQueue-exchange-Q`` bound
  with routing key ``""`` to the durable work queue ``JamesMailQueue-workqueue-Q``
  (``x-dead-letter-exchange`` = ``JamesMailQueue-dead-letter-exchange-Q``, bound to
  ``JamesMailQueue-dead-letter-queue-Q``). Work and dead-letter queues are declared with James's
  arguments (``queue_arguments``): classic ``x-queue-version: 2`` by default, or quorum with
  ``x-quorum-initial-group-size`` (and ``x-delivery-limit`` when set), so the platform attaches to
  queues a James node declared; a queue declared with other arguments is refused with a clear error.
* enqueue: content -> header and body blobs; row in ``enqueuedMailsV4``; persistent publish
  (delivery mode 2, ``text/plain``, mandatory) confirmed by the broker. Any failure marks the
  enqueueId deleted, deletes the blobs this enqueue wrote and raises ``MailQueueError``: the mail
  was not accepted. When ``enqueue`` returns, the mail is durable.
* Delays (extension; James ignores them on RabbitMQ): one durable TTL queue per delay,
  ``JamesMailQueue-delay-Q-<millis>`` (``x-message-ttl``, dead-lettering to the work exchange with
  routing key ``""``, never consumed), bound with routing key ``<millis>`` to the direct exchange
  ``JamesMailQueue-delay-exchange-Q``. A delayed mail is published there and reaches the work
  queue when its TTL expires; every message of one delay queue has the same TTL, so expiry order
  is arrival order. The view row keeps the due time, so browse reports ``next_delivery``.
* dequeue: each thread's channel consumes the work queue (``basic_consume``, prefetch 1, manual
  ack): the broker pushes the next message, the thread waits on its socket, nothing polls. Undeserialisable bodies and
  references whose blobs are missing are rejected to the dead-letter queue (poison); messages
  whose enqueueId is marked deleted (admin remove/clear) are acked and skipped.
* Two AMQP headers travel beside James's JSON body, which stays byte-compatible with James:
  ``x-mail-size`` (content size; computed from the blobs when absent, e.g. for a message a Java
  node published) and ``x-enqueued-time`` (epoch millis, to find the view row on flush).

Threads and connections: pika's ``BlockingConnection`` is not thread-safe, so a queue object
holds one connection (and one channel with publisher confirms) per thread, opened lazily and
reopened when found closed. An item must be completed (``done``) by the thread that dequeued
it, on that same queue object. pika services heartbeats only inside a pika call, so the factory's
``HeartbeatKeeper`` services those of the connections no thread is using at the moment (idle
publishers, a consumer working on its item): the broker never closes a connection for being
quiet. Each thread holds its own lock while it uses its connection, and the keeper skips a
connection whose lock is taken. An unacked item is delivered again when its connection
closes (``close()``, crash); an item garbage-collected without ``done`` is requeued at the next
operation of the same thread on the same queue object.

Delivery is at least once: a redelivered, republished or recovered message can reach a
consumer twice; only the deleted marks of the view de-duplicate (a message whose enqueueId is
marked deleted is skipped).
"""

from __future__ import annotations

import itertools
import logging
import math
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Callable, Collection, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pika
import pika.exceptions as px

from mailserver import randomness
from mailserver.amqp_heartbeats import HeartbeatKeeper
from mailserver.blob.api import BlobNotFound, BlobStore
from mailserver.cassandra.session import CassandraSession
from mailserver.model.mail import Mail, MailContent
from mailserver.queue.api import (
    MailQueue,
    MailQueueError,
    MailQueueFactory,
    MailQueueItem,
    Outcome,
    QueueItemView,
    RemoveField,
)
from mailserver.queue.content import MimeMessageStore
from mailserver.queue.memory import matches
from mailserver.queue.naming import QueueNames, queue_name_of_workqueue, validate_queue_name
from mailserver.queue.queue_specs import mail_queue_specs
from mailserver.queue.serialization import (
    MailReference,
    SerializationError,
    deserialize_reference,
    serialize_reference,
)
from mailserver.queue.view import CassandraMailQueueView, ViewEntry
from mailserver.rabbitmq_management import RabbitMQManagement
from mailserver.rabbitmq_queues import MIGRATION_HINT, QueueSpec, QueueType

log = logging.getLogger(__name__)

SIZE_HEADER = "x-mail-size"
ENQUEUED_TIME_HEADER = "x-enqueued-time"
CONNECTION_ERRORS = (px.AMQPConnectionError, px.ConnectionWrongStateError, px.StreamLostError)
CHANNEL_ERRORS = (px.ChannelClosed, px.ChannelWrongStateError)
_WAIT_MAX = 5.0   # seconds a dequeue without timeout blocks per round (then rechecks its link)

T = TypeVar("T")


def _nothing() -> None:
    """Run on a consumer's thread by ``interrupt_waits``: its only effect is to end the wait."""


def _epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _delay_ms(delay: timedelta | None) -> int:
    if delay is None:
        return 0
    return max(0, math.ceil(delay.total_seconds() * 1000))


def queue_arguments(*, quorum: bool = False, replication_factor: int = 1,
                    delivery_limit: int | None = None) -> dict[str, Any]:
    """James's ``RabbitMQConfiguration.workQueueArgumentsBuilder()`` (work and dead-letter queues alike)."""
    return QueueType(quorum, replication_factor, delivery_limit).arguments()


class _Link:
    """One connection and one confirming channel, used by a single thread."""

    def __init__(self, params: pika.URLParameters, lock: threading.RLock) -> None:
        self.lock = lock   # its thread's: held while the thread uses the connection (see the keeper)
        self.connection = pika.BlockingConnection(params)
        self.generation = itertools.count()
        self.channel_id = 0
        self.abandoned: deque[tuple[int, int]] = deque()  # (channel_id, delivery tag) dropped without done()
        self.deliveries: deque[tuple[int, int, Any, bytes]] = deque()  # pushed by the broker, not taken yet
        self.consumer_channel_id: int | None = None
        self.qos_channel_id: int | None = None
        self.consumer_tag: str | None = None
        self.channel = self._open_channel()

    def _open_channel(self) -> Any:
        channel = self.connection.channel()
        channel.confirm_delivery()
        self.channel_id = next(self.generation)
        return channel

    def alive(self) -> bool:
        """Open, as far as a non-blocking poll of the socket can tell."""
        if not self.connection.is_open:
            return False
        try:
            self.connection.process_data_events(time_limit=0)
        except (*CONNECTION_ERRORS, *CHANNEL_ERRORS):
            return False
        return self.connection.is_open

    def ensure_channel(self) -> None:
        if self.channel.is_closed:  # e.g. closed by the broker after a 404 on a passive declare
            self.abandoned.clear()  # the broker requeued the unacked messages of the closed channel
            self.channel = self._open_channel()

    def close(self) -> None:
        try:
            if self.connection.is_open:
                self.connection.close()
        except Exception:  # already gone: nothing to release
            log.debug("closing an AMQP connection failed", exc_info=True)


class DistributedMailQueueItem(MailQueueItem):
    def __init__(self, queue: DistributedMailQueue, link: _Link, tag: int, ref: MailReference) -> None:
        self.mail = ref.mail
        self.enqueue_id = str(ref.enqueue_id)
        self._ref = ref
        # What the entry owns and deletes once done, whatever mailets point ``mail.content`` at meanwhile.
        self.dequeued_content = ref.mail.content
        self._queue = queue
        self._link = link
        self._channel_id = link.channel_id
        self._tag = tag
        self._thread = threading.get_ident()
        self._done = False
        self._finalizer = weakref.finalize(self, link.abandoned.append, (link.channel_id, tag))

    def done(self, outcome: Outcome, *, handed_over: Collection[str] = ()) -> None:
        outcome = Outcome(outcome)
        if self._done:
            raise MailQueueError(f"item {self.enqueue_id} of queue {self._queue.name} is already done")
        if threading.get_ident() != self._thread:
            raise MailQueueError("done() must be called by the thread that dequeued the item (pika is not "
                                 "thread-safe)")
        self._done = True
        self._finalizer.detach()
        self._queue._complete(self, outcome, frozenset(handed_over))


class DistributedMailQueue(MailQueue):
    def __init__(self, factory: DistributedMailQueueFactory, name: str) -> None:
        self.name = validate_queue_name(name)
        self.names = QueueNames(name)
        self._f = factory
        self.contents = MimeMessageStore(factory.blob_store)
        self.view = CassandraMailQueueView(factory.session, name, slice_window=factory.slice_window,
                                           bucket_count=factory.bucket_count,
                                           update_browse_start_pace=factory.update_browse_start_pace,
                                           clock=factory.now)
        self._local = threading.local()
        self._links: set[_Link] = set()
        self._lock = threading.Lock()
        self._interrupts = 0   # bumped by interrupt_waits: a waiting dequeue seeing it change returns None
        self._declared_delays: set[int] = set()

    # ------------------------------------------------------------------ connections
    def _in_use(self) -> threading.RLock:
        """This thread's lock, held around every use of its connection: the heartbeat keeper leaves the
        connection alone meanwhile. Reentrant: operations nest (declare -> _retrying -> _link)."""
        lock: threading.RLock | None = getattr(self._local, "lock", None)
        if lock is None:
            lock = self._local.lock = threading.RLock()
        return lock

    def _link(self) -> _Link:
        link: _Link | None = getattr(self._local, "link", None)
        if link is not None and link.alive():
            link.ensure_channel()
            return link
        if link is not None:
            self._forget(link)
        try:
            link = _Link(self._f.parameters, self._in_use())
        except CONNECTION_ERRORS as exc:
            raise MailQueueError(f"queue {self.name}: RabbitMQ unreachable: {exc!r}") from exc
        with self._lock:
            self._links.add(link)
        self._local.link = link
        self._f.keeper.add(link)
        return link

    def _forget(self, link: _Link) -> None:
        self._f.keeper.discard(link)
        link.close()
        with self._lock:
            self._links.discard(link)
        if getattr(self._local, "link", None) is link:
            self._local.link = None

    def _forget_current(self) -> None:
        link = getattr(self._local, "link", None)
        if link is not None and not link.alive():
            self._forget(link)

    def _retrying(self, op: Callable[[_Link], T]) -> T:
        """Run an idempotent operation; on connection loss reconnect and run it once more."""
        with self._in_use():
            link = self._link()
            try:
                return op(link)
            except CONNECTION_ERRORS:
                self._forget(link)
                return op(self._link())

    def close(self) -> None:
        """Close every connection of this queue object (unacked items are redelivered)."""
        with self._lock:
            links, self._links = list(self._links), set()
        for link in links:
            self._f.keeper.discard(link)
            link.close()
        self._local = threading.local()

    # ------------------------------------------------------------------ topology
    def declare(self) -> None:
        """James's ``RabbitMQMailQueueFactory`` topology, in its order, with its queue arguments."""
        n = self.names
        work, dead_letters = mail_queue_specs(n, QueueType(self._f.quorum, self._f.quorum_replication_factor,
                                                           self._f.quorum_delivery_limit))
        declaring: list[QueueSpec | None] = [None]

        def run(link: _Link) -> None:
            ch = link.channel
            ch.exchange_declare(n.exchange, "direct", durable=True)
            ch.exchange_declare(n.dead_letter_exchange, "direct", durable=True)
            for spec in (work, dead_letters):
                declaring[0] = spec
                ch.queue_declare(spec.name, durable=spec.durable, arguments=spec.arguments)
            declaring[0] = None
            ch.queue_bind(n.workqueue, n.exchange, routing_key="")
            ch.queue_bind(n.dead_letter_queue, n.dead_letter_exchange, routing_key="")
            ch.exchange_declare(n.delay_exchange, "direct", durable=True)

        try:
            self._retrying(run)
        except px.ChannelClosedByBroker as exc:
            refused = declaring[0]
            if exc.reply_code == 406 and refused is not None:   # PRECONDITION_FAILED: inequivalent arguments
                raise MailQueueError(
                    f"queue {self.name}: RabbitMQ already has {refused.name} with other arguments than this node "
                    f"declares ({refused.arguments}): {exc.reply_text}. {MIGRATION_HINT}") from exc
            raise MailQueueError(f"queue {self.name}: RabbitMQ refused the topology: {exc}") from exc
        self.view.initialize()

    def _declare_delay_queue(self, link: _Link, millis: int) -> None:
        n = self.names
        link.channel.queue_declare(n.delay_queue(millis), durable=True, arguments={
            "x-message-ttl": millis, "x-dead-letter-exchange": n.exchange, "x-dead-letter-routing-key": ""})
        link.channel.queue_bind(n.delay_queue(millis), n.delay_exchange, routing_key=str(millis))
        self._declared_delays.add(millis)
        self._f._known_delays(self.name).add(millis)

    def delays(self) -> list[int]:
        """Delays (ms) with a delay queue: declared through this factory, or listed by the management API."""
        known = set(self._f._known_delays(self.name))
        if self._f.management is not None:
            try:
                for queue in self._f.management.queue_names():
                    millis = self.names.delay_of(queue)
                    if millis is not None:
                        known.add(millis)
            except Exception:
                log.warning("queue %s: listing delay queues through the management API failed", self.name,
                            exc_info=True)
        return sorted(known)

    # ------------------------------------------------------------------ enqueue
    def enqueue(self, mail: Mail, delay: timedelta | None = None, *, enqueue_id: uuid.UUID | None = None,
                hand_over: bool = False) -> None:
        """``enqueue_id`` (default: a new one) lets a maintenance job enqueue again under the same id, so
        that the copies of one mail are skipped once any of them was processed (the deleted marks).
        ``hand_over``: see ``MailQueue.enqueue``."""
        millis = _delay_ms(delay)
        try:
            content, owned = self._store_content(mail.content, hand_over)
        except Exception as exc:
            raise MailQueueError(f"queue {self.name}: cannot store the content of {mail.name}: {exc}") from exc
        stored = replace(mail, content=content, attributes=dict(mail.attributes), recipients=list(mail.recipients),
                         per_recipient_headers=list(mail.per_recipient_headers))
        enqueue_id = enqueue_id or randomness.uuid4()
        now = self._f.now()
        try:
            body = serialize_reference(MailReference(enqueue_id, stored))
            # The view row and the publish at the same time, as James: on the failure of either the
            # entry is marked deleted (a published reference is then dropped at dequeue) and its
            # blobs go, so a refused mail is never delivered.
            view_written = self.view.start_store(enqueue_id, stored, now,
                                                 now + timedelta(milliseconds=millis) if millis else None)
            try:
                self._publish(body, content.size, now, millis)
            finally:
                view_written()
        except Exception as exc:
            self._abort(enqueue_id, content if owned else None)
            raise MailQueueError(f"queue {self.name}: enqueue of {mail.name} failed: {exc!r}") from exc

    def _store_content(self, content: MailContent, hand_over: bool) -> tuple[MailContent, bool]:
        """Blob-backed content and whether this enqueue wrote the blobs (so may delete them on failure)."""
        if content.stored and hand_over:
            return content, False   # the caller's blobs become this entry's; the caller cleans up on failure
        if content.stored and self.contents.blobs.deduplicating:
            return content, False
        # Without deduplication each queue entry needs blobs of its own: the previous holder
        # (e.g. the spool item this mail comes from) deletes its blobs when it is done.
        return self.contents.owned_copy(content), True

    def _abort(self, enqueue_id: uuid.UUID, content: MailContent | None) -> None:
        try:
            self.view.mark_deleted(enqueue_id)
        except Exception:
            log.warning("queue %s: could not mark failed enqueue %s deleted", self.name, enqueue_id, exc_info=True)
        if content is not None:
            try:
                self.contents.delete(content)
            except Exception:
                log.warning("queue %s: could not delete the blobs of failed enqueue %s", self.name, enqueue_id,
                            exc_info=True)

    def _publish(self, body: bytes, size: int, enqueued: datetime, millis: int) -> None:
        """Persistent, mandatory, confirmed; raises on unroutable or nacked publishes."""
        props = pika.BasicProperties(
            delivery_mode=pika.DeliveryMode.Persistent, content_type="text/plain",
            headers={"x-dead-letter-routing-key": "", SIZE_HEADER: size, ENQUEUED_TIME_HEADER: _epoch_ms(enqueued)})
        with self._in_use():
            self._publish_on(self._link(), body, props, millis)

    def _publish_on(self, link: _Link, body: bytes, props: Any, millis: int) -> None:
        if not millis:
            link.channel.basic_publish(self.names.exchange, "", body, props, mandatory=True)
            return
        if millis not in self._declared_delays:
            self._declare_delay_queue(link, millis)
        try:
            link.channel.basic_publish(self.names.delay_exchange, str(millis), body, props, mandatory=True)
        except px.UnroutableError:  # the delay queue was deleted behind our back: declare it again, once
            self._declared_delays.discard(millis)
            self._declare_delay_queue(link, millis)
            link.channel.basic_publish(self.names.delay_exchange, str(millis), body, props, mandatory=True)

    # ------------------------------------------------------------------ dequeue
    def dequeue(self, timeout: float | None = None, *,
                keep_consuming: bool = False) -> DistributedMailQueueItem | None:
        try:
            with self._in_use():
                return self._dequeue(timeout, keep_consuming)
        except (*CONNECTION_ERRORS, *CHANNEL_ERRORS) as exc:
            self._forget_current()
            raise MailQueueError(f"queue {self.name}: dequeue failed: {exc!r}") from exc

    def _dequeue(self, timeout: float | None, keep_consuming: bool) -> DistributedMailQueueItem | None:
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        interrupts = self._interrupts
        while True:
            link = self._link()
            self._drain_abandoned(link)
            try:
                self._ensure_consumer(link)
            except CONNECTION_ERRORS:
                self._forget(link)
                link = self._link()
                self._ensure_consumer(link)
            while link.deliveries:
                channel_id, tag, props, body = link.deliveries.popleft()
                if channel_id != link.channel_id:
                    continue   # pushed on a channel since closed: the broker requeued it
                item = self._accept(link, tag, props, body)
                if item is not None:
                    if not keep_consuming:
                        # Stop the pushes while the caller works: nothing waits unseen in this process
                        # (sizes stay exact, a thread that never comes back strands nothing).
                        self._cancel_consumer(link)
                    return item
            remaining = None if deadline is None else deadline - time.monotonic()
            if (remaining is not None and remaining <= 0) or self._interrupts != interrupts:
                return None
            try:
                # Blocks on the socket until the broker pushes a message (or the time is up): no polling.
                link.connection.process_data_events(time_limit=_WAIT_MAX if remaining is None
                                                    else min(remaining, _WAIT_MAX))
            except CONNECTION_ERRORS:
                self._forget(link)  # reconnect at the next round (MailQueueError if the broker is gone)

    def interrupt_waits(self) -> None:
        with self._lock:
            self._interrupts += 1
            links = list(self._links)
        for link in links:
            try:
                # pika's one thread-safe call: the owner thread's process_data_events returns to run it.
                link.connection.add_callback_threadsafe(_nothing)
            except Exception:   # closed or closing: its thread is not waiting on it
                log.debug("waking a consumer of %s failed", self.name, exc_info=True)

    def release(self) -> None:
        link: _Link | None = getattr(self._local, "link", None)
        if link is None:
            return
        try:
            with link.lock:
                self._cancel_consumer(link)
        except (*CONNECTION_ERRORS, *CHANNEL_ERRORS):  # gone with its connection: the broker requeued
            self._forget(link)

    def _ensure_consumer(self, link: _Link) -> None:
        """One consumer per thread's channel, prefetch 1: a thread holds at most the mail it works on."""
        if link.consumer_channel_id == link.channel_id:
            return
        channel, channel_id = link.channel, link.channel_id

        def pushed(_ch: Any, method: Any, props: Any, body: bytes) -> None:
            link.deliveries.append((channel_id, method.delivery_tag, props, body))
        if link.qos_channel_id != channel_id:   # a channel setting: once per channel, not per consumer
            channel.basic_qos(prefetch_count=1)
            link.qos_channel_id = channel_id
        link.consumer_tag = channel.basic_consume(self.names.workqueue, pushed, auto_ack=False)
        link.consumer_channel_id = channel_id

    def _cancel_consumer(self, link: _Link) -> None:
        if link.consumer_channel_id != link.channel_id or link.consumer_tag is None:
            return
        try:
            link.channel.basic_cancel(link.consumer_tag)   # undispatched pushes are requeued by pika
        except (*CONNECTION_ERRORS, *CHANNEL_ERRORS):
            log.debug("queue %s: cancelling a consumer failed", self.name, exc_info=True)
        link.consumer_channel_id, link.consumer_tag = None, None
        while link.deliveries:    # dispatched but not taken (none with prefetch 1): back to the queue
            channel_id, tag, _props, _body = link.deliveries.popleft()
            if channel_id == link.channel_id and link.channel.is_open:
                link.channel.basic_nack(tag, requeue=True)

    def _accept(self, link: _Link, tag: int, props: Any, body: bytes) -> DistributedMailQueueItem | None:
        ch = link.channel
        headers = (props.headers or {}) if props is not None else {}
        size = headers.get(SIZE_HEADER)
        try:
            ref = deserialize_reference(body, size if isinstance(size, int) else 0)
        except SerializationError as exc:
            log.error("queue %s: undeserialisable message rejected to the dead-letter queue: %s", self.name, exc)
            ch.basic_nack(tag, requeue=False)
            return None
        try:
            deleted = self.view.is_deleted(ref.enqueue_id)
        except Exception as exc:
            ch.basic_nack(tag, requeue=True)
            raise MailQueueError(f"queue {self.name}: cannot check whether {ref.enqueue_id} was deleted") from exc
        if deleted:
            ch.basic_ack(tag)
            return None
        try:
            content = ref.mail.content
            if not isinstance(size, int):
                content = replace(content, size=self._content_size(content))
            elif not (self._blob_exists(content.header_blob_id) and self._blob_exists(content.body_blob_id)):
                raise BlobNotFound(self.contents.blobs.default_bucket, f"{content.header_blob_id} or "
                                                                       f"{content.body_blob_id}")
        except (BlobNotFound, ValueError) as exc:
            log.error("queue %s: mail %s (%s) rejected to the dead-letter queue: %s", self.name, ref.mail.name,
                      ref.enqueue_id, exc)
            ch.basic_nack(tag, requeue=False)
            self._mark_deleted_quietly(ref.enqueue_id)
            return None
        except Exception as exc:
            ch.basic_nack(tag, requeue=True)
            raise MailQueueError(f"queue {self.name}: cannot load {ref.mail.name}: {exc!r}") from exc
        ref.mail.content = content
        return DistributedMailQueueItem(self, link, tag, ref)

    def _blob_exists(self, blob_id: str | None) -> bool:
        if not blob_id:
            return False
        return self.contents.blobs.exists(self.contents.blobs.default_bucket, blob_id)

    def _content_size(self, content: MailContent) -> int:
        """Header + body sizes, streamed from the blob store (raises BlobNotFound)."""
        total = 0
        for blob_id in content.blob_ids():
            with self.contents.blobs.read_stream(self.contents.blobs.default_bucket, blob_id) as stream:
                while chunk := stream.read(1 << 20):
                    total += len(chunk)
        return total

    def _drain_abandoned(self, link: _Link) -> None:
        while link.abandoned:
            channel_id, tag = link.abandoned.popleft()
            if channel_id == link.channel_id and link.channel.is_open:
                link.channel.basic_nack(tag, requeue=True)

    def _complete(self, item: DistributedMailQueueItem, outcome: Outcome,
                  handed_over: frozenset[str] = frozenset()) -> None:
        link = item._link
        stale = link.channel_id != item._channel_id
        try:
            if stale:
                raise px.ChannelWrongStateError("the channel of this item was closed")
            with link.lock:
                if outcome is Outcome.SUCCESS:
                    link.channel.basic_ack(item._tag)
                else:
                    link.channel.basic_nack(item._tag, requeue=outcome is Outcome.RETRY)
        except (*CONNECTION_ERRORS, *CHANNEL_ERRORS) as exc:
            # The broker gives the message again to another consumer; a SUCCESS still marks it
            # deleted below, so that redelivery is skipped.
            log.warning("queue %s: %s of %s not acknowledged (%r): it will be delivered again", self.name,
                        outcome, item.enqueue_id, exc)
        if outcome is Outcome.RETRY:
            return
        # SUCCESS: gone. REJECT: it lives on in the dead-letter queue only (not browsed, not republished).
        self._mark_deleted_quietly(item._ref.enqueue_id)
        if outcome is Outcome.SUCCESS:
            try:
                self.contents.delete(item.dequeued_content, keep=handed_over)
            except Exception:
                log.warning("queue %s: could not delete the blobs of %s", self.name, item.enqueue_id, exc_info=True)
        self.view.maybe_update_browse_start()

    def _mark_deleted_quietly(self, enqueue_id: uuid.UUID) -> None:
        try:
            self.view.mark_deleted(enqueue_id)
        except Exception:
            log.error("queue %s: could not mark %s deleted in the view", self.name, enqueue_id, exc_info=True)

    # ------------------------------------------------------------------ management
    def _message_count(self, link: _Link, queue: str) -> int:
        try:
            return link.channel.queue_declare(queue, passive=True).method.message_count
        except px.ChannelClosedByBroker as exc:
            link.ensure_channel()
            if exc.reply_code == 404:
                return 0
            raise

    def size(self) -> int:
        """Ready messages of the work queue and of the delay queues (broker counts; unacked not included)."""
        queues = [self.names.workqueue, *(self.names.delay_queue(ms) for ms in self.delays())]
        try:
            return self._retrying(lambda link: sum(self._message_count(link, q) for q in queues))
        except (*CONNECTION_ERRORS, *CHANNEL_ERRORS) as exc:
            self._forget_current()
            raise MailQueueError(f"queue {self.name}: size failed: {exc!r}") from exc

    def browse(self) -> Iterator[QueueItemView]:
        now = self._f.now()
        for entry in self.view.browse_references():
            due = entry.next_delivery if entry.next_delivery is not None and entry.next_delivery > now else None
            yield QueueItemView(mail=entry.mail, enqueue_id=str(entry.enqueue_id),
                                enqueued_time=entry.enqueued_time, next_delivery=due)

    def remove(self, field: RemoveField, value: str) -> int:
        field = RemoveField(field)
        return self._delete_where(lambda mail: matches(mail, field, value))

    def clear(self) -> int:
        return self._delete_where(lambda mail: True)

    def _delete_where(self, predicate: Callable[[Mail], bool]) -> int:
        count = 0
        for entry in list(self.view.browse_references()):
            if not predicate(entry.mail):
                continue
            self._remove_entry(entry, delete_content=True)
            count += 1
        self.view.maybe_update_browse_start()
        return count

    def _remove_entry(self, entry: ViewEntry, *, delete_content: bool) -> None:
        self.view.mark_deleted(entry.enqueue_id)
        if not delete_content:
            return
        try:
            self.contents.delete(entry.mail.content)
        except Exception:
            log.warning("queue %s: could not delete the blobs of %s", self.name, entry.enqueue_id, exc_info=True)

    # ------------------------------------------------------------------ one entry at a time (maintenance jobs)
    def entry(self, time_range_start: datetime, bucket_id: int, enqueue_id: uuid.UUID) -> ViewEntry | None:
        """The live view entry at this key, read now; None when it is gone or marked deleted."""
        if self.view.is_deleted(enqueue_id):
            return None
        return self.view.read_entry(time_range_start, bucket_id, enqueue_id)

    def load(self, entry: ViewEntry) -> Mail:
        """The entry's mail with its content size read from the blobs (``BlobNotFound`` when they are gone)."""
        size = self._content_size(entry.mail.content)
        return replace(entry.mail, content=replace(entry.mail.content, size=size),
                       attributes=dict(entry.mail.attributes), recipients=list(entry.mail.recipients),
                       per_recipient_headers=list(entry.mail.per_recipient_headers))

    def remove_entry(self, entry: ViewEntry, *, delete_content: bool = True) -> bool:
        """James's remove for one entry: marked deleted (its broker message is skipped at dequeue) and, unless
        its blobs belong to another holder (``delete_content=False``), its blobs deleted.
        False when it was already deleted."""
        if self.view.is_deleted(entry.enqueue_id):
            return False
        self._remove_entry(entry, delete_content=delete_content)
        self.view.maybe_update_browse_start()
        return True

    def republish_entry(self, entry: ViewEntry) -> bool:
        """Publish the entry's reference again (same enqueueId; a delayed mail for the rest of its delay,
        rounded up to the second). False when its content is gone (nothing to deliver)."""
        try:
            mail = self.load(entry)
        except (BlobNotFound, ValueError) as exc:
            log.error("queue %s: %s not republished, its content is gone: %s", self.name, entry.enqueue_id, exc)
            return False
        millis = 0
        now = self._f.now()
        if entry.next_delivery is not None and entry.next_delivery > now:
            millis = math.ceil((entry.next_delivery - now).total_seconds()) * 1000
        try:
            self._publish(serialize_reference(MailReference(entry.enqueue_id, mail)), mail.content.size,
                          entry.enqueued_time, millis)
        except (*CONNECTION_ERRORS, *CHANNEL_ERRORS) as exc:
            self._forget_current()
            raise MailQueueError(f"queue {self.name}: republish of {entry.enqueue_id} failed: {exc!r}") from exc
        except (px.UnroutableError, px.NackError) as exc:
            raise MailQueueError(f"queue {self.name}: republish of {entry.enqueue_id} failed: {exc!r}") from exc
        return True

    def flush(self, *, before_each: Callable[[], None] | None = None) -> int:
        """Move every message of the delay queues to the work exchange (confirmed, then acked).

        ``before_each`` runs before each message is moved (a maintenance job's rate limiter)."""
        try:
            with self._in_use():
                return self._flush(before_each)
        except (*CONNECTION_ERRORS, *CHANNEL_ERRORS) as exc:
            self._forget_current()
            raise MailQueueError(f"queue {self.name}: flush failed: {exc!r}") from exc

    def _flush(self, before_each: Callable[[], None] | None = None) -> int:
        moved = 0
        link = self._link()
        for millis in self.delays():
            queue = self.names.delay_queue(millis)
            while True:
                if before_each is not None:
                    before_each()
                try:
                    method, props, body = link.channel.basic_get(queue, auto_ack=False)
                except px.ChannelClosedByBroker as exc:
                    link.ensure_channel()
                    if exc.reply_code == 404:
                        break
                    raise MailQueueError(f"queue {self.name}: flush of {queue} failed: {exc}") from exc
                if method is None:
                    break
                try:
                    link.channel.basic_publish(self.names.exchange, "", body, props, mandatory=True)
                except (px.UnroutableError, px.NackError) as exc:
                    link.channel.basic_nack(method.delivery_tag, requeue=True)
                    raise MailQueueError(f"queue {self.name}: flush could not republish: {exc!r}") from exc
                link.channel.basic_ack(method.delivery_tag)
                moved += 1
                self._forget_due_time(props, body)
        return moved

    def _forget_due_time(self, props: Any, body: bytes) -> None:
        enqueued = (props.headers or {}).get(ENQUEUED_TIME_HEADER) if props is not None else None
        if not isinstance(enqueued, int):
            return
        try:
            ref = deserialize_reference(body)
            self.view.clear_next_delivery(ref.enqueue_id, ref.mail.name,
                                          datetime.fromtimestamp(enqueued / 1000, UTC))
        except Exception:
            log.warning("queue %s: could not clear the due time of a flushed mail", self.name, exc_info=True)

    def republish_not_processed(self, older_than: datetime) -> int:
        """Publish again (same enqueueId) the live view entries enqueued before ``older_than``.

        For recovery after the broker lost messages: a mail whose message was not lost is then
        queued twice and delivered twice (dequeue skips only mails marked deleted). A mail still
        delayed goes back to a delay queue for the rest of its delay (rounded up to the second).
        """
        if older_than.tzinfo is None:
            older_than = older_than.replace(tzinfo=UTC)
        count = 0
        for entry in list(self.view.browse_references()):
            if entry.enqueued_time >= older_than:
                continue
            try:
                count += self.republish_entry(entry)
            except MailQueueError as exc:
                raise MailQueueError(f"queue {self.name}: republish stopped after {count} mails: {exc}") from exc
        return count

    def update_browse_start(self) -> datetime | None:
        """ADR 0032 browse-start update and cleanup, now (it also runs with probability 1/pace)."""
        return self.view.update_browse_start()


class DistributedMailQueueFactory(MailQueueFactory):
    """Queues on RabbitMQ + Cassandra + a blob store; one ``DistributedMailQueue`` object per name."""

    def __init__(self, amqp_url: str, cassandra_session: CassandraSession, blob_store: BlobStore,
                 management_url: str | None = None, quorum: bool = False,
                 slice_window: timedelta = timedelta(hours=1), bucket_count: int = 1, *,
                 quorum_replication_factor: int = 1, quorum_delivery_limit: int | None = None,
                 update_browse_start_pace: int = 1000, clock: Callable[[], datetime] | None = None,
                 heartbeat: int = 60, blocked_connection_timeout: float = 10.0) -> None:
        self.parameters = pika.URLParameters(amqp_url)
        self.parameters.heartbeat = heartbeat
        # A broker blocking publishers (memory or disk alarm) fails the enqueue after this long:
        # SMTP answers 451 and the client retries later (back-pressure).
        self.parameters.blocked_connection_timeout = blocked_connection_timeout
        # Keeps the queues' idle connections alive (their threads service them only while they use them).
        self.keeper = HeartbeatKeeper(heartbeat, name="mail-queue-heartbeats")
        self.session = cassandra_session
        self.blob_store = blob_store
        self.management = RabbitMQManagement(management_url, amqp_url) if management_url else None
        if quorum_replication_factor < 1:
            raise ValueError(f"quorum replication factor must be strictly positive: {quorum_replication_factor}")
        if quorum_delivery_limit is not None and quorum_delivery_limit < 1:
            raise ValueError(f"quorum delivery limit must be strictly positive: {quorum_delivery_limit}")
        self.quorum = quorum
        self.quorum_replication_factor = quorum_replication_factor
        self.quorum_delivery_limit = quorum_delivery_limit
        self.slice_window = slice_window
        self.bucket_count = bucket_count
        self.update_browse_start_pace = update_browse_start_pace
        self.now: Callable[[], datetime] = clock or (lambda: datetime.now(UTC))
        self._queues: dict[str, DistributedMailQueue] = {}
        self._delays: dict[str, set[int]] = {}
        self._lock = threading.Lock()

    def _known_delays(self, name: str) -> set[int]:
        with self._lock:
            return self._delays.setdefault(name, set())

    def get(self, name: str) -> DistributedMailQueue:
        validate_queue_name(name)
        with self._lock:
            queue = self._queues.get(name)
        if queue is not None:
            return queue
        queue = DistributedMailQueue(self, name)
        queue.declare()
        with self._lock:
            existing = self._queues.setdefault(name, queue)
        if existing is not queue:
            queue.close()
        return existing

    def opened(self) -> list[DistributedMailQueue]:
        """The queues this factory declared and holds (``list_names`` also sees other processes' queues)."""
        with self._lock:
            return list(self._queues.values())

    def list_names(self) -> list[str]:
        if self.management is not None:
            try:
                names = {queue_name_of_workqueue(q) for q in self.management.queue_names()}
                return sorted(n for n in names if n)
            except Exception as exc:
                raise MailQueueError(f"listing mail queues through the management API failed: {exc!r}") from exc
        with self._lock:
            return sorted(self._queues)

    def close(self) -> None:
        self.keeper.close()
        with self._lock:
            queues = list(self._queues.values())
        for queue in queues:
            queue.close()
        if self.management is not None:
            self.management.close()
