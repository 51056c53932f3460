"""Data and probes for the mail-queue procedures: mails on a distributed queue of a vhost of its own, what the
view, the broker and the blob store hold."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pika

from mailserver.model.address import MailAddress
from mailserver.model.mail import Mail, MailContent

ENVELOPE_RCPT = "for <{rcpt}>;"


def raw_mail(sender: str, rcpt: str, subject: str, *, intake: bool = True, token: str | None = None) -> bytes:
    """A message as the SMTP intake spools it (its Received field first), with a unique Message-ID."""
    from datetime import UTC, datetime
    from email.utils import format_datetime

    token = token or uuid.uuid4().hex
    lines = []
    if intake:
        lines += ["Received: from client.remote.example (EHLO client.remote.example) ([192.0.2.10])",
                  "          by mx.e2e.test (JAMES SMTP Server) with ESMTP ID " + token[:8],
                  f"          for <{rcpt}>;", "          " + format_datetime(datetime.now(UTC))]
    lines += [f"From: {sender}", f"To: {rcpt}", f"Subject: {subject}", f"Message-ID: <{token}@client.remote.example>"]
    return ("\r\n".join(lines) + "\r\n\r\n" + f"body of {subject}\r\n").encode()


def make_mail(sender: str, rcpt: str, subject: str) -> Mail:
    return Mail(name=f"Mail-{uuid.uuid4().hex}", sender=MailAddress.of(sender), recipients=[MailAddress.of(rcpt)],
                content=MailContent.of_bytes(raw_mail(sender, rcpt, subject)))


def enqueue_many(queue: Any, mails: Iterable[Mail], threads: int = 8) -> None:
    """Enqueue through the server's queue (the SMTP intake's durable path), a few threads at a time."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(queue.enqueue, mails))


def purge(amqp_url: str, queue: str) -> int:
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        return connection.channel().queue_purge(queue).method.message_count
    finally:
        connection.close()


def view_rows(session: Any, queue: str) -> dict[str, dict[str, Any]]:
    """Every ``enqueuedMailsV4`` row of a queue by enqueueId, with ``deleted`` from ``deletedMailsV2`` (CQL)."""
    deleted = {str(r["enqueueid"]) for r in session.execute("SELECT queuename, enqueueid FROM deletedMailsV2")
               if r["queuename"] == queue}
    rows = {}
    for r in session.execute("SELECT * FROM enqueuedMailsV4"):
        if r["queuename"] == queue:
            rows[str(r["enqueueid"])] = {**r, "deleted": str(r["enqueueid"]) in deleted}
    return rows


def live_names(session: Any, queue: str) -> Counter:
    return Counter(r["name"] for r in view_rows(session, queue).values() if not r["deleted"])


def repository_rows(session: Any, url: str) -> dict[str, dict[str, Any]]:
    keys = [r["mailkey"] for r in session.execute("SELECT mailKey FROM mailRepositoryKeys WHERE name = ?", (url,))]
    rows = {}
    for key in keys:
        row = session.one("SELECT * FROM mailRepositoryContentV2 WHERE name = ? AND mailKey = ?", (url, key))
        if row is not None:
            rows[key] = row
    return rows


# -- a mail world for the DAG tests: the maintenance keyspace, a vhost and a bucket of its own ---------------------

@dataclass
class QueueWorld:
    """Local users, the spool of a vhost of its own, and mail servers started on demand (delivery stopped until then).

    The DAGs reach the same world: ``cassandra_default`` names the maintenance keyspace, the test points
    ``rabbitmq_management`` at this vhost and passes ``blob_bucket``.
    """

    stack: Any
    session: Any
    amqp_url: str
    vhost: str
    bucket: str
    container: Path
    logs: Path
    domain: str
    servers: list[Any]

    @property
    def blobs(self) -> Any:
        from mailserver.blob.s3 import S3BlobStore, S3Config

        return S3BlobStore(S3Config(endpoint_url=self.stack.s3_endpoint, access_key=self.stack.s3_access_key,
                                    secret_key=self.stack.s3_secret_key, region=self.stack.s3_region,
                                    default_bucket=self.bucket))

    def factory(self) -> Any:
        from mailserver.queue.rabbitmq import DistributedMailQueueFactory

        return DistributedMailQueueFactory(self.amqp_url, self.session, self.blobs,
                                           management_url=self.stack.rabbitmq_management_url)

    def address(self, local: str) -> str:
        return f"{local}@{self.domain}"

    def add_users(self, locals_: Iterable[str]) -> list[str]:
        from mailserver.domains.cassandra import CassandraDomainList
        from mailserver.model.address import Username
        from mailserver.users.cassandra import CassandraUsersRepository

        users = CassandraUsersRepository(self.session, CassandraDomainList(self.session))
        added = []
        for local in locals_:
            users.add_user(Username.of(self.address(local)), "secret-pw")
            added.append(self.address(local))
        return added

    def start_delivery(self) -> Any:
        """``mailserver serve --roles spooler,webadmin`` on this world (ready once its WebAdmin answers)."""
        from tests.support.mailserver_process import WebAdminProcess, server_env

        env = server_env(self.stack, self.amqp_url, self.session.keyspace, self.bucket, self.container,
                         MAILSERVER_ROLES="spooler,webadmin",
                         MAILSERVER_NODE_NAME=f"delivery-{len(self.servers)}-{self.vhost}")
        server = WebAdminProcess(env, self.logs / f"delivery-{len(self.servers)}.log").start()
        self.servers.append(server)
        return server

    def stop_servers(self) -> None:
        for server in self.servers:
            server.terminate()
        self.servers.clear()

    def management_conn(self) -> str:
        """``AIRFLOW_CONN_RABBITMQ_MANAGEMENT`` for this vhost."""
        import json
        import urllib.parse

        mgmt, amqp = urllib.parse.urlsplit(self.stack.rabbitmq_management_url), urllib.parse.urlsplit(self.amqp_url)
        return json.dumps({"conn_type": "http", "host": mgmt.hostname, "port": mgmt.port, "schema": mgmt.scheme,
                           "login": urllib.parse.unquote(amqp.username or ""),
                           "password": urllib.parse.unquote(amqp.password or ""),
                           "extra": {"vhost": self.vhost, "amqp_host": amqp.hostname, "amqp_port": amqp.port}})

    def management_depth(self, queue: str) -> int | None:
        """The queue's depth as the management API reports it (it lags the broker by a few seconds)."""
        import base64
        import json
        import urllib.error
        import urllib.parse
        import urllib.request

        amqp = urllib.parse.urlsplit(self.amqp_url)
        token = base64.b64encode(f"{urllib.parse.unquote(amqp.username or '')}:"
                                 f"{urllib.parse.unquote(amqp.password or '')}".encode()).decode()
        url = (f"{self.stack.rabbitmq_management_url.rstrip('/')}/api/queues/{urllib.parse.quote(self.vhost, safe='')}"
               f"/{urllib.parse.quote(queue, safe='')}")
        request = urllib.request.Request(url, headers={"Authorization": f"Basic {token}"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                info = json.loads(response.read())
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise
        return int(info.get("messages") or 0)

    def bucket_keys(self) -> set[str]:
        from spark_apps.common.reports import s3_client

        client = s3_client(self.stack.to_env())
        keys: set[str] = set()
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket):
            keys.update(obj["Key"] for obj in page.get("Contents", []))
        return keys


def inbox_headers(session: Any, addresses: Iterable[str]) -> dict[str, list[str]]:
    """Per user, the header blob id of every message of their INBOX (CQL: mailboxPathV3, messageIdTable, messageV3).

    Every test mail has its own header (unique Message-ID), so a mail delivered twice shows up twice."""
    found: dict[str, list[str]] = {}
    for address in addresses:
        row = session.one("SELECT mailboxId FROM mailboxPathV3 WHERE namespace = ? AND user = ? AND mailboxName = ?",
                          ("#private", address.lower(), "INBOX"))
        if row is None:
            found[address] = []
            continue
        ids = [r["messageid"] for r in session.execute("SELECT messageId FROM messageIdTable WHERE mailboxId = ?",
                                                        (row["mailboxid"],))]
        found[address] = [session.one("SELECT headerContent FROM messageV3 WHERE messageId = ?",
                                      (i,))["headercontent"] for i in ids]
    return found


def delivered_subjects(world: QueueWorld, addresses: Iterable[str]) -> Counter:
    """The Subject of every message in these INBOXes (read from the header blobs)."""
    import re

    blobs = world.blobs
    subjects: Counter = Counter()
    for headers in inbox_headers(world.session, addresses).values():
        for blob_id in headers:
            text = blobs.read(blobs.default_bucket, blob_id).decode("utf-8", "replace")
            match = re.search(r"^Subject: (.*?)\r?$", text, re.MULTILINE)
            subjects[match.group(1) if match else None] += 1
    return subjects
