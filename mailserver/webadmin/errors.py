"""James's JSON error body and the handlers that produce it for every failure.

``{"statusCode": 404, "type": "notFound", "message": "...", "details": "..."}`` with the four
upstream ``type`` strings (note the lower-case ``notFound``). Admin scripts parse this body, so
FastAPI's own shapes (``{"detail": ...}``, 422 validation errors) never reach the wire.
"""

from __future__ import annotations

import json
import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger(__name__)

INVALID_ARGUMENT = "InvalidArgument"
NOT_FOUND = "notFound"
WRONG_STATE = "WrongState"
SERVER_ERROR = "ServerError"

_TYPES = {400: INVALID_ARGUMENT, 404: NOT_FOUND, 409: WRONG_STATE}
_MESSAGES = {400: "Invalid arguments supplied in the user request",
             500: "WebAdmin encountered an unexpected internal error"}


class WebAdminError(Exception):
    """Raise from a route to answer with James's error body."""

    def __init__(self, status: int, message: str, details: str | None = None, type_: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.type = type_ or _TYPES.get(status, SERVER_ERROR)
        self.message = message
        self.details = details


def bad_request(details: str | None, message: str = _MESSAGES[400]) -> WebAdminError:
    return WebAdminError(400, message, details)


def not_found(message: str, details: str | None = None) -> WebAdminError:
    return WebAdminError(404, message, details)


def conflict(message: str, details: str | None = None) -> WebAdminError:
    return WebAdminError(409, message, details)


def error_response(status: int, type_: str, message: str, details: str | None = None) -> JSONResponse:
    return JSONResponse({"statusCode": status, "type": type_, "message": _encodable(message),
                         "details": _encodable(details)}, status_code=status)


def _encodable(text: str | None) -> str | None:
    """``text`` with any lone surrogate written as its escape (``\\ud800``): a message that quotes a JSON
    body's ``"\\ud800"`` is still sent, UTF-8 having no encoding for it."""
    return None if text is None else text.encode("utf-8", "backslashreplace").decode("utf-8")


def install(app: FastAPI) -> None:
    @app.exception_handler(WebAdminError)
    async def _webadmin(_: Request, exc: WebAdminError) -> JSONResponse:
        return error_response(exc.status, exc.type, exc.message, exc.details)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404 and exc.detail == "Not Found":
            # The router's own 404 (no such route), worded as James's.
            return error_response(404, NOT_FOUND, f"{request.method} {request.url.path} can not be found")
        if exc.status_code == 405:
            return error_response(404, NOT_FOUND, f"{request.method} {request.url.path} can not be found")
        return error_response(exc.status_code, _TYPES.get(exc.status_code, SERVER_ERROR), str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" or (tuple(e.get("loc", ())) == ("body",)
                                                   and e.get("type") in _NOT_AN_OBJECT) for e in errors):
            return error_response(400, INVALID_ARGUMENT, "JSON payload of the request is not valid",
                                  "; ".join(str(e.get("msg")) for e in errors))
        return error_response(400, INVALID_ARGUMENT, _MESSAGES[400], _describe(errors))

    @app.exception_handler(json.JSONDecodeError)
    async def _json(_: Request, exc: json.JSONDecodeError) -> JSONResponse:
        return error_response(400, INVALID_ARGUMENT, "JSON payload of the request is not valid", str(exc))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
        return error_response(500, SERVER_ERROR, _MESSAGES[500], f"{type(exc).__name__}: {exc}")


# What pydantic says when the body is not a JSON object at all (no JSON content type, a bare string ...).
_NOT_AN_OBJECT = frozenset({"model_attributes_type", "dict_type", "model_type"})


def _describe(errors: object) -> str:
    parts = []
    for e in errors if isinstance(errors, list) else []:
        where = ".".join(str(p) for p in e.get("loc", ()) if p != "body")
        parts.append(f"{where}: {e.get('msg')}" if where else str(e.get("msg")))
    return "; ".join(parts) or "invalid request"
