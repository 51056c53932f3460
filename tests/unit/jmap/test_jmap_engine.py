"""Method calls run in order; each failure answers an error in place and the following calls still run."""

from __future__ import annotations

from typing import Any

from mailserver.jmap.capabilities import CORE, MAIL
from mailserver.jmap.engine import Engine, Method
from mailserver.jmap.errors import MethodError
from mailserver.jmap.request import Invocation, Request


def boom(arguments: dict[str, Any], context: list[str]) -> dict[str, Any]:
    raise RuntimeError("storage is down")


def refuse(arguments: dict[str, Any], context: list[str]) -> dict[str, Any]:
    raise MethodError("invalidArguments", "no", properties=["x"])


def record(arguments: dict[str, Any], context: list[str]) -> dict[str, Any]:
    context.append(arguments["n"])
    return {"seen": list(context)}


ENGINE: Engine[list[str]] = Engine({"Test/record": Method(CORE, record), "Test/boom": Method(CORE, boom),
                                    "Test/refuse": Method(CORE, refuse), "Mail/thing": Method(MAIL, record)})


def run(*calls: Invocation, using: tuple[str, ...] = (CORE,)) -> list[list[Any]]:
    response = ENGINE.run(Request(using, calls), [], "s1")
    assert response.session_state == "s1"
    return [r.to_json() for r in response.method_responses]


def test_calls_run_in_order_and_see_the_results_before_them():
    answers = run(Invocation("Test/record", {"n": "a"}, "c1"),
                  Invocation("Test/record", {"#n": {"resultOf": "c1", "name": "Test/record", "path": "/seen/0"}},
                             "c2"))
    assert answers == [["Test/record", {"seen": ["a"]}, "c1"], ["Test/record", {"seen": ["a", "a"]}, "c2"]]


def test_an_unknown_method_is_unknown_method_and_the_next_call_still_runs():
    answers = run(Invocation("Nope/get", {}, "c1"), Invocation("Test/record", {"n": "b"}, "c2"))
    assert answers[0][0] == "error" and answers[0][1]["type"] == "unknownMethod" and answers[0][2] == "c1"
    assert answers[1] == ["Test/record", {"seen": ["b"]}, "c2"]


def test_a_method_of_a_capability_not_in_using_is_unknown():
    assert run(Invocation("Mail/thing", {"n": "a"}, "c1"))[0][1]["type"] == "unknownMethod"
    assert run(Invocation("Mail/thing", {"n": "a"}, "c1"), using=(CORE, MAIL))[0][0] == "Mail/thing"


def test_a_method_error_keeps_its_extra_properties():
    assert run(Invocation("Test/refuse", {}, "c1"))[0] == [
        "error", {"type": "invalidArguments", "description": "no", "properties": ["x"]}, "c1"]


def test_an_unexpected_failure_is_server_fail_without_its_details():
    answer = run(Invocation("Test/boom", {}, "c1"))[0]
    assert answer[1]["type"] == "serverFail" and "storage" not in answer[1]["description"]


def test_created_ids_come_back_when_given():
    response = ENGINE.run(Request((CORE,), (), {"k1": "id1"}), [], "s1")
    assert response.to_json() == {"methodResponses": [], "sessionState": "s1", "createdIds": {"k1": "id1"}}
    assert "createdIds" not in ENGINE.run(Request((CORE,), ()), [], "s1").to_json()
