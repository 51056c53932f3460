"""The upload and download endpoints (RFC 8620 6.1, 6.2) over the memory mailbox layer."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mailserver.jmap.account import account_id
from mailserver.jmap.app import create_app
from mailserver.jmap.capabilities import CoreLimits
from mailserver.jmap.uploads import UPLOAD_BUCKET, MemoryUploadRepository
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from tests.support.jmap_world import MIXED, OTHER, USER, World, bearer

LIMIT = "urn:ietf:params:jmap:error:limit"


@pytest.fixture
def client(world: World) -> TestClient:
    return TestClient(create_app(world.context()))


def download(client: TestClient, blob_id: str, account: str | None = None, user: str = USER, **params: str):
    return client.get(f"/download/{account or account_id(Username.of(user))}/{blob_id}", params=params,
                      headers=bearer(user))


# ---------------------------------------------------------------- upload

def test_upload_answers_the_rfc_json_and_stores_as_james(client, world):
    # RFC 8620 6.1: the response is {accountId, blobId, type, size}, status 201.
    response = client.post(f"/upload/{world.account}", content=b"\x89PNG data", headers={
        **bearer(), "Content-Type": "image/png"})
    assert response.status_code == 201, response.text
    body = response.json()
    assert body == {"accountId": world.account, "blobId": body["blobId"], "type": "image/png", "size": 9}
    assert body["blobId"].startswith("uploads-")
    upload_uuid = body["blobId"].removeprefix("uploads-")
    # James's layout: the content in the jmap-uploads bucket, under the upload id.
    assert world.mailbox.blobs.read(UPLOAD_BUCKET, upload_uuid) == b"\x89PNG data"


def test_an_upload_downloads_back_for_its_owner_only(client, world):
    blob_id = client.post(f"/upload/{world.account}", content=b"hello", headers={
        **bearer(), "Content-Type": "text/plain"}).json()["blobId"]
    mine = download(client, blob_id)
    assert (mine.status_code, mine.content, mine.headers["content-type"]) == (200, b"hello", "text/plain")
    assert download(client, blob_id, user=OTHER).status_code == 404


def test_upload_without_content_type_is_refused(client, world):
    response = client.post(f"/upload/{world.account}", content=b"x", headers={
        **bearer(), "Content-Type": ""})
    assert response.status_code == 400
    assert response.json()["detail"] == "Upload is missing compulsory Content-Type header"


def test_upload_to_another_account_is_forbidden(client):
    response = client.post(f"/upload/{account_id(Username.of(OTHER))}", content=b"x", headers={
        **bearer(), "Content-Type": "text/plain"})
    assert response.status_code == 403
    assert response.headers["content-type"] == "application/problem+json"


def test_upload_without_credentials_is_unauthorized(client, world):
    response = client.post(f"/upload/{world.account}", content=b"x", headers={"Content-Type": "text/plain"})
    assert response.status_code == 401


def _post_counting_reads(app: Any, path: str, headers: list[tuple[bytes, bytes]]) -> tuple[int, dict, int]:
    """POST through ASGI directly, counting how many times the app asked for the body."""
    reads = 0
    sent: list[dict] = []

    async def receive() -> dict:
        nonlocal reads
        reads += 1
        return {"type": "http.request", "body": b"x" * 100, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": headers, "client": ("127.0.0.1", 5000), "server": ("testserver", 80)}
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], json.loads(body), reads


def test_upload_declared_over_max_size_is_refused_before_its_body_is_read(world):
    app = create_app(world.context(CoreLimits(max_size_upload=10)))
    auth = bearer()["Authorization"].encode()
    status, body, reads = _post_counting_reads(app, f"/upload/{world.account}", [
        (b"authorization", auth), (b"content-type", b"text/plain"), (b"content-length", b"100")])
    assert (status, body["type"], body["limit"], reads) == (400, LIMIT, "maxSizeUpload", 0)


def test_upload_streamed_past_max_size_is_cut_off(world):
    client = TestClient(create_app(world.context(CoreLimits(max_size_upload=10))))

    def chunks():
        yield b"x" * 8
        yield b"x" * 8

    response = client.post(f"/upload/{world.account}", content=chunks(), headers={
        **bearer(), "Content-Type": "text/plain"})
    assert (response.status_code, response.json()["limit"]) == (400, "maxSizeUpload")
    assert UPLOAD_BUCKET not in world.mailbox.blobs.list_buckets()   # nothing stored


class _HeldUploads(MemoryUploadRepository):
    """Uploads that wait until released, to hold maxConcurrentUpload's slots."""

    def __init__(self, world: World) -> None:
        super().__init__(world.mailbox.blobs)
        self.started, self.release = threading.Event(), threading.Event()

    def upload(self, user, content_type, data):   # type: ignore[no-untyped-def]
        self.started.set()
        assert self.release.wait(10)
        return super().upload(user, content_type, data)


def test_upload_past_max_concurrent_upload_is_refused_before_its_body_is_read(world):
    world.uploads = _HeldUploads(world)
    app = create_app(world.context(CoreLimits(max_concurrent_upload=1)))
    client = TestClient(app)
    first: dict[str, Any] = {}
    running = threading.Thread(target=lambda: first.update(response=client.post(
        f"/upload/{world.account}", content=b"one", headers={**bearer(), "Content-Type": "text/plain"})))
    running.start()
    try:
        assert world.uploads.started.wait(10)
        auth = bearer()["Authorization"].encode()
        status, body, reads = _post_counting_reads(app, f"/upload/{world.account}", [
            (b"authorization", auth), (b"content-type", b"text/plain"), (b"content-length", b"100")])
        assert (status, body["type"], body["limit"], reads) == (400, LIMIT, "maxConcurrentUpload", 0)
    finally:
        world.uploads.release.set()
        running.join(10)
    assert first["response"].status_code == 201


# ---------------------------------------------------------------- download

def test_download_of_a_message_is_the_whole_message(client, world):
    email = world.deliver(MIXED)
    response = download(client, email, type="message/rfc822", name="mail.eml")
    assert response.status_code == 200
    assert response.content == MIXED
    assert response.headers["content-type"] == "message/rfc822"
    assert response.headers["content-length"] == str(len(MIXED))
    assert response.headers["content-disposition"] == 'attachment; filename="mail.eml"'
    assert response.headers["cache-control"] == "private, immutable, max-age=31536000"


def test_download_of_a_part_given_by_email_get_is_its_decoded_body(client, world):
    email = world.deliver(MIXED)
    response = client.post("/jmap", headers=bearer(), json={
        "using": ["urn:ietf:params:jmap:core", "urn:ietf:params:jmap:mail"],
        "methodCalls": [["Email/get", {"accountId": world.account, "ids": [email],
                                       "properties": ["attachments"]}, "c"]]})
    attachment = response.json()["methodResponses"][0][1]["list"][0]["attachments"][0]
    got = download(client, attachment["blobId"], type=attachment["type"], name=attachment["name"])
    assert got.status_code == 200
    assert got.content == b"%PDF-1.4\n"
    assert int(got.headers["content-length"]) == attachment["size"]
    assert got.headers["content-type"] == "application/pdf"
    assert got.headers["content-disposition"] == 'attachment; filename="q.pdf"'


def test_download_takes_the_type_from_the_url_else_the_blobs(client, world):
    email = world.deliver(MIXED)
    assert download(client, f"{email}_1").headers["content-type"] == "text/plain"
    assert download(client, f"{email}_1", type="text/x-custom").headers["content-type"] == "text/x-custom"
    assert download(client, email, type="bad\u00e9type").headers["content-type"] == "application/octet-stream"


def test_a_non_ascii_name_is_sent_as_rfc_8187_filename(client, world):
    email = world.deliver(MIXED)
    response = download(client, email, name="résumé.eml")
    assert response.headers["content-disposition"] == "attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.eml"


def test_download_in_another_account_is_forbidden(client, world):
    email = world.deliver(MIXED)
    response = download(client, email, account=account_id(Username.of(OTHER)))
    assert response.status_code == 403
    assert response.json()["detail"] == "You cannot download in others accounts"


@pytest.mark.parametrize("blob_id", ["nope", "uploads-nope", "uploads-6f2a2d4e-0000-1000-8000-000000000000",
                                     "0d4e5f00-0000-1000-8000-000000000000", "{email}_99", "{email}_"])
def test_download_of_an_unknown_blob_is_not_found(client, world, blob_id):
    email = world.deliver(MIXED)
    response = download(client, blob_id.format(email=email))
    assert response.status_code == 404
    assert response.json() == {"type": "about:blank", "status": 404, "detail": "The resource could not be found"}


def test_another_users_message_is_not_found_until_its_mailbox_is_shared(client, world):
    email = world.deliver(MIXED)
    assert download(client, email, user=OTHER).status_code == 404
    world.mailbox.manager.set_rights(MailboxPath.of(USER, "INBOX"), OTHER, "l")
    assert download(client, email, user=OTHER).status_code == 404   # lookup is not read
    world.mailbox.manager.set_rights(MailboxPath.of(USER, "INBOX"), OTHER, "lr")
    shared = download(client, email, user=OTHER)
    assert (shared.status_code, shared.content) == (200, MIXED)


def test_download_without_credentials_is_unauthorized(client, world):
    email = world.deliver(MIXED)
    assert client.get(f"/download/{world.account}/{email}").status_code == 401
