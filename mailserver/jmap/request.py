"""Parsing a JMAP request (RFC 8620 3.3) and refusing it whole before any method runs."""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from mailserver.jmap.capabilities import CoreLimits
from mailserver.jmap.errors import NOT_JSON, NOT_REQUEST, UNKNOWN_CAPABILITY, RequestError, limit_exceeded


@dataclass(frozen=True)
class Invocation:
    name: str
    arguments: dict[str, Any]
    call_id: str

    def to_json(self) -> list[Any]:
        return [self.name, self.arguments, self.call_id]


@dataclass(frozen=True)
class Request:
    using: tuple[str, ...]
    method_calls: tuple[Invocation, ...]
    created_ids: dict[str, str] | None = field(default=None)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")   # I-JSON: no NaN nor Infinity


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate member name")   # I-JSON (RFC 7493 2.3)
    return dict(pairs)


def parse_json(body: bytes) -> Any:
    try:
        return json.loads(body.decode("utf-8"), parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except (UnicodeDecodeError, ValueError) as exc:
        raise RequestError(NOT_JSON, f"The request did not parse as I-JSON: {exc}") from None
    except RecursionError:   # nesting deeper than the parser goes: refused, never a server error
        raise RequestError(NOT_JSON, "The request nests values too deeply") from None


def parse_request(body: bytes, content_type: str | None, limits: CoreLimits,
                  supported: Collection[str]) -> Request:
    """The request, or the ``RequestError`` that refuses it: too large, not JSON, not a Request,
    an unknown capability, too many calls; checked in that order, all before any work."""
    if len(body) > limits.max_size_request:
        raise limit_exceeded("maxSizeRequest", f"The request is larger than {limits.max_size_request} bytes")
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise RequestError(NOT_JSON, "The content type of the request was not application/json")
    data = parse_json(body)
    request = _as_request(data)
    unknown = [capability for capability in request.using if capability not in supported]
    if unknown:
        raise RequestError(UNKNOWN_CAPABILITY, f"The request used unsupported capabilities: {', '.join(unknown)}")
    if len(request.method_calls) > limits.max_calls_in_request:
        raise limit_exceeded("maxCallsInRequest",
                             f"The request has more than {limits.max_calls_in_request} method calls")
    return request


def _as_request(data: Any) -> Request:
    if not isinstance(data, dict):
        raise RequestError(NOT_REQUEST, "The request is not a JSON object")
    using, calls, created_ids = data.get("using"), data.get("methodCalls"), data.get("createdIds")
    if not isinstance(using, list) or not all(isinstance(u, str) for u in using):
        raise RequestError(NOT_REQUEST, "'using' must be an array of capability strings")
    if not isinstance(calls, list):
        raise RequestError(NOT_REQUEST, "'methodCalls' must be an array")
    if created_ids is not None and not (isinstance(created_ids, dict)
                                        and all(isinstance(v, str) for v in created_ids.values())):
        raise RequestError(NOT_REQUEST, "'createdIds' must map creation ids to ids")
    return Request(tuple(using), tuple(_as_invocation(call) for call in calls), created_ids)


def _as_invocation(call: Any) -> Invocation:
    if (not isinstance(call, list) or len(call) != 3 or not isinstance(call[0], str)
            or not isinstance(call[1], dict) or not isinstance(call[2], str)):
        raise RequestError(NOT_REQUEST, "Each method call must be [name, arguments object, call id]")
    return Invocation(call[0], call[1], call[2])
