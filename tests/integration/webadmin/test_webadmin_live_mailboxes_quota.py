"""A user's mailboxes and quotas through the WebAdmin of a live ``mailserver serve`` process, checked in CQL.

One process (roles ``webadmin,tasks,listeners``) on the session keyspace and bucket, in a RabbitMQ
virtual host of its own: routes create and delete mailboxes (``mailboxPathV3`` rows), set limits
(``quotaLimit`` rows as James writes them), clear a mailbox through a task run by the server's
worker (``messageIdTable`` / ``imapUidTable`` emptied, the current quota brought back to zero by
the server's own listener over RabbitMQ). Messages are appended by this test through the same
tables and bucket, as delivery would.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from mailserver.events.in_process import InProcessEventBus
from mailserver.mailbox.wiring import MailboxContext, cassandra_context
from mailserver.mailets.config import DEFAULT_FILE
from mailserver.model.mailbox import MailboxPath
from tests.support.mailserver_process import WEBADMIN_PASSWORD, IsolatedVhost, WebAdminProcess, server_env
from tests.unit.webadmin.webadmin_support import error

pytestmark = pytest.mark.integration

MESSAGE = b"From: alice@example.test\r\nSubject: live\r\n\r\nhello\r\n"


@dataclass
class Live:
    http: httpx.Client
    mailbox: MailboxContext   # the same keyspace and bucket, seen from this process
    domain: str
    user: str


@pytest.fixture(scope="module")
def live(stack, cassandra, cassandra_config, s3_blobs, tmp_path_factory) -> Iterator[Live]:
    tag = uuid.uuid4().hex[:8]
    with IsolatedVhost(stack, f"live-mailboxes-{tag}") as vhost:
        env = server_env(stack, vhost.amqp_url, cassandra_config.keyspace, s3_blobs.default_bucket.value, DEFAULT_FILE,
                         MAILSERVER_ROLES="webadmin,tasks,listeners", MAILSERVER_NODE_NAME=f"live-mailboxes-{tag}",
                         MAILSERVER_TASKS_POLL_INTERVAL="0.2")
        server = WebAdminProcess(env, tmp_path_factory.mktemp("live-mailboxes") / "mailserver.log").start()
        try:
            with httpx.Client(base_url=server.webadmin_url, headers={"Password": WEBADMIN_PASSWORD},
                              timeout=90) as http:
                domain = f"live-{tag}.test"
                assert http.put(f"/domains/{domain}").status_code == 204
                user = f"carol@{domain}"
                assert http.put(f"/users/{user}", json={"password": "carol-secret"}).status_code == 204
                yield Live(http, cassandra_context(cassandra, s3_blobs, InProcessEventBus()), domain, user)
        finally:
            server.terminate()


def no_content(response: httpx.Response) -> None:
    assert (response.status_code, response.content) == (204, b""), response.text


def path_rows(cassandra, user: str) -> dict[str, str]:
    rows = cassandra.execute("SELECT mailboxName, mailboxId FROM mailboxPathV3 WHERE namespace = '#private' "
                             "AND user = ?", (user,))
    return {r["mailboxname"]: str(r["mailboxid"]) for r in rows}


def limit_rows(cassandra, scope: str, identifier: str) -> dict[str, int | None]:
    rows = cassandra.execute("SELECT quotaComponent, quotaType, quotaLimit FROM quotaLimit "
                             "WHERE quotaScope = ? AND identifier = ?", (scope, identifier))
    assert {r["quotacomponent"] for r in rows} <= {"MAILBOX"}
    return {r["quotatype"]: r["quotalimit"] for r in rows}


def eventually(check, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def test_mailboxes_are_created_listed_counted_cleared_and_deleted(live: Live, cassandra):
    base = f"/users/{live.user}/mailboxes"
    no_content(live.http.put(f"{base}/INBOX"))
    no_content(live.http.put(f"{base}/Archive.2026"))
    rows = path_rows(cassandra, live.user)
    assert set(rows) == {"INBOX", "Archive", "Archive.2026"}
    assert live.http.get(base).json() == [{"mailboxName": name, "mailboxId": rows[name]}
                                          for name in ("Archive", "Archive.2026", "INBOX")]
    invalid = error(live.http.put(f"{base}/bad..name"))
    assert (invalid["statusCode"], invalid["message"]) == (400, "Attempt to create an invalid mailbox")
    assert error(live.http.get(f"{base}/Nope"))["message"] == "Mailbox does not exist"

    inbox = MailboxPath.inbox(live.user)
    for _ in range(3):
        live.mailbox.manager.append(inbox, MESSAGE)
    assert (live.http.get(f"{base}/INBOX/messageCount").text, live.http.get(f"{base}/INBOX/unseenMessageCount").text) \
        == ("3", "3")

    created = live.http.delete(f"{base}/INBOX/messages")
    assert created.status_code == 201, created.text
    report = live.http.get(f"/tasks/{created.json()['taskId']}/await", params={"timeout": "60s"}).json()
    assert (report["type"], report["status"]) == ("ClearMailboxContentTask", "completed")
    info = report["additionalInformation"]
    assert (info["username"], info["mailboxName"], info["messagesSuccessCount"], info["messagesFailCount"]) == (
        live.user, "INBOX", 3, 0)
    inbox_id = uuid.UUID(rows["INBOX"])
    assert cassandra.execute("SELECT uid FROM messageIdTable WHERE mailboxId = ?", (inbox_id,)) == []
    assert live.http.get(f"{base}/INBOX/messageCount").text == "0"

    # The server's current-quota listener (over RabbitMQ) takes the cleared messages off the user's quota.
    def occupation_is_zero() -> None:
        occupation = live.http.get(f"/quota/users/{live.user}").json()["occupation"]
        assert (occupation["count"], occupation["size"]) == (0, 0), occupation
    eventually(occupation_is_zero)

    no_content(live.http.delete(f"{base}/Archive"))
    assert set(path_rows(cassandra, live.user)) == {"INBOX"}
    no_content(live.http.delete(base))
    assert path_rows(cassandra, live.user) == {}


def test_quota_limits_are_james_rows_and_drive_the_details(live: Live, cassandra):
    root = f"#private&{live.user}"
    no_content(live.http.put(f"/quota/users/{live.user}", json={"count": 5, "size": -1}))
    assert limit_rows(cassandra, "user", root) == {"count": 5, "size": -1}
    no_content(live.http.put(f"/quota/domains/{live.domain}/size", content=b"1000"))
    assert limit_rows(cassandra, "domain", live.domain) == {"size": 1000}

    inbox = MailboxPath.inbox(live.user)
    if not live.mailbox.manager.mailbox_exists(inbox):
        live.mailbox.manager.create_mailbox(inbox)
    live.mailbox.manager.append(inbox, MESSAGE)
    detail = live.http.get(f"/quota/users/{live.user}").json()
    assert {k: detail[k] for k in ("domain", "user", "computed")} == {
        "domain": {"count": None, "size": 1000}, "user": {"count": 5, "size": -1},
        "computed": {"count": 5, "size": -1}}
    assert detail["occupation"] == {"count": 1, "size": len(MESSAGE),
                                    "ratio": {"count": 0.2, "size": 0.0, "max": 0.2}}

    no_content(live.http.delete(f"/quota/users/{live.user}/size"))   # the domain's size applies again
    assert limit_rows(cassandra, "user", root) == {"count": 5}
    assert live.http.get(f"/quota/users/{live.user}/size").text == "1000"
    refused = error(live.http.put(f"/quota/users/{live.user}/count", content=b"-2"))
    assert (refused["statusCode"], refused["message"]) == (
        400, "Invalid quota. Need to be an integer value greater or equal to -1")
    assert limit_rows(cassandra, "user", root) == {"count": 5}
    assert error(live.http.get(f"/quota/users/ghost@{live.domain}"))["statusCode"] == 404


def test_global_limits_are_global_rows(live: Live, cassandra):
    saved = live.http.get("/quota").json()
    try:
        no_content(live.http.put("/quota/count", content=b"100000"))
        assert limit_rows(cassandra, "global", "global").get("count") == 100000
        assert live.http.get("/quota").json()["count"] == 100000
        no_content(live.http.delete("/quota/count"))
        assert "count" not in limit_rows(cassandra, "global", "global")
        no_content(live.http.get("/quota/count"))
    finally:
        no_content(live.http.put("/quota", json=saved))
