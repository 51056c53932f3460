"""WebAdmin of a live ``mailserver serve`` process over real HTTP: address mappings, mail repositories
(JSON, ``.eml``, delete, clear), every mail-queue route (the browse-start update on the server's real Cassandra
view included), the task list and its filters, and the
Cassandra schema version, with James's bodies and status codes, errors included.

One process for the module (roles ``webadmin,tasks``: no spooler, so mails put in a queue stay
there) on the session keyspace and bucket, in a RabbitMQ virtual host of its own. Queue and
repository mails are seeded through the same adapters the server uses, under names unique to
this module; every effect a route claims is read back (through the routes and the data layer).
"""

from __future__ import annotations

import urllib.parse
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from mailserver.cassandra.versions import LATEST, SchemaVersionDAO
from mailserver.mailets.config import DEFAULT_FILE
from mailserver.model.address import MailAddress
from mailserver.queue.api import MailQueue, RemoveField
from mailserver.queue.content import MimeMessageStore
from mailserver.queue.rabbitmq import DistributedMailQueueFactory
from mailserver.queue.view import slice_start
from mailserver.repository.cassandra import CassandraMailRepositoryStore
from mailserver.tasks.builtin.migration import SchemaVersions
from tests.contract import mail_queue_contract, mail_repository_contract
from tests.support.mailserver_process import WEBADMIN_PASSWORD, IsolatedVhost, WebAdminProcess, server_env
from tests.unit.webadmin.webadmin_support import error

pytestmark = pytest.mark.integration

TASK_WAIT = "60s"


@dataclass
class Live:
    server: WebAdminProcess
    http: httpx.Client
    queues: DistributedMailQueueFactory           # the server's queues, seen from this process
    repositories: CassandraMailRepositoryStore    # the server's repositories, seen from this process
    tag: str
    amqp_url: str                                 # the server's virtual host


@pytest.fixture(scope="module")
def live(stack, cassandra, cassandra_config, s3_blobs, tmp_path_factory) -> Iterator[Live]:
    tag = uuid.uuid4().hex[:8]
    with IsolatedVhost(stack, f"live-routes-{tag}") as vhost:
        env = server_env(stack, vhost.amqp_url, cassandra_config.keyspace, s3_blobs.default_bucket.value, DEFAULT_FILE,
                         MAILSERVER_ROLES="webadmin,tasks", MAILSERVER_NODE_NAME=f"live-routes-{tag}",
                         MAILSERVER_TASKS_POLL_INTERVAL="0.2")
        server = WebAdminProcess(env, tmp_path_factory.mktemp("live-routes") / "mailserver.log").start()
        queues = DistributedMailQueueFactory(vhost.amqp_url, cassandra, s3_blobs,
                                             management_url=stack.rabbitmq_management_url)
        try:
            with httpx.Client(base_url=server.webadmin_url, headers={"Password": WEBADMIN_PASSWORD},
                              timeout=90) as http:
                yield Live(server, http, queues, CassandraMailRepositoryStore(cassandra, MimeMessageStore(s3_blobs)),
                           tag, vhost.amqp_url)
        finally:
            queues.close()
            server.terminate()


def awaited(live: Live, response: httpx.Response) -> dict:
    """The report of the task a route created (201, Location, {"taskId"}), once finished."""
    assert response.status_code == 201, response.text
    task_id = response.json()["taskId"]
    assert response.json() == {"taskId": task_id}
    assert response.headers["location"] == f"/tasks/{task_id}"
    report = live.http.get(f"/tasks/{task_id}/await", params={"timeout": TASK_WAIT})
    assert report.status_code == 200, report.text
    return report.json()


def no_content(response: httpx.Response) -> None:
    assert (response.status_code, response.content) == (204, b""), response.text


# ---------------------------------------------------------------------- /mappings/address
def test_address_mappings(live: Live):
    domain = f"live-{live.tag}.test"
    no_content(live.http.put(f"/domains/{domain}"))
    source, target = f"old-{live.tag}@{domain}", f"new-{live.tag}@{domain}"

    no_content(live.http.post(f"/mappings/address/{source}/targets/{target}"))
    assert live.http.get(f"/mappings/user/{source}").json() == [{"type": "Address", "mapping": target}]
    assert live.http.get("/mappings").json()[source] == [{"type": "Address", "mapping": target}]
    assert live.http.get(f"/mappings/sources/{target}", params={"type": "address"}).json() == [source]

    loop = error(live.http.post(f"/mappings/address/{target}/targets/{source}"))
    assert loop == {"statusCode": 409, "type": "WrongState",
                    "message": "Creation of redirection would lead to a loop, operation not performed",
                    "details": f"{target} -> {source} -> {target}"}
    invalid = error(live.http.post(f"/mappings/address/not-an-address/targets/{target}"))
    assert (invalid["statusCode"], invalid["type"], invalid["message"]) == (
        400, "InvalidArgument", "Invalid arguments supplied in the user request")
    assert invalid["details"].startswith("The source address is not an email address"), invalid
    unmanaged = error(live.http.post(f"/mappings/address/a@unmanaged-{live.tag}.test/targets/{target}"))
    assert (unmanaged["statusCode"], unmanaged["type"]) == (400, "InvalidArgument")
    assert f"unmanaged-{live.tag}.test" in unmanaged["details"], unmanaged
    assert live.http.get(f"/mappings/user/{target}").json() == []   # the refused writes wrote nothing

    no_content(live.http.delete(f"/mappings/address/{source}/targets/{target}"))
    assert live.http.get(f"/mappings/user/{source}").json() == []
    assert source not in live.http.get("/mappings").json()


# ---------------------------------------------------------------------- /mailRepositories
def test_mail_repository_read_as_json_and_eml_delete_one_and_clear(live: Live):
    path = f"var/mail/live-{live.tag}/"
    encoded = urllib.parse.quote(path, safe="")
    repository = live.repositories.select(f"cassandra://{path}")
    names = [f"mail-{live.tag}-{i}" for i in range(3)]
    for name in names:
        repository.store(mail_repository_contract.make_mail(name=name))
    base = f"/mailRepositories/{encoded}"

    assert {"repository": path, "path": encoded} in live.http.get("/mailRepositories").json()
    assert live.http.get(base).json() == {"repository": path, "path": encoded, "size": 3}
    assert sorted(live.http.get(f"{base}/mails").json()) == names
    assert live.http.get(f"{base}/mails", params={"offset": 1, "limit": 1}).json() == [names[1]]

    one = live.http.get(f"{base}/mails/{names[0]}")
    assert one.status_code == 200 and one.headers["content-type"].startswith("application/json")
    assert one.json() == {"name": names[0], "sender": "sender@example.com",
                          "recipients": ["r1@example.com", "r2@other.org"], "error": "boom: mailet failed",
                          "state": "error", "remoteHost": "client.example", "remoteAddr": "192.0.2.7",
                          "lastUpdated": "2026-11-01T12:00:00.000+0000"}
    extra = live.http.get(f"{base}/mails/{names[0]}", params={"additionalFields": "headers,messageSize"}).json()
    assert extra["headers"]["Subject"] == ["stored"]
    assert extra["messageSize"] == len(mail_repository_contract.RAW)

    eml = live.http.get(f"{base}/mails/{names[0]}", headers={"Accept": "message/rfc822"})
    assert eml.status_code == 200 and eml.content == mail_repository_contract.RAW
    assert eml.headers["content-type"].startswith("message/rfc822")
    assert eml.headers["content-length"] == str(len(mail_repository_contract.RAW))

    assert error(live.http.get(f"{base}/mails/nope-{live.tag}")) == {
        "statusCode": 404, "type": "notFound", "message": f"Could not retrieve nope-{live.tag}", "details": None}
    assert live.http.get(f"{base}/mails/nope-{live.tag}", headers={"Accept": "message/rfc822"}).status_code == 404
    assert error(live.http.get(f"{base}/mails/{names[0]}", params={"additionalFields": "nope"})) == {
        "statusCode": 400, "type": "InvalidArgument",
        "message": "The field 'nope' can't be requested in additionalFields parameter", "details": "nope"}
    missing = urllib.parse.quote(f"var/mail/none-{live.tag}/", safe="")
    assert error(live.http.get(f"/mailRepositories/{missing}")) == {
        "statusCode": 404, "type": "notFound",
        "message": f"The repository '{missing}' (decoded value: 'var/mail/none-{live.tag}/') does not exist",
        "details": None}

    no_content(live.http.delete(f"{base}/mails/{names[0]}"))
    assert live.http.get(base).json()["size"] == 2
    assert sorted(live.http.get(f"{base}/mails").json()) == names[1:]
    assert live.http.get(f"{base}/mails/{names[0]}").status_code == 404
    assert repository.retrieve(names[0]) is None

    report = awaited(live, live.http.delete(f"{base}/mails"))
    assert (report["type"], report["status"]) == ("clear-mail-repository", "completed"), report
    info = report["additionalInformation"]
    assert (info["repositoryPath"], info["initialCount"], info["remainingCount"]) == (path, 2, 0)
    assert live.http.get(base).json()["size"] == 0 and live.http.get(f"{base}/mails").json() == []
    assert repository.size() == 0
    assert error(live.http.delete(f"/mailRepositories/{missing}/mails"))["statusCode"] == 404


# ---------------------------------------------------------------------- /mailQueues
@dataclass
class SeededQueue:
    name: str
    queue: MailQueue
    names: dict[str, str]   # recipient's local part -> mail name


@pytest.fixture
def seeded_queue(live: Live) -> SeededQueue:
    """A queue of its own: alice (to x and y), bob (to z), dave (to target) due now; carol (to w) delayed an hour."""
    name = f"live-{live.tag}-{uuid.uuid4().hex[:6]}"
    queue = live.queues.get(name)
    names: dict[str, str] = {}
    for sender, recipient in (("alice", "x"), ("alice", "y"), ("bob", "z"), ("dave", "target"), ("carol", "w")):
        mail = mail_queue_contract.make_mail(sender=MailAddress.of(f"{sender}@d.tld"),
                                             recipients=[MailAddress.of(f"{recipient}@ext.tld")])
        queue.enqueue(mail, delay=timedelta(hours=1) if sender == "carol" else None)
        names[recipient] = mail.name
    return SeededQueue(name, queue, names)


def senders(live: Live, name: str, **params: str) -> list[str]:
    response = live.http.get(f"/mailQueues/{name}/mails", params=params)
    assert response.status_code == 200, response.text
    return [item["sender"] for item in response.json()]


def size(live: Live, name: str) -> int:
    body = live.http.get(f"/mailQueues/{name}").json()
    assert body["name"] == name, body
    return body["size"]


def test_mail_queues_list_size_and_browse(live: Live, seeded_queue: SeededQueue):
    name = seeded_queue.name
    listed = live.http.get("/mailQueues").json()
    assert name in listed and listed == sorted(listed)
    assert live.http.get(f"/mailQueues/{name}").json() == {"name": name, "size": 5}

    items = live.http.get(f"/mailQueues/{name}/mails").json()
    assert [set(item) for item in items] == [{"name", "sender", "recipients", "nextDelivery"}] * 5
    assert items[0] == {"name": seeded_queue.names["x"], "sender": "alice@d.tld", "recipients": ["x@ext.tld"],
                        "nextDelivery": None}
    assert [i["sender"] for i in items] == ["alice@d.tld", "alice@d.tld", "bob@d.tld", "dave@d.tld", "carol@d.tld"]
    assert items[-1]["name"] == seeded_queue.names["w"] and items[-1]["nextDelivery"].endswith("Z")
    assert senders(live, name, delayed="true") == ["carol@d.tld"]
    assert senders(live, name, delayed="false") == ["alice@d.tld", "alice@d.tld", "bob@d.tld", "dave@d.tld"]
    assert senders(live, name, limit="2") == ["alice@d.tld", "alice@d.tld"]

    unknown = f"none-{live.tag}"
    assert error(live.http.get(f"/mailQueues/{unknown}")) == {
        "statusCode": 404, "type": "notFound", "message": f"{unknown} can not be found", "details": None}
    assert error(live.http.get(f"/mailQueues/{unknown}/mails"))["statusCode"] == 404
    assert error(live.http.get(f"/mailQueues/{name}/mails", params={"limit": "0"})) == {
        "statusCode": 400, "type": "InvalidArgument", "message": "limit can not be equal to zero", "details": None}
    assert error(live.http.get(f"/mailQueues/{name}/mails", params={"limit": "x"})) == {
        "statusCode": 400, "type": "InvalidArgument", "message": "Can not parse limit",
        "details": 'For input string: "x"'}


def test_mail_queue_remove_by_sender_recipient_and_name(live: Live, seeded_queue: SeededQueue):
    name = seeded_queue.name
    before = size(live, name)

    report = awaited(live, live.http.delete(f"/mailQueues/{name}/mails", params={"sender": "alice@d.tld"}))
    assert (report["type"], report["status"]) == ("delete-mails-from-mail-queue", "completed"), report
    info = report["additionalInformation"]
    assert {k: info[k] for k in ("mailQueueName", "sender", "name", "recipient", "initialCount", "remainingCount")} \
        == {"mailQueueName": name, "sender": "alice@d.tld", "name": None, "recipient": None,
            "initialCount": before, "remainingCount": before - 2}
    assert "alice@d.tld" not in senders(live, name)
    assert size(live, name) == before - 2

    report = awaited(live, live.http.delete(f"/mailQueues/{name}/mails", params={"recipient": "target@ext.tld"}))
    assert report["additionalInformation"]["recipient"] == "target@ext.tld"
    assert senders(live, name) == ["bob@d.tld", "carol@d.tld"]
    assert size(live, name) == before - 3

    report = awaited(live, live.http.delete(f"/mailQueues/{name}/mails", params={"name": seeded_queue.names["z"]}))
    assert report["additionalInformation"]["name"] == seeded_queue.names["z"]
    assert senders(live, name) == ["carol@d.tld"]
    assert size(live, name) == before - 4
    assert [v.mail.sender for v in seeded_queue.queue.browse()] == [MailAddress.of("carol@d.tld")]

    invalid = error(live.http.delete(f"/mailQueues/{name}/mails", params={"sender": "not an address"}))
    assert (invalid["statusCode"], invalid["type"], invalid["message"]) == (
        400, "InvalidArgument", "'sender' should be a mail address (i.e. sender@james.org)")
    assert isinstance(invalid["details"], str) and invalid["details"], invalid
    both = error(live.http.delete(f"/mailQueues/{name}/mails", params={"sender": "a@d.tld", "name": "x"}))
    assert (both["statusCode"], both["type"]) == (400, "InvalidArgument")
    assert both["message"].startswith("You should provide only one of the query parameters 'sender', 'name', "
                                      "'recipient'"), both
    assert error(live.http.delete(f"/mailQueues/none-{live.tag}/mails", params={"sender": "a@d.tld"})) == {
        "statusCode": 404, "type": "notFound", "message": f"none-{live.tag} can not be found", "details": None}
    assert senders(live, name) == ["carol@d.tld"]   # refused requests removed nothing


def test_mail_queue_flush_delayed_then_clear(live: Live, seeded_queue: SeededQueue):
    name = seeded_queue.name
    assert error(live.http.patch(f"/mailQueues/{name}/mails", json={"delayed": False})) == {
        "statusCode": 400, "type": "InvalidArgument",
        "message": "This request requires delayed param to be set to true", "details": None}
    assert error(live.http.patch(f"/mailQueues/{name}/mails?delayed=true", json={"delayed": True})) == {
        "statusCode": 400, "type": "InvalidArgument",
        "message": "This request requires payload to contain delayed attribute set to false", "details": None}
    assert error(live.http.patch(f"/mailQueues/none-{live.tag}/mails?delayed=true", json={"delayed": False}))[
        "statusCode"] == 404
    assert senders(live, name, delayed="true") == ["carol@d.tld"]   # refused flushes flushed nothing

    no_content(live.http.patch(f"/mailQueues/{name}/mails?delayed=true", json={"delayed": False}))
    assert senders(live, name, delayed="true") == []
    items = live.http.get(f"/mailQueues/{name}/mails").json()
    assert [(i["sender"], i["nextDelivery"]) for i in items][-1] == ("carol@d.tld", None)
    assert size(live, name) == 5

    report = awaited(live, live.http.delete(f"/mailQueues/{name}/mails"))
    assert (report["type"], report["status"]) == ("clear-mail-queue", "completed"), report
    info = report["additionalInformation"]
    assert (info["mailQueueName"], info["initialCount"], info["remainingCount"]) == (name, 5, 0)
    assert live.http.get(f"/mailQueues/{name}/mails").json() == []
    assert size(live, name) == 0
    assert list(seeded_queue.queue.browse()) == []


def test_mail_queue_republish(live: Live, seeded_queue: SeededQueue):
    name = seeded_queue.name
    report = awaited(live, live.http.post(f"/mailQueues/{name}",
                                          params={"action": "RepublishNotProcessedMails", "olderThan": "1d"}))
    assert (report["type"], report["status"]) == ("republish-not-processed-mails", "completed"), report
    info = report["additionalInformation"]
    assert (info["mailQueue"], info["nbRequeuedMails"]) == (name, 0)   # nothing enqueued a day ago
    assert info["olderThan"].endswith("Z")
    assert error(live.http.post(f"/mailQueues/{name}", params={"action": "RepublishNotProcessedMails"})) == {
        "statusCode": 400, "type": "InvalidArgument",
        "message": "Invalid arguments supplied in the user request", "details": "'olderThan' is mandatory"}
    assert size(live, name) == 5


def view_ids(cassandra, name: str, time_range_start: datetime) -> dict[str, uuid.UUID]:
    """Mail name -> enqueueId of the view rows of one slice (bucket 0: the server's single bucket)."""
    return {r["name"]: r["enqueueid"] for r in cassandra.execute(
        "SELECT name, enqueueId FROM enqueuedMailsV4 WHERE queueName = ? AND timeRangeStart = ? AND bucketId = 0",
        (name, time_range_start))}


def browse_and_content_start(cassandra, name: str) -> tuple[datetime, datetime]:
    browse = cassandra.one("SELECT browseStart FROM browseStart WHERE queueName = ?", (name,), strong=True)
    content = cassandra.one("SELECT contentStart FROM contentStart WHERE queueName = ?", (name,), strong=True)
    return browse["browsestart"].replace(tzinfo=UTC), content["contentstart"].replace(tzinfo=UTC)


def test_mail_queue_update_browse_start(live: Live, cassandra, s3_blobs):
    """James's updateBrowseStart on the server's Cassandra view: the browse start moves past the slices whose mails
    are all gone (their rows and deleted marks dropped), up to the slice of the oldest live mail and never past it.

    The mails are enqueued hours "ago" by a factory on a clock set back (the server's clock is the real one), with a
    browse-start pace so high that no dequeue or delete here moves the browse start itself.
    """
    now, hour = datetime.now(UTC), timedelta(hours=1)
    clock = [now - 5 * hour]
    past = DistributedMailQueueFactory(live.amqp_url, cassandra, s3_blobs, clock=lambda: clock[0],
                                       update_browse_start_pace=10**9)
    name = f"live-{live.tag}-browse-start"
    slices = {h: slice_start(now - h * hour, hour) for h in (5, 4, 3, 2)}
    try:
        queue = past.get(name)                       # browse start and content start: 5 hours ago
        mails = {}
        for hours_ago in (5, 4, 3, 2):
            clock[0] = now - hours_ago * hour
            mails[hours_ago] = mail_queue_contract.make_mail(sender=MailAddress.of(f"h{hours_ago}@d.tld"),
                                                             recipients=[MailAddress.of("x@ext.tld")])
            queue.enqueue(mails[hours_ago])
        for hours_ago in (5, 4, 2):                  # 3 hours ago: the oldest live mail
            assert queue.remove(RemoveField.NAME, mails[hours_ago].name) == 1
    finally:
        past.close()
    assert browse_and_content_start(cassandra, name) == (slices[5], slices[5])
    gone = {h: view_ids(cassandra, name, slices[h])[mails[h].name] for h in (5, 4, 2)}

    report = awaited(live, live.http.post(f"/mailQueues/{name}", params={"action": "updateBrowseStart"}))
    assert (report["type"], report["status"]) == ("browse-start-update", "completed"), report
    info = report["additionalInformation"]
    assert (set(info), info["mailQueue"]) == ({"type", "mailQueue", "timestamp"}, name)
    assert browse_and_content_start(cassandra, name) == (slices[3], slices[3])
    assert view_ids(cassandra, name, slices[5]) == view_ids(cassandra, name, slices[4]) == {}   # slices dropped
    for hours_ago in (5, 4):                         # and the deleted marks of their rows with them
        assert cassandra.one("SELECT enqueueId FROM deletedMailsV2 WHERE queueName = ? AND enqueueId = ?",
                             (name, gone[hours_ago]), strong=True) is None
    assert cassandra.one("SELECT enqueueId FROM deletedMailsV2 WHERE queueName = ? AND enqueueId = ?",
                         (name, gone[2]), strong=True) is not None   # after the browse start: kept
    assert [m["name"] for m in live.http.get(f"/mailQueues/{name}/mails").json()] == [mails[3].name]

    # The live mail goes, a new one arrives now: the browse start stops a slice window short of now (ADR 0032).
    awaited(live, live.http.delete(f"/mailQueues/{name}/mails", params={"name": mails[3].name}))
    fresh = mail_queue_contract.make_mail(sender=MailAddress.of("now@d.tld"), recipients=[MailAddress.of("x@ext.tld")])
    live.queues.get(name).enqueue(fresh)
    awaited(live, live.http.post(f"/mailQueues/{name}", params={"action": "updateBrowseStart"}))
    browse_start, _ = browse_and_content_start(cassandra, name)
    assert browse_start == slice_start(datetime.now(UTC) - hour, hour) or \
        browse_start == slice_start(now - hour, hour)   # the hour may have turned since ``now``
    assert view_ids(cassandra, name, slices[3]) == view_ids(cassandra, name, slices[2]) == {}
    assert [m["name"] for m in live.http.get(f"/mailQueues/{name}/mails").json()] == [fresh.name]


# ---------------------------------------------------------------------- /tasks
def test_tasks_list_and_status_filter(live: Live):
    name = f"live-{live.tag}-tasks"
    live.queues.get(name)
    first = awaited(live, live.http.delete(f"/mailQueues/{name}/mails"))["taskId"]
    second = awaited(live, live.http.delete(f"/mailQueues/{name}/mails"))["taskId"]
    mine = {first, second}

    def listed(**params: str) -> list[dict]:
        response = live.http.get("/tasks", params=params)
        assert response.status_code == 200, response.text
        return response.json()

    everything = listed()
    ids = [t["taskId"] for t in everything]
    assert mine <= set(ids) and ids.index(second) < ids.index(first)   # newest first
    dates = [t["submitDate"] for t in everything]
    assert dates == sorted(dates, reverse=True)
    report = next(t for t in everything if t["taskId"] == first)
    assert set(report) == {"taskId", "type", "status", "submittedFrom", "executedOn", "cancelledFrom", "submitDate",
                           "startedDate", "completedDate", "additionalInformation"}
    assert (report["submittedFrom"], report["executedOn"], report["cancelledFrom"]) == (
        f"live-routes-{live.tag}", f"live-routes-{live.tag}", None)

    completed = listed(status="completed")
    assert mine <= {t["taskId"] for t in completed} and {t["status"] for t in completed} == {"completed"}
    assert {t["taskId"] for t in listed(status="COMPLETED")} == {t["taskId"] for t in completed}
    failed = listed(status="failed")
    assert not mine & {t["taskId"] for t in failed} and {t["status"] for t in failed} <= {"failed"}
    assert not mine & {t["taskId"] for t in listed(status="inProgress")}
    typed = listed(status="completed", type="clear-mail-queue")
    assert mine <= {t["taskId"] for t in typed} and {t["type"] for t in typed} == {"clear-mail-queue"}
    assert [t["taskId"] for t in listed(limit="1", offset=str(ids.index(second)))] == [second]

    assert error(live.http.get("/tasks", params={"status": "bogus"})) == {
        "statusCode": 400, "type": "InvalidArgument", "message": "Invalid status query parameter",
        "details": "Unknown status value 'bogus'"}
    unknown = uuid.uuid4()
    assert error(live.http.get(f"/tasks/{unknown}")) == {
        "statusCode": 404, "type": "notFound", "message": f"{unknown} can not be found", "details": None}
    assert error(live.http.get(f"/tasks/{unknown}/await", params={"timeout": "1s"})) == {
        "statusCode": 404, "type": "ServerError", "message": "The taskId is not found", "details": None}
    assert error(live.http.get("/tasks/not-a-uuid")) == {
        "statusCode": 400, "type": "InvalidArgument", "message": "Invalid task id",
        "details": "Invalid UUID string: not-a-uuid"}


# ---------------------------------------------------------------------- /cassandra/version
def test_cassandra_version(live: Live, cassandra):
    versions = SchemaVersions(cassandra)
    before = live.http.get("/cassandra/version")
    assert before.status_code == 200 and before.json() == {"version": versions.current()}   # null when none stored
    # The session keyspace was created whole at the latest schema: the version a fresh keyspace records.
    SchemaVersionDAO(cassandra).update_version(LATEST)
    assert live.http.get("/cassandra/version").json() == {"version": LATEST}
    assert live.http.get("/cassandra/version/latest").json() == {"version": versions.latest}

    assert error(live.http.post("/cassandra/version/upgrade", content=b"abc")) == {
        "statusCode": 400, "type": "InvalidArgument", "message": "Invalid arguments supplied in the user request",
        "details": "Expecting version to be specified as an integer"}
    assert error(live.http.post("/cassandra/version/upgrade", content=b"0")) == {
        "statusCode": 400, "type": "InvalidArgument", "message": "Invalid arguments supplied in the user request",
        "details": "Version should be strictly positive"}
    assert live.http.get("/cassandra/version").json() == {"version": LATEST}   # refused upgrades changed nothing
