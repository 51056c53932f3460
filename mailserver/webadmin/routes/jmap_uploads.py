"""``DELETE /jmap/uploads?scope=expired``: James's ``JmapUploadRoutes``, the in-process
``UploadRepositoryCleanupTask`` (``tasks.builtin.upload_cleanup``)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from mailserver.jmap.uploads import UploadRepository
from mailserver.tasks.builtin.upload_cleanup import UploadRepositoryCleanupTask, scope_of
from mailserver.tasks.manager import TaskManager
from mailserver.webadmin.errors import bad_request
from mailserver.webadmin.routes.tasks import submitted


def router(uploads: UploadRepository, tasks: TaskManager) -> APIRouter:
    api = APIRouter(tags=["jmap"])

    @api.delete("/jmap/uploads", status_code=201,
                summary="Task UploadRepositoryCleanupTask: ?scope=expired deletes the JMAP uploads older than "
                        "7 days")
    async def cleanup(request: Request) -> Response:
        scope = scope_of(request.query_params.get("scope"))
        if scope is None:
            raise bad_request("'scope' is missing or invalid")
        return submitted(await run_in_threadpool(tasks.submit, UploadRepositoryCleanupTask(uploads, scope)))

    return api
