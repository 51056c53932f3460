"""Running a request's method calls in order (RFC 8620 3.3-3.6).

Each call sees the responses before it (for result references); a failing call answers an error
in its place and the following calls still run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from mailserver.jmap.errors import MethodError
from mailserver.jmap.references import resolve
from mailserver.jmap.request import Invocation, Request

log = logging.getLogger(__name__)

Context = TypeVar("Context")


@dataclass(frozen=True)
class Followed:
    """A method's answer followed by implicit calls' responses under the same call id (RFC 8621
    7.5: ``EmailSubmission/set``'s ``onSuccessUpdateEmail`` answers as an ``Email/set``)."""

    answer: dict[str, Any]
    implicit: list[tuple[str, dict[str, Any]]]


@dataclass(frozen=True)
class Method(Generic[Context]):
    """A method: the capability ``using`` must name for it, and what answers its arguments."""

    capability: str
    handle: Callable[[dict[str, Any], Context], dict[str, Any] | Followed]


@dataclass(frozen=True)
class Response:
    method_responses: list[Invocation]
    created_ids: dict[str, str] | None
    session_state: str

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"methodResponses": [r.to_json() for r in self.method_responses],
                                "sessionState": self.session_state}
        if self.created_ids is not None:
            body["createdIds"] = self.created_ids
        return body


class Engine(Generic[Context]):
    def __init__(self, methods: Mapping[str, Method[Context]]) -> None:
        self.methods = dict(methods)

    def run(self, request: Request, context: Context, session_state: str) -> Response:
        responses: list[Invocation] = []
        for call in request.method_calls:
            responses.extend(self._call(call, request, context, responses))
        return Response(responses, request.created_ids, session_state)

    def _call(self, call: Invocation, request: Request, context: Context,
              responses: list[Invocation]) -> list[Invocation]:
        method = self.methods.get(call.name)
        try:
            if method is None or method.capability not in request.using:
                raise MethodError("unknownMethod", f"{call.name} is not a method of the capabilities used")
            answer = method.handle(resolve(call.arguments, responses), context)
        except MethodError as error:
            return [Invocation("error", error.arguments(), call.call_id)]
        except Exception:   # one broken call must not take the whole request down
            log.exception("JMAP method %s failed", call.name)
            return [Invocation("error", MethodError("serverFail", "the server failed to answer this call")
                               .arguments(), call.call_id)]
        if isinstance(answer, Followed):
            return [Invocation(call.name, answer.answer, call.call_id),
                    *(Invocation(name, arguments, call.call_id) for name, arguments in answer.implicit)]
        return [Invocation(call.name, answer, call.call_id)]
