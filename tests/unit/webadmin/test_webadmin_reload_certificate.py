"""``POST /servers?reload-certificate`` (James's ``ProtocolServerRoutes``): the SMTP and IMAP servers of
this node load their key pair again; the next handshake presents the new certificate."""

from __future__ import annotations

import shutil
import ssl
import warnings
from pathlib import Path

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from include.stack.tls import ensure_self_signed
from mailserver.blob.memory import MemoryBlobStore
from mailserver.domains.memory import MemoryDomainList
from mailserver.imap import ImapConfig, ImapServer
from mailserver.mailbox.wiring import memory_context
from mailserver.queue.memory import MemoryMailQueue
from mailserver.serving.connections import ConnectionRegistry
from mailserver.smtp.config import SmtpConfig
from mailserver.smtp.server import SmtpServer
from mailserver.users.memory import MemoryUsersRepository
from mailserver.webadmin.app import create_app
from tests.unit.webadmin.webadmin_support import FULL, error, make_context


def presented(context: ssl.SSLContext) -> bytes:
    """The certificate a server with ``context`` presents, from an in-memory handshake."""
    client_ctx = ssl.create_default_context()
    client_ctx.check_hostname, client_ctx.verify_mode = False, ssl.CERT_NONE
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_ctx.wrap_bio(c_in, c_out)
    server = context.wrap_bio(s_in, s_out, server_side=True)
    done: set[int] = set()
    for _ in range(10):   # a TLS 1.3 handshake takes a few round trips
        for number, side in enumerate((client, server)):
            try:
                side.do_handshake()
                done.add(number)
            except ssl.SSLWantReadError:
                pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if 0 in done:
            break
    der = client.getpeercert(binary_form=True)
    assert der is not None
    return der


def der_of(cert: Path) -> bytes:
    return ssl.PEM_cert_to_DER_cert(cert.read_text())


@pytest.fixture
def node(tmp_path):
    old, new = ensure_self_signed(tmp_path / "old", "old.test"), ensure_self_signed(tmp_path / "new", "new.test")
    live = tmp_path / "live"
    live.mkdir()
    cert, key = live / "cert.pem", live / "key.pem"
    shutil.copy(old.cert, cert)
    shutil.copy(old.key, key)
    domains = MemoryDomainList()
    smtp = SmtpServer(SmtpConfig(port=0, tls_cert=cert, tls_key=key), MemoryMailQueue("spool"), domains, None)
    imap = ImapServer(ImapConfig(port=0, tls_cert=cert, tls_key=key), memory_context(MemoryBlobStore()).manager,
                      MemoryUsersRepository(domains))
    smtp.port, imap.port = 2525, 1143   # as if listening: the servers are not started
    registry = ConnectionRegistry()
    registry.register(smtp)
    registry.register(imap)
    client = TestClient(create_app(make_context(connections=registry)), headers={"Password": FULL},
                        raise_server_exceptions=False)
    shutil.copy(new.cert, cert)   # the operator replaces the files
    shutil.copy(new.key, key)
    return client, smtp, imap, der_of(old.cert), der_of(new.cert)


def test_reload_makes_every_server_present_the_new_certificate(node):
    client, smtp, imap, old, new = node
    assert presented(smtp.tls_context) == old
    assert client.post("/servers?reload-certificate").status_code == 204
    assert presented(smtp.tls_context) == new and presented(imap.tls_context) == new


def test_a_port_reloads_only_its_server(node):
    client, smtp, imap, old, new = node
    assert client.post("/servers?reload-certificate&port=1143").status_code == 204
    assert (presented(smtp.tls_context), presented(imap.tls_context)) == (old, new)


@pytest.mark.parametrize("query, details", [("", "'reload-certificate' query parameter shall be specified"),
                                            ("?reload-certificate&port=abc", "Invalid port: 'abc'"),
                                            ("?reload-certificate&port=70000", "Invalid port: '70000'")])
def test_a_bad_request_is_400(node, query, details):
    client, smtp, _, old, _ = node
    response = client.post(f"/servers{query}")
    assert response.status_code == 400
    assert error(response)["details"] == details
    assert presented(smtp.tls_context) == old


def test_without_a_tls_server_it_is_james_s_400():
    registry = ConnectionRegistry()
    client = TestClient(create_app(make_context(connections=registry)), headers={"Password": FULL})
    response = client.post("/servers?reload-certificate")
    assert response.status_code == 400
    assert error(response) == {"statusCode": 400, "type": "notFound", "details": None,
                               "message": "No servers configured, nothing to reload"}
