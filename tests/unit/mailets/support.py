"""Helpers for mailet tests: a mailet context on memory adapters (example.com, alice and bob)."""

from __future__ import annotations

import logging
import textwrap
from dataclasses import dataclass

from mailserver.blob.api import BlobStore
from mailserver.blob.memory import MemoryBlobStore
from mailserver.domains.memory import MemoryDomainList
from mailserver.mailbox.wiring import MailboxContext, memory_context
from mailserver.mailets import config
from mailserver.mailets.api import Mailet, Params
from mailserver.mailets.container import MailetContainer, build
from mailserver.mailets.context import MailetContext
from mailserver.mailets.spooler import MailSpooler
from mailserver.model.address import MailAddress
from mailserver.model.mail import Mail, MailContent, new_mail_name
from mailserver.model.mailbox import MailboxPath
from mailserver.model.passwords import HashedPassword, PasswordHasher
from mailserver.queue.api import SPOOL
from mailserver.queue.content import MimeMessageStore
from mailserver.queue.memory import MemoryMailQueue, MemoryMailQueueFactory
from mailserver.repository.memory import MemoryMailRepositoryStore
from mailserver.rrt.memory import MemoryRecipientRewriteTable
from mailserver.rrt.resolver import RecipientRewriter
from mailserver.users.memory import MemoryUsersRepository

MESSAGE = (b"From: sender@remote.org\r\nTo: alice@example.com\r\nSubject: Hello\r\n"
           b"Message-ID: <m1@remote.org>\r\n\r\nHello Alice.\r\n")


class FastHasher(PasswordHasher):
    """Real hashing costs 0.2 s per user; these tests never verify passwords."""

    def hash(self, password: str, *, username: str) -> HashedPassword:
        return HashedPassword("test", "not-a-hash")


@dataclass
class Env:
    context: MailetContext
    mailbox: MailboxContext
    rrt: MemoryRecipientRewriteTable
    users: MemoryUsersRepository
    domains: MemoryDomainList
    repositories: MemoryMailRepositoryStore
    queues: MemoryMailQueueFactory
    contents: MimeMessageStore

    @property
    def spool(self) -> MemoryMailQueue:
        return self.queues.get(SPOOL)

    def drain(self, name: str = SPOOL) -> list[Mail]:
        """Take (and acknowledge) every mail waiting on a queue."""
        queue = self.queues.get(name)
        out = []
        while (item := queue.dequeue(timeout=0)) is not None:
            out.append(item.mail)
            item.done("SUCCESS")
        return out

    def inbox(self, user: str) -> list[bytes]:
        path = MailboxPath.inbox(user)
        manager = self.mailbox.manager
        if not manager.mailbox_exists(path):
            return []
        return [manager.read_message(m.message_id) for m in manager.get_messages(path)]

    def repository(self, url: str) -> list[Mail]:
        repo = self.repositories.select(url)
        return [m for k in repo.list_keys() if (m := repo.retrieve(k)) is not None]


def memory_env(blobs: BlobStore | None = None, mailbox: MailboxContext | None = None,
               domain: str = "example.com", *, queues_own_content: bool = False) -> Env:
    """Memory adapters everywhere, unless a blob store / mailbox layer is given (integration).

    ``queues_own_content``: queue entries keep blobs of their own and delete them when done, as the
    RabbitMQ queue does (the memory queue otherwise holds mails as they are).
    """
    blobs = blobs or MemoryBlobStore()
    domains = MemoryDomainList([domain])
    users = MemoryUsersRepository(domains, hasher=FastHasher())
    for user in (f"alice@{domain}", f"bob@{domain}"):
        users.add_user(user, "secret")
    rrt = MemoryRecipientRewriteTable(domains)
    mailbox = mailbox or memory_context(blobs)
    repositories = MemoryMailRepositoryStore()
    contents = MimeMessageStore(blobs)
    queues = MemoryMailQueueFactory(contents=contents if queues_own_content else None)
    context = MailetContext(domains=domains, users=users, rewriter=RecipientRewriter(rrt, domains),
                            mailboxes=mailbox.manager, repositories=repositories, queues=queues, contents=contents,
                            postmaster=MailAddress.of(f"postmaster@{domain}"), hostname="mx.example.com",
                            logger=logging.getLogger("tests.mailets"))
    return Env(context, mailbox, rrt, users, domains, repositories, queues, contents)


def make_mail(*recipients: str, sender: str | None = "sender@remote.org", data: bytes = MESSAGE,
              state: str = "root", attributes: dict[str, object] | None = None) -> Mail:
    mail = Mail(name=new_mail_name(), sender=MailAddress.of(sender) if sender else None,
                recipients=[MailAddress.of(r) for r in recipients], content=MailContent.of_bytes(data), state=state)
    for key, value in (attributes or {}).items():
        mail.set_attribute(key, value)
    return mail


def mailet(cls: type[Mailet], env: Env, **params: object) -> Mailet:
    return cls(Params(cls.name, params, cls.PARAMS), env.context)


def container_of(env: Env, yaml_text: str | None = None) -> MailetContainer:
    """The shipped chain (include/mailetcontainer.yaml), or one given as YAML text."""
    spec = config.load() if yaml_text is None else config.parse(textwrap.dedent(yaml_text), "test.yaml")
    return build(spec, env.context)


def run_spool(env: Env, container: MailetContainer, limit: int = 100) -> int:
    """Process the spool until it is empty, as one spooler worker would; returns how many mails."""
    spooler = MailSpooler(container, env.spool, env.repositories.select("memory://var/mail/error/"), threads=0)
    count = 0
    while (item := env.spool.dequeue(timeout=0)) is not None:
        spooler.process(item)
        count += 1
        assert count < limit, "the spool does not empty: a mail loops"
    return count
