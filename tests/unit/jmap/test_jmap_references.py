"""Result references (RFC 8620 3.7): the RFC's example, the ``*`` wildcard and each way a reference fails."""

from __future__ import annotations

import pytest

from mailserver.jmap.errors import MethodError
from mailserver.jmap.references import pointer, resolve
from mailserver.jmap.request import Invocation

# RFC 8620 3.7's example: responses to Email/query, Email/get and Thread/get.
QUERY = Invocation("Email/query", {"accountId": "A1", "queryState": "abcdefg", "canCalculateChanges": True,
                                   "position": 0, "total": 101, "ids": ["msg1023", "msg223", "msg110", "msg93"]},
                   "t0")
GET = Invocation("Email/get", {"accountId": "A1", "state": "123456", "list": [
    {"id": "msg1023", "threadId": "trd194"}, {"id": "msg223", "threadId": "trd114"}], "notFound": []}, "t1")
THREADS = Invocation("Thread/get", {"accountId": "A1", "state": "123456", "list": [
    {"id": "trd194", "emailIds": ["msg1020", "msg1021", "msg1023"]},
    {"id": "trd114", "emailIds": ["msg201", "msg223"]}], "notFound": []}, "t2")


def test_the_rfc_example_resolves_each_reference():
    ids = resolve({"accountId": "A1", "#ids": {"resultOf": "t0", "name": "Email/query", "path": "/ids"}}, [QUERY])
    assert ids == {"accountId": "A1", "ids": ["msg1023", "msg223", "msg110", "msg93"]}
    threads = resolve({"#ids": {"resultOf": "t1", "name": "Email/get", "path": "/list/*/threadId"}}, [QUERY, GET])
    assert threads == {"ids": ["trd194", "trd114"]}
    # Arrays found under the wildcard are flattened into one.
    emails = resolve({"#ids": {"resultOf": "t2", "name": "Thread/get", "path": "/list/*/emailIds"}}, [GET, THREADS])
    assert emails == {"ids": ["msg1020", "msg1021", "msg1023", "msg201", "msg223"]}


def failure(arguments, responses) -> MethodError:
    with pytest.raises(MethodError) as caught:
        resolve(arguments, responses)
    return caught.value


@pytest.mark.parametrize("reference", [
    {"resultOf": "t9", "name": "Email/query", "path": "/ids"},          # no such call before
    {"resultOf": "t0", "name": "Email/get", "path": "/ids"},            # the call answered another name
    {"resultOf": "t0", "name": "Email/query", "path": "/nothing"},      # the path leads nowhere
    {"resultOf": "t0", "name": "Email/query", "path": "/ids/9"},        # past the array's end
    {"resultOf": "t0", "name": "Email/query", "path": "ids"},           # not a pointer
    {"resultOf": "t0", "name": "Email/query"},                          # not a reference
    "t0",
])
def test_a_reference_that_cannot_be_evaluated_is_invalid_result_reference(reference):
    assert failure({"#ids": reference}, [QUERY]).type == "invalidResultReference"


def test_a_reference_to_a_failed_call_names_the_error_response():
    error = Invocation("error", {"type": "unknownMethod"}, "t0")
    assert failure({"#ids": {"resultOf": "t0", "name": "Email/query", "path": "/ids"}},
                   [error]).type == "invalidResultReference"


def test_an_argument_given_both_plain_and_by_reference_is_invalid_arguments():
    arguments = {"ids": [], "#ids": {"resultOf": "t0", "name": "Email/query", "path": "/ids"}}
    assert failure(arguments, [QUERY]).type == "invalidArguments"


def test_pointer_escapes_and_the_whole_document():
    document = {"a/b": {"m~n": 1}, "list": [0, 1]}
    assert pointer(document, "/a~1b/m~0n") == 1
    assert pointer(document, "") is document
    assert pointer(document, "/list/1") == 1


def test_a_reference_inside_an_argument_object_is_resolved_as_clients_send_it():
    # jmapc's Email/query: {"filter": {"#inMailbox": {...}}}
    arguments = {"filter": {"#inMailbox": {"resultOf": "t0", "name": "Email/query", "path": "/ids/0"},
                            "hasKeyword": "$seen"}}
    assert resolve(arguments, [QUERY]) == {"filter": {"inMailbox": "msg1023", "hasKeyword": "$seen"}}
    assert failure({"filter": {"#inMailbox": {"resultOf": "t9", "name": "Email/query", "path": "/ids/0"}}},
                   [QUERY]).type == "invalidResultReference"


def test_references_are_looked_for_only_so_deep():
    reference = {"resultOf": "t0", "name": "Email/query", "path": "/ids/0"}
    deep: dict = {"#x": reference}
    for _ in range(20):
        deep = {"level": deep}
    resolved = resolve(deep, [QUERY])
    for _ in range(20):
        resolved = resolved["level"]
    assert resolved == {"#x": reference}   # left as it came, past the depth searched
