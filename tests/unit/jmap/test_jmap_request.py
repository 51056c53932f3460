"""Parsing a JMAP request: each request-level error of RFC 8620 3.6.1, and the limits checked before any work."""

from __future__ import annotations

import json

import pytest

from mailserver.jmap.capabilities import KNOWN, CoreLimits
from mailserver.jmap.errors import LIMIT, NOT_JSON, NOT_REQUEST, UNKNOWN_CAPABILITY, RequestError
from mailserver.jmap.request import Invocation, parse_request

CORE = "urn:ietf:params:jmap:core"
JSON = "application/json"


def parse(body: object, content_type: str = JSON, limits: CoreLimits | None = None):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return parse_request(raw, content_type, limits or CoreLimits(), KNOWN)


def refusal(body: object, **kwargs) -> RequestError:
    with pytest.raises(RequestError) as caught:
        parse(body, **kwargs)
    return caught.value


def test_the_rfc_example_request_parses_into_its_calls():
    # RFC 8620 3.3.1, with the capabilities this server knows.
    request = parse({"using": [CORE, "urn:ietf:params:jmap:mail"],
                     "methodCalls": [["method1", {"arg1": "arg1data", "arg2": "arg2data"}, "c1"],
                                     ["method2", {"arg1": "arg1data"}, "c2"],
                                     ["method3", {}, "c3"]]})
    assert request.method_calls == (Invocation("method1", {"arg1": "arg1data", "arg2": "arg2data"}, "c1"),
                                    Invocation("method2", {"arg1": "arg1data"}, "c2"), Invocation("method3", {}, "c3"))
    assert request.created_ids is None


@pytest.mark.parametrize("body", [b"{not json", b"\xff\xfe", b'{"using": [], "methodCalls": [], "using": []}',
                                  b'{"using": [], "methodCalls": [["a", {"x": NaN}, "c"]]}'])
def test_what_is_not_i_json_is_not_json(body):
    assert refusal(body).problem() == {"type": NOT_JSON, "status": 400, "detail": refusal(body).detail}


def test_a_content_type_other_than_json_is_not_json():
    assert refusal({"using": [], "methodCalls": []}, content_type="text/plain").type == NOT_JSON
    assert parse({"using": [], "methodCalls": []}, content_type="application/json; charset=utf-8").using == ()


@pytest.mark.parametrize("body", [[], {"using": [CORE]}, {"methodCalls": []}, {"using": CORE, "methodCalls": []},
                                  {"using": [CORE], "methodCalls": [["Core/echo", {}]]},
                                  {"using": [CORE], "methodCalls": [["Core/echo", [], "c1"]]},
                                  {"using": [CORE], "methodCalls": [[1, {}, "c1"]]},
                                  {"using": [CORE], "methodCalls": [], "createdIds": {"k": 1}}])
def test_json_that_is_not_a_request_is_not_request(body):
    assert refusal(body).type == NOT_REQUEST


def test_an_unknown_capability_refuses_the_request():
    error = refusal({"using": [CORE, "urn:example:nope"], "methodCalls": []})
    assert error.type == UNKNOWN_CAPABILITY and "urn:example:nope" in error.detail


def test_too_many_calls_is_the_calls_limit():
    limits = CoreLimits(max_calls_in_request=2)
    calls = [["Core/echo", {}, f"c{i}"] for i in range(3)]
    error = refusal({"using": [CORE], "methodCalls": calls}, limits=limits)
    assert error.problem()["type"] == LIMIT and error.problem()["limit"] == "maxCallsInRequest"
    assert len(parse({"using": [CORE], "methodCalls": calls[:2]}, limits=limits).method_calls) == 2


def test_too_large_a_body_is_the_size_limit_even_when_it_is_not_json():
    limits = CoreLimits(max_size_request=10)
    error = refusal(b"x" * 11, limits=limits)
    assert (error.type, error.limit, error.status) == (LIMIT, "maxSizeRequest", 400)


def test_nesting_deeper_than_the_parser_goes_is_not_json_not_a_crash():
    assert refusal(b"[" * 100_000).type == NOT_JSON
