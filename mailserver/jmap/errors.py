"""The two kinds of JMAP errors (RFC 8620 3.6): the request's, answered as an HTTP problem, and a
method call's, answered in place of its response so the calls after it still run."""

from __future__ import annotations

from typing import Any

REQUEST_ERROR = "urn:ietf:params:jmap:error:"
NOT_JSON = REQUEST_ERROR + "notJSON"
NOT_REQUEST = REQUEST_ERROR + "notRequest"
LIMIT = REQUEST_ERROR + "limit"
UNKNOWN_CAPABILITY = REQUEST_ERROR + "unknownCapability"


class RequestError(Exception):
    """The whole request is refused before any method runs: an RFC 7807 problem (RFC 8620 3.6.1)."""

    def __init__(self, type_: str, detail: str, *, status: int = 400, limit: str | None = None) -> None:
        super().__init__(detail)
        self.type, self.detail, self.status, self.limit = type_, detail, status, limit

    def problem(self) -> dict[str, Any]:
        body: dict[str, Any] = {"type": self.type, "status": self.status, "detail": self.detail}
        if self.limit is not None:
            body["limit"] = self.limit
        return body


def limit_exceeded(limit: str, detail: str) -> RequestError:
    return RequestError(LIMIT, detail, limit=limit)


class MethodError(Exception):
    """One method call fails (RFC 8620 3.6.2): ``["error", {"type": ..., ...}, callId]``."""

    def __init__(self, type_: str, description: str | None = None, **extra: Any) -> None:
        super().__init__(description or type_)
        self.type, self.description, self.extra = type_, description, extra

    def arguments(self) -> dict[str, Any]:
        body: dict[str, Any] = {"type": self.type, **self.extra}
        if self.description is not None:
            body["description"] = self.description
        return body


def invalid_arguments(description: str) -> MethodError:
    return MethodError("invalidArguments", description)
