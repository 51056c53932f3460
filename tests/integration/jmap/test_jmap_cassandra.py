"""The jmap role on the mailbox layer of Cassandra (James's tables) and S3: the same client steps
as on memory, then the ``\\Seen`` set through JMAP read back in James's counters with CQL, and a
missing fast-view row rebuilt by ``Email/get``."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from mailserver.domains.cassandra import CassandraDomainList
from mailserver.events.in_process import InProcessEventBus
from mailserver.jmap.account import MailServices
from mailserver.jmap.authentication import AuthenticationConfig
from mailserver.jmap.changes.logs import ChangeLogs
from mailserver.jmap.config import JmapConfig
from mailserver.mailbox.subscriptions import CassandraSubscriptionStore
from mailserver.mailbox.wiring import MailboxContext, cassandra_context
from mailserver.model.flags import SystemFlag
from mailserver.model.mailbox import MailboxPath
from mailserver.runtime.roles import JmapRole
from mailserver.users.cassandra import CassandraUsersRepository
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
