"""Every number WebAdmin takes is bounded as James's Java type bounds it: past the bound, or thousands of
digits long, it is a 400 in James's error body that names the field, and nothing is written or started."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from mailserver.model.quota import LimitKey, QuotaLimits
from mailserver.webadmin.app import create_app
from tests.unit.webadmin.event_bus_support import event_bus_context, group
from tests.unit.webadmin.mailbox_webadmin_support import MailboxAdmin, add_user, mailbox_admin
from tests.unit.webadmin.task_support import task_context
from tests.unit.webadmin.webadmin_support import FULL, error

JAVA_INT_MAX, JAVA_LONG_MAX = 2**31 - 1, 2**63 - 1
HUGE = "9" * 5000          # past Python's 4,300-digit int conversion limit
OVER_INT = str(JAVA_INT_MAX + 1)
OVER_LONG = str(JAVA_LONG_MAX + 1)
ERROR_REPOSITORY = "var%2Fmail%2Ferror%2F"


def refused(response, *names: str) -> dict:
    """The 400 in James's shape, naming one of ``names`` in its message or details."""
    body = error(response)
    assert (body["statusCode"], body["type"]) == (400, "InvalidArgument"), body
    text = f"{body['message']} {body['details']}"
    assert any(name in text for name in names), body
    assert "4300" not in text and "Exceeds the limit" not in text, body
    return body


@pytest.fixture(scope="module")
def tasks_client() -> Iterator[TestClient]:
    """Queues, repositories, tasks and schema versions (no Airflow: procedures validate, then 503)."""
    with task_context() as ctx:
        ctx.queues.get("spool")
        ctx.repositories.select("cassandra://var/mail/error/")
        client = TestClient(create_app(ctx), headers={"Password": FULL}, raise_server_exceptions=False)
        client.ctx = ctx
        yield client


@pytest.fixture(scope="module")
def quotas() -> Iterator[MailboxAdmin]:
    with mailbox_admin() as admin:
        admin.ctx.domains.add("bounds.test")
        add_user(admin.ctx.users, "bob@bounds.test")
        yield admin


# ---------------------------------------------------------------------------------------------- quotas
@pytest.mark.parametrize("path", ["/quota/count", "/quota/size", "/quota/users/bob@bounds.test/count",
                                  "/quota/domains/bounds.test/size"])
@pytest.mark.parametrize("value", [HUGE, OVER_LONG])
def test_a_bare_quota_past_a_java_long_is_400_naming_the_limit(quotas, path, value):
    body = refused(quotas.client.put(path, content=value), path.rsplit("/", 1)[1])
    assert body["message"] == "Invalid quota. Need to be an integer value greater or equal to -1"
    assert str(JAVA_LONG_MAX) in body["details"]
    assert quotas.mailbox.quota.defined_limits(LimitKey.global_()) == QuotaLimits()


@pytest.mark.parametrize("field", ["count", "size"])
@pytest.mark.parametrize("value", [HUGE, OVER_LONG])
def test_a_json_quota_past_a_java_long_is_400_naming_the_field(quotas, field, value):
    body = refused(quotas.client.put("/quota", content=f'{{"{field}": {value}}}'), f"'{field}'")
    assert body["message"] == "JSON payload of the request is not valid"
    assert quotas.mailbox.quota.defined_limits(LimitKey.global_()) == QuotaLimits()


def test_the_largest_java_long_is_a_valid_quota(quotas):
    assert quotas.client.put("/quota/count", content=str(JAVA_LONG_MAX)).status_code == 204
    assert quotas.client.get("/quota/count").json() == JAVA_LONG_MAX
    assert quotas.client.delete("/quota/count").status_code == 204


@pytest.mark.parametrize("name", ["limit", "offset"])
@pytest.mark.parametrize("value", [HUGE, OVER_INT])
def test_quota_search_paging_past_a_java_int_is_400(quotas, name, value):
    refused(quotas.client.get("/quota/users", params={name: value}), name)


# ---------------------------------------------------------------------------------------------- query parameters
@pytest.mark.parametrize("path", [
    "/tasks?limit={}", "/tasks?offset={}",
    f"/mailRepositories/{ERROR_REPOSITORY}/mails?limit={{}}", f"/mailRepositories/{ERROR_REPOSITORY}/mails?offset={{}}",
    "/mailQueues/spool/mails?limit={}",
])
@pytest.mark.parametrize("value", [HUGE, OVER_INT])
def test_paging_past_a_java_int_is_400_naming_the_parameter(tasks_client, path, value):
    name = path.rsplit("?", 1)[1].split("=")[0]
    body = refused(tasks_client.get(path.format(value)), name)
    assert body["message"] == f"Can not parse {name}"


@pytest.mark.parametrize(("method", "path", "name"), [
    ("GET", "/tasks/0f6c7ab4-3cbb-4a3e-8a2e-1d6f0c7d2a11/await?timeout={}", "timeout"),
    ("DELETE", "/tasks?olderThan={}", "olderThan"),
    ("GET", f"/mailRepositories/{ERROR_REPOSITORY}/mails?updatedBefore={{}}", "updatedBefore"),
    ("POST", "/mailQueues/spool?action=RepublishNotProcessedMails&olderThan={}", "olderThan"),
])
def test_a_duration_of_thousands_of_digits_is_400_naming_the_parameter(tasks_client, method, path, name):
    body = refused(tasks_client.request(method, path.format(HUGE + "d")), name)
    assert "too large" in body["details"].lower()


SAFE = {"I-KNOW-WHAT-I-M-DOING": "ALL-SERVICES-ARE-OFFLINE"}


@pytest.mark.parametrize(("path", "name", "maximum"), [
    ("/messages?task=SolveInconsistencies&messagesPerSecond={}", "messagesPerSecond", JAVA_INT_MAX),
    ("/mailboxes?task=reIndex&messagesPerSecond={}", "messagesPerSecond", JAVA_INT_MAX),
    ("/mailboxes?task=SolveInconsistencies&maxIterations={}", "maxIterations", JAVA_INT_MAX),
    ("/quota/users?task=RecomputeCurrentQuotas&usersPerSecond={}", "usersPerSecond", JAVA_INT_MAX),
    ("/mailboxes/0f6c7ab4-3cbb-4a3e-8a2e-1d6f0c7d2a11/mails/{}?task=reIndex", "uid", JAVA_LONG_MAX),
])
@pytest.mark.parametrize("value", ["1" + "0" * 23, HUGE])
def test_procedure_parameters_past_their_java_type_are_400_naming_the_parameter(tasks_client, path, name, maximum,
                                                                                value):
    body = refused(tasks_client.post(path.format(value), headers=SAFE), f"'{name}'")
    assert body["details"] == f"'{name}' must be at most {maximum}"
    assert tasks_client.ctx.tasks.list() == []


@pytest.mark.parametrize("value", [HUGE, OVER_INT, "9999999999"])
def test_a_schema_version_past_a_java_int_is_400_naming_the_version(tasks_client, value):
    body = refused(tasks_client.post("/cassandra/version/upgrade", content=value), "'version'")
    assert body["details"].startswith("Expecting version to be specified as an integer")
    assert tasks_client.ctx.tasks.list() == []


def test_a_dead_letter_limit_past_a_java_int_is_400():
    with event_bus_context() as ctx:
        client = TestClient(create_app(ctx), headers={"Password": FULL}, raise_server_exceptions=False)
        for value in (HUGE, OVER_INT):
            refused(client.post(f"/events/deadLetter?action=reDeliver&limit={value}"), "limit")
            refused(client.post(f"/events/deadLetter/groups/{group('A')}?action=reDeliver&limit={value}"), "limit")
