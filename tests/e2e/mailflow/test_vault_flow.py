"""The deleted-messages vault through a whole server (every role, vault enabled) on the real services.

Mail arrives by SMTP, the user expunges it over IMAP, and it is in the vault (CQL + S3); WebAdmin
then restores by subject exactly the matching messages, and exports them: the zip is mailed from
the postmaster through the spool and the mailet pipeline to a local user, whose INBOX receives it.
The server's vault buckets carry a bucket prefix of their own (``deleted-messages-*`` names are
global on the shared S3).
"""

from __future__ import annotations

import email
import email.policy
import imaplib
import io
import smtplib
import time
import uuid
import zipfile
from collections.abc import Iterator

import httpx
import pytest

from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from mailserver.runtime.serve import Server
from mailserver.runtime.settings import ServeSettings
from tests.e2e.mailflow.conftest import eventually
from tests.support.mailserver_process import WEBADMIN_PASSWORD, IsolatedVhost, mailet_container_for_tests, server_env

pytestmark = pytest.mark.integration
PASSWORD = "vault-e2e-pw"


@pytest.fixture(scope="module")
def vault_server(stack, cassandra, cassandra_config, tmp_path_factory) -> Iterator[tuple[Server, dict, str]]:
    tag = uuid.uuid4().hex[:8]
    container = mailet_container_for_tests(tmp_path_factory.mktemp("vault") / "mailetcontainer.yaml")
    with IsolatedVhost(stack, f"e2e-vault-{tag}") as vhost:
        env = server_env(stack, vhost.amqp_url, cassandra_config.keyspace, f"mail-{tag}", container,
                         MAILSERVER_VAULT_ENABLED="true", S3_BUCKET_PREFIX=f"v{tag}-",
                         MAILSERVER_IMAP_AUTH_REQUIRE_TLS="false")
        server = Server(ServeSettings.from_env(env), env).start()
        try:
            domain = f"vault-{tag}.test"
            server.backends.domains.add(domain)
            yield server, env, domain
        finally:
            blobs = server.backends.blobs if server.backends else None
            server.stop()
            if blobs is not None:
                for bucket in blobs.list_buckets():
                    if bucket.value.startswith("deleted-messages-") or bucket == blobs.default_bucket:
                        blobs.delete_bucket(bucket)


def messages_of(server: Server, user: str, mailbox: str = "INBOX") -> list[bytes]:
    manager = server.backends.mailbox.manager
    path = MailboxPath.of(Username.of(user), mailbox)
    if not manager.mailbox_exists(path):
        return []
    return [manager.read_message(m.message_id) for m in manager.get_messages(path)]


def await_task(http: httpx.Client, response: httpx.Response) -> dict:
    assert response.status_code == 201, response.text
    return http.get(f"/tasks/{response.json()['taskId']}/await?timeout=60").json()


def test_expunge_restore_and_export_through_the_server(vault_server, cassandra):
    server, env, domain = vault_server
    bob, auditor = f"bob@{domain}", f"auditor@{domain}"
    for user in (bob, auditor):
        server.backends.users.add_user(Username.of(user), PASSWORD)
    subjects = ["invoice March", "Invoice April", "holiday pictures"]
    with smtplib.SMTP("127.0.0.1", int(env["MAILSERVER_SMTP_PORT"]), timeout=30) as smtp:
        for subject in subjects:
            smtp.sendmail("carol@remote.example", [bob], (
                f"From: carol@remote.example\r\nTo: {bob}\r\nSubject: {subject}\r\n"
                f"Message-ID: <{uuid.uuid4().hex}@remote.example>\r\n\r\nAbout {subject}.\r\n").encode())
    delivered = eventually(lambda: len(messages_of(server, bob)) == 3 and messages_of(server, bob))
    assert delivered, "the three mails were not delivered"
    originals = list(delivered)

    # The user expunges everything over IMAP.
    imap = imaplib.IMAP4("127.0.0.1", int(env["MAILSERVER_IMAP_PORT"]), timeout=60)
    try:
        assert imap.login(bob, PASSWORD)[0] == "OK"
        assert imap.select("INBOX")[0] == "OK"
        assert imap.store("1:*", "+FLAGS", "(\\Deleted)")[0] == "OK"
        assert imap.expunge()[0] == "OK"
    finally:
        imap.logout()
    assert messages_of(server, bob) == []
    rows = cassandra.execute("SELECT messageId, payload FROM deletedMessageMetadata WHERE bucketName = ? "
                             "AND owner = ?", (_month_bucket(), bob))
    assert len(rows) == 3
    blobs = server.backends.blobs
    assert len(list(blobs.list_blobs(_month_bucket()))) >= 3   # the month's bucket, this server's prefix

    with httpx.Client(base_url=f"http://127.0.0.1:{env['MAILSERVER_WEBADMIN_PORT']}",
                      headers={"Password": WEBADMIN_PASSWORD}, timeout=60) as http:
        invoices = {"combinator": "and", "criteria": [
            {"fieldName": "subject", "operator": "containsIgnoreCase", "value": "invoice"}]}
        report = await_task(http, http.post(f"/deletedMessages/users/{bob}?action=restore", json=invoices))
        assert report["status"] == "completed", report
        assert report["additionalInformation"]["successfulRestoreCount"] == 2
        expected = sorted(m for m in originals if b"nvoice" in m)
        assert sorted(messages_of(server, bob, "Restored-Messages")) == expected

        report = await_task(http, http.post(f"/deletedMessages/users/{bob}?action=export&exportTo={auditor}",
                                            json=invoices))
        assert report["status"] == "completed", report
        assert report["additionalInformation"]["totalExportedMessages"] == 2
    exported = eventually(lambda: messages_of(server, auditor), timeout=60)
    assert len(exported) == 1, "the export mail did not reach the auditor's INBOX"
    message = email.message_from_bytes(exported[0], policy=email.policy.default)
    [attachment] = list(message.iter_attachments())
    archive = zipfile.ZipFile(io.BytesIO(attachment.get_content()))
    assert sorted(archive.read(name) for name in archive.namelist()) == expected


def _month_bucket() -> str:
    return time.strftime("deleted-messages-%Y-%m-01", time.gmtime())
