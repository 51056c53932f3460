"""The jmap role on the mailbox layer of Cassandra (James's tables) and S3: the same client steps
as on memory, then the ``\\Seen`` set through JMAP read back in James's counters with CQL, a
missing fast-view row rebuilt by ``Email/get``, ``preview`` / ``hasAttachment`` read without an S3
GET, and an upload stored in James's table and bucket."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from mailserver.blob.api import BlobId, BlobStream, BucketName
from mailserver.blob.s3 import S3BlobStore, S3Config
from mailserver.domains.cassandra import CassandraDomainList
from mailserver.domains.memory import MemoryDomainList
from mailserver.events.in_process import InProcessEventBus
from mailserver.jmap.account import MailServices, account_id
from mailserver.jmap.app import JmapContext, create_app
from mailserver.jmap.authentication import AuthenticationConfig, Authenticator
from mailserver.jmap.changes.logs import ChangeLogs
from mailserver.jmap.config import JmapConfig
from mailserver.jmap.uploads import UPLOAD_BUCKET, CassandraUploadRepository
from mailserver.mailbox.subscriptions import CassandraSubscriptionStore
from mailserver.mailbox.wiring import MailboxContext, cassandra_context
from mailserver.model.address import Username
from mailserver.model.flags import SystemFlag
from mailserver.model.mailbox import MailboxPath
from mailserver.runtime.roles import JmapRole
from mailserver.users.cassandra import CassandraUsersRepository
from mailserver.users.memory import MemoryUsersRepository
from tests.support.jmap_world import MIXED, USING, bearer, public_pem, signing_key
from tests.support.ports import unused_port

pytestmark = pytest.mark.integration


@dataclass
class Served:
    mailbox: MailboxContext
    user: str
    port: int


@pytest.fixture
def served(cassandra, s3_blobs) -> Iterator[Served]:
    mailbox = cassandra_context(cassandra, s3_blobs, InProcessEventBus())
    changes = ChangeLogs.cassandra(cassandra).listen(mailbox.bus, mailbox.manager, mailbox.acl)
    domains = CassandraDomainList(cassandra)
    domain = f"jmap-{uuid.uuid4().hex[:8]}.test"
    domains.add(domain)
    users = CassandraUsersRepository(cassandra, domains)
    user = f"alice@{domain}"
    users.add_user(user, "s3cret-Passw0rd")
    mailbox.manager.create_mailbox(MailboxPath.inbox(user))
    auth = AuthenticationConfig(basic=True, jwt_public_key=public_pem(signing_key()))
    role = JmapRole(JmapConfig(port=unused_port(), auth=auth), users,
                    MailServices(mailbox.manager, mailbox.fast_view, CassandraSubscriptionStore(cassandra), changes))
    role.start()
    try:
        yield Served(mailbox, user, role.port)
    finally:
        role.stop()


def test_read_and_mark_seen_on_cassandra(served, cassandra):
    appended = served.mailbox.manager.append(MailboxPath.inbox(served.user), MIXED)
    email = str(appended.id.message_id)
    served.mailbox.fast_view.delete(appended.id.message_id)   # as if the projection row were lost
    with httpx.Client(base_url=f"http://127.0.0.1:{served.port}", headers=bearer(served.user), timeout=30) as client:
        session = client.get("/jmap/session").json()
        account = session["primaryAccounts"]["urn:ietf:params:jmap:mail"]

        def request(*calls):
            response = client.post(session["apiUrl"], json={"using": USING, "methodCalls": list(calls)})
            assert response.status_code == 200, response.text
            return response.json()["methodResponses"]

        responses = request(
            ["Mailbox/get", {"accountId": account, "ids": None, "properties": ["name", "role", "totalEmails",
                                                                                "unreadEmails"]}, "m"],
            ["Email/query", {"accountId": account, "#filter": {"resultOf": "m", "name": "Mailbox/get",
                                                               "path": "/list/0/filter"}}, "bad"],
            ["Email/query", {"accountId": account}, "q"],
            ["Email/get", {"accountId": account, "properties": ["subject", "preview", "hasAttachment"],
                           "#ids": {"resultOf": "q", "name": "Email/query", "path": "/ids"}}, "g"],
            ["Email/set", {"accountId": account, "update": {email: {"keywords/$seen": True}}}, "s"],
            ["Mailbox/get", {"accountId": account, "ids": None, "properties": ["unreadEmails"]}, "after"])
    inbox = responses[0][1]["list"][0]
    assert (inbox["name"], inbox["role"], inbox["totalEmails"], inbox["unreadEmails"]) == ("INBOX", "inbox", 1, 1)
    assert responses[1][1]["type"] == "invalidResultReference"
    assert responses[2][1]["ids"] == [email]
    assert responses[3][1]["list"] == [{"id": email, "subject": "Quarterly résults", "preview": "The figures are in.",
                                        "hasAttachment": True}]
    assert responses[4][1]["updated"] == {email: None}
    assert responses[5][1]["list"][0]["unreadEmails"] == 0
    mailbox_id = served.mailbox.manager.get_mailbox(MailboxPath.inbox(served.user)).id
    row = cassandra.one("SELECT count, unseen FROM mailboxCounters WHERE mailboxId = ?", (mailbox_id.value,))
    assert (row["count"], row["unseen"] or 0) == (1, 0)
    stored = served.mailbox.manager.get_messages(MailboxPath.inbox(served.user))
    assert [m.flags.has(SystemFlag.SEEN) for m in stored] == [True]
    assert served.mailbox.fast_view.retrieve(appended.id.message_id) == ("The figures are in.", True)


class CountingS3BlobStore(S3BlobStore):
    """The session's S3 store, counting the objects it GETs (every read opens one)."""

    def __init__(self, config: S3Config) -> None:
        super().__init__(config)
        self.gets = 0

    def _open(self, bucket: BucketName, blob_id: BlobId) -> BlobStream:
        self.gets += 1
        return super()._open(bucket, blob_id)


@dataclass
class Direct:
    """The JMAP application in-process (no server thread) over Cassandra and a counting S3 store."""

    mailbox: MailboxContext
    blobs: CountingS3BlobStore
    client: TestClient
    user: str

    def call(self, method: str, **arguments: Any) -> dict[str, Any]:
        response = self.client.post("/jmap", headers=bearer(self.user), json={"using": USING, "methodCalls": [
            [method, {"accountId": account_id(Username.of(self.user)), **arguments}, "c"]]})
        name, answer, _ = response.json()["methodResponses"][0]
        assert name == method, answer
        return answer


@pytest.fixture
def direct(cassandra, s3_blobs) -> Direct:
    blobs = CountingS3BlobStore(s3_blobs.config)
    mailbox = cassandra_context(cassandra, blobs, InProcessEventBus())
    domain = f"jmap-{uuid.uuid4().hex[:8]}.test"
    users = MemoryUsersRepository(MemoryDomainList([domain]))
    user = f"alice@{domain}"
    users.add_user(user, "s3cret-Passw0rd")
    mailbox.manager.create_mailbox(MailboxPath.inbox(user))
    auth = Authenticator(AuthenticationConfig(basic=False, jwt_public_key=public_pem(signing_key())), users)
    services = MailServices(mailbox.manager, mailbox.fast_view, uploads=CassandraUploadRepository(cassandra, blobs))
    return Direct(mailbox, blobs, TestClient(create_app(JmapContext(auth, services))), user)


def test_preview_and_has_attachment_of_50_emails_read_the_projection_not_s3(direct):
    inbox = MailboxPath.inbox(direct.user)
    with ThreadPoolExecutor(8) as appending:   # as concurrent deliveries: a fraction of the time of 50 in a row
        ids = list(appending.map(lambda _: direct.mailbox.manager.append(inbox, MIXED).id.message_id, range(50)))
    direct.blobs.gets = 0
    answer = direct.call("Email/get", ids=[str(i) for i in ids], properties=["preview", "hasAttachment"])
    assert len(answer["list"]) == 50
    assert {(e["preview"], e["hasAttachment"]) for e in answer["list"]} == {("The figures are in.", True)}
    assert direct.blobs.gets == 0
    # A lost projection row costs that message's two blobs (header and body), once: it is rebuilt.
    direct.mailbox.fast_view.delete(ids[7])
    direct.call("Email/get", ids=[str(i) for i in ids], properties=["preview", "hasAttachment"])
    assert direct.blobs.gets == 2
    assert direct.mailbox.fast_view.retrieve(ids[7]) == ("The figures are in.", True)
    direct.call("Email/get", ids=[str(i) for i in ids], properties=["preview", "hasAttachment"])
    assert direct.blobs.gets == 2


def test_upload_is_stored_in_james_table_and_bucket_and_downloads_back(direct, cassandra):
    account = account_id(Username.of(direct.user))
    response = direct.client.post(f"/upload/{account}", content=b"%PDF-1.4\n",
                                  headers={**bearer(direct.user), "Content-Type": "application/pdf"})
    assert response.status_code == 201, response.text
    blob_id = response.json()["blobId"]
    upload = blob_id.removeprefix("uploads-")
    row = cassandra.one("SELECT content_type, size, blob_id, upload_date FROM uploadsV2 WHERE user = ? AND id = ?",
                        (direct.user, uuid.UUID(upload)))
    assert (row["content_type"], row["size"], row["blob_id"]) == ("application/pdf", 9, upload)
    assert row["upload_date"] is not None
    assert direct.blobs.read(UPLOAD_BUCKET, row["blob_id"]) == b"%PDF-1.4\n"
    got = direct.client.get(f"/download/{account}/{blob_id}", params={"name": "q.pdf"}, headers=bearer(direct.user))
    assert (got.status_code, got.content, got.headers["content-type"]) == (200, b"%PDF-1.4\n", "application/pdf")
