"""VacationResponse/get and /set (RFC 8621 8) over the memory vacation repository, through the HTTP
application, with the answers James's ``VacationResponse*MethodContract`` expects."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mailserver.jmap.app import create_app
from mailserver.vacation.api import Vacation
from mailserver.vacation.memory import MemoryVacationRepository
from tests.support.jmap_world import USER, USING, World, bearer

VACATION = "urn:ietf:params:jmap:vacationresponse"
ALL = [*USING, VACATION]
INITIAL_STATE = "2c9f1b12-b35a-43e6-9af2-0106fb53a943"
FULL = {"isEnabled": True, "fromDate": "2014-10-30T14:12:00Z", "toDate": "2014-11-30T14:12:00Z",
        "subject": "I am in vacation", "textBody": "I'm currently enjoying life. Please disturb me later",
        "htmlBody": "I'm currently enjoying <b>life</b>. <br/>Please disturb me later"}


class Jmap:
    def __init__(self, world: World, vacations: MemoryVacationRepository | None) -> None:
        self.world = world
        self.client = TestClient(create_app(world.context(vacations=vacations)))

    def request(self, *calls: list[Any], using: list[str] = ALL) -> list[list[Any]]:
        response = self.client.post("/jmap", headers=bearer(), json={"using": using, "methodCalls": list(calls)})
        assert response.status_code == 200, response.text
        return response.json()["methodResponses"]

    def call(self, method: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
        name, answer, _ = self.request([method, {"accountId": self.world.account, **arguments}, "c1"])[0]
        return name, answer


@pytest.fixture
def vacations() -> MemoryVacationRepository:
    return MemoryVacationRepository()


@pytest.fixture
def jmap(world, vacations) -> Jmap:
    return Jmap(world, vacations)


def test_the_session_announces_vacation_response_only_when_it_is_offered(world, vacations):
    offered = Jmap(world, vacations).client.get("/jmap/session", headers=bearer()).json()
    assert offered["capabilities"][VACATION] == {}
    assert offered["accounts"][world.account]["accountCapabilities"][VACATION] == {}
    assert offered["primaryAccounts"][VACATION] == world.account
    plain = Jmap(world, None)
    assert VACATION not in plain.client.get("/jmap/session", headers=bearer()).json()["capabilities"]
    assert plain.call("VacationResponse/get")[1]["type"] == "unknownMethod"


def test_a_user_without_settings_reads_the_disabled_singleton(jmap, world):
    assert jmap.call("VacationResponse/get", ids=None) == ("VacationResponse/get", {
        "accountId": world.account, "state": INITIAL_STATE,
        "list": [{"id": "singleton", "isEnabled": False}], "notFound": []})


def test_get_reads_what_webadmin_stored_for_the_username_in_utc(jmap, vacations):
    paris = timezone(timedelta(hours=2))
    vacations.modify(USER, {"enabled": True, "from_date": datetime(2014, 9, 30, 14, 10, tzinfo=paris),
                            "subject": "Out", "text_body": "Back soon"})
    _, answer = jmap.call("VacationResponse/get")
    assert answer["list"] == [{"id": "singleton", "isEnabled": True, "fromDate": "2014-09-30T12:10:00Z",
                               "subject": "Out", "textBody": "Back soon"}]


def test_get_by_ids_and_properties(jmap):
    _, answer = jmap.call("VacationResponse/get", ids=["singleton", "random1", "random1"], properties=["subject"])
    assert answer["list"] == [{"id": "singleton"}]
    assert answer["notFound"] == ["random1"]
    _, empty = jmap.call("VacationResponse/get", ids=[])
    assert (empty["list"], empty["notFound"]) == ([], [])


@pytest.mark.parametrize("arguments, description", [
    ({"properties": ["invalidProperty"]}, "The following properties [invalidProperty] do not exist."),
    ({"ids": [""]}, None),
    ({"sort": []}, None),
])
def test_get_refusals_are_invalid_arguments(jmap, arguments, description):
    name, answer = jmap.call("VacationResponse/get", **arguments)
    assert (name, answer["type"]) == ("error", "invalidArguments")
    if description is not None:
        assert answer["description"] == description


def test_update_sets_every_property_and_get_reads_it_back(jmap, world, vacations):
    responses = jmap.request(
        ["VacationResponse/set", {"accountId": world.account, "update": {"singleton": FULL}}, "c1"],
        ["VacationResponse/get", {"accountId": world.account, "ids": ["singleton"]}, "c2"])
    assert responses[0][1] == {"accountId": world.account, "newState": INITIAL_STATE, "updated": {"singleton": {}}}
    assert responses[1][1]["list"] == [{"id": "singleton", **FULL}]
    assert vacations.get(USER).from_date == datetime(2014, 10, 30, 14, 12, tzinfo=UTC)


def test_a_partial_update_keeps_the_other_fields_and_null_removes_one(jmap, vacations):
    jmap.call("VacationResponse/set", update={"singleton": FULL})
    jmap.call("VacationResponse/set", update={"singleton": {"subject": "Changed", "htmlBody": None}})
    stored = vacations.get(USER)
    assert (stored.enabled, stored.subject, stored.html_body, stored.text_body) == (
        True, "Changed", None, FULL["textBody"])


def test_an_empty_update_answers_only_the_state(jmap, world, vacations):
    assert jmap.call("VacationResponse/set", update={}) == ("VacationResponse/set", {
        "accountId": world.account, "newState": INITIAL_STATE})
    _, answer = jmap.call("VacationResponse/set", update={"singleton": {}})
    assert answer["updated"] == {"singleton": {}}
    assert vacations.get(USER) == Vacation()


@pytest.mark.parametrize("update, description", [
    ({"invalid": {"isEnabled": True}}, "id invalid must be singleton"),
    ({"singleton": {"id": "singleton"}}, "id is server-set thus cannot be changed"),
    ({"singleton": {"color": "red"}}, "color is an unknown property"),
    ({"singleton": {"fromDate": "2014-11-30T14:12:00Z", "toDate": "2014-10-30T14:12:00Z"}},
     "fromDate must be older than toDate"),
])
def test_refused_updates_change_nothing(jmap, vacations, update, description):
    _, answer = jmap.call("VacationResponse/set", update=update)
    assert "updated" not in answer
    assert list(answer["notUpdated"].values()) == [{"type": "invalidArguments", "description": description}]
    assert vacations.get(USER) == Vacation()


@pytest.mark.parametrize("patch", [{"fromDate": "2014/12/30"}, {"toDate": "2014-12-30T10:00:00"},
                                   {"isEnabled": "yes"}, {"subject": 3}])
def test_values_of_the_wrong_shape_are_invalid_arguments(jmap, vacations, patch):
    _, answer = jmap.call("VacationResponse/set", update={"singleton": {"isEnabled": True, **patch}})
    assert answer["notUpdated"]["singleton"]["type"] == "invalidArguments"
    assert vacations.get(USER) == Vacation()


def test_one_good_and_one_bad_id_in_the_same_call(jmap, vacations):
    _, answer = jmap.call("VacationResponse/set", update={"singleton": {"isEnabled": True},
                                                          "singleton2": {"isEnabled": False}})
    assert answer["updated"] == {"singleton": {}}
    assert answer["notUpdated"] == {"singleton2": {"type": "invalidArguments",
                                                   "description": "id singleton2 must be singleton"}}
    assert vacations.get(USER).enabled


def test_create_and_destroy_are_refused_for_the_singleton(jmap):
    _, answer = jmap.call("VacationResponse/set", create={"new": {"isEnabled": True}}, destroy=["singleton"])
    assert answer["notCreated"] == {"new": {"type": "invalidArguments",
                                            "description": "'create' is not supported on singleton objects"}}
    assert answer["notDestroyed"] == {"singleton": {"type": "invalidArguments",
                                                    "description": "'destroy' is not supported on singleton objects"}}


def test_set_refusals_of_the_whole_call(jmap, world):
    assert jmap.call("VacationResponse/set", ifInState="old")[1]["type"] == "stateMismatch"
    assert jmap.call("VacationResponse/set", update="singleton")[1]["type"] == "invalidArguments"
    for arguments, using, error in (({"accountId": world.account}, USING, "unknownMethod"),
                                    ({"accountId": "nope"}, ALL, "accountNotFound")):
        answer = jmap.request(["VacationResponse/set", arguments, "c1"], using=using)[0][1]
        assert answer["type"] == error
