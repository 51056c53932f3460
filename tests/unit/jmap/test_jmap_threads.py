"""``Thread/get`` (RFC 8621 3.1): every message is a thread of its own here."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from mailserver.jmap.app import create_app
from mailserver.jmap.capabilities import CoreLimits
from mailserver.model.mailbox import MailboxPath
from tests.support.jmap_world import MIXED, OTHER, USER, USING, World, bearer, plain


def calls(world: World, *method_calls: list[Any], limits: CoreLimits | None = None) -> list[list[Any]]:
    client = TestClient(create_app(world.context(limits)))
    response = client.post("/jmap", headers=bearer(), json={"using": USING, "methodCalls": list(method_calls)})
    assert response.status_code == 200, response.text
    return response.json()["methodResponses"]


def thread_get(world: World, **arguments: Any) -> list[Any]:
    return calls(world, ["Thread/get", {"accountId": world.account, **arguments}, "t"])[0]


def test_rfc_8620_reference_chain_from_query_to_threads(world):
    # RFC 8620 3.7's example: Email/query, Email/get of threadId, Thread/get of those threads.
    first, second = world.deliver(plain("one"), day=1), world.deliver(MIXED, day=2)
    answers = calls(world,
                    ["Email/query", {"accountId": world.account}, "t0"],
                    ["Email/get", {"accountId": world.account, "properties": ["threadId"],
                                   "#ids": {"resultOf": "t0", "name": "Email/query", "path": "/ids"}}, "t1"],
                    ["Thread/get", {"accountId": world.account,
                                    "#ids": {"resultOf": "t1", "name": "Email/get", "path": "/list/*/threadId"}},
                     "t2"])
    name, threads, call_id = answers[2]
    assert (name, call_id) == ("Thread/get", "t2")
    assert threads["list"] == [{"id": second, "emailIds": [second]}, {"id": first, "emailIds": [first]}]
    assert threads["notFound"] == [] and threads["state"] == answers[1][1]["state"]


def test_a_message_in_two_mailboxes_is_one_email_of_its_thread(world):
    email = world.deliver(MIXED)
    world.mailbox.manager.copy(MailboxPath.of(USER, "INBOX"), MailboxPath.of(USER, "Archive"))
    assert thread_get(world, ids=[email])[1]["list"] == [{"id": email, "emailIds": [email]}]


def test_null_ids_lists_every_thread_of_the_user(world):
    emails = {world.deliver(plain("one")), world.deliver(plain("two"))}
    world.mailbox.manager.append(MailboxPath.of(OTHER, "INBOX"), plain("bob's"))
    answer = thread_get(world, ids=None)[1]
    assert {t["id"] for t in answer["list"]} == emails


def test_unknown_malformed_and_other_users_threads_are_not_found(world):
    email = world.deliver(MIXED)
    bobs = str(world.mailbox.manager.append(MailboxPath.of(OTHER, "INBOX"), plain("bob's")).id.message_id)
    answer = thread_get(world, ids=["nope", "0d4e5f00-0000-1000-8000-000000000000", bobs, email])[1]
    assert answer["list"] == [{"id": email, "emailIds": [email]}]
    assert answer["notFound"] == ["nope", "0d4e5f00-0000-1000-8000-000000000000", bobs]


def test_properties_choose_what_is_returned_and_id_always_is(world):
    email = world.deliver(MIXED)
    assert thread_get(world, ids=[email], properties=["emailIds"])[1]["list"] == [{"id": email, "emailIds": [email]}]
    assert thread_get(world, ids=[email], properties=["id"])[1]["list"] == [{"id": email}]


@pytest.mark.parametrize(("arguments", "error"), [
    ({"ids": [], "properties": ["subject"]}, "invalidArguments"),
    ({"ids": "x"}, "invalidArguments"),
    ({"ids": [], "sort": []}, "invalidArguments"),
    ({"ids": [], "accountId": "someone-else"}, "accountNotFound"),
])
def test_bad_calls_answer_the_rfc_errors(world, arguments, error):
    name, answer, _ = thread_get(world, **arguments)
    assert (name, answer["type"]) == ("error", error)


def test_more_ids_than_max_objects_in_get_is_request_too_large(world):
    name, answer, _ = calls(world, ["Thread/get", {"accountId": world.account, "ids": ["a", "b", "c"]}, "t"],
                            limits=CoreLimits(max_objects_in_get=2))[0]
    assert (name, answer["type"]) == ("error", "requestTooLarge")
