"""Append N messages through the mailbox manager on Cassandra + S3; print rate and writes/message.

    .venv/bin/python bench/mailbox_append.py [-n 10000] [--size 4096] [--record]

Uses the local stack's endpoints (or CASSANDRA_HOSTS, S3_ENDPOINT, ... when set) and a
throw-away keyspace and bucket, dropped at the end. ``--record`` appends the figures to
docs/benchmarks.md with the machine and the date.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.scratch import publish, scratch_backends, stack_endpoints
from mailserver.cassandra.faults import statement_target
from mailserver.cassandra.session import CassandraSession
from mailserver.mailbox.wiring import cassandra_context
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath


class CountingSession(CassandraSession):
    """Counts the statements that reach Cassandra, by kind and table."""

    counts: Counter

    def execute(self, cql, params=None, *, strong=False, prepared=True):
        self.counts[_label(cql, strong)] += 1
        return super().execute(cql, params, strong=strong, prepared=prepared)

    def execute_lwt(self, cql, params=None):
        self.counts[_label(cql, False) + " (LWT)"] += 1
        return super().execute_lwt(cql, params)


def _label(cql: str, strong: bool) -> str:
    target = statement_target(cql)
    if target:
        return f"{target[0]} {target[1]}"
    table = cql.split(" FROM ", 1)[1].split()[0] if " FROM " in cql else "?"
    return f"SELECT {table}" + (" (SERIAL)" if strong else "")


def make_message(i: int, size: int) -> bytes:
    header = (f"From: sender{i % 50}@example.com\r\nTo: bench@example.com\r\nSubject: bench {i}\r\n"
              f"Message-ID: <{uuid.uuid4()}@example.com>\r\nContent-Type: text/plain\r\n\r\n").encode()
    line = b"Lorem ipsum dolor sit amet, consectetur adipiscing elit.\r\n"
    return header + (line * (size // len(line) + 1))[: max(0, size - len(header))] + f"{i}".encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=10_000)
    parser.add_argument("--size", type=int, default=4096, help="bytes per message")
    parser.add_argument("--record", action="store_true", help="append the result to docs/benchmarks.md")
    args = parser.parse_args()

    with scratch_backends(stack_endpoints()) as (base, blobs):
        session = CountingSession(base.cluster, base.session, base.config)
        session.counts = Counter()
        ctx = cassandra_context(session, blobs)
        inbox = MailboxPath.inbox(Username.of("bench@example.com"))
        ctx.manager.create_mailbox(inbox)
        session.counts.clear()
        started = time.perf_counter()
        for i in range(args.n):
            ctx.manager.append(inbox, make_message(i, args.size))
        elapsed = time.perf_counter() - started
    writes = {k: v for k, v in session.counts.items() if not k.startswith("SELECT")}
    reads = {k: v for k, v in session.counts.items() if k.startswith("SELECT")}
    rate = args.n / elapsed
    lines = [
        f"### Mailbox append ({datetime.now(UTC):%Y-%m-%d}, {platform.node() or 'host'}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()})",
        "",
        f"`bench/mailbox_append.py -n {args.n} --size {args.size}`: {args.n} messages in {elapsed:.1f} s = "
        f"**{rate:.0f} messages/s** (one client thread, synchronous driver calls, local single-node "
        "Cassandra 5 and S3Proxy on the same 2-core machine).",
        "",
        f"Cassandra statements per message: **{sum(writes.values()) / args.n:.1f} writes** and "
        f"{sum(reads.values()) / args.n:.1f} reads.",
        "",
        "| statement | per message |", "|---|---|",
        *(f"| {k} | {v / args.n:.2f} |" for k, v in sorted(session.counts.items())),
        "",
    ]
    publish(lines, record=args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
