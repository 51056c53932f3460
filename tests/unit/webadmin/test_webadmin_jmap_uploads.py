"""``DELETE /jmap/uploads?scope=expired``: James's ``JmapUploadRoutes`` and ``UploadRepositoryCleanupTask``
run by a real worker over memory uploads."""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from mailserver.blob.memory import MemoryBlobStore
from mailserver.jmap.uploads import UPLOAD_BUCKET, MemoryUploadRepository, Upload
from mailserver.model.address import Username
from mailserver.tasks.builtin.registration import register_builtin
from mailserver.tasks.manager import TaskManager
from mailserver.tasks.memory import MemoryTaskStore
from mailserver.tasks.registry import TaskRegistry
from mailserver.tasks.worker import TaskWorker
from mailserver.webadmin.app import create_app
from tests.unit.webadmin.webadmin_support import FULL, error, make_context

NODE = "uploads-node"
USER = Username.of("bob@example.test")


@dataclass
class Uploads:
    client: TestClient
    repository: MemoryUploadRepository
    blobs: MemoryBlobStore
    uploaded_at: list[datetime]   # the repository's clock: the date the next upload gets

    def upload(self, age: timedelta) -> Upload:
        self.uploaded_at[0] = datetime.now(UTC) - age
        return self.repository.upload(USER, "text/plain", io.BytesIO(b"content"))

    def await_task(self, response) -> dict:
        assert response.status_code == 201, response.text
        report = self.client.get(f"/tasks/{response.json()['taskId']}/await", params={"timeout": "10s"})
        assert report.status_code == 200, report.text
        return report.json()


@pytest.fixture(scope="module")
def uploads() -> Iterator[Uploads]:
    store, blobs, uploaded_at = MemoryTaskStore(), MemoryBlobStore(), [datetime.now(UTC)]
    repository = MemoryUploadRepository(blobs, clock=lambda: uploaded_at[0])
    ctx = make_context(tasks=TaskManager(store, NODE), uploads=repository)
    worker = TaskWorker(store, register_builtin(TaskRegistry(), uploads=repository), NODE,
                        poll_interval=0.02, heartbeat_interval=0.05)
    worker.start()
    try:
        yield Uploads(TestClient(create_app(ctx), headers={"Password": FULL}), repository, blobs, uploaded_at)
    finally:
        worker.stop()


def test_the_uploads_older_than_seven_days_are_deleted_content_and_record(uploads):
    old, recent = uploads.upload(timedelta(days=8)), uploads.upload(timedelta(days=6))
    report = uploads.await_task(uploads.client.delete("/jmap/uploads", params={"scope": "expired"}))
    assert (report["type"], report["status"]) == ("UploadRepositoryCleanupTask", "completed")
    info = report["additionalInformation"]
    assert set(info) == {"type", "timestamp", "scope"}
    assert (info["type"], info["scope"]) == ("UploadRepositoryCleanupTask", "expired")
    assert uploads.repository.retrieve(USER, old.id) is None
    assert not uploads.blobs.exists(UPLOAD_BUCKET, old.blob_id)
    assert uploads.repository.retrieve(USER, recent.id) == recent
    assert uploads.repository.content(recent) == b"content"


def test_the_scope_is_read_ignoring_case_as_james(uploads):
    old = uploads.upload(timedelta(days=30))
    report = uploads.await_task(uploads.client.delete("/jmap/uploads", params={"scope": "EXPIRED"}))
    assert (report["status"], report["additionalInformation"]["scope"]) == ("completed", "expired")
    assert uploads.repository.retrieve(USER, old.id) is None


@pytest.mark.parametrize("query", ["", "?scope=", "?scope=all"])
def test_a_missing_or_unknown_scope_is_refused(uploads, query):
    response = uploads.client.delete(f"/jmap/uploads{query}")
    assert response.status_code == 400
    body = error(response)
    assert (body["type"], body["message"], body["details"]) == (
        "InvalidArgument", "Invalid arguments supplied in the user request", "'scope' is missing or invalid")
