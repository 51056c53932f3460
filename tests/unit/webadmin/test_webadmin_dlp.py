"""``/dlp/rules``: James's documented examples and ``DLPConfigurationRoutesTest`` answers, on memory adapters."""

from __future__ import annotations

import json
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from mailserver.dlp.store import DlpConfigurationStore
from mailserver.eventsourcing.memory import MemoryEventStore
from mailserver.webadmin.app import create_app
from tests.unit.webadmin.webadmin_support import FULL, error, make_context

RULES = {"rules": [
    {"id": "1", "expression": "james.org", "explanation": "Find senders or recipients containing james[any char]org",
     "targetsSender": True, "targetsRecipients": True, "targetsContent": False},
    {"id": "2", "expression": "apache.org", "explanation": "Find senders containing apache[any char]org",
     "targetsSender": True, "targetsRecipients": False, "targetsContent": False}]}


@pytest.fixture
def client():
    ctx = make_context(dlp=DlpConfigurationStore(MemoryEventStore()))
    ctx.domains.add("james.org")
    return TestClient(create_app(ctx), headers={"Password": FULL}, raise_server_exceptions=False)


def test_stored_rules_are_listed_as_james_writes_them(client):
    assert client.get("/dlp/rules/james.org").json() == {"rules": []}
    assert client.put("/dlp/rules/james.org", content=json.dumps(RULES)).status_code == 204
    response = client.get("/dlp/rules/james.org")
    assert response.status_code == 200
    assert response.json() == RULES


def test_optional_fields_default_to_null_and_false(client):
    client.put("/dlp/rules/james.org", content='{"rules": [{"id": "1", "expression": "x"}]}')
    assert client.get("/dlp/rules/james.org/rules/1").json() == {
        "id": "1", "explanation": None, "expression": "x", "targetsContent": False, "targetsSender": False,
        "targetsRecipients": False}


def test_delete_clears_the_rules(client):
    client.put("/dlp/rules/james.org", content=json.dumps(RULES))
    assert client.delete("/dlp/rules/james.org").status_code == 204
    assert client.get("/dlp/rules/james.org").json() == {"rules": []}


def test_one_rule_is_fetched_and_an_unknown_one_is_404(client):
    client.put("/dlp/rules/james.org", content=json.dumps(RULES))
    assert client.get("/dlp/rules/james.org/rules/2").json() == RULES["rules"][1]
    response = client.get("/dlp/rules/james.org/rules/3")
    assert response.status_code == 404
    assert error(response)["message"] == "There is no rule '3' for 'james.org' managed by this James server"


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_a_domain_not_managed_is_404(client, method):
    response = client.request(method, "/dlp/rules/apache.org", content=json.dumps(RULES))
    assert response.status_code == 404
    assert error(response) == {"statusCode": 404, "type": "InvalidArgument", "details": None,
                               "message": "'apache.org' is not managed by this James server"}


@pytest.mark.parametrize("body, message", [
    ("{not json", "JSON payload of the request is not valid"),
    ('{"rules": [{"id": "1"}]}', "JSON payload of the request is not valid"),
    ('{"rules": [{"id": "1", "expression": "("}]}', "JSON payload of the request is not valid"),
    ('{"rules": [{"id": "1", "expression": "a"}, {"id": "1", "expression": "b"}]}',
     "'id' duplicates are not allowed in DLP rules"),
])
def test_an_invalid_body_is_400_and_stores_nothing(client, body, message):
    response = client.put("/dlp/rules/james.org", content=body)
    assert response.status_code == 400
    assert error(response)["message"] == message
    assert client.get("/dlp/rules/james.org").json() == {"rules": []}
