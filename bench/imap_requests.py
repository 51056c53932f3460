"""Storage requests per IMAP command: CQL statements and S3 requests the server makes for each
command of ``bench/imap.py``'s mix, on Cassandra + S3 of the local stack (scratch keyspace and bucket).

One connection runs the mix ``--iterations`` times after a warm-up iteration; every request the
server process sends (a batch counts once, as it is one request) is attributed to the command in
flight. The figures are exact counts, not timings: what ``docs/benchmarks.md`` quotes per command.

    python bench/imap_requests.py [--iterations 15] [--seed 10]
"""

from __future__ import annotations

import argparse
import imaplib
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.imap import APPENDUID, PASSWORD, World, make_message

COMMANDS = ("SELECT", "FETCH flags+envelope", "UID FETCH body", "SEARCH", "APPEND", "UID STORE +FLAGS")


class Tally:
    """Requests by (command in flight, kind); the command is set by the one client thread."""

    def __init__(self) -> None:
        self.command = "setup"
        self.counts: Counter = Counter()
        self._lock = threading.Lock()

        self.details: Counter = Counter()

    def add(self, kind: str, detail: str) -> None:
        with self._lock:
            self.counts[(self.command, kind)] += 1
            self.details[(self.command, kind, detail)] += 1


def _detail(name: str, args: tuple) -> str:
    """The statement's text (its first words for a batch), or the S3 operation."""
    if name != "execute_async":
        return name.strip("_")
    statement = args[1] if len(args) > 1 else None
    if hasattr(statement, "_statements_and_parameters"):
        return f"BATCH of {len(statement._statements_and_parameters)}"
    text = getattr(statement, "query_string", None) or str(statement)
    return " ".join(text.split()[:4])


@contextmanager
def counting(tally: Tally) -> Iterator[None]:
    """Count every driver request (``Session.execute``/``execute_async``) and every S3 request of
    the blob store (one per PUT, GET, HEAD, DELETE)."""
    from cassandra.cluster import Session

    from mailserver.blob.s3 import S3BlobStore

    patched: list[tuple[type, str, Callable]] = []

    def wrap(owner: type, name: str, kind: str) -> None:
        original = getattr(owner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            tally.add(kind, _detail(name, args))
            return original(*args, **kwargs)
        patched.append((owner, name, original))
        setattr(owner, name, counted)

    # execute() is execute_async().result() in the driver: count the async entry only.
    wrap(Session, "execute_async", "CQL")
    for name in ("_put", "_open", "_exists", "_remove"):
        wrap(S3BlobStore, name, "S3")
    try:
        yield
    finally:
        for owner, name, original in reversed(patched):
            setattr(owner, name, original)


def run(world: World, iterations: int, size: int, tally: Tally) -> None:
    client = imaplib.IMAP4("127.0.0.1", world.thread.port)
    client.login(world.users[0], PASSWORD)
    client.select("INBOX")
    uids = (client.uid("SEARCH", "ALL")[1][0] or b"").split()

    def command(name: str, verb: str, *args: Any) -> tuple[str, list]:
        tally.command = name
        typ, data = getattr(client, verb)(*args)
        tally.command = "between"
        if typ != "OK":
            raise RuntimeError(f"{name}: {typ} {data!r}")
        return typ, data

    for i in range(iterations + 1):
        if i == 1:
            tally.counts.clear()
            tally.details.clear()   # the first iteration warms the caches (prepared statements)
        _, data = command("SELECT", "select", "INBOX")
        exists = int(data[0])
        command("FETCH flags+envelope", "fetch", f"{max(1, exists - 9)}:*", "(UID FLAGS ENVELOPE)")
        command("UID FETCH body", "uid", "FETCH", uids[i % len(uids)].decode(), "(UID BODY.PEEK[])")
        command("SEARCH", "search", None, "UNSEEN")
        _, data = command("APPEND", "append", "INBOX", None, None, make_message(i, size))
        match = APPENDUID.search(data[0])
        assert match is not None
        uids.append(match.group(1))
        command("UID STORE +FLAGS", "uid", "STORE", match.group(1).decode(), "+FLAGS", "(\\Flagged)")
    client.logout()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=15)
    parser.add_argument("--seed", type=int, default=10, help="messages in the INBOX before the run")
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--statements", action="store_true", help="also list the requests of each command")
    args = parser.parse_args()
    world = World("cassandra", users=1, seed=args.seed, size=args.size)
    tally = Tally()
    try:
        with counting(tally):
            run(world, args.iterations, args.size, tally)
    finally:
        world.close()
    print(f"| command | CQL | S3 |   ({args.iterations} iterations, per command)")
    print("|---|---|---|")
    totals = Counter()
    for name in COMMANDS:
        cql, s3 = (tally.counts[(name, kind)] / args.iterations for kind in ("CQL", "S3"))
        totals["CQL"] += cql
        totals["S3"] += s3
        print(f"| {name} | {cql:g} | {s3:g} |")
    print(f"| an iteration | {totals['CQL']:g} | {totals['S3']:g} |")
    if args.statements:
        for (name, kind, detail), n in sorted(tally.details.items()):
            print(f"  {name:22} {kind:3} {n / args.iterations:5g}  {detail}")
    between = {kind: tally.counts[("between", kind)] / args.iterations for kind in ("CQL", "S3")}
    if any(between.values()):
        print(f"outside any command (listeners after the reply): {between}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
