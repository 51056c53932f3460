"""``/servers/channels`` and ``/servers/connectedUsers``, after James's ``ProtocolServerRoutesChannelsTest``:
the routes over fixed descriptions, then over a live IMAP and SMTP server of this process."""

from __future__ import annotations

import datetime as dt
import imaplib
import smtplib
from dataclasses import replace

import pytest

from mailserver.blob.memory import MemoryBlobStore
from mailserver.domains.memory import MemoryDomainList
from mailserver.imap import ImapConfig, ImapServer, ImapServerThread
from mailserver.mailbox.wiring import memory_context
from mailserver.model.passwords import PasswordHasher
from mailserver.serving.connections import ConnectionDescription, ConnectionRegistry
from mailserver.users.memory import MemoryUsersRepository
from tests.support.events import eventually
from tests.unit.smtp.smtp_helpers import make_server
from tests.unit.webadmin.webadmin_support import error, make_context

WHEN = dt.datetime(2024, 11, 21, 10, 46, 37, 476425, tzinfo=dt.UTC)


def described(protocol: str, user: str | None, written: str) -> ConnectionDescription:
    return ConnectionDescription(protocol, f"{protocol.lower()}server", "127.0.0.1", WHEN, is_active=True,
                                 is_open=True, is_writable=True, is_encrypted=False, username=user,
                                 protocol_specific={"cumulativeWrittenBytes": written})


class FixedSource:
    def __init__(self, connections: list[ConnectionDescription]) -> None:
        self.connections = connections
        self.disconnected: list[frozenset[str] | None] = []

    def describe_connections(self) -> list[ConnectionDescription]:
        return list(self.connections)

    def disconnect(self, usernames: frozenset[str] | None) -> None:
        self.disconnected.append(usernames)


@pytest.fixture
def source() -> FixedSource:
    return FixedSource([described("IMAP", "bob@d.tld", "448"), described("SMTP", None, "90"),
                        described("IMAP", "alice@d.tld", "1000"), described("SMTP", "bob@d.tld", "5")])


@pytest.fixture
def ctx(source):
    registry = ConnectionRegistry()
    registry.register(source)
    return make_context(connections=registry)


def test_channels_are_james_s_descriptions(client):
    first = client.get("/servers/channels").json()[0]
    assert first == {"protocol": "IMAP", "endpoint": "imapserver", "remoteAddress": "127.0.0.1",
                     "connectionDate": "2024-11-21T10:46:37.476425Z", "isActive": True, "isOpen": True,
                     "isWritable": True, "isEncrypted": False, "username": "bob@d.tld",
                     "protocolSpecificInformation": {"cumulativeWrittenBytes": "448"}}


def test_connection_dates_are_written_as_java_s_instant(client, source):
    source.connections = [replace(described("IMAP", None, "0"), connection_date=WHEN.replace(microsecond=500000))]
    assert client.get("/servers/channels").json()[0]["connectionDate"] == "2024-11-21T10:46:37.500Z"


def test_channels_are_sorted_then_paged(client):
    numerical = client.get("/servers/channels", params={
        "sortBy": "protocolSpecificInformation.cumulativeWrittenBytes", "sortType": "numerical",
        "sortDirection": "DESC", "limit": "2"}).json()
    assert [c["protocolSpecificInformation"]["cumulativeWrittenBytes"] for c in numerical] == ["1000", "448"]
    alphabetical = client.get("/servers/channels", params={
        "sortBy": "protocolSpecificInformation.cumulativeWrittenBytes"}).json()
    assert [c["protocolSpecificInformation"]["cumulativeWrittenBytes"] for c in alphabetical] == [
        "1000", "448", "5", "90"]
    by_user = client.get("/servers/channels", params={"sortBy": "username", "offset": "1"}).json()
    assert [c["username"] for c in by_user] == ["alice@d.tld", "bob@d.tld", "bob@d.tld"]   # null sorts as ""


def test_channels_of_a_user_and_connected_users(client):
    assert [c["protocol"] for c in client.get("/servers/channels/Bob@d.tld").json()] == ["IMAP", "SMTP"]
    assert client.get("/servers/connectedUsers").json() == ["bob@d.tld", "alice@d.tld"]


@pytest.mark.parametrize("query", ["limit=-1", "offset=x", "sortDirection=up", "sortType=random"])
def test_bad_paging_is_james_s_400(client, query):
    assert error(client.get(f"/servers/channels?{query}"))["type"] == "InvalidArgument"


def test_disconnecting_all_a_list_or_one_user(client, source):
    assert client.delete("/servers/channels").status_code == 204
    assert client.request("DELETE", "/servers/channels", content='["A@d.tld", "b@d.tld"]').status_code == 204
    assert client.delete("/servers/channels/bob@d.tld").status_code == 204
    assert source.disconnected == [None, frozenset({"a@d.tld", "b@d.tld"}), frozenset({"bob@d.tld"})]


@pytest.mark.parametrize("body", ['{"user": "a@d.tld"}', "[1]", "not json", '["a b@d.tld"]'])
def test_a_bad_list_is_400_and_disconnects_nobody(client, source, body):
    assert error(client.request("DELETE", "/servers/channels", content=body))["statusCode"] == 400
    assert source.disconnected == []


def test_live_imap_and_smtp_sessions_are_listed_and_closed():
    users = MemoryUsersRepository(MemoryDomainList(["d.tld"]), hasher=PasswordHasher("PBKDF2-SHA512"))
    users.add_user("alice@d.tld", "secret")
    imap = ImapServerThread(ImapServer(ImapConfig(port=0, auth_require_tls=False),
                                       memory_context(MemoryBlobStore()).manager, users)).start()
    smtp, _ = make_server(users=False)
    registry = ConnectionRegistry()
    registry.register(imap.server)
    registry.register(smtp.server)
    try:
        reader = imaplib.IMAP4("127.0.0.1", imap.port, timeout=10)
        reader.login("alice@d.tld", "secret")
        sender = smtplib.SMTP("127.0.0.1", smtp.port, timeout=10)
        sender.ehlo("client.test")
        seen = {(c.protocol, c.username) for c in registry.describe()}
        assert seen == {("IMAP", "alice@d.tld"), ("SMTP", None)}
        registry.disconnect(frozenset({"alice@d.tld"}))
        with pytest.raises(imaplib.IMAP4.abort):
            reader.noop()
        eventually(lambda: [c.protocol for c in registry.describe()] == ["SMTP"], timeout=5)
        registry.disconnect(None)
        with pytest.raises(smtplib.SMTPServerDisconnected):
            sender.noop()
    finally:
        imap.stop()
        smtp.stop()
