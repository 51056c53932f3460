"""The upload and download endpoints (RFC 8620 6.1, 6.2), as James's ``UploadRoutes`` and
``DownloadRoutes`` answer them: 201 with ``{accountId, blobId, type, size}`` for an upload, the
blob with the URL's ``type`` and ``name`` for a download, RFC 7807 problems otherwise.

An upload's limits are checked before its body is read: the declared length against
``maxSizeUpload`` and the user's running uploads against ``maxConcurrentUpload``; a body sent
without a length (chunked) is cut off as soon as it passes the size. The body is spooled (memory,
then a temporary file), never held whole.
"""

from __future__ import annotations

import re
import tempfile
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse

from mailserver.jmap.account import MailServices, account_id
from mailserver.jmap.capabilities import CoreLimits
from mailserver.jmap.concurrency import ConcurrentRequests, TooManyRequests
from mailserver.jmap.downloads import resolve
from mailserver.jmap.errors import RequestError, limit_exceeded
from mailserver.model.address import Username

PROBLEM = "application/problem+json"
BLANK = "about:blank"   # James's ProblemDetails type for the errors RFC 8620 names no type for
SPOOL_IN_MEMORY = 1024 * 1024
CACHE_CONTROL = "private, immutable, max-age=31536000"   # a blob never changes (James's header)
_HEADER_VALUE = re.compile(r"^[\x20-\x7e]+$")
OCTET_STREAM = "application/octet-stream"


def add_blob_routes(app: FastAPI, services: MailServices, limits: CoreLimits) -> None:
    uploading = ConcurrentRequests(limits.max_concurrent_upload)

    @app.post("/upload/{account}")
    async def upload(request: Request, account: str) -> Response:
        user: Username = request.state.user
        content_type = (request.headers.get("content-type") or "").strip()
        if not content_type:
            return problem(RequestError(BLANK, "Upload is missing compulsory Content-Type header"))
        if account != account_id(user):
            return problem(RequestError(BLANK, "Upload to other accounts is forbidden", status=403))
        if services.uploads is None:
            return problem(RequestError(BLANK, "Uploads are not stored by this server", status=503))
        try:
            _check_declared_length(request, limits.max_size_upload)
            with uploading.slot(user):
                with tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY) as body:
                    await _spool(request, body, limits.max_size_upload)
                    body.seek(0)
                    stored = await run_in_threadpool(services.uploads.upload, user, content_type, body)
        except TooManyRequests:
            return problem(limit_exceeded("maxConcurrentUpload", "Too many uploads of this user are running"))
        except RequestError as error:
            return problem(error)
        answer: dict[str, Any] = {"accountId": account, "blobId": stored.jmap_blob_id,
                                  "type": stored.content_type, "size": stored.size}
        return JSONResponse(answer, status_code=201)

    @app.get("/download/{account}/{blob_id}")
    async def download(request: Request, account: str, blob_id: str) -> Response:
        user: Username = request.state.user
        if account != account_id(user):
            return problem(RequestError(BLANK, "You cannot download in others accounts", status=403))
        blob = await run_in_threadpool(resolve, blob_id, user, services)
        if blob is None:
            return problem(RequestError(BLANK, "The resource could not be found", status=404))
        headers = {"Content-Type": header_safe_type(request.query_params.get("type") or blob.content_type),
                   "Content-Length": str(blob.size), "Cache-Control": CACHE_CONTROL}
        name = request.query_params.get("name")
        if name:
            headers["Content-Disposition"] = content_disposition(name)
        return StreamingResponse(blob.chunks, headers=headers)


def _check_declared_length(request: Request, limit: int) -> None:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise limit_exceeded("maxSizeUpload", f"The upload is larger than {limit} bytes")


async def _spool(request: Request, body: Any, limit: int) -> None:
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise limit_exceeded("maxSizeUpload", f"The upload is larger than {limit} bytes")
        body.write(chunk)


def header_safe_type(value: str) -> str:
    """The type as given when it is a valid header value, else ``application/octet-stream`` (as James)."""
    return value if _HEADER_VALUE.match(value) else OCTET_STREAM


def content_disposition(name: str) -> str:
    """``attachment`` with the name: quoted when plain ASCII, else RFC 8187's ``filename*``."""
    if _HEADER_VALUE.match(name) and '"' not in name and "\\" not in name:
        return f'attachment; filename="{name}"'
    return f"attachment; filename*=UTF-8''{quote(name, safe='')}"


def problem(error: RequestError) -> JSONResponse:
    return JSONResponse(error.problem(), status_code=error.status, media_type=PROBLEM)
