"""``/mailQueues``: list, size, browse, delete / clear tasks, flush, republish, browse-start update; James's errors."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mailserver.model.address import MailAddress
from tests.contract.mail_queue_contract import make_mail
from tests.unit.webadmin.task_support import task_context
from tests.unit.webadmin.webadmin_support import error


@pytest.fixture
def ctx():
    with task_context() as context:
        yield context


@pytest.fixture
def spool(ctx):
    """The spool with two due mails (alice, bob) and one delayed by an hour (carol)."""
    queue = ctx.queues.get("spool")
    for sender, recipient in (("alice@d.tld", "x@ext.tld"), ("bob@d.tld", "y@ext.tld")):
        queue.enqueue(make_mail(sender=MailAddress.of(sender), recipients=[MailAddress.of(recipient)]))
    queue.enqueue(make_mail(sender=MailAddress.of("carol@d.tld"), recipients=[MailAddress.of("z@ext.tld")]),
                  delay=timedelta(hours=1))
    return queue


def await_task(client, response) -> dict:
    assert response.status_code == 201, response.text
    task_id = response.json()["taskId"]
    assert response.headers["location"] == f"/tasks/{task_id}"
    return client.get(f"/tasks/{task_id}/await?timeout=30").json()


def senders(client, query: str = "") -> list[str]:
    return [m["sender"] for m in client.get(f"/mailQueues/spool/mails{query}").json()]


def test_list_and_size(client, ctx, spool):
    ctx.queues.get("outgoing")
    assert client.get("/mailQueues").json() == ["outgoing", "spool"]
    assert client.get("/mailQueues/spool").json() == {"name": "spool", "size": 3}
    body = error(client.get("/mailQueues/unknown"))
    assert (body["statusCode"], body["type"], body["message"]) == (404, "notFound", "unknown can not be found")


def test_browse(client, spool):
    items = client.get("/mailQueues/spool/mails").json()
    assert [set(i) for i in items] == [{"name", "sender", "recipients", "nextDelivery"}] * 3
    assert items[0]["sender"] == "alice@d.tld" and items[0]["recipients"] == ["x@ext.tld"]
    assert items[0]["nextDelivery"] is None and items[2]["nextDelivery"].endswith("Z")
    assert senders(client, "?limit=2") == ["alice@d.tld", "bob@d.tld"]
    assert senders(client, "?delayed=true") == ["carol@d.tld"]
    assert senders(client, "?delayed=false") == ["alice@d.tld", "bob@d.tld"]
    assert senders(client, "?limit=1&delayed=true") == []   # the limit applies before the filter (James)
    assert error(client.get("/mailQueues/spool/mails?limit=0"))["message"] == "limit can not be equal to zero"
    assert error(client.get("/mailQueues/none/mails"))["statusCode"] == 404


def test_delete_by_sender_is_a_task(client, spool):
    report = await_task(client, client.delete("/mailQueues/spool/mails?sender=bob@d.tld"))
    assert report["type"] == "delete-mails-from-mail-queue" and report["status"] == "completed"
    info = report["additionalInformation"]
    assert {k: info[k] for k in ("mailQueueName", "sender", "name", "recipient", "initialCount", "remainingCount")} \
        == {"mailQueueName": "spool", "sender": "bob@d.tld", "name": None, "recipient": None,
            "initialCount": 3, "remainingCount": 2}
    assert senders(client) == ["alice@d.tld", "carol@d.tld"]


def test_delete_by_recipient_and_by_name(client, spool):
    await_task(client, client.delete("/mailQueues/spool/mails?recipient=z@ext.tld"))
    assert senders(client) == ["alice@d.tld", "bob@d.tld"]
    name = client.get("/mailQueues/spool/mails").json()[0]["name"]
    report = await_task(client, client.delete("/mailQueues/spool/mails", params={"name": name}))
    assert report["additionalInformation"]["name"] == name
    assert senders(client) == ["bob@d.tld"]


def test_clear_is_a_task(client, spool):
    report = await_task(client, client.delete("/mailQueues/spool/mails"))
    assert report["type"] == "clear-mail-queue"
    info = report["additionalInformation"]
    assert (info["mailQueueName"], info["initialCount"], info["remainingCount"]) == ("spool", 3, 0)
    assert client.get("/mailQueues/spool").json()["size"] == 0


def test_delete_errors(client, ctx, spool):
    body = error(client.delete("/mailQueues/spool/mails?sender=not an address"))
    assert (body["statusCode"], body["message"]) == (400, "'sender' should be a mail address (i.e. sender@james.org)")
    body = error(client.delete("/mailQueues/spool/mails?recipient=@@"))
    assert body["message"] == "'recipient' should be a mail address (i.e. recipient@james.org)"
    body = error(client.delete("/mailQueues/spool/mails?sender=a@d.tld&name=x"))
    assert body["statusCode"] == 400 and body["message"].startswith("You should provide only one of the query")
    assert error(client.delete("/mailQueues/unknown/mails"))["statusCode"] == 404
    assert ctx.tasks.list() == []   # validation errors create no task


def test_flush_delivers_delayed_mails(client, spool):
    response = client.patch("/mailQueues/spool/mails?delayed=true", json={"delayed": False})
    assert (response.status_code, response.content) == (204, b"")
    assert senders(client, "?delayed=true") == []
    # The documented path works too.
    spool.enqueue(make_mail(), delay=timedelta(hours=1))
    assert client.patch("/mailQueues/spool?delayed=true", json={"delayed": False}).status_code == 204
    assert senders(client, "?delayed=true") == []


@pytest.mark.parametrize(("path", "kwargs", "message"), [
    ("/mailQueues/spool/mails", {"json": {"delayed": False}}, "This request requires delayed param to be set to true"),
    ("/mailQueues/spool/mails?delayed=false", {"json": {"delayed": False}},
     "This request requires delayed param to be set to true"),
    ("/mailQueues/spool/mails?delayed=true", {"json": {"delayed": True}},
     "This request requires payload to contain delayed attribute set to false"),
    ("/mailQueues/spool/mails?delayed=true", {"json": {}},
     "This request requires payload to contain delayed attribute set to false"),
])
def test_flush_errors(client, spool, path, kwargs, message):
    body = error(client.patch(path, **kwargs))
    assert (body["statusCode"], body["type"], body["message"]) == (400, "InvalidArgument", message)
    assert senders(client, "?delayed=true") == ["carol@d.tld"]


def test_flush_invalid_json_and_unknown_queue(client, spool):
    body = error(client.patch("/mailQueues/spool/mails?delayed=true", content=b"{nope"))
    assert body["message"].startswith("Invalid JSON document")
    assert error(client.patch("/mailQueues/spool/mails?delayed=true", content=b""))["statusCode"] == 400
    body = error(client.patch("/mailQueues/unknown/mails?delayed=true", json={"delayed": False}))
    assert body["statusCode"] == 404


def test_republish_is_a_task(client, spool):
    report = await_task(client, client.post("/mailQueues/spool?action=RepublishNotProcessedMails&olderThan=2h"))
    assert report["type"] == "republish-not-processed-mails" and report["status"] == "completed"
    info = report["additionalInformation"]
    assert info["mailQueue"] == "spool" and info["nbRequeuedMails"] == 0 and info["olderThan"].endswith("Z")


@pytest.mark.parametrize(("query", "status", "details"), [
    ("", 400, "'action' query parameter is compulsory. "
              "Supported values are [RepublishNotProcessedMails, updateBrowseStart]"),
    ("action=republish&olderThan=1d", 400,
     "Invalid value supplied for query parameter 'action': republish. Supported values are "
     "[RepublishNotProcessedMails, updateBrowseStart]"),
    ("action=UpdateBrowseStart", 400,   # case-sensitive, as James's TaskFromRequestRegistry
     "Invalid value supplied for query parameter 'action': UpdateBrowseStart. Supported values are "
     "[RepublishNotProcessedMails, updateBrowseStart]"),
    ("action=RepublishNotProcessedMails", 400, "'olderThan' is mandatory"),
    ("action=RepublishNotProcessedMails&olderThan=soon", 400, "The supplied String is not a supported format soon"),
    (f"action=RepublishNotProcessedMails&olderThan={'9' * 30}", 400, f"Duration too large: {'9' * 30}"),
])
def test_republish_errors(client, spool, query, status, details):
    body = error(client.post(f"/mailQueues/spool?{query}"))
    assert (body["statusCode"], body["details"]) == (status, details)


def test_republish_unknown_queue(client, spool):
    body = error(client.post("/mailQueues/nope?action=RepublishNotProcessedMails&olderThan=1d"))
    assert body["statusCode"] == 404


def test_update_browse_start_is_a_task_run_by_the_worker(client, ctx, spool, monkeypatch):
    """The route's task is rebuilt by the worker from its stored parameters and moves that queue's browse start."""
    moved: list[str] = []
    monkeypatch.setattr(spool, "update_browse_start", lambda: moved.append(spool.name))
    report = await_task(client, client.post("/mailQueues/spool?action=updateBrowseStart"))
    assert (report["type"], report["status"]) == ("browse-start-update", "completed"), report
    info = report["additionalInformation"]
    assert set(info) == {"type", "mailQueue", "timestamp"}    # James's BrowseStartUpdateTaskAdditionalInformationDTO
    assert (info["type"], info["mailQueue"]) == ("browse-start-update", "spool") and info["timestamp"].endswith("Z")
    assert moved == ["spool"]


def test_update_browse_start_of_an_unknown_queue_is_refused(client, ctx, spool):
    body = error(client.post("/mailQueues/nope?action=updateBrowseStart"))
    assert (body["statusCode"], body["message"]) == (404, "nope can not be found")
    assert "nope" not in ctx.queues.list_names()    # nothing created for it
