"""How soon IMAP IDLE on one server process sees a delivery made by another process.

    .venv/bin/python bench/imap_idle_push.py [-n 100] [--size 4096] [--record]

A ``mailserver serve`` child process runs the ``imap`` role alone, on a keyspace, an S3 bucket and
a RabbitMQ vhost of this run (the local stack's endpoints, or CASSANDRA_HOSTS, S3_ENDPOINT,
AMQP_URL, ... when set), all removed at the end. A client logs in, selects INBOX and sends IDLE.
This process, another node as far as the server knows, then delivers ``-n`` messages into that
INBOX one at a time with its own mailbox manager (``MailboxManager.append``, as LocalDelivery
does) on a RabbitMQ event bus of its own: the server hears of each only through the bus (the
``Added`` event's copy routed to its ``mailboxEvent-eventbus-<id>`` key queue).

Measured per delivery: from the start of the ``append`` call to the client reading the untagged
``* n EXISTS`` (a reader thread timestamps each line as it arrives); the next delivery starts
only after that. The append's own duration is reported beside it: the push part is the rest.
Percentiles are nearest-rank; the load average of the machine is read before and after.
"""

from __future__ import annotations

import argparse
import os
import platform
import queue
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.imap import make_message  # noqa: E402
from bench.load_report import percentile  # noqa: E402

PASSWORD = "bench-Passw0rd"  # noqa: S105 - a throw-away user
DOMAIN = "idle-bench.test"
EXISTS = re.compile(rb"^\* (\d+) EXISTS")


class IdleClient:
    """One IMAP connection idling on INBOX; a thread reads its lines and stamps each ``EXISTS``."""

    def __init__(self, port: int, user: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.file = self.sock.makefile("rb")
        self.exists: queue.Queue[tuple[int, float]] = queue.Queue()
        self._line()   # the greeting
        self._command(b"a1 LOGIN " + user.encode() + b" " + PASSWORD.encode())
        self._command(b"a2 SELECT INBOX")
        self.sock.sendall(b"a3 IDLE\r\n")
        while not self._line().startswith(b"+"):
            pass
        self.sock.settimeout(None)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _line(self) -> bytes:
        line = self.file.readline()
        if not line:
            raise ConnectionError("the server closed the connection")
        return line

    def _command(self, command: bytes) -> None:
        tag = command.split(b" ", 1)[0]
        self.sock.sendall(command + b"\r\n")
        while not (line := self._line()).startswith(tag + b" "):
            pass
        if not line.startswith(tag + b" OK"):
            raise RuntimeError(f"{command.split(b' ')[1].decode()}: {line!r}")

    def _read(self) -> None:
        try:
            while True:
                line = self.file.readline()
                stamp = time.perf_counter()
                if not line:
                    return
                match = EXISTS.match(line)
                if match:
                    self.exists.put((int(match.group(1)), stamp))
        except OSError:
            return

    def close(self) -> None:
        try:
            self.sock.sendall(b"DONE\r\na4 LOGOUT\r\n")
        except OSError:
            pass
        self.sock.close()


def imap_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            return s.recv(4) == b"* OK"
    except OSError:
        return False


def run(deliveries: int, size: int, workdir: Path) -> dict:
    from bench.scratch import scratch_backends, stack_endpoints
    from mailserver.domains.cassandra import CassandraDomainList
    from mailserver.events.cassandra_dead_letters import CassandraEventDeadLetters
    from mailserver.events.rabbitmq import RabbitMQEventBus
    from mailserver.mailbox.wiring import cassandra_context
    from mailserver.mailets.config import DEFAULT_FILE
    from mailserver.model.address import Username
    from mailserver.model.mailbox import MailboxPath
    from mailserver.users.cassandra import CassandraUsersRepository
    from tests.support.mailserver_process import IsolatedVhost, ServerProcess, server_env

    class ImapProcess(ServerProcess):
        def ready(self) -> bool:
            return imap_answers(int(self.env["MAILSERVER_IMAP_PORT"]))

    ep = stack_endpoints()
    tag = uuid.uuid4().hex[:8]
    user = f"idle@{DOMAIN}"
    with ExitStack() as exits:
        session, blobs = exits.enter_context(scratch_backends(ep))
        vhost = exits.enter_context(IsolatedVhost(ep, f"bench-idle-{tag}"))
        domains = CassandraDomainList(session)
        domains.add(DOMAIN)
        CassandraUsersRepository(session, domains).add_user(user, PASSWORD)
        bus = RabbitMQEventBus(vhost.amqp_url, CassandraEventDeadLetters(session))
        exits.callback(bus.close)
        bus.declare()
        manager = cassandra_context(session, blobs, bus).manager
        inbox = MailboxPath.inbox(Username.of(user))
        manager.create_mailbox(inbox)

        env = server_env(ep, vhost.amqp_url, session.config.keyspace, blobs.default_bucket.value, DEFAULT_FILE,
                         MAILSERVER_ROLES="imap", MAILSERVER_IMAP_AUTH_REQUIRE_TLS="false",
                         MAILSERVER_HEALTH_INTERVAL_MS="2000", PYTHONPATH=str(REPO))
        server = ImapProcess(env, workdir / "mailserver.log")
        exits.callback(server.terminate)
        server.start()
        client = IdleClient(int(server.env["MAILSERVER_IMAP_PORT"]), user)
        exits.callback(client.close)

        load_before = os.getloadavg()
        seen, appends = [], []
        for i in range(deliveries):
            message = make_message(i, size)
            started = time.perf_counter()
            manager.append(inbox, message)
            appends.append(time.perf_counter() - started)
            count, stamp = client.exists.get(timeout=60)
            if count != i + 1:
                raise RuntimeError(f"delivery {i + 1}: the client saw EXISTS {count}")
            seen.append(stamp - started)
        return {"seen": seen, "appends": appends, "load": (load_before, os.getloadavg())}


def commit() -> str:
    out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                         check=False)
    return out.stdout.strip() or "unknown"


def section(args: argparse.Namespace, result: dict, started: datetime) -> list[str]:
    def ms(values: list[float], p: float) -> str:
        return f"{percentile(values, p) * 1000:.1f}"

    seen, appends = result["seen"], result["appends"]
    (b1, b5, b15), (a1, a5, a15) = result["load"]
    return [
        "",   # the section follows another one in docs/benchmarks.md
        f"### IMAP IDLE push across processes ({started:%Y-%m-%d %H:%M} UTC, {platform.node() or 'host'}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, commit {commit()})",
        "",
        f"`bench/imap_idle_push.py -n {args.deliveries} --size {args.size}`: a `mailserver serve` child process "
        "with the `imap` role only, a client idling on INBOX; this process appends each message with its own "
        "mailbox manager and RabbitMQ bus (Cassandra 5, S3Proxy, RabbitMQ of the local stack, same machine; "
        "scratch keyspace, bucket and vhost). Time from the append's start to the client reading `* n EXISTS`.",
        "",
        "| measure | deliveries | p50 ms | p99 ms | max ms |",
        "|---|---|---|---|---|",
        f"| append start to EXISTS read | {len(seen)} | {ms(seen, 50)} | **{ms(seen, 99)}** | {ms(seen, 100)} |",
        f"| the append call alone | {len(appends)} | {ms(appends, 50)} | {ms(appends, 99)} | {ms(appends, 100)} |",
        "",
        f"- load average (1, 5, 15 min): {b1:.2f} {b5:.2f} {b15:.2f} before, {a1:.2f} {a5:.2f} {a15:.2f} after",
        "",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--deliveries", type=int, default=100)
    parser.add_argument("--size", type=int, default=4096, help="bytes per message")
    parser.add_argument("--record", action="store_true", help="append the section to docs/benchmarks.md")
    args = parser.parse_args()
    started = datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="imap-idle-bench-") as workdir:
        try:
            result = run(args.deliveries, args.size, Path(workdir))
        except Exception:
            log = Path(workdir) / "mailserver.log"
            if log.exists():
                print("\n".join(log.read_text(errors="replace").splitlines()[-40:]), file=sys.stderr)
            raise
    from bench.scratch import publish

    publish(section(args, result, started), record=args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
