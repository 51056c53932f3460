"""Data for the maintenance procedures: a keyspace of their own, bulk mail, faults where production has them.

The procedures scan whole tables, so their tests get a keyspace nobody else writes into (the
session keyspace holds the deliberate inconsistencies of other tests). Bulk messages go
through the data layer's message store (imapUidTable LWT, messageIdTable, index tables,
counters: James's write order) plus the listeners' fast-view and quota rows, from a thread pool
(a few thousand messages in seconds); each inconsistency is then produced by the fault seam
failing the write production would fail.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from mailserver.cassandra.faults import InjectedWriteFailure
from mailserver.cassandra.session import CassandraSession
from mailserver.mailbox.cassandra_fastview import CassandraFastViewStore
from mailserver.mailbox.cassandra_mailboxes import CassandraMailboxStore
from mailserver.mailbox.cassandra_messages import CassandraMessageStore
from mailserver.mailbox.cassandra_quota import CassandraQuotaStore
from mailserver.model.address import Username
from mailserver.model.flags import Flags, SystemFlag
from mailserver.model.ids import MailboxId, MessageId, ThreadId
from mailserver.model.mailbox import MailboxPath
from mailserver.model.message import MessageMetadata
from mailserver.model.quota import QuotaRoot, QuotaUsage
from spark_apps.packaging import build_py_files, job_path


@dataclass
class SeededMail:
    by_mailbox: dict[MailboxId, list[MessageMetadata]] = field(default_factory=dict)
    users: list[Username] = field(default_factory=list)

    def all(self) -> list[MessageMetadata]:
        return [m for ms in self.by_mailbox.values() for m in ms]


def metadata(mailbox_id: MailboxId, uid: int, *, seen: bool = False, size: int = 2000) -> MessageMetadata:
    message_id = MessageId.generate()
    flags = Flags.of(SystemFlag.SEEN) if seen else Flags.of()
    when = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=uid)
    return MessageMetadata(mailbox_id, message_id, uid, uid, flags, ThreadId.of(message_id.value), when, when,
                           300, size, f"header-{message_id.value}")


def create_mailboxes(session: CassandraSession, users: Sequence[Username],
                     names: Sequence[str]) -> dict[MailboxId, Username]:
    """``names`` for each of ``users``, created by the data layer's mailbox store: {mailbox: owner}."""
    store = CassandraMailboxStore(session)
    return {store.create(MailboxPath.of(user, name), 42).id: user for user in users for name in names}


def append_mail(session: CassandraSession, mailboxes: Mapping[MailboxId, Username], per_mailbox: int, *,
                threads: int = 16) -> SeededMail:
    """``per_mailbox`` messages in each mailbox, with what a successful append leaves in Cassandra.

    The uids come from the data layer's allocator (one range per mailbox, ``messageCounter``), the
    rows from its message store (imapUidTable LWT, messageIdTable, index tables, counters), then
    what the listeners write for the Added event: the fast-view row and the owner's current quota.
    Only the content (``messageV3`` and its blobs) is left out: no procedure fed by this bulk reads it.
    """
    messages = CassandraMessageStore(session)
    fast_view = CassandraFastViewStore(session)
    quota = CassandraQuotaStore(session)
    seeded = SeededMail(users=list(dict.fromkeys(mailboxes.values())))
    for mailbox_id in mailboxes:
        first = messages.next_uid(mailbox_id, per_mailbox)
        seeded.by_mailbox[mailbox_id] = [metadata(mailbox_id, uid, seen=uid % 3 == 0, size=1000 + uid)
                                         for uid in range(first, first + per_mailbox)]

    def add(message: MessageMetadata) -> None:
        messages.add(message)
        # Without the listeners' rows every message would be a missing projection and a wrong quota,
        # and a scan would rightly report them all.
        fast_view.store(message.message_id, f"preview of {message.message_id.value}", False)
        quota.increase(QuotaRoot.for_user(mailboxes[message.mailbox_id]), QuotaUsage(1, message.size))

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(add, seeded.all()))
    return seeded


def seed_mail(session: CassandraSession, *, users: int, mailboxes_per_user: int, messages_per_mailbox: int,
              threads: int = 16) -> SeededMail:
    """New users, each with an INBOX and ``mailboxes_per_user - 1`` folders of ``messages_per_mailbox`` messages."""
    tag = uuid.uuid4().hex[:6]
    usernames = [Username.of(f"maint{u}-{tag}@example.com") for u in range(users)]
    names = ["INBOX", *(f"Folder{b}" for b in range(1, mailboxes_per_user))]
    return append_mail(session, create_mailboxes(session, usernames, names), messages_per_mailbox, threads=threads)


def clear_keyspace(session: CassandraSession) -> None:
    """Empty every non-empty table, so a test's counters are its own (a procedure scans whole tables)."""
    tables = session.cluster.metadata.keyspaces[session.keyspace].tables
    for name in tables:
        if list(session.session.execute(f"SELECT * FROM {name} LIMIT 1")):
            session.session.execute(f"TRUNCATE {name}", timeout=120)


def fail_once(session: CassandraSession, table: str, kind: str, action: Any) -> None:
    """Run ``action`` with the next ``kind`` write on ``table`` failing, as a node timeout would."""
    session.faults.fail(table, kind=kind)
    try:
        action()
    except InjectedWriteFailure:
        return
    finally:
        session.faults.clear()
    raise AssertionError(f"no {kind} on {table} happened: the fault seam was not reached")


def table_checksum(session: CassandraSession, *tables: str) -> str:
    """A digest of every row of ``tables`` (order-independent): equal before and after = nothing written."""
    digest = hashlib.sha256()
    for table in tables:
        rows = sorted(repr(sorted(r.items())) for r in session.session.execute(f"SELECT * FROM {table}"))
        digest.update(f"{table}:{len(rows)}".encode())
        for r in rows:
            digest.update(r.encode())
    return digest.hexdigest()


def spark_submit(job: str, args: list[str], env: dict[str, str], *, timeout: int = 900,
                 wait: bool = True, py_files: Callable[[Path], Path] = build_py_files
                 ) -> subprocess.CompletedProcess | subprocess.Popen:
    """spark-submit of one of the platform's jobs, as the Airflow operator does it (local[2]).

    ``py_files`` builds the zip the operator would ship (the mail-queue operator's ships the whole server).
    """
    tmp = Path(tempfile.mkdtemp(prefix="spark-job-"))
    cmd = [str(Path(sys.executable).parent / "spark-submit"), "--master", "local[2]", "--driver-memory", "1g",
           "--conf", "spark.ui.enabled=false", "--jars", env["SPARK_CONNECTOR_JARS"],
           "--py-files", str(py_files(tmp)), str(job_path(job)), *args]
    if wait:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    # Files, not pipes: nobody reads while it runs, and a full pipe would block Spark's logging.
    return subprocess.Popen(cmd, env=env, stdout=(tmp / "stdout").open("w"), stderr=(tmp / "stderr").open("w"),
                            text=True, start_new_session=True)


def kill_when(slow: subprocess.Popen, reached: Callable[[], bool], *, every: float, timeout: float = 600) -> None:
    """Kills a job ``spark_submit(wait=False)`` started (its whole process group) once ``reached()`` holds,
    checked every ``every`` seconds; fails, with the end of its stderr, when the job ended by itself first."""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and slow.poll() is None:
            if reached():
                break
            time.sleep(every)
    finally:
        ended = slow.poll()
        with contextlib.suppress(ProcessLookupError):   # the whole group may be gone when the job ended
            os.killpg(slow.pid, signal.SIGKILL)
        slow.wait(timeout=60)
    stderr = Path(slow.args[slow.args.index("--py-files") + 1]).with_name("stderr").read_text()
    assert ended is None, f"the slow run ended by itself ({ended}) before it was killed:\n{stderr[-4000:]}"


def report_of(stdout: str) -> dict[str, Any]:
    import json

    lines = [line for line in stdout.splitlines() if line.startswith("REPORT ")]
    assert lines, "the job printed no REPORT line"
    return json.loads(lines[-1][len("REPORT "):])
