"""Helpers for the in-process SMTP tests: a server on a loopback port, a raw client, a certificate."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

from include.stack.tls import ensure_self_signed
from mailserver.domains.memory import MemoryDomainList
from mailserver.model.address import MailAddress
from mailserver.model.mail import Mail
from mailserver.queue.api import MailQueueError
from mailserver.queue.memory import MemoryMailQueue
from mailserver.rrt.memory import MemoryRecipientRewriteTable
from mailserver.rrt.resolver import RecipientRewriter
from mailserver.smtp import SmtpConfig, SmtpServer, SmtpServerThread
from mailserver.users.memory import MemoryUsersRepository

LOCAL = "local.test"
USER, PASSWORD = f"alice@{LOCAL}", "s3cret-Passw0rd"
OTHER_USER = f"bob@{LOCAL}"
POSTMASTER = f"postmaster@{LOCAL}"


class FailingQueue(MemoryMailQueue):
    def __init__(self) -> None:
        super().__init__("spool")
        self.fail = True

    def enqueue(self, mail, delay=None, *, hand_over=False) -> None:
        if self.fail:
            raise MailQueueError("broker unreachable")
        super().enqueue(mail, delay, hand_over=hand_over)


def drain(queue: MemoryMailQueue) -> list[Mail]:
    mails = []
    while (item := queue.dequeue(timeout=0)) is not None:
        mails.append(item.mail)
        item.done("SUCCESS")
    return mails


def self_signed(tmp: Path) -> tuple[Path, Path]:
    """The certificate the stack gives its mail server (localhost), so TLS tests exercise that one."""
    files = ensure_self_signed(tmp, "localhost")
    return files.cert, files.key


def insecure_client_context() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def make_server(queue=None, *, users: bool = True, rrt: MemoryRecipientRewriteTable | None = None,
                **config) -> tuple[SmtpServerThread, MemoryMailQueue]:
    """A server for ``local.test`` (alice and bob); with ``users`` RCPT validation runs on ``rrt``."""
    queue = queue if queue is not None else MemoryMailQueue("spool")
    domains = MemoryDomainList([LOCAL])
    repo = MemoryUsersRepository(domains) if users else None
    if repo is not None:
        repo.add_user(USER, PASSWORD)
        repo.add_user(OTHER_USER, PASSWORD)
    rewriter = RecipientRewriter(rrt if rrt is not None else MemoryRecipientRewriteTable(domains), domains)
    extra = {k: config.pop(k) for k in ("store", "back_pressure", "healthy", "healthy_in_memory", "maintenance",
                                         "maintenance_known") if k in config}
    cfg = SmtpConfig(**{"port": 0, "hostname": "mx.local.test", **config})
    server = SmtpServer(cfg, queue, domains, repo, rewriter=rewriter, postmaster=MailAddress.of(POSTMASTER), **extra)
    thread = SmtpServerThread(server).start()
    return thread, queue


class RawClient:
    """Speaks raw bytes, to send what smtplib would never send."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buffer = b""

    def reply(self) -> str:
        """One complete (possibly multi-line) reply."""
        lines = []
        while True:
            while b"\r\n" not in self.buffer:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError("closed: " + repr(lines))
                self.buffer += chunk
            line, self.buffer = self.buffer.split(b"\r\n", 1)
            text = line.decode()
            lines.append(text)
            if len(text) < 4 or text[3] != "-":
                return "\n".join(lines)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def command(self, line: str) -> str:
        self.send(line.encode() + b"\r\n")
        return self.reply()

    def close(self) -> None:
        self.sock.close()
