"""``/vacation/{user}``: James's ``VacationRoutesTest`` examples on the memory repository."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from mailserver.vacation.api import Vacation
from mailserver.vacation.memory import MemoryVacationRepository
from mailserver.webadmin.app import create_app
from tests.unit.webadmin.webadmin_support import FULL, cheap_users, error, make_context

USER = "bob@example.org"
FULL_BODY = ('{"enabled":true,"fromDate":"2021-09-20T10:00:00Z","toDate":"2021-09-27T18:00:00+02:00",'
             '"subject":"On vacation again","textBody":"Need more vacation!","htmlBody":"<p>Need more vacation!</p>"}')


@pytest.fixture
def world():
    ctx = make_context(vacations=MemoryVacationRepository())
    users = cheap_users(ctx)
    ctx.domains.add("example.org")
    users.add_user(USER, "secret")
    client = TestClient(create_app(ctx), headers={"Password": FULL}, raise_server_exceptions=False)
    assert ctx.vacations is not None
    return client, ctx.vacations


def test_a_user_without_settings_reads_disabled_with_null_fields(world):
    client, _ = world
    response = client.get(f"/vacation/{USER}")
    assert response.status_code == 200
    assert response.json() == {"enabled": False, "fromDate": None, "toDate": None, "subject": None,
                                "textBody": None, "htmlBody": None}


def test_post_stores_every_field_and_get_reads_them_back(world):
    client, vacations = world
    response = client.post(f"/vacation/{USER}", content=FULL_BODY)
    assert response.status_code == 204
    stored = vacations.get(USER)
    assert stored.enabled and stored.from_date == datetime(2021, 9, 20, 10, tzinfo=UTC)
    assert client.get(f"/vacation/{USER}").json() == {
        "enabled": True, "fromDate": "2021-09-20T10:00:00Z", "toDate": "2021-09-27T18:00:00+02:00",
        "subject": "On vacation again", "textBody": "Need more vacation!", "htmlBody": "<p>Need more vacation!</p>"}


def test_post_keeps_the_fields_it_does_not_name(world):
    client, vacations = world
    client.post(f"/vacation/{USER}", content=FULL_BODY)
    assert client.post(f"/vacation/{USER}", content='{"enabled":true,"subject":"More vacation"}').status_code == 204
    stored = vacations.get(USER)
    assert (stored.subject, stored.text_body) == ("More vacation", "Need more vacation!")


def test_delete_disables_and_clears(world):
    client, vacations = world
    client.post(f"/vacation/{USER}", content=FULL_BODY)
    assert client.delete(f"/vacation/{USER}").status_code == 204
    assert vacations.get(USER) == Vacation()


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
def test_an_unknown_user_is_404_with_james_s_message(world, method):
    client, _ = world
    response = client.request(method, "/vacation/carol@example.org", content='{"enabled":true}')
    assert response.status_code == 404
    assert error(response)["message"] == "The user 'carol@example.org' does not exist"


@pytest.mark.parametrize("body", ["{not really a JSON object}", '["x"]', '{"enabled":"yes"}',
                                  '{"fromDate":"2021-09-20T10:00:00"}', '{"unknown":1}'])
def test_an_invalid_body_is_400_and_writes_nothing(world, body):
    client, vacations = world
    response = client.post(f"/vacation/{USER}", content=body)
    assert response.status_code == 400
    assert error(response)["message"] == "JSON payload of the request is not valid"
    assert vacations.get(USER) == Vacation()
