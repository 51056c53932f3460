"""Everything a maintenance DAG could write, read back: equal before and after a dry run = it wrote nothing.

* every table of the keyspace (a digest of its rows, per table so a difference names the table);
* the S3 buckets of this test (names, then each object's key and ETag);
* the depth of every queue of the broker's vhost (exact, by passive declare over AMQP);
* the maintenance state WebAdmin serves (``GET /maintenance``: enabled, since, by whom, deadline).

What a dry run may write is its own record, and only that is left out (``RunRecord``): its
``maintenance_audit`` rows (``dag_run_id`` is the run's) and its report under
``reports/<dag_id>__<run_id>/`` in the report bucket. An empty table counts as absent: the
platform's two bookkeeping tables are created on first use, and creating one writes no row.
"""

from __future__ import annotations

import hashlib
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import pika

from mailserver.cassandra.session import CassandraSession

AUDIT_TABLE = "maintenance_audit"
REPORTS_PREFIX = "reports/"


@dataclass(frozen=True)
class RunRecord:
    """Which run's own record to leave out."""

    dag_id: str
    run_id: str
    report_bucket: str

    def owns_row(self, table: str, row: dict[str, Any]) -> bool:
        return table == AUDIT_TABLE and row.get("dag_run_id") == self.run_id

    def owns_object(self, bucket: str, key: str) -> bool:
        return bucket == self.report_bucket and key.startswith(f"{REPORTS_PREFIX}{self.dag_id}__{self.run_id}/")


@dataclass(frozen=True)
class World:
    """Where to look, and how."""

    session: CassandraSession
    s3_client: Any
    buckets: Callable[[str], bool]      # which buckets are this test's
    amqp_url: str
    management_url: str                 # http://host:port of RabbitMQ's management API
    maintenance_state: Callable[[], Any]

    def snapshot(self, excluded: RunRecord | None = None) -> dict[str, Any]:
        return {"cassandra": tables(self.session, excluded), "s3": s3_objects(self.s3_client, self.buckets, excluded),
                "rabbitmq": queue_depths(self.amqp_url, self.management_url),
                "maintenance": self.maintenance_state()}


def tables(session: CassandraSession, excluded: RunRecord | None = None) -> dict[str, str]:
    session.cluster.refresh_schema_metadata()   # tables created by the run itself are listed too
    digests = {}
    for table in sorted(session.cluster.metadata.keyspaces[session.keyspace].tables):
        rows = [dict(r) for r in session.session.execute(f'SELECT * FROM "{table}"', timeout=120)]
        kept = sorted(repr(sorted(r.items())) for r in rows if not (excluded and excluded.owns_row(table, r)))
        if kept:
            digests[table] = f"{len(kept)} rows, sha256 " + hashlib.sha256("\n".join(kept).encode()).hexdigest()
    return digests


def s3_objects(client: Any, buckets: Callable[[str], bool],
               excluded: RunRecord | None = None) -> dict[str, dict[str, str]]:
    listing: dict[str, dict[str, str]] = {}
    for bucket in sorted(b["Name"] for b in client.list_buckets().get("Buckets", []) if buckets(b["Name"])):
        objects = listing[bucket] = {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            objects.update({o["Key"]: o["ETag"] for o in page.get("Contents", [])
                            if not (excluded and excluded.owns_object(bucket, o["Key"]))})
    return listing


def queue_names(amqp_url: str, management_url: str) -> Sequence[str]:
    params = pika.URLParameters(amqp_url)
    vhost = urllib.parse.quote(params.virtual_host, safe="")
    response = httpx.get(f"{management_url}/api/queues/{vhost}", params={"columns": "name"},
                         auth=(params.credentials.username, params.credentials.password), timeout=30)
    response.raise_for_status()
    return sorted(q["name"] for q in response.json())


def queue_depths(amqp_url: str, management_url: str) -> dict[str, int]:
    """Every queue of the vhost and its ready messages; the names from the management API, the counts
    from the broker itself (the management API's counts lag by its statistics interval)."""
    depths = {}
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        for name in queue_names(amqp_url, management_url):
            channel = connection.channel()
            try:
                depths[name] = channel.queue_declare(name, passive=True).method.message_count
            except pika.exceptions.ChannelClosedByBroker as exc:
                if exc.reply_code != 404:
                    raise
                continue   # deleted between the listing and the declare: the listing after will say so
            channel.close()
    finally:
        if connection.is_open:
            connection.close()
    return depths


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What changed, one line per table, bucket, queue or state field."""
    lines = []
    for part in before:
        old, new = before[part], after[part]
        if not (isinstance(old, dict) and isinstance(new, dict)):
            if old != new:
                lines.append(f"{part}: {old!r} -> {new!r}")
            continue
        for name in sorted(set(old) | set(new)):
            if old.get(name) != new.get(name):
                lines.append(f"{part} {name}: {_short(old.get(name))} -> {_short(new.get(name))}")
    return lines


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 300 else text[:300] + "..."
