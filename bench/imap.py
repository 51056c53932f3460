"""IMAP commands/s and per-command latency under concurrent connections (James's Gatling IMAP mix).

    .venv/bin/python bench/imap.py [-c 10,100] [--duration 40] [--seed 10] [--backends cassandra,memory] [--record]

An ``ImapServer`` runs in this process (``ImapServerThread``, the ``imap`` role's defaults: 16
threads for the blocking mailbox-manager calls) over the mailbox layer of:

* ``cassandra``: the real Cassandra + S3 stack (the local stack's endpoints, or CASSANDRA_HOSTS,
  S3_ENDPOINT, ... when set), in a throw-away keyspace and bucket dropped at the end, as
  ``bench/mailbox_append.py`` does; users in James's ``user`` table;
* ``memory``: the memory adapters (a second, labelled figure: the protocol layer's own cost).

One user per connection, each with an INBOX seeded with ``--seed`` messages of ``--size`` bytes.
The clients are ``imaplib`` threads in ``--client-processes`` separate processes (so that the
clients' Python does not share the server's GIL); they connect and log in first (not measured),
then, from one common instant and for ``--duration`` seconds, each connection repeats the
iteration below, the read/write mix of James's Gatling IMAP scenarios (``ImapFullScenario``:
append, select, fetch of the last message; ``ImapStoreScenario``: flag changes) without pauses:

    SELECT INBOX
    FETCH <last 10>:* (UID FLAGS ENVELOPE)        the message list a client shows
    UID FETCH <a random uid> (UID BODY.PEEK[])    one full message
    SEARCH UNSEEN
    APPEND INBOX (a --size message)
    UID STORE <the appended uid> +FLAGS (\\Flagged)  always a real change (a compare-and-set on Cassandra)

Once the world is built, the server process's collector is settled as ``mailserver serve`` settles it
once its roles run (``mailserver.runtime.heap``); ``--default-gc`` leaves CPython's defaults.

Latency is the client's: from sending a command to its tagged response, parsed. commands/s =
commands completed within the window / window; percentiles are nearest-rank. The mailboxes grow
by one message per iteration (the APPENDs), so SELECT lists a few more messages as the run goes.
The Markdown section goes to stdout; ``--record`` appends it to docs/benchmarks.md with the
machine and the date.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import random
import re
import sys
import threading
import time
import uuid
from collections import defaultdict
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.load_report import cost_lines, host_speed, load_parser, percentile  # noqa: E402
from mailserver.imap.config import ImapConfig  # noqa: E402
from mailserver.runtime.heap import settle_heap  # noqa: E402

PASSWORD = "bench-Passw0rd"  # noqa: S105 - throw-away users
COMMANDS = ["SELECT", "FETCH flags+envelope", "UID FETCH body", "SEARCH", "APPEND", "UID STORE +FLAGS"]
APPENDUID = re.compile(rb"APPENDUID \d+ (\d+)")


def make_message(i: int, size: int) -> bytes:
    header = (f"From: Sender {i % 50} <sender{i % 50}@example.com>\r\nTo: bench@example.com\r\n"
              f"Subject: bench message {i}\r\nDate: Tue, 24 Nov 2026 10:00:00 +0000\r\n"
              f"Message-ID: <{uuid.uuid4()}@example.com>\r\nContent-Type: text/plain\r\n\r\n").encode()
    line = b"Lorem ipsum dolor sit amet, consectetur adipiscing elit.\r\n"
    return header + (line * (size // len(line) + 1))[: max(0, size - len(header))]


# ---------------------------------------------------------------------------- clients (child processes)
def _connection(port: int, user: str, size: int, start: float, end: float, ready: threading.Barrier,
                out: list) -> None:
    """One connection: log in, wait for the common start, run iterations until ``end``."""
    import imaplib
    import socket

    samples: list[tuple[str, float, bool]] = []
    errors: list[str] = []
    try:
        client = imaplib.IMAP4("127.0.0.1", port, timeout=120)
        # imaplib sends an APPEND literal and its closing CRLF in two writes: with Nagle on, the
        # CRLF waits for the server's delayed ACK (~40 ms), a client artefact, not server time.
        client.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client.login(user, PASSWORD)
    except Exception as exc:   # counted, and the barrier still released
        errors.append(f"login: {exc!r}")
        ready.wait()
        out.append((samples, errors))
        return
    ready.wait()
    time.sleep(max(0.0, start - time.time()))
    rng = random.Random(user)  # noqa: S311 - picks a message, nothing secret

    def timed(name: str, command: str, *args):
        t0 = time.perf_counter()
        try:
            typ, data = getattr(client, command)(*args)
        except Exception as exc:
            typ, data = "EXC", [repr(exc).encode()]
        elapsed = time.perf_counter() - t0
        if time.time() <= end:
            samples.append((name, elapsed, typ == "OK"))
            if typ != "OK":
                errors.append(f"{name}: {typ} {data[:1]!r}")
        return typ, data

    typ, data = client.select("INBOX")
    uids = (client.uid("SEARCH", "ALL")[1][0] or b"").split()   # known from here on; not measured
    i = 0
    while time.time() < end:
        typ, data = timed("SELECT", "select", "INBOX")
        exists = int(data[0]) if typ == "OK" else 1
        timed("FETCH flags+envelope", "fetch", f"{max(1, exists - 9)}:*", "(UID FLAGS ENVELOPE)")
        timed("UID FETCH body", "uid", "FETCH", rng.choice(uids or [b"1"]).decode(), "(UID BODY.PEEK[])")
        timed("SEARCH", "search", None, "UNSEEN")
        typ, data = timed("APPEND", "append", "INBOX", None, None, make_message(i, size))
        match = APPENDUID.search(data[0] or b"") if typ == "OK" else None
        if match:
            uids.append(match.group(1))
            timed("UID STORE +FLAGS", "uid", "STORE", match.group(1).decode(), "+FLAGS", "(\\Flagged)")
        i += 1
    try:
        client.logout()
    except Exception as exc:
        errors.append(f"logout: {exc!r}")
    out.append((samples, errors))


def _client_process(port: int, users: list[str], size: int, start: float, end: float) -> tuple[list, list]:
    out: list = []
    ready = threading.Barrier(len(users))
    threads = [threading.Thread(target=_connection, args=(port, u, size, start, end, ready, out), daemon=True)
               for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join(end - time.time() + 300)
    samples = [s for conn_samples, _ in out for s in conn_samples]
    errors = [e for _, conn_errors in out for e in conn_errors]
    if len(out) < len(users):
        errors.append(f"{len(users) - len(out)} connection(s) did not finish")
    return samples, errors


# ---------------------------------------------------------------------------- server side
class World:
    """A mailbox layer, its users and an IMAP server on a free loopback port."""

    def __init__(self, backend: str, users: int, seed: int, size: int,
                 io_threads: int = ImapConfig.io_threads) -> None:
        from concurrent.futures import ThreadPoolExecutor

        from mailserver.imap import ImapServer, ImapServerThread
        from mailserver.model.address import Username
        from mailserver.model.mailbox import MailboxPath

        self.backend = backend
        self.domain = "imap-bench.test"
        self._exits = ExitStack()   # left in reverse order: the server, then the backends
        if backend == "cassandra":
            ctx, repo, subscriptions = self._cassandra()
        else:
            ctx, repo, subscriptions = self._memory()
        self.users = [f"user{u}@{self.domain}" for u in range(users)]

        def provision(user: str) -> None:
            repo.add_user(user, PASSWORD)
            inbox = MailboxPath.inbox(Username.of(user))
            ctx.manager.create_mailbox(inbox)
            for i in range(seed):
                ctx.manager.append(inbox, make_message(i, size))

        t0 = time.perf_counter()
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(provision, self.users))
        self.seed_seconds = time.perf_counter() - t0
        # Every bench client comes from 127.0.0.1: the per-address cap would refuse the 51st.
        # bus=: the selected mailboxes follow their events, as the imap role's do on RabbitMQ; this
        # process is the only writer, so its in-process bus brings every change (live key delivery).
        config = ImapConfig(port=0, auth_require_tls=False, max_connections_per_ip=None, io_threads=io_threads)
        self.server = ImapServer(config, ctx.manager, repo, subscriptions=subscriptions, bus=ctx.bus)
        self.thread = ImapServerThread(self.server).start()
        self._exits.callback(self.thread.stop)

    def _cassandra(self):
        from bench.scratch import scratch_backends, stack_endpoints
        from mailserver.blob.cache import CachedBlobStore
        from mailserver.blob.config import BlobStoreConfig
        from mailserver.domains.cassandra import CassandraDomainList
        from mailserver.mailbox.subscriptions import CassandraSubscriptionStore
        from mailserver.mailbox.wiring import cassandra_context
        from mailserver.users.cassandra import CassandraUsersRepository

        session, s3 = self._exits.enter_context(scratch_backends(stack_endpoints()))
        # The small blobs cached in process as the roles cache them by default (a message's blobs are
        # read back by the fast-view listener right after the append, and by FETCH).
        defaults = BlobStoreConfig()
        blobs = CachedBlobStore(s3, max_bytes=defaults.cache_bytes, max_blob_bytes=defaults.cache_max_blob_bytes)
        domains = CassandraDomainList(session)
        domains.add(self.domain)
        from mailserver.events.in_process import InProcessEventBus
        from mailserver.runtime.settings import ServeSettings

        # The quota limits cached as the roles cache them by default (each APPEND reads them twice).
        cache = ServeSettings.__dataclass_fields__["quota_limits_cache_seconds"].default
        return (cassandra_context(session, blobs, InProcessEventBus(sees_every_writer=True),
                                  quota_limits_cache_seconds=cache),
                CassandraUsersRepository(session, domains),
                CassandraSubscriptionStore(session))

    def _memory(self):
        from mailserver.blob.memory import MemoryBlobStore
        from mailserver.domains.memory import MemoryDomainList
        from mailserver.events.in_process import InProcessEventBus
        from mailserver.mailbox.wiring import memory_context
        from mailserver.users.memory import MemoryUsersRepository

        return (memory_context(MemoryBlobStore(), InProcessEventBus(sees_every_writer=True)),
                MemoryUsersRepository(MemoryDomainList([self.domain])), None)

    def close(self) -> None:
        self._exits.close()


def run_load(world: World, connections: int, duration: float, size: int, processes: int) -> dict:
    users = world.users[:connections]
    groups = [users[p::processes] for p in range(processes) if users[p::processes]]
    start = time.time() + 5 + connections * 0.15   # connect and log in first (PBKDF2 at each login)
    end = start + duration
    cpu0, load0 = time.process_time(), os.getloadavg()[0]
    context = multiprocessing.get_context("spawn")
    with context.Pool(len(groups)) as pool:
        results = pool.starmap(_client_process, [(world.thread.port, g, size, start, end) for g in groups])
    late = time.time() - end
    samples = [s for r in results for s in r[0]]
    errors = [e for r in results for e in r[1]]
    return {"connections": connections, "duration": duration, "samples": samples, "errors": errors,
            "server_cpu": time.process_time() - cpu0, "load": (load0, os.getloadavg()[0]), "late": late}


class ThreadProfiles:
    """One cProfile per thread started from now on (the server's loop and its pool), summed at the end.

    Timed by each thread's CPU clock, not the wall clock: waits (locks, sockets, the pool's queue) cost
    nothing, so the profile shows where the CPU goes even on a loaded machine."""

    def __init__(self) -> None:
        import cProfile

        self.profiles: list = []

        def start(*_: object) -> None:
            profile = cProfile.Profile(time.thread_time)
            self.profiles.append(profile)
            profile.enable()   # replaces this hook in the thread

        threading.setprofile(start)

    def write(self, path: Path) -> None:
        import io
        import pstats

        threading.setprofile(None)   # type: ignore[arg-type]
        out = io.StringIO()
        stats = pstats.Stats(*self.profiles, stream=out)
        stats.sort_stats("cumulative").print_stats(60)
        stats.sort_stats("tottime").print_stats(40)
        path.write_text(out.getvalue())


# ---------------------------------------------------------------------------- report
def table(run: dict) -> list[str]:
    by_command: dict[str, list[float]] = defaultdict(list)
    failed: dict[str, int] = defaultdict(int)
    for name, seconds, ok in run["samples"]:
        by_command[name].append(seconds)
        if not ok:
            failed[name] += 1
    lines = []
    total = 0
    for name in COMMANDS:
        values = by_command.get(name, [])
        total += len(values)
        if values:
            lines.append(f"| {run['connections']} | {name} | {len(values) / run['duration']:.1f} | "
                         f"{percentile(values, 50) * 1000:.0f} | {percentile(values, 99) * 1000:.0f} | "
                         f"{failed.get(name, 0)} |")
        else:
            lines.append(f"| {run['connections']} | {name} | 0 | - | - | {failed.get(name, 0)} |")
    everything = [s for _, s, _ in run["samples"]]
    if everything:
        lines.append(f"| {run['connections']} | **all** | **{total / run['duration']:.1f}** | "
                     f"{percentile(everything, 50) * 1000:.0f} | {percentile(everything, 99) * 1000:.0f} | "
                     f"{sum(failed.values())} |")
    return lines


def section(args: argparse.Namespace, worlds: dict[str, tuple[World, list[dict]]], started: datetime,
            speed: str) -> list[str]:
    lines = [
        f"### IMAP commands ({started:%Y-%m-%d %H:%M} UTC, {platform.node() or 'host'}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()})",
        "",
        f"Host: {speed} (before the run).",
        "",
        f"`bench/imap.py -c {args.connections} --duration {args.duration:g} --seed {args.seed} --size {args.size} "
        f"--backends {args.backends} --client-processes {args.client_processes}`: an in-process IMAP server "
        f"({args.io_threads} mailbox-manager threads), one user and INBOX per connection, "
        "imaplib clients in "
        f"{args.client_processes} processes on the same machine, each connection repeating SELECT, FETCH of "
        "the last 10 (UID FLAGS ENVELOPE), UID FETCH of one random message (BODY.PEEK[]), SEARCH UNSEEN, "
        f"APPEND ({args.size} bytes), UID STORE +FLAGS (\\Flagged) of the appended message, without pauses. "
        "Latency as the client sees it (ms, nearest-rank).",
        "",
    ]
    for backend, (world, runs) in worlds.items():
        label = ("Cassandra 5 + S3Proxy (local single node, same machine)" if backend == "cassandra"
                 else "memory mailbox layer (no storage cost: the protocol layer alone)")
        lines += [f"**{label}**; {len(world.users)} users seeded with {args.seed} messages each in "
                  f"{world.seed_seconds:.0f} s.", "",
                  "| connections | command | commands/s | p50 ms | p99 ms | failed |", "|---|---|---|---|---|---|"]
        for run in runs:
            lines += table(run)
        lines.append("")
        for run in runs:
            lines += cost_lines(run, f"{run['connections']} connections", "commands", "command",
                                server="IMAP, mailbox manager, drivers")
        lines.append("")
    return lines


def main() -> int:
    parser = load_parser(__doc__, "connections", duration=40)
    parser.add_argument("--seed", type=int, default=10, help="messages in each INBOX before the loads")
    parser.add_argument("--size", type=int, default=4096, help="bytes per message (seeded and appended)")
    parser.add_argument("--backends", default="cassandra", help="cassandra, memory or both (comma-separated)")
    parser.add_argument("--io-threads", type=int, default=ImapConfig.io_threads,
                        help="the server's pool for blocking mailbox calls (default: the imap role's)")
    parser.add_argument("--default-gc", action="store_true", help="leave CPython's collector as it starts, "
                        "without what `mailserver serve` does once started (mailserver.runtime.heap)")
    parser.add_argument("--profile", metavar="FILE", help="cProfile every server thread, top functions to FILE "
                        "(slows the server down: not a run to quote figures from)")
    args = parser.parse_args()
    profiles = ThreadProfiles() if args.profile else None
    loads = [int(c) for c in args.connections.split(",")]
    speed = host_speed()   # on the machine as it is before the seeding and the loads
    started = datetime.now(UTC)
    worlds: dict[str, tuple[World, list[dict]]] = {}
    for backend in args.backends.split(","):
        if backend not in ("cassandra", "memory"):
            parser.error(f"unknown backend {backend!r}")
        print(f"{backend}: seeding {max(loads)} users x {args.seed} messages ...", file=sys.stderr, flush=True)
        world = World(backend, max(loads), args.seed, args.size, args.io_threads)
        if not args.default_gc:
            settle_heap()   # as `mailserver serve` does once its roles run
        runs = []
        try:
            for connections in loads:
                print(f"{backend}: {connections} connections for {args.duration:g} s ...", file=sys.stderr,
                      flush=True)
                runs.append(run_load(world, connections, args.duration, args.size, args.client_processes))
        finally:
            world.close()
        worlds[backend] = (world, runs)
    if profiles is not None:
        profiles.write(Path(args.profile))
    lines = section(args, worlds, started, speed)
    print("\n".join(lines))
    if args.record:
        with (REPO / "docs" / "benchmarks.md").open("a") as out:
            out.write("\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
