"""SMTP intake of the mail server under Postfix's ``smtp-source``, beside a bare ``smtp-sink``.

    .venv/bin/python bench/smtp_intake.py [-c 1,4,16] [-m 2000] [--sink-messages 5000] [--write]

One command runs everything, on the local stack's backends (or CASSANDRA_HOSTS, S3_ENDPOINT,
AMQP_URL, ... when set), never touching the shared server:

1. ``bench/postfix_tools.sh``: smtp-source and smtp-sink (Debian package postfix, no daemon).
2. A world of its own: a keyspace created as ``mailserver schema init`` does, a RabbitMQ vhost,
   an S3 bucket, and a ``mailserver serve`` child process (every role, the shipped
   mailetcontainer.yaml, JSON logs) on free loopback ports; the domain ``--domain`` and the user
   ``intake@`` are created through its WebAdmin, then ``--warmup`` mails are delivered unmeasured.
   ``--apart ROLES`` (repeatable) runs those roles in a ``mailserver serve`` process of their own
   instead (with a WebAdmin of its own, to know when it is up), as nodes of a cluster would; the
   first process keeps every other role.
3. For each concurrency (smtp-source ``-s``): smtp-source against a fresh smtp-sink (the
   protocol ceiling), then smtp-source against the server, ``-m`` mails to ``intake@``, each of
   ``-l`` bytes; then wait until every accepted mail is in the INBOX (or ``--drain-timeout``
   seconds without progress) and account for every mail.
4. Teardown: stop the server, drop the keyspace, delete the vhost and the bucket.

smtp-source speaks HELO (no PIPELINING), opens one session per mail (``--reuse-connections``:
smtp-source ``-d``), counts completed DATA (``-c``) and aborts on a negative reply.

Figures, per load (a load ends when its last mail is in the INBOX):

* **accepted/s** = mails smtp-source saw accepted (``250`` after DATA) / smtp-source's run time.
* **delivered/s** = mails found in the INBOX / (last INBOX write - smtp-source start).
* **250 -> INBOX, per mail, for every mail**: the 250 instant is the server's ``mail <name>
  accepted`` log record (millisecond timestamp, written right before the reply, with the SMTP
  ``sessionId``); the INBOX instant is the write time (``WRITETIME``, microseconds) of the mail's
  ``messageIdTable`` row, the row IMAP lists. The two are joined by the session id that the
  server's ``Received:`` header carries (``... with SMTP ID <sessionId>``), read back from each
  stored message's header blob. Both clocks are this machine's. Percentiles are nearest-rank.
* **lost** = mails the server accepted (log) that are not in the INBOX after the drain; mails
  found twice, log records of problems (WARNING and above), and non-empty mail repositories are
  listed under the table.
* **CPU per mail**: CPU time (``/proc``) of the server processes, Cassandra, S3Proxy, RabbitMQ,
  OpenSearch, smtp-source, and the rest of the machine (other work sharing it), over the load and
  its drain, divided by the mails accepted.
* **Cassandra requests per mail**, per table, from the node's own counters (``CqlMeter``), with the
  Paxos writes of lightweight transactions.

The Markdown section goes to stdout; ``--write`` appends it to docs/benchmarks.md (a section of
the same heading is replaced).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import resource
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.ports import unused_port  # noqa: E402

SENDER = "load@intake-client.test"   # not a local domain: no sender-identity check applies
SESSION_ID = re.compile(rb"^Received:.*?\bwith E?SMTPS?A? ID ([0-9a-f]+)", re.M | re.S)
ACCEPTED = re.compile(r"^mail (\S+) accepted from")
DELIVERED = re.compile(r"\] delivered to ")   # LocalDelivery, after the append: "[mail=... ] delivered to x"


class BenchError(Exception):
    """A condition that stops the benchmark, with a message for the operator."""


# ---------------------------------------------------------------------------- small helpers
def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def smtp_greeting(port: int, timeout: float = 2.0) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        data = s.recv(512)
        try:
            s.sendall(b"QUIT\r\n")
        except OSError:
            pass
    return data.decode("ascii", "replace").strip()


def postfix_tools() -> tuple[str, str, str]:
    """(smtp-source, smtp-sink, package version) from bench/postfix_tools.sh."""
    proc = subprocess.run([str(REPO / "bench" / "postfix_tools.sh")], capture_output=True, text=True, check=False)
    lines = proc.stdout.split("\n")
    if proc.returncode != 0 or len(lines) < 3:
        raise BenchError(f"bench/postfix_tools.sh failed:\n{proc.stderr.strip()}")
    return lines[0], lines[1], lines[2]


# ---------------------------------------------------------------------------- smtp-source / smtp-sink
@dataclass
class LoadResult:
    messages: int
    accepted: int       # smtp-source's -c counter: completed DATA
    started: float      # epoch seconds
    seconds: float
    error: str | None = None

    @property
    def rate(self) -> float:
        return self.accepted / self.seconds if self.seconds > 0 else 0.0


def run_smtp_source(binary: str, port: int, *, sessions: int, messages: int, size: int, recipient: str,
                    reuse: bool, helo: str, timeout: float) -> LoadResult:
    argv = [binary, "-c", "-s", str(sessions), "-m", str(messages), "-l", str(size), "-f", SENDER,
            "-t", recipient, "-M", helo, *(["-d"] if reuse else []), f"127.0.0.1:{port}"]
    started, t0 = time.time(), time.perf_counter()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return LoadResult(messages, _counter(out), started, time.perf_counter() - t0,
                          f"smtp-source still running after {timeout:.0f} s (killed)")
    elapsed = time.perf_counter() - t0
    error = None
    if proc.returncode != 0:
        error = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
    return LoadResult(messages, _counter(proc.stdout), started, elapsed, error)


def _counter(stdout: str) -> int:
    """smtp-source -c writes "1\\r2\\r...N\\r\\n": the last number is the count of completed DATA."""
    numbers = re.findall(r"\d+", stdout)
    return int(numbers[-1]) if numbers else 0


@contextmanager
def smtp_sink(binary: str) -> Iterator[int]:
    """smtp-sink on a free loopback port (its port), stopped at the end of the block."""
    port = unused_port()
    argv = [binary, *(["-u", "nobody"] if os.geteuid() == 0 else []), f"127.0.0.1:{port}", "256"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise BenchError(f"smtp-sink exited at start: {err.strip()}")
            try:
                if smtp_greeting(port).startswith("220"):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise BenchError(f"smtp-sink did not answer on 127.0.0.1:{port}")
            time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------------------- CPU accounting
CLK_TCK = os.sysconf("SC_CLK_TCK")
SERVICES = {"Cassandra": "org.apache.cassandra.service.CassandraDaemon", "S3Proxy": "s3proxy",
            "RabbitMQ": "beam.smp", "OpenSearch": "OpenSearchRunner"}


def _proc_cpu(pid: int) -> float:
    """utime + stime of a process, seconds (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def _service_pids() -> dict[str, list[int]]:
    pids: dict[str, list[int]] = {name: [] for name in SERVICES}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        for name, marker in SERVICES.items():
            if marker in cmdline:
                pids[name].append(int(entry.name))
    return pids


def _machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    total = sum(values[:8])   # guest time is already inside user
    idle = values[3] + values[4]
    return (total - idle) / CLK_TCK, total / CLK_TCK


class CpuMeter:
    """CPU seconds spent by each party between ``start()`` and ``stop()``."""

    def __init__(self, server_pids: Sequence[int]) -> None:
        self.server_pids = list(server_pids)
        self.pids = _service_pids()

    def _snapshot(self) -> dict[str, float]:
        snap = {name: sum(_proc_cpu(p) for p in pids) for name, pids in self.pids.items()}
        snap["mailserver"] = sum(_proc_cpu(p) for p in self.server_pids)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)   # smtp-source (and smtp-sink), once reaped
        snap["smtp-source"] = children.ru_utime + children.ru_stime
        me = resource.getrusage(resource.RUSAGE_SELF)
        snap["bench"] = me.ru_utime + me.ru_stime
        snap["busy"], snap["total"] = _machine_cpu()
        return snap

    def start(self) -> None:
        self.before = self._snapshot()

    def stop(self) -> dict[str, float]:
        after = self._snapshot()
        delta = {k: after[k] - self.before[k] for k in after}
        known = sum(delta[k] for k in (*SERVICES, "mailserver", "smtp-source", "bench"))
        delta["rest"] = max(0.0, delta["busy"] - known)
        return delta


class CqlMeter:
    """Requests per Cassandra table between ``start()`` and ``stop()``, from the node's own counters.

    ``system_views.local_{read,scan,write}_latency`` count the requests each table served (one node:
    every request is local); ``system.paxos`` counts the Paxos rounds of lightweight transactions,
    node-wide (other keyspaces' LWTs too, none on a quiet machine). The bench's own drain polls (one
    ``mailboxCounters`` read every ``--poll-interval``) are among the reads.
    """

    VIEWS = {"read": "local_read_latency", "scan": "local_scan_latency", "write": "local_write_latency"}

    def __init__(self, session: Any, keyspace: str) -> None:
        self.session, self.keyspace = session, keyspace

    def _snapshot(self) -> Counter[tuple[str, str]]:
        counts: Counter[tuple[str, str]] = Counter()
        for kind, view in self.VIEWS.items():
            for row in self.session.execute(f"SELECT keyspace_name, table_name, count FROM system_views.{view}"):
                if row["keyspace_name"] == self.keyspace:
                    counts[(kind, row["table_name"])] = int(row["count"])
                elif (row["keyspace_name"], row["table_name"], kind) == ("system", "paxos", "write"):
                    counts[("paxos write", "system.paxos")] = int(row["count"])
        return counts

    def start(self) -> None:
        self.before = self._snapshot()

    def stop(self) -> Counter[tuple[str, str]]:
        after = self._snapshot()
        return Counter({k: after[k] - self.before.get(k, 0) for k in after if after[k] > self.before.get(k, 0)})


def cql_note(label: str, requests: Counter[tuple[str, str]], mails: int) -> str:
    """One line: Cassandra requests per accepted mail, in all and per table (largest first)."""
    if not mails or not requests:
        return f"{label}: no Cassandra request counted"
    total = sum(n for (kind, _), n in requests.items() if kind != "paxos write")
    parts = ", ".join(f"{table} {kind} {n / mails:.1f}" for (kind, table), n in requests.most_common())
    return f"{label}: Cassandra requests per accepted mail {total / mails:.1f} ({parts})"


# ---------------------------------------------------------------------------- the server's world
class WebAdmin:
    def __init__(self, url: str, password: str) -> None:
        self.url, self.password = url.rstrip("/"), password

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Password": self.password, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                payload = resp.read()
        except urllib.error.HTTPError as exc:
            raise BenchError(f"WebAdmin {method} {path}: {exc.code} {exc.read().decode(errors='replace')}") from exc
        return json.loads(payload) if payload else None

    def repositories(self) -> dict[str, int]:
        """Size of every mail repository (error, address-error, relay-denied, ...)."""
        sizes = {}
        for repo in self.call("GET", "/mailRepositories") or []:
            info = self.call("GET", f"/mailRepositories/{repo['path']}")   # "path": already URL-encoded
            sizes[repo["repository"]] = int(info.get("size", 0)) if isinstance(info, dict) else 0
        return sizes


@dataclass
class World:
    """Keyspace, vhost, bucket and ``mailserver serve`` of this run; torn down by ``close()``."""

    tag: str
    workdir: Path
    keep_log: bool
    apart: Sequence[Sequence[str]] = ()
    exits: ExitStack = field(default_factory=ExitStack)
    pids: list[int] = field(default_factory=list)

    def open(self, domain: str, user: str) -> World:
        from include.stack.endpoints import Endpoints
        from include.stack.settings import StackSettings
        from mailserver.blob.s3 import S3BlobStore, S3Config
        from mailserver.cassandra.config import CassandraConfig
        from mailserver.cassandra.session import CassandraSession
        from mailserver.cassandra.versions import initialize_schema
        from mailserver.mailets.config import DEFAULT_FILE
        from mailserver.runtime.settings import ROLES
        from tests.support.mailserver_process import (
            WEBADMIN_PASSWORD,
            IsolatedVhost,
            ServerProcess,
            WebAdminProcess,
            server_env,
        )

        stack = Endpoints.from_env() or Endpoints.from_settings(StackSettings())
        self.keyspace, self.bucket = f"bench_intake_{self.tag}", f"bench-intake-{self.tag}"
        config = CassandraConfig(hosts=tuple(stack.cassandra_hosts.split(",")), port=stack.cassandra_port,
                                 keyspace=self.keyspace, request_timeout=60)
        self.exits.callback(self._drop_keyspace, config)
        initialize_schema(config)                       # `mailserver schema init`
        vhost = self.exits.enter_context(IsolatedVhost(stack, f"bench-intake-{self.tag}"))
        env = server_env(stack, vhost.amqp_url, self.keyspace, self.bucket, DEFAULT_FILE,
                         MAILSERVER_LOG_FORMAT="json", MAILSERVER_HOSTNAME="mx.intake.bench.test",
                         MAILSERVER_HEALTH_INTERVAL_MS="2000")   # the default, not the tests' 500 ms
        self.blobs = S3BlobStore(S3Config.from_env(env))
        self.exits.callback(self._delete_bucket)
        self.log_path = self.workdir / "mailserver.log"   # every process appends its lines to it
        # The processes apart start first, so their listener groups are bound before any event.
        nodes = [WebAdminProcess({**env, "MAILSERVER_ROLES": ",".join([*roles, "webadmin"]),
                                  "MAILSERVER_NODE_NAME": f"bench-apart-{i}",
                                  "MAILSERVER_WEBADMIN_PORT": str(unused_port())}, self.log_path)
                 for i, roles in enumerate(self.apart, 1)]
        moved = {role for roles in self.apart for role in roles}
        self.server = ServerProcess({**env, "MAILSERVER_ROLES": ",".join(r for r in ROLES if r not in moved)},
                                    self.log_path)
        for node in [*nodes, self.server]:
            self.exits.callback(node.terminate)
            try:
                node.start()
            except RuntimeError as exc:   # exited or silent: its log says why
                self.keep_log = True
                raise BenchError(f"the mail server did not start (log {self.log_path}): {exc}") from exc
            assert node.process is not None
            self.pids.append(node.process.pid)
        self.smtp_port = self.server.smtp_port
        self.webadmin = WebAdmin(self.server.webadmin_url, WEBADMIN_PASSWORD)
        self.webadmin.call("PUT", f"/domains/{quote(domain)}")
        self.address = f"{user}@{domain}"
        self.webadmin.call("PUT", f"/users/{quote(self.address)}", {"password": secrets.token_urlsafe(12)})
        self.session = CassandraSession.connect(config)
        self.exits.callback(self.session.close)
        self.log = ServerLog(self.log_path)
        return self

    @property
    def pid(self) -> int:
        """The process running SMTP (every role unless ``apart`` moved some)."""
        assert self.server.process is not None
        return self.server.process.pid

    def close(self) -> None:
        self.exits.close()
        if not self.keep_log:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _drop_keyspace(self, config: Any) -> None:
        from mailserver.cassandra.session import CassandraSession

        with CassandraSession.connect(config, use_keyspace=False) as s:
            s.session.execute(f"DROP KEYSPACE IF EXISTS {config.keyspace}", timeout=120)

    def _delete_bucket(self) -> None:
        self.blobs.delete_bucket(self.blobs.default_bucket)

    # -- the INBOX, read from Cassandra and S3 as IMAP would see it ---------------------------------
    def inbox_id(self) -> Any | None:
        from mailserver.mailbox.cassandra_mailboxes import CassandraMailboxStore
        from mailserver.model.mailbox import MailboxPath

        mailbox = CassandraMailboxStore(self.session).find_by_path(MailboxPath.inbox(self.address))
        return mailbox.id.value if mailbox is not None else None

    def inbox_count(self, inbox: Any) -> int:
        row = self.session.one("SELECT count FROM mailboxCounters WHERE mailboxId = ?", (inbox,))
        return int(row["count"] or 0) if row else 0

    def last_uid(self, inbox: Any) -> int:
        row = self.session.one("SELECT MAX(uid) AS uid FROM messageIdTable WHERE mailboxId = ?", (inbox,))
        return int(row["uid"] or 0) if row else 0

    def inbox_rows(self, inbox: Any, after_uid: int) -> list[tuple[int, str | None, float]]:
        """(uid, SMTP session id from the Received header, write time in epoch seconds) above ``after_uid``."""
        rows = [r for r in self.session.execute(
            "SELECT uid, messageId, headerContent, WRITETIME(messageId) AS written FROM messageIdTable "
            "WHERE mailboxId = ? AND uid > ?", (inbox, after_uid)) if r["messageid"] is not None]

        def session_of(blob_id: str) -> str | None:
            match = SESSION_ID.search(self.blobs.read(self.blobs.default_bucket, blob_id))
            return match.group(1).decode() if match else None

        with ThreadPoolExecutor(4) as pool:
            sessions = list(pool.map(session_of, [r["headercontent"] for r in rows]))
        return [(r["uid"], sid, r["written"] / 1e6) for r, sid in zip(rows, sessions, strict=True)]


# ---------------------------------------------------------------------------- the server's log
@dataclass
class LogSlice:
    accepted: dict[str, tuple[str, float]] = field(default_factory=dict)   # sessionId -> (mail name, epoch)
    opened: dict[str, float] = field(default_factory=dict)                 # sessionId -> its first record
    rcpt: dict[str, float] = field(default_factory=dict)                   # sessionId -> its RCPT TO record
    delivered: dict[str, float] = field(default_factory=dict)              # mail name -> epoch of "delivered to"
    problems: Counter[str] = field(default_factory=Counter)


class ServerLog:
    """The server's JSON log, read by byte offset."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def offset(self) -> int:
        return self.path.stat().st_size

    def read(self, start: int) -> LogSlice:
        out = LogSlice()
        with self.path.open("rb") as f:
            f.seek(start)
            data = f.read()
        for line in data.decode("utf-8", "replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if not isinstance(entry, dict) or "timestamp" not in entry:
                continue
            at = datetime.fromisoformat(entry["timestamp"]).timestamp()
            message = str(entry.get("message", ""))
            sid = entry.get("sessionId")
            if sid:
                out.opened.setdefault(sid, at)
                accepted = ACCEPTED.match(message)
                if accepted:
                    out.accepted[sid] = (accepted.group(1), at)
                elif message.startswith("RCPT TO:"):
                    out.rcpt[sid] = at
            elif DELIVERED.search(message) and entry.get("mail"):
                out.delivered[entry["mail"]] = at
            if entry.get("level") in ("WARNING", "ERROR", "CRITICAL"):
                text = re.sub(r"\b[0-9a-f-]{8,}\b|\d+", "#", message)[:140]
                out.problems[f"{entry['level']} {entry.get('logger', '?')}: {text}"] += 1
        return out


# ---------------------------------------------------------------------------- one row
@dataclass
class Row:
    target: str
    concurrency: int
    load: LoadResult
    delivered: int | None = None
    delivered_rate: float | None = None
    latencies: list[float] = field(default_factory=list)
    lost: int | None = None
    loadavg: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def cells(self) -> list[str]:
        accepted = "refused" if self.load.error and not self.load.accepted else _rate(self.load.rate)
        lat = self.latencies

        def ms(p: float) -> str:
            return f"{percentile(lat, p) * 1000:,.0f} ms" if lat else "—"

        return [self.target, str(self.concurrency), f"{self.load.accepted:,}", accepted,
                "—" if self.delivered_rate is None else _rate(self.delivered_rate), ms(50), ms(99), ms(100),
                "—" if self.lost is None else str(self.lost), f"{self.loadavg:.1f}"]


def _rate(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def sink_row(source: str, sink: str, level: int, args: argparse.Namespace) -> Row:
    with smtp_sink(sink) as port:
        load = run_smtp_source(source, port, sessions=level, messages=args.sink_messages, size=args.size,
                               recipient="sink@intake.test", reuse=args.reuse_connections, helo=args.helo,
                               timeout=args.load_timeout)
    row = Row("smtp-sink", level, load, loadavg=os.getloadavg()[0])
    if load.error:
        row.notes.append(f"smtp-sink, {level} sessions: smtp-source stopped: {load.error}")
    return row


def drain(world: World, inbox: Any, target: int, args: argparse.Namespace) -> bool:
    """Wait until the INBOX holds ``target`` more mails; False after ``drain_timeout`` s without progress."""
    last, since = -1, time.monotonic()
    while True:
        count = world.inbox_count(inbox)
        if count >= target:
            return True
        if count != last:
            last, since = count, time.monotonic()
        elif time.monotonic() - since > args.drain_timeout:
            return False
        time.sleep(args.poll_interval)


def server_row(world: World, source: str, level: int, args: argparse.Namespace) -> Row:
    inbox = world.inbox_id()
    base_count, base_uid, log_start = world.inbox_count(inbox), world.last_uid(inbox), world.log.offset()
    meter, cql = CpuMeter(world.pids), CqlMeter(world.session.session, world.keyspace)
    meter.start()
    cql.start()
    load = run_smtp_source(source, world.smtp_port, sessions=level, messages=args.messages, size=args.size,
                           recipient=world.address, reuse=args.reuse_connections, helo=args.helo,
                           timeout=args.load_timeout)
    label = f"mailserver, {level} session{'s' if level > 1 else ''}"
    complete = drain(world, inbox, base_count + load.accepted, args)
    log = world.log.read(log_start)
    if complete and len(log.accepted) > load.accepted:   # the server accepted mails smtp-source did not count
        complete = drain(world, inbox, base_count + len(log.accepted), args)
        log = world.log.read(log_start)
    settled = time.monotonic() + 5.0   # LocalDelivery logs `delivered to` just after the INBOX write
    while complete and len(log.delivered) < len(log.accepted) and time.monotonic() < settled:
        time.sleep(0.2)
        log = world.log.read(log_start)
    cpu, requests = meter.stop(), cql.stop()
    row = Row("mailserver", level, load, loadavg=os.getloadavg()[0], cpu=cpu)
    if load.error:
        row.notes.append(f"{label}: smtp-source stopped after {load.accepted} accepted mails: {load.error}")
    if len(log.accepted) != load.accepted:
        row.notes.append(f"{label}: the server logged {len(log.accepted)} accepted mails, smtp-source counted "
                         f"{load.accepted}")

    rows = world.inbox_rows(inbox, base_uid)
    found: dict[str, list[float]] = {}
    unknown = 0
    for _uid, sid, written in rows:
        if sid in log.accepted:
            found.setdefault(sid, []).append(written)
        else:
            unknown += 1
    row.delivered = len(found)
    row.lost = len(set(log.accepted) - set(found))
    row.latencies = [min(times) - log.accepted[sid][1] for sid, times in found.items()]
    if found:
        last = max(t for times in found.values() for t in times)
        row.delivered_rate = row.delivered / (last - load.started)
        row.notes.append(f"{label}: {row.delivered} of {len(log.accepted)} accepted mails in the INBOX, the last "
                         f"{last - (load.started + load.seconds):.1f} s after smtp-source ended; "
                         f"{len(log.delivered)} `delivered to` log records")
    if not complete:
        row.notes.append(f"{label}: the INBOX stopped growing for {args.drain_timeout:.0f} s before every "
                         "accepted mail arrived")
    if row.lost:
        missing = sorted(set(log.accepted) - set(found))
        names = ", ".join(log.accepted[s][0] for s in missing[:5])
        row.notes.append(f"{label}: **{row.lost} accepted mails are not in the INBOX** (mail names: {names}"
                         f"{', ...' if len(missing) > 5 else ''}); server log kept at {world.log_path}")
        world.keep_log = True
    row.notes.append(f"{label}: {breakdown(log)}")
    row.notes.append(cql_note(label, requests, load.accepted))
    duplicated = sum(len(times) - 1 for times in found.values())
    if duplicated:
        row.notes.append(f"{label}: {duplicated} mails were delivered more than once")
    if unknown:
        row.notes.append(f"{label}: {unknown} INBOX messages match no mail accepted during this load")
    for problem, n in log.problems.most_common(5):
        row.notes.append(f"{label}: {n} x log `{problem}`")
    for path, size in world.webadmin.repositories().items():
        if size:
            row.notes.append(f"{label}: mail repository {path} holds {size} mails")
    return row


def breakdown(log: LogSlice) -> str:
    """Medians of the server-side steps, from the log records of each mail's session."""
    def median_ms(values: list[float]) -> str:
        return f"{percentile(values, 50) * 1000:,.0f} ms" if values else "?"

    acc = log.accepted
    session = [at - log.opened[sid] for sid, (_, at) in acc.items() if sid in log.opened]
    data = [at - log.rcpt[sid] for sid, (_, at) in acc.items() if sid in log.rcpt]
    spool = [log.delivered[name] - at for name, at in acc.values() if name in log.delivered]
    return (f"server-side medians: connection to 250 {median_ms(session)}, of which RCPT to 250 (DATA, content "
            f"to S3, enqueue on RabbitMQ) {median_ms(data)}; 250 to the `delivered to` log record (spool, mailet "
            f"chain, append) {median_ms(spool)}")


def warm_up(world: World, source: str, args: argparse.Namespace) -> None:
    """Unmeasured mails first: the INBOX exists, connections and prepared statements are warm."""
    if args.warmup <= 0:
        return
    load = run_smtp_source(source, world.smtp_port, sessions=2, messages=args.warmup, size=args.size,
                           recipient=world.address, reuse=False, helo=args.helo, timeout=args.load_timeout)
    if load.error or load.accepted != args.warmup:
        raise BenchError(f"warm-up: {load.accepted} of {args.warmup} mails accepted: {load.error}")
    deadline = time.monotonic() + args.drain_timeout
    while True:
        inbox = world.inbox_id()
        if inbox is not None and world.inbox_count(inbox) >= args.warmup:
            return
        if time.monotonic() > deadline:
            raise BenchError(f"warm-up: the {args.warmup} mails did not reach the INBOX of {world.address}; "
                             f"server log: {world.log_path}")
        time.sleep(0.5)


# ---------------------------------------------------------------------------- report
def machine() -> str:
    cpu, mem = "?", "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem = f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB"
            break
    return f"{os.cpu_count()} CPUs ({cpu}), {mem} RAM, {platform.system()} {platform.release()}"


def git_commit() -> str:
    def git(*argv: str) -> str:
        return subprocess.run(["git", *argv], cwd=REPO, capture_output=True, text=True, check=False).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    return commit + (" + uncommitted changes" if git("status", "--porcelain") else "")


def processes(apart: Sequence[Sequence[str]]) -> str:
    if not apart:
        return "every role in one process"
    return ("every role, in " + str(len(apart) + 1) + " processes: "
            + "; ".join(f"`{','.join(roles)}` apart" for roles in apart) + "; the rest together")


def heading(started: datetime) -> str:
    return f"### SMTP intake ({started:%Y-%m-%d %H:%M} UTC, {platform.node() or 'host'}, {os.cpu_count()} cores)"


def report(rows: list[Row], args: argparse.Namespace, version: str, argv: Sequence[str], started: datetime,
           load_before: tuple[float, float, float]) -> str:
    sessions = "sessions reused (`-d`)" if args.reuse_connections else "one SMTP session per mail"
    load_after = os.getloadavg()
    argv = [("…" if i and argv[i - 1] == "--context" else a) for i, a in enumerate(argv)]   # quoted below
    lines = [
        heading(started), "",
        f"`bench/smtp_intake.py {shlex.join(argv)}` at commit {git_commit()}, {started:%a %d %b %Y %H:%M} UTC. "
        f"Postfix {version} smtp-source (HELO, {sessions}, {args.size:,}-byte bodies) against a bare smtp-sink"
        + ("" if args.sink_only else " and against a `mailserver serve` of its own (" + processes(args.apart)
           + ", shipped mailetcontainer.yaml, JSON logs, own keyspace/vhost/bucket on the shared local stack)")
        + f". Machine: {machine()}; load average "
        f"{load_before[0]:.1f} / {load_before[1]:.1f} / {load_before[2]:.1f} (1/5/15 min) at the start, "
        f"{load_after[0]:.1f} / {load_after[1]:.1f} / {load_after[2]:.1f} at the end. {args.context}".rstrip(),
        "",
        "| target | sessions | mails accepted | accepted/s | delivered/s | p50 250→INBOX | p99 250→INBOX "
        "| max 250→INBOX | lost | load avg (1 min) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *("| " + " | ".join(row.cells()) + " |" for row in rows),
        "",
    ]
    server_rows = [r for r in rows if r.cpu and r.load.accepted]
    if server_rows:
        parties = ["mailserver", *SERVICES, "smtp-source", "rest"]
        lines += [
            "CPU time per accepted mail (ms), over each server load and its drain; *rest* is every other "
            "process of the machine (the other work sharing it); *machine busy* is the share of both cores "
            "in use:", "",
            "| sessions | " + " | ".join(parties) + " | machine busy |",
            "|---:|" + "---:|" * (len(parties) + 1),
            *(f"| {r.concurrency} | " + " | ".join(f"{r.cpu[p] * 1000 / r.load.accepted:.1f}" for p in parties)
              + f" | {r.cpu['busy'] / r.cpu['total']:.0%} |" for r in server_rows),
            "",
        ]
    notes = [n for row in rows for n in row.notes]
    if notes:
        lines += [*(f"- {n}" for n in notes), ""]
    return "\n".join(lines)


def write_section(doc: Path, section: str) -> None:
    """Append ``section``; an existing section with the same heading is replaced (a re-run that minute)."""
    text = doc.read_text() if doc.exists() else "# Benchmarks\n\nFigures measured by the scripts in `bench/`; " \
                                                 "newest last.\n"
    title = section.splitlines()[0]
    start = text.find(title + "\n")
    if start >= 0:
        nxt = text.find("\n### ", start + len(title))
        text = text[:start].rstrip("\n") + ("\n" + text[nxt:] if nxt >= 0 else "")
    doc.write_text(text.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n")


# ---------------------------------------------------------------------------- main
def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-c", "--concurrency", default="1,4,16", help="smtp-source sessions (-s), comma-separated")
    parser.add_argument("-m", "--messages", type=int, default=2000, help="mails per load against the server")
    parser.add_argument("--sink-messages", type=int, default=5000, help="mails per load against smtp-sink")
    parser.add_argument("-l", "--size", type=int, default=4096, help="body bytes per mail (smtp-source -l)")
    parser.add_argument("--reuse-connections", action="store_true", help="several mails per session (-d)")
    parser.add_argument("--warmup", type=int, default=50, help="unmeasured mails delivered before the loads")
    parser.add_argument("--domain", default="intake.bench.test", help="local domain created on the server")
    parser.add_argument("--user", default="intake", help="local part receiving the load")
    parser.add_argument("--helo", default="intake-client.test", help="smtp-source's HELO name (-M)")
    parser.add_argument("--poll-interval", type=float, default=0.5, help="seconds between INBOX counter reads "
                        "while draining (the figures come from write times, not from polls)")
    parser.add_argument("--drain-timeout", type=float, default=120.0,
                        help="stop waiting for deliveries after this many seconds without progress")
    parser.add_argument("--load-timeout", type=float, default=3600.0, help="kill smtp-source after this long")
    parser.add_argument("--sink-only", action="store_true", help="only the smtp-sink ceiling (no server)")
    parser.add_argument("--apart", action="append", default=[], metavar="ROLES",
                        help="run these roles (comma list, e.g. listeners) in a server process of their own")
    parser.add_argument("--keep-log", action="store_true", help="keep the server's log (always kept on lost mail)")
    parser.add_argument("--context", default="", help="a sentence on the machine's other work, for the record")
    parser.add_argument("--write", action="store_true", help="add the section to docs/benchmarks.md")
    args = parser.parse_args(argv)
    try:
        args.levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
    except ValueError:
        parser.error(f"--concurrency: integers separated by commas, not {args.concurrency!r}")
    if not args.levels or min(args.levels) < 1:
        parser.error("--concurrency: at least one level, each >= 1")
    from mailserver.runtime.settings import ROLES

    args.apart = [[r.strip() for r in spec.split(",") if r.strip()] for spec in args.apart]
    for roles in args.apart:
        unknown = [r for r in roles if r not in ROLES]
        if not roles or unknown or {"smtp", "webadmin"} & set(roles):
            parser.error(f"--apart: a comma list of {', '.join(r for r in ROLES if r not in ('smtp', 'webadmin'))} "
                         f"(smtp and webadmin stay in the first process), not {','.join(roles)!r}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    os.chdir(REPO)
    started, load_before = datetime.now(UTC), os.getloadavg()
    rows: list[Row] = []
    world: World | None = None
    try:
        source, sink, version = postfix_tools()
        if not args.sink_only:
            tag = secrets.token_hex(4)
            world = World(tag, Path(tempfile.mkdtemp(prefix=f"smtp-intake-{tag}-")), args.keep_log, args.apart)
            print(f"smtp_intake: starting a mail server on keyspace bench_intake_{tag}", file=sys.stderr)
            world.open(args.domain, args.user)
            warm_up(world, source, args)
        for level in args.levels:
            rows.append(sink_row(source, sink, level, args))
            print(f"smtp_intake: {' | '.join(rows[-1].cells())}", file=sys.stderr)
            if world is not None:
                rows.append(server_row(world, source, level, args))
                print(f"smtp_intake: {' | '.join(rows[-1].cells())}", file=sys.stderr)
    except BenchError as exc:
        print(f"smtp_intake: {exc}", file=sys.stderr)
        return 2
    finally:
        if world is not None:
            kept = f"kept at {world.log_path}" if world.keep_log else "removed"
            print(f"smtp_intake: tearing down (server log {kept})", file=sys.stderr)
            world.close()
    section = report(rows, args, version, argv, started, load_before)
    print(section)
    if args.write:
        write_section(REPO / "docs" / "benchmarks.md", section)
        print("smtp_intake: section written to docs/benchmarks.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
