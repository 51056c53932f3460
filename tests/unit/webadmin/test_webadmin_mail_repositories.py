"""``/mailRepositories``: encoded paths, browse, one mail (JSON / .eml), delete, clear, reprocess, move."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mailserver.model.address import MailAddress
from mailserver.model.mail import REPROCESSING, MailContent
from tests.contract.mail_repository_contract import make_mail
from tests.unit.webadmin.task_support import task_context
from tests.unit.webadmin.webadmin_support import error

ERROR = "var%2Fmail%2Ferror%2F"
RAW = (b"From: a@example.com\r\nSubject: stuck\r\nX-Many: 1\r\nX-Many: 2\r\n"
       b"Content-Type: multipart/alternative; boundary=b\r\n\r\n"
       b"--b\r\nContent-Type: text/plain\r\n\r\nplain body\r\n"
       b"--b\r\nContent-Type: text/html\r\n\r\n<p>html body</p>\r\n--b--\r\n")


@pytest.fixture
def ctx():
    with task_context() as context:
        context.queues.get("spool")
        yield context


@pytest.fixture
def repository(ctx):
    """``var/mail/error/`` holding mails a, b and c (keys sorted)."""
    repository = ctx.repositories.select("cassandra://var/mail/error/")
    for name in ("a", "b", "c"):
        repository.store(make_mail(name=name, content=MailContent.of_bytes(RAW)))
    return repository


def await_task(client, response) -> dict:
    assert response.status_code == 201, response.text
    assert response.headers["location"] == f"/tasks/{response.json()['taskId']}"
    return client.get(f"/tasks/{response.json()['taskId']}/await?timeout=30").json()


def test_list_create_and_size(client, ctx, repository):
    assert client.get("/mailRepositories").json() == [{"repository": "var/mail/error/", "path": ERROR}]
    assert client.put("/mailRepositories/var%2Fmail%2Fspam%2F?protocol=cassandra").status_code == 204
    assert client.get("/mailRepositories").json() == [{"repository": "var/mail/error/", "path": ERROR},
                                                      {"repository": "var/mail/spam/", "path": "var%2Fmail%2Fspam%2F"}]
    assert client.get(f"/mailRepositories/{ERROR}").json() == {"repository": "var/mail/error/", "path": ERROR,
                                                               "size": 3}
    body = error(client.get("/mailRepositories/var%2Fmail%2Fnone%2F"))
    assert (body["statusCode"], body["type"], body["message"]) == (
        404, "notFound", "The repository 'var%2Fmail%2Fnone%2F' (decoded value: 'var/mail/none/') does not exist")


def test_create_errors(client, ctx):
    body = error(client.put("/mailRepositories/var%2Fmail%2Fx%2F"))
    assert (body["statusCode"], body["message"]) == (400, "'null' is an unsupported protocol")
    body = error(client.put("/mailRepositories/var%2Fmail%2Fx%2F?protocol=BAD PROTOCOL"))
    assert (body["statusCode"], body["message"]) == (400, "'BAD PROTOCOL' is an unsupported protocol")
    assert ctx.repositories.urls() == []


@pytest.mark.parametrize("protocol", ["bogus", "file", "CASSANDRA", "cassandra2"])
def test_an_unknown_protocol_is_refused_naming_the_accepted_ones(client, ctx, protocol):
    body = error(client.put(f"/mailRepositories/var%2Fmail%2Fx%2F?protocol={protocol}"))
    assert (body["statusCode"], body["type"], body["message"]) == (
        400, "InvalidArgument", f"'{protocol}' is an unsupported protocol")
    assert body["details"] == f"No Mail Repository associated with {protocol}; accepted: cassandra, memory"
    assert ctx.repositories.urls() == []


def test_a_path_carrying_a_protocol_is_refused(client, ctx):
    body = error(client.put("/mailRepositories/bogus%3A%2F%2Fvar%2Fmail%2Fx%2F?protocol=cassandra"))
    assert (body["statusCode"], body["type"]) == (400, "InvalidArgument")
    assert "starts with a protocol" in body["details"]
    assert ctx.repositories.urls() == []


def test_the_memory_protocol_is_accepted(client, ctx):
    assert client.put("/mailRepositories/var%2Fmail%2Fx%2F?protocol=memory").status_code == 204
    assert ctx.repositories.urls() == ["memory://var/mail/x/"]


def test_list_keys_with_offset_and_limit(client, repository):
    assert client.get(f"/mailRepositories/{ERROR}/mails").json() == ["a", "b", "c"]
    assert client.get(f"/mailRepositories/{ERROR}/mails?offset=1&limit=1").json() == ["b"]
    assert client.get(f"/mailRepositories/{ERROR}/mails?offset=5").json() == []
    assert error(client.get(f"/mailRepositories/{ERROR}/mails?limit=0"))["message"] == "limit can not be equal to zero"
    assert error(client.get(f"/mailRepositories/{ERROR}/mails?offset=x"))["message"] == "Can not parse offset"
    assert error(client.get("/mailRepositories/var%2Fnone/mails"))["statusCode"] == 404


def test_one_mail_as_json(client, repository):
    body = client.get(f"/mailRepositories/{ERROR}/mails/a").json()
    assert body == {"name": "a", "sender": "sender@example.com", "recipients": ["r1@example.com", "r2@other.org"],
                    "error": "boom: mailet failed", "state": "error", "remoteHost": "client.example",
                    "remoteAddr": "192.0.2.7", "lastUpdated": "2026-11-01T12:00:00.000+0000"}
    full = client.get(f"/mailRepositories/{ERROR}/mails/a",
                      params={"additionalFields": "attributes, headers,textBody,HTMLBODY,messageSize,"
                                                  "perRecipientsHeaders"}).json()
    assert full["attributes"] == {"org.apache.james.SMTPAuthUser": "bob@example.com",
                                  "custom": '{"n": 1, "l": [1, "a"]}'}
    assert full["headers"]["Subject"] == ["stuck"] and full["headers"]["X-Many"] == ["1", "2"]
    assert full["textBody"].strip() == "plain body" and full["htmlBody"].strip() == "<p>html body</p>"
    assert full["messageSize"] == len(RAW)
    assert full["perRecipientsHeaders"] == {"r1@example.com": {"X-Tag": ["v"]}}


def test_one_mail_errors(client, repository):
    body = error(client.get(f"/mailRepositories/{ERROR}/mails/a?additionalFields=nope"))
    assert (body["statusCode"], body["message"]) == (400, "The field 'nope' can't be requested in additionalFields "
                                                          "parameter")
    body = error(client.get(f"/mailRepositories/{ERROR}/mails/zz"))
    assert (body["statusCode"], body["message"]) == (404, "Could not retrieve zz")
    assert error(client.get(f"/mailRepositories/{ERROR}/other"))["statusCode"] == 404


def test_one_mail_as_eml(client, repository):
    response = client.get(f"/mailRepositories/{ERROR}/mails/a", headers={"Accept": "message/rfc822"})
    assert response.status_code == 200 and response.content == RAW
    assert response.headers["content-type"].startswith("message/rfc822")
    assert response.headers["content-length"] == str(len(RAW))
    missing = client.get(f"/mailRepositories/{ERROR}/mails/zz", headers={"Accept": "message/rfc822"})
    assert missing.status_code == 404


def test_delete_one_and_clear(client, repository):
    assert client.delete(f"/mailRepositories/{ERROR}/mails/a").status_code == 204
    assert client.delete(f"/mailRepositories/{ERROR}/mails/a").status_code == 204   # absent: 204 too
    assert repository.size() == 2
    report = await_task(client, client.delete(f"/mailRepositories/{ERROR}/mails"))
    assert report["type"] == "clear-mail-repository" and report["status"] == "completed"
    info = report["additionalInformation"]
    assert (info["repositoryPath"], info["initialCount"], info["remainingCount"]) == ("var/mail/error/", 2, 0)
    assert repository.size() == 0
    assert error(client.delete("/mailRepositories/var%2Fnone/mails"))["statusCode"] == 404
    assert error(client.delete("/mailRepositories/var%2Fnone/mails/a"))["statusCode"] == 404


def test_reprocess_all_into_the_spool(client, ctx, repository):
    report = await_task(client, client.patch(f"/mailRepositories/{ERROR}/mails?action=reprocess"))
    assert report["type"] == "reprocessing-all" and report["status"] == "completed"
    info = report["additionalInformation"]
    assert {k: info[k] for k in ("repositoryPath", "targetQueue", "targetProcessor", "consume", "limit",
                                 "maxRetries", "forRecipient", "initialCount", "remainingCount")} == {
        "repositoryPath": "var/mail/error/", "targetQueue": "spool", "targetProcessor": None, "consume": True,
        "limit": None, "maxRetries": None, "forRecipient": None, "initialCount": 3, "remainingCount": 0}
    queued = [v.mail for v in ctx.queues.get("spool").browse()]
    assert sorted(m.name for m in queued) == ["a", "b", "c"]
    assert all(m.state == "error" and m.attributes[REPROCESSING] is True for m in queued)
    assert repository.size() == 0


def test_reprocess_all_with_limit_and_processor(client, ctx, repository):
    ctx.queues.get("outgoing")
    response = client.patch(f"/mailRepositories/{ERROR}/mails?action=reprocess&limit=2&queue=outgoing"
                            "&processor=transport")
    info = await_task(client, response)["additionalInformation"]
    assert (info["targetQueue"], info["targetProcessor"], info["limit"], info["remainingCount"]) == \
        ("outgoing", "transport", 2, 1)
    assert sorted(v.mail.state for v in ctx.queues.get("outgoing").browse()) == ["transport", "transport"]
    assert list(repository.list_keys()) == ["c"]


def test_reprocess_one(client, ctx, repository):
    response = client.patch(f"/mailRepositories/{ERROR}/mails/b?action=reprocess&processor=transport")
    report = await_task(client, response)
    assert report["type"] == "reprocessing-one" and report["status"] == "completed"
    info = report["additionalInformation"]
    assert {k: info[k] for k in ("repositoryPath", "targetQueue", "targetProcessor", "consume", "forRecipient",
                                 "mailKey")} == {"repositoryPath": "var/mail/error/", "targetQueue": "spool",
                                                 "targetProcessor": "transport", "consume": True,
                                                 "forRecipient": None, "mailKey": "b"}
    assert [(v.mail.name, v.mail.state) for v in ctx.queues.get("spool").browse()] == [("b", "transport")]
    assert list(repository.list_keys()) == ["a", "c"]


@pytest.mark.parametrize(("query", "status", "details"), [
    ("", 400, "'action' query parameter is compulsory. Supported values are [reprocess]"),
    ("action=", 400, "'action' query parameter cannot be empty or blank. Supported values are [reprocess]"),
    ("action=Reprocess", 400, "Invalid value supplied for query parameter 'action': Reprocess. "
                              "Supported values are [reprocess]"),
    ("action=reprocess&queue=nope", 400, "Unknown mail queue 'nope'"),
    ("action=reprocess&consume=false", 400,
     "consume=false (keeping a copy in the repository) is not supported by this server"),
    ("action=reprocess&consume=maybe", 400,
     "Invalid value supplied for 'consume': maybe. Supported values are [true, false]"),
    ("action=reprocess&maxRetries=2", 400, "'maxRetries' is not supported by this server"),
    ("action=reprocess&limit=-1", 400, None),
])
def test_reprocess_errors(client, ctx, repository, query, status, details):
    body = error(client.patch(f"/mailRepositories/{ERROR}/mails?{query}"))
    assert body["statusCode"] == status
    if details is not None:
        assert body["details"] == details
    assert ctx.tasks.list() == [] and repository.size() == 3


def test_reprocess_unknown_repository(client):
    assert error(client.patch("/mailRepositories/var%2Fnone/mails?action=reprocess"))["statusCode"] == 404
    assert error(client.patch("/mailRepositories/var%2Fnone/mails/a?action=reprocess"))["statusCode"] == 404


def test_move_all_and_one(client, ctx, repository):
    response = client.patch(f"/mailRepositories/{ERROR}/mails/a", json={"mailRepository": "var/mail/saved/"})
    assert response.status_code == 204
    saved = ctx.repositories.select("cassandra://var/mail/saved/")
    assert list(saved.list_keys()) == ["a"] and list(repository.list_keys()) == ["b", "c"]
    assert client.patch(f"/mailRepositories/{ERROR}/mails/zz", json={"mailRepository": "var/mail/saved/"}) \
        .status_code == 204
    assert client.patch(f"/mailRepositories/{ERROR}/mails", json={"mailRepository": "var/mail/saved/"}) \
        .status_code == 204
    assert list(saved.list_keys()) == ["a", "b", "c"] and repository.size() == 0
    assert error(client.patch(f"/mailRepositories/{ERROR}/mails", json={"other": 1}))["statusCode"] == 400
    assert error(client.patch(f"/mailRepositories/{ERROR}/mails", content=b"{nope"))["statusCode"] == 400
    body = error(client.patch("/mailRepositories/var%2Fnone/mails", json={"mailRepository": "var/mail/saved/"}))
    assert body["statusCode"] == 404


def test_paths_containing_mails_and_keys_with_slashes(client, ctx):
    tricky = ctx.repositories.select("cassandra://var/mails/x/")
    tricky.store(make_mail(name="k/1", sender=MailAddress.of("a@d.tld")))
    path = "var%2Fmails%2Fx%2F"
    assert client.get(f"/mailRepositories/{path}").json()["size"] == 1
    assert client.get(f"/mailRepositories/{path}/mails").json() == ["k/1"]
    assert client.get(f"/mailRepositories/{path}/mails/k%2F1").json()["sender"] == "a@d.tld"


def test_browse_filters(client, ctx):
    repository = ctx.repositories.select("cassandra://var/mail/error/")
    now = datetime.now(UTC)
    repository.store(make_mail(name="old", sender=MailAddress.of("a@one.tld"), last_updated=now - timedelta(days=10)))
    repository.store(make_mail(name="new", sender=MailAddress.of("b@two.tld"), remote_addr="198.51.100.1",
                               remote_host="mx.two.tld", recipients=[MailAddress.of("bob@d.tld")],
                               last_updated=now - timedelta(hours=1)))

    def keys(**query) -> list[str]:
        return client.get(f"/mailRepositories/{ERROR}/mails", params=query).json()

    assert keys(sender="a@one.tld") == ["old"] and keys(sender="*@TWO.tld") == ["new"]
    assert keys(recipient="bob@d.tld") == ["new"] and keys(recipient="*@other.org") == ["old"]
    assert keys(remoteAddress="198.51.100.1") == ["new"] and keys(remoteHost="client.example") == ["old"]
    assert keys(updatedBefore="2d") == ["old"] and keys(updatedAfter="1d") == ["new"]
    assert keys(updatedAfter="30d", limit="1", offset="1") == ["old"]
    assert keys(sender="*@two.tld", updatedBefore="2d") == []
    body = error(client.get(f"/mailRepositories/{ERROR}/mails", params={"updatedBefore": "later"}))
    assert (body["statusCode"], body["message"]) == (400, "Invalid 'updatedBefore' parameter")
    body = error(client.get(f"/mailRepositories/{ERROR}/mails", params={"updatedAfter": "9" * 30}))
    assert (body["statusCode"], body["message"]) == (400, "Invalid 'updatedAfter' parameter")
