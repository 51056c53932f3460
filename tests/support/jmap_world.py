"""A JMAP application over the memory mailbox layer and users, with mail to read."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi.testclient import TestClient

from mailserver.blob.memory import MemoryBlobStore
from mailserver.domains.memory import MemoryDomainList
from mailserver.identities.repository import IdentityRepository
from mailserver.jmap.account import MailServices, Submission, account_id
from mailserver.jmap.app import JmapContext, create_app
from mailserver.jmap.authentication import AuthenticationConfig, Authenticator
from mailserver.jmap.capabilities import CoreLimits
from mailserver.jmap.changes.logs import ChangeLogs
from mailserver.jmap.uploads import MemoryUploadRepository
from mailserver.mailbox.manager import MailboxManager
from mailserver.mailbox.subscriptions import MemorySubscriptionStore
from mailserver.mailbox.wiring import MailboxContext, memory_context
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from mailserver.model.passwords import PasswordHasher
from mailserver.search.api import SearchIndex
from mailserver.users.api import UsersRepository
from mailserver.users.memory import MemoryUsersRepository
from mailserver.vacation.api import VacationRepository

DOMAIN = "jmap.test"
USER, PASSWORD = f"alice@{DOMAIN}", "s3cret-Passw0rd"
OTHER = f"bob@{DOMAIN}"
USING = ["urn:ietf:params:jmap:core", "urn:ietf:params:jmap:mail"]

MIXED = (b"From: Joe Bloggs <joe@example.com>\r\nTo: alice@jmap.test, Bob <bob@jmap.test>\r\n"
         b"Cc: carol@example.com\r\nSubject: Quarterly =?utf-8?q?r=C3=A9sults?=\r\n"
         b"Message-ID: <q1@example.com>\r\nIn-Reply-To: <q0@example.com>\r\n"
         b"Date: Tue, 03 Nov 2026 10:00:00 +0100\r\nMIME-Version: 1.0\r\n"
         b"Content-Type: multipart/mixed; boundary=outer\r\n\r\n"
         b"--outer\r\nContent-Type: multipart/alternative; boundary=inner\r\n\r\n"
         b"--inner\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nThe figures are in.\r\n"
         b"--inner\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>The figures are <b>in</b>.</p>\r\n"
         b"--inner--\r\n"
         b"--outer\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=q.pdf\r\n"
         b"Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--outer--\r\n")


def plain(subject: str, body: str = "Hello") -> bytes:
    return (f"From: joe@example.com\r\nTo: {USER}\r\nSubject: {subject}\r\n"
            f"Date: Mon, 02 Nov 2026 09:00:00 +0000\r\n\r\n{body}\r\n").encode()


@dataclass
class World:
    mailbox: MailboxContext
    users: MemoryUsersRepository
    subscriptions: MemorySubscriptionStore
    changes: ChangeLogs
    uploads: MemoryUploadRepository

    @property
    def user(self) -> Username:
        return Username.of(USER)

    @property
    def account(self) -> str:
        return account_id(self.user)

    def context(self, limits: CoreLimits | None = None, jwt_public_key: str | None = None,
                submission: Submission | None = None, search: SearchIndex | None = None,
                identities: IdentityRepository | None = None,
                vacations: VacationRepository | None = None) -> JmapContext:
        """Basic and bearer tokens signed by ``signing_key()`` (or verified with ``jwt_public_key``)."""
        services = MailServices(self.mailbox.manager, self.mailbox.fast_view, self.subscriptions,
                                changes=self.changes, uploads=self.uploads, submission=submission,
                                search=search, identities=identities, vacations=vacations)
        key = jwt_public_key or public_pem(signing_key())
        auth = Authenticator(AuthenticationConfig(basic=True, jwt_public_key=key), self.users)
        return JmapContext(auth, services, limits or CoreLimits())

    def deliver(self, raw: bytes, mailbox: str = "INBOX", day: int = 1) -> str:
        path = MailboxPath.of(USER, mailbox)
        result = self.mailbox.manager.append(path, raw, internal_date=datetime(2026, 11, day, 12, tzinfo=UTC))
        return str(result.id.message_id)


@cache
def shared_users() -> MemoryUsersRepository:
    """Hashed once for every test (no test changes users): each hash takes a noticeable time."""
    users = MemoryUsersRepository(MemoryDomainList([DOMAIN]), hasher=PasswordHasher("PBKDF2-SHA512"))
    users.add_user(USER, PASSWORD)
    users.add_user(OTHER, PASSWORD)
    return users


def make_world() -> World:
    blobs = MemoryBlobStore()
    mailbox = memory_context(blobs)
    changes = ChangeLogs().listen(mailbox.bus, mailbox.manager, mailbox.acl)
    world = World(mailbox, shared_users(), MemorySubscriptionStore(), changes, MemoryUploadRepository(blobs))
    for name in ("INBOX", "Sent", "Drafts", "Trash", "Spam", "Archive", "Projects", "Projects.2026"):
        world.mailbox.manager.create_mailbox(MailboxPath.of(USER, name))
    world.subscriptions.subscribe(world.user, "INBOX")
    world.mailbox.manager.create_mailbox(MailboxPath.of(OTHER, "INBOX"))
    return world


def basic(user: str = USER, password: str = PASSWORD) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


@cache
def signing_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def public_pem(key: rsa.RSAPrivateKey) -> str:
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def bearer(user: str = USER, key: rsa.RSAPrivateKey | None = None, **claims: object) -> dict[str, str]:
    """A JWT for ``user``: cheap to check, unlike a password (hashed on every request)."""
    token = jwt.encode({"sub": user, **claims}, key or signing_key(), algorithm="RS256")
    return {"Authorization": f"Bearer {token}"}


def mailbox_id(world: World, name: str) -> str:
    """The JMAP id of the user's mailbox ``name``."""
    return str(world.mailbox.manager.get_mailbox(MailboxPath.of(USER, name)).id)


class JmapClient:
    """The JMAP API of ``world`` in process, as the user with a bearer token."""

    def __init__(self, world: World, limits: CoreLimits | None = None, search: SearchIndex | None = None) -> None:
        self.world = world
        self.client = TestClient(create_app(world.context(limits, search=search)))

    def calls(self, *calls: list[Any]) -> list[list[Any]]:
        response = self.client.post("/jmap", headers=bearer(), json={"using": USING, "methodCalls": list(calls)})
        assert response.status_code == 200, response.text
        return response.json()["methodResponses"]

    def call(self, method: str, **arguments: Any) -> dict[str, Any]:
        """One call in the user's account; its answer, which must not be an error."""
        name, answer, _ = self.calls([method, {"accountId": self.world.account, **arguments}, "c1"])[0]
        assert name == method, answer
        return answer

    def error(self, method: str, **arguments: Any) -> dict[str, Any]:
        """One call as given; the method-level error it must answer."""
        name, answer, _ = self.calls([method, arguments, "c1"])[0]
        assert name == "error", answer
        return answer


class JmapReader:
    """JMAP served in process over any mailbox manager (a test's Cassandra keyspace, say), read as
    ``user`` with a bearer token: what a JMAP client of a server on the same keyspace would see."""

    def __init__(self, manager: MailboxManager, users: UsersRepository, user: Username) -> None:
        self.user = user
        context = JmapContext(Authenticator(AuthenticationConfig(jwt_public_key=public_pem(signing_key())), users),
                              MailServices(manager))
        self.client = TestClient(create_app(context))

    def call(self, method: str, **arguments: Any) -> dict[str, Any]:
        """One call in the user's account; its answer, which must not be an error."""
        response = self.client.post("/jmap", headers=bearer(str(self.user)), json={
            "using": USING, "methodCalls": [[method, {"accountId": account_id(self.user), **arguments}, "c1"]]})
        assert response.status_code == 200, response.text
        name, answer, _ = response.json()["methodResponses"][0]
        assert name == method, answer
        return answer

    def mailboxes(self) -> dict[str, dict[str, Any]]:
        """Mailbox/get: the user's mailboxes by name."""
        return {m["name"]: m for m in self.call("Mailbox/get", ids=None)["list"]}

    def listed(self, mailbox_id: str) -> list[str]:
        """Email/query in one mailbox: the ids of the emails it lists."""
        return self.call("Email/query", filter={"inMailbox": mailbox_id})["ids"]

    def emails(self, *ids: str, properties: tuple[str, ...] = ("mailboxIds", "keywords")) -> dict[str, dict[str, Any]]:
        """Email/get by id (what JMAP reads from the truth, whatever a mailbox lists)."""
        answer = self.call("Email/get", ids=list(ids), properties=list(properties))
        return {e["id"]: e for e in answer["list"]}
