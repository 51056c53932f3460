"""JMAP requests/s and latency: ``Email/query`` + ``Email/get`` of 50 messages per request, at 10 and
100 concurrent sessions, on Cassandra + S3 + OpenSearch.

    .venv/bin/python bench/jmap.py [-c 10,100] [--duration 30] [--record]

A ``JmapServer`` (uvicorn on its own thread, as the ``jmap`` role) runs in this process over the
Cassandra + S3 mailbox layer of the local stack (or CASSANDRA_HOSTS, S3_ENDPOINT, ... when set), in a
throw-away keyspace and bucket, with the OpenSearch indexing listener on its bus writing to a
throw-away index; all three are removed at the end. Users authenticate with a JWT (a password would
be hashed on every request: the bench would measure PBKDF2). Each user's INBOX is seeded with
``--seed`` messages (50: one full page). Sessions share users, at most 4 per user (James's default
``maxConcurrentRequests``): 10 sessions on 10 users, 100 on 25.

Every session repeats, without pauses, the request a mail client makes to show a mailbox:

    Email/query  {inMailbox: INBOX}, sort receivedAt descending, limit 50
    Email/get    #ids of the query; id, threadId, mailboxIds, keywords, from, subject, receivedAt,
                 size, preview

Sessions are ``http.client`` threads with a kept-alive connection in ``--client-processes`` separate
processes (not sharing the server's GIL). A request fails unless it answers 200 with 50 emails.
requests/s = requests completed within the window / window; latency is the client's, nearest-rank.
``--record`` appends the section to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import platform
import subprocess
import sys
import threading
import time
import uuid
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.imap import make_message  # noqa: E402   (the IMAP bench's messages)
from bench.load_report import cost_lines, load_parser, percentile  # noqa: E402

USING = ["urn:ietf:params:jmap:core", "urn:ietf:params:jmap:mail"]
PAGE = 50
SESSIONS_PER_USER = 4   # CoreLimits.max_concurrent_requests, James's default
LIST_PROPERTIES = ["id", "threadId", "mailboxIds", "keywords", "from", "subject", "receivedAt", "size", "preview"]


def users_for(sessions: int) -> int:
    """One user per session up to 10 sessions, then 4 sessions per user (100 sessions: 25 users)."""
    return max(math.ceil(sessions / SESSIONS_PER_USER), min(sessions, 10))


def request_body(account: str, inbox: str) -> bytes:
    return json.dumps({"using": USING, "methodCalls": [
        ["Email/query", {"accountId": account, "filter": {"inMailbox": inbox},
                         "sort": [{"property": "receivedAt", "isAscending": False}], "limit": PAGE}, "q"],
        ["Email/get", {"accountId": account, "properties": LIST_PROPERTIES,
                       "#ids": {"resultOf": "q", "name": "Email/query", "path": "/ids"}}, "g"],
    ]}).encode()


# ---------------------------------------------------------------------------- clients (child processes)
def _session(port: int, token: str, body: bytes, start: float, end: float, out: list) -> None:
    import http.client

    samples: list[tuple[float, bool]] = []
    errors: list[str] = []
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json", "Accept": "application/json"}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    time.sleep(max(0.0, start - time.time()))
    while time.time() < end:
        t0 = time.perf_counter()
        try:
            connection.request("POST", "/jmap", body, headers)
            response = connection.getresponse()
            payload = response.read()
            ok = response.status == 200 and len(json.loads(payload)["methodResponses"][1][1].get("list", [])) == PAGE
            problem = "" if ok else f"{response.status} {payload[:120]!r}"
        except Exception as exc:
            ok, problem = False, repr(exc)
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        elapsed = time.perf_counter() - t0
        if time.time() <= end:
            samples.append((elapsed, ok))
            if problem:
                errors.append(problem)
    connection.close()
    out.append((samples, errors))


def _client_process(port: int, sessions: list[tuple[str, bytes]], start: float, end: float) -> tuple[list, list]:
    out: list = []
    threads = [threading.Thread(target=_session, args=(port, token, body, start, end, out), daemon=True)
               for token, body in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join(end - time.time() + 300)
    if len(out) < len(sessions):
        out.append(([], [f"{len(sessions) - len(out)} session(s) did not finish"]))
    return [s for samples, _ in out for s in samples], [e for _, errors in out for e in errors]


# ---------------------------------------------------------------------------- server side
class World:
    """The stack's backends (scratch keyspace, bucket, index), users with a seeded INBOX, a JMAP server."""

    def __init__(self, users: int, seed: int, size: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        import jwt
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        from bench.scratch import scratch_backends, stack_endpoints
        from mailserver.domains.cassandra import CassandraDomainList
        from mailserver.jmap.account import MailServices, account_id
        from mailserver.jmap.authentication import AuthenticationConfig
        from mailserver.jmap.changes.logs import ChangeLogs
        from mailserver.jmap.config import JmapConfig
        from mailserver.jmap.server import JmapServer
        from mailserver.mailbox.wiring import cassandra_context
        from mailserver.model.address import Username
        from mailserver.model.mailbox import MailboxPath
        from mailserver.users.cassandra import CassandraUsersRepository

        self.domain = "jmap-bench.test"
        self._exits = ExitStack()   # left in reverse order: the server, then the backends
        endpoints = stack_endpoints()
        session, blobs = self._exits.enter_context(scratch_backends(endpoints))
        ctx = cassandra_context(session, blobs)
        self.search = self._opensearch(ctx, endpoints.opensearch_url)
        changes = ChangeLogs.cassandra(session).listen(ctx.bus, ctx.manager, ctx.acl)   # as the jmap role
        domains = CassandraDomainList(session)
        domains.add(self.domain)
        repo = CassandraUsersRepository(session, domains)
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo).decode()
        self.users = [f"user{u}@{self.domain}" for u in range(users)]
        self.sessions: dict[str, tuple[str, bytes]] = {}

        def provision(user: str) -> None:
            repo.add_user(user, "bench-Passw0rd")
            inbox = MailboxPath.inbox(Username.of(user))
            ctx.manager.create_mailbox(inbox)
            for i in range(seed):
                ctx.manager.append(inbox, make_message(i, size))
            token = jwt.encode({"sub": user}, key, algorithm="RS256")
            inbox_id = str(ctx.manager.get_mailbox(inbox).id)
            self.sessions[user] = (token, request_body(account_id(Username.of(user)), inbox_id))

        t0 = time.perf_counter()
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(provision, self.users))
        self.seed_seconds = time.perf_counter() - t0
        services = MailServices(ctx.manager, ctx.fast_view, changes=changes, search=self.search)
        config = JmapConfig(port=0, auth=AuthenticationConfig(basic=False, jwt_public_key=public))
        self.server = JmapServer(config, repo, services)
        self.server.start()
        self._exits.callback(self.server.stop)

    def _opensearch(self, ctx, url: str):
        from mailserver.search.config import SearchConfig
        from mailserver.search.index import alias_indices, make_client
        from mailserver.search.wiring import opensearch_search

        name = f"bench-jmap-{uuid.uuid4().hex[:8]}"
        config = SearchConfig(urls=(url,), index_name=name, read_alias=f"{name}-read", write_alias=f"{name}-write",
                              state_index=f"{name}-state", shards=1, replicas=0)
        index = opensearch_search(ctx, config)
        client = make_client(config)

        def drop() -> None:
            for index_name in {*alias_indices(client, config.read_alias), config.state_index}:
                client.indices.delete(index=index_name, ignore_unavailable=True)

        self._exits.callback(drop)
        return index

    def close(self) -> None:
        self._exits.close()


def run_load(world: World, sessions: int, duration: float, processes: int) -> dict:
    users = world.users[:users_for(sessions)]
    chosen = [world.sessions[users[s % len(users)]] for s in range(sessions)]
    groups = [chosen[p::processes] for p in range(processes) if chosen[p::processes]]
    start = time.time() + 5
    end = start + duration
    cpu0, load0 = time.process_time(), os.getloadavg()[0]
    with multiprocessing.get_context("spawn").Pool(len(groups)) as pool:
        results = pool.starmap(_client_process, [(world.server.port, g, start, end) for g in groups])
    samples = [s for r in results for s in r[0]]
    return {"sessions": sessions, "users": len(users), "duration": duration, "samples": samples,
            "errors": [e for r in results for e in r[1]], "server_cpu": time.process_time() - cpu0,
            "load": (load0, os.getloadavg()[0])}


# ---------------------------------------------------------------------------- report
def commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def section(args: argparse.Namespace, world: World, runs: list[dict], started: datetime) -> list[str]:
    lines = [
        f"### JMAP Email/query + Email/get ({started:%Y-%m-%d %H:%M} UTC, {platform.node() or 'host'}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, commit {commit()})",
        "",
        f"`bench/jmap.py -c {args.sessions} --duration {args.duration:g} --seed {args.seed} --size {args.size} "
        f"--client-processes {args.client_processes}`: an in-process JMAP server (uvicorn) on Cassandra 5 + "
        "S3Proxy + OpenSearch (local single nodes, same machine; scratch keyspace, bucket and index), JWT "
        f"sessions in {args.client_processes} client processes, each repeating one request "
        f"(Email/query of the INBOX by receivedAt, limit {PAGE}, + Email/get of the {PAGE} ids: list "
        f"properties with preview) without pauses; {len(world.users)} users seeded with {args.seed} messages "
        f"of {args.size} bytes in {world.seed_seconds:.0f} s. Latency as the client sees it (ms, nearest-rank).",
        "",
        "| sessions | users | requests/s | emails/s | p50 ms | p99 ms | failed |", "|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        values = [s for s, _ in run["samples"]]
        failed = sum(1 for _, ok in run["samples"] if not ok)
        if values:
            rate = len(values) / run["duration"]
            lines.append(f"| {run['sessions']} | {run['users']} | **{rate:.1f}** | {rate * PAGE:.0f} | "
                         f"{percentile(values, 50) * 1000:.0f} | **{percentile(values, 99) * 1000:.0f}** | "
                         f"{failed} |")
        else:
            lines.append(f"| {run['sessions']} | {run['users']} | 0 | 0 | - | - | {failed} |")
    lines.append("")
    for run in runs:
        lines += cost_lines(run, f"{run['sessions']} sessions", "requests", "request")
    lines.append("")
    return lines


def main() -> int:
    parser = load_parser(__doc__, "sessions", duration=30)
    parser.add_argument("--seed", type=int, default=PAGE, help="messages in each INBOX")
    parser.add_argument("--size", type=int, default=4096, help="bytes per seeded message")
    args = parser.parse_args()
    loads = [int(c) for c in args.sessions.split(",")]
    started = datetime.now(UTC)
    users = max(users_for(load) for load in loads)
    print(f"seeding {users} users x {args.seed} messages ...", file=sys.stderr, flush=True)
    world = World(users, args.seed, args.size)
    runs = []
    try:
        for sessions in loads:
            print(f"{sessions} sessions for {args.duration:g} s ...", file=sys.stderr, flush=True)
            runs.append(run_load(world, sessions, args.duration, args.client_processes))
    finally:
        world.close()
    from bench.scratch import publish

    publish(section(args, world, runs, started), record=args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
