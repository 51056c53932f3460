"""SMTP transactions/s of the protocol layer alone: the cost of the intake's per-command work and limits.

    .venv/bin/python bench/smtp_dialogue.py [-c 8] [--transactions 300] [--client-processes 2]

An ``SmtpServer`` runs in this process on the memory adapters (the spool is a memory queue nobody
consumes), so what is measured is aiosmtpd plus this project's handler: address parsing, recipient
validation, connection caps, error counting, enhanced status codes, the DATA reader. ``-c``
connections, spread over ``--client-processes`` client processes (so the clients' Python does not
share the server's GIL), each run ``--transactions`` transactions on one session:

    MAIL FROM:<load@remote.test>
    RCPT TO:<alice@example.com>
    RCPT TO:<bob@example.com>
    DATA, a 2 KiB message, the final dot
    RSET

and then QUIT. Every reply is checked (a refused command stops the bench). It prints one line:
transactions/s over the whole run (first connection to last QUIT). It is meant to be compared A/B
between two commits on the same machine, alternating runs: absolute figures move with the host.
"""

from __future__ import annotations

import argparse
import multiprocessing
import socket
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MESSAGE = (b"From: load@remote.test\r\nTo: alice@example.com\r\nSubject: dialogue bench\r\n\r\n"
           + b"x" * 76 + b"\r\n") * 26


class Dialogue:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buffer = b""

    def reply(self) -> bytes:
        while True:
            while b"\r\n" not in self.buffer:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError("server closed the connection")
                self.buffer += chunk
            line, self.buffer = self.buffer.split(b"\r\n", 1)
            if line[3:4] != b"-":
                return line

    def expect(self, command: bytes | None, code: bytes) -> None:
        if command is not None:
            self.sock.sendall(command)
        line = self.reply()
        if not line.startswith(code):
            raise RuntimeError(f"{command!r} answered {line!r}")


def client(port: int, connections: int, transactions: int) -> None:
    sessions = [Dialogue(port) for _ in range(connections)]
    for s in sessions:
        s.expect(None, b"220")
        s.expect(b"EHLO bench.remote.test\r\n", b"250")
    for _ in range(transactions):
        for s in sessions:
            s.expect(b"MAIL FROM:<load@remote.test>\r\n", b"250")
            s.expect(b"RCPT TO:<alice@example.com>\r\n", b"250")
            s.expect(b"RCPT TO:<bob@example.com>\r\n", b"250")
            s.expect(b"DATA\r\n", b"354")
            s.expect(MESSAGE + b".\r\n", b"250")
            s.expect(b"RSET\r\n", b"250")
    for s in sessions:
        s.expect(b"QUIT\r\n", b"221")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-c", "--connections", type=int, default=8)
    parser.add_argument("--transactions", type=int, default=300, help="per connection")
    parser.add_argument("--client-processes", type=int, default=2)
    args = parser.parse_args()

    from mailserver.smtp import SmtpConfig, SmtpServer, SmtpServerThread
    from tests.unit.mailets.support import memory_env

    env = memory_env()
    server = SmtpServer(SmtpConfig(port=0, hostname="mx.example.com"), env.spool, env.domains, env.users,
                        store=env.contents, rewriter=env.context.rewriter, postmaster=env.context.postmaster)
    with SmtpServerThread(server) as thread:
        per_process = [args.connections // args.client_processes] * args.client_processes
        per_process[0] += args.connections - sum(per_process)
        started = time.perf_counter()
        workers = [multiprocessing.Process(target=client, args=(thread.port, n, args.transactions))
                   for n in per_process if n]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - started
        if any(w.exitcode for w in workers):
            print("a client failed", file=sys.stderr)
            return 1
    done = args.connections * args.transactions
    print(f"{done} transactions in {elapsed:.2f} s: {done / elapsed:.1f} transactions/s "
          f"({args.connections} connections)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
