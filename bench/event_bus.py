"""Event bus on RabbitMQ: events/s dispatched and consumed, and the append's latency with the
listeners on the delivery path (in-process bus) and off it (RabbitMQ bus).

    .venv/bin/python bench/event_bus.py [--events 5000] [--threads 4] [--appends 300] [--record]

Uses the local stack (or the endpoints in the environment), a throw-away RabbitMQ virtual host,
keyspace and bucket, removed at the end. ``--record`` appends the figures to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.mailbox_append import make_message
from bench.scratch import publish, scratch_backends, stack_endpoints
from mailserver.blob.s3 import S3BlobStore
from mailserver.cassandra.session import CassandraSession
from mailserver.events.api import EventListener
from mailserver.events.cassandra_dead_letters import CassandraEventDeadLetters
from mailserver.events.in_process import InProcessEventBus
from mailserver.events.rabbitmq import RabbitMQEventBus
from mailserver.mailbox.wiring import cassandra_context
from mailserver.model.address import Username
from mailserver.model.events import MailboxEvent
from mailserver.model.mailbox import MailboxPath
from tests.support.events import sample_added
from tests.support.mailserver_process import IsolatedVhost


class Counting(EventListener):
    group = "org.apache.james.bench.CountingListener$CountingListenerGroup"

    def __init__(self, expected: int) -> None:
        self.count, self.expected = 0, expected
        self.done = threading.Event()
        self._lock = threading.Lock()

    def handle(self, event: MailboxEvent) -> None:
        with self._lock:
            self.count += 1
            if self.count >= self.expected:
                self.done.set()


def dispatch_and_consume(amqp_url: str, session: CassandraSession, events: int, threads: int) -> tuple[float, float]:
    """(dispatched/s with ``threads`` dispatching threads, consumed/s by one listener group)."""
    bus = RabbitMQEventBus(amqp_url, CassandraEventDeadLetters(session), publisher_connections=threads)
    listener = Counting(events)
    bus.register(listener)
    bus.declare()
    batch = [sample_added(uid=i + 1) for i in range(events)]
    chunks = [batch[i::threads] for i in range(threads)]
    started = time.perf_counter()
    workers = [threading.Thread(target=lambda c=c: bus.dispatch(*c)) for c in chunks]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    dispatched = events / (time.perf_counter() - started)
    consume_started = time.perf_counter()
    bus.start()       # the events wait in the shared queue: consumption alone is timed
    if not listener.done.wait(600):
        raise RuntimeError(f"only {listener.count} of {events} events consumed")
    consumed = events / (time.perf_counter() - consume_started)
    bus.close()
    return dispatched, consumed


def append_latencies(session: CassandraSession, blobs: S3BlobStore, bus, appends: int) -> list[float]:
    ctx = cassandra_context(session, blobs, bus=bus)
    inbox = MailboxPath.inbox(Username.of(f"bench-{uuid.uuid4().hex[:6]}@example.com"))
    ctx.manager.create_mailbox(inbox)
    latencies = []
    for i in range(appends):
        message = make_message(i, 4096)
        started = time.perf_counter()
        ctx.manager.append(inbox, message)
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--appends", type=int, default=300)
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()

    ep = stack_endpoints()
    with scratch_backends(ep) as (session, blobs), IsolatedVhost(ep, f"bench-{uuid.uuid4().hex[:8]}") as vhost:
        dispatched, consumed = dispatch_and_consume(vhost.amqp_url, session, args.events, args.threads)
        inline = append_latencies(session, blobs, InProcessEventBus(), args.appends)
        rabbit_bus = RabbitMQEventBus(vhost.amqp_url, CassandraEventDeadLetters(session))
        rabbit_bus.declare()
        off_path = append_latencies(session, blobs, rabbit_bus, args.appends)
        rabbit_bus.close()
    lines = [
        f"### Event bus on RabbitMQ ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node() or 'host'}, "
        f"{os.cpu_count()} cores)",
        "",
        f"`bench/event_bus.py --events {args.events} --threads {args.threads} --appends {args.appends}`, "
        "RabbitMQ 3.10, Cassandra and S3Proxy of the local stack on the same machine.",
        "",
        "| measure | value |", "|---|---|",
        f"| events dispatched/s ({args.threads} threads, persistent, publisher confirms) | **{dispatched:.0f}** |",
        f"| events consumed/s (one group, prefetch 10, 10 listener threads, ack after the listener) "
        f"| **{consumed:.0f}** |",
        "",
        f"Append latency of a 4 KiB message, {args.appends} appends, one thread (ms):",
        "",
        "| listeners | p50 | p90 | p99 | mean |", "|---|---|---|---|---|",
        *(f"| {label} | {percentile(v, 50):.1f} | {percentile(v, 90):.1f} | {percentile(v, 99):.1f} "
          f"| {statistics.fmean(v):.1f} |"
          for label, v in (("on the delivery path (in-process bus: quota, fast view, deletion)", inline),
                           ("off the delivery path (RabbitMQ bus: one confirmed publish)", off_path))),
        "",
    ]
    publish(lines, record=args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
