"""Deleting S3 objects in bulk: ``DeleteObjects`` (up to 1,000 keys a request) and whole buckets.

botocore signs ``DeleteObjects`` with a CRC32 checksum header, which S3Proxy refuses
(``NotImplemented``); S3 has always accepted the ``Content-MD5`` header instead, and S3Proxy too,
so the clients used here send that (:func:`use_content_md5`). A bucket that is already gone counts
as deleted: its objects are gone with it (an earlier, interrupted run or James's own task).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator, Sequence
from typing import Any

from tenacity import retry, retry_if_exception, stop_after_attempt

from spark_apps.common.throttle import RateLimiter

MAX_KEYS = 1000   # S3's limit for one DeleteObjects request
_HOOK_ID = "mailplatform-delete-objects-content-md5"


class BulkDeleteError(RuntimeError):
    """S3 answered a DeleteObjects request with per-key errors: those objects are still there."""


def content_md5_instead_of_checksum(request: Any, **_: Any) -> None:
    """botocore ``before-sign`` hook: the request's flexible-checksum headers replaced by ``Content-MD5``."""
    for header in list(request.headers.keys()):
        name = header.lower()
        if name.startswith("x-amz-checksum-") or name == "x-amz-sdk-checksum-algorithm":
            del request.headers[header]
    body = request.body or b""
    if isinstance(body, str):
        body = body.encode()
    request.headers["Content-MD5"] = base64.b64encode(hashlib.md5(body).digest()).decode()  # noqa: S324


def use_content_md5(client: Any) -> Any:
    """The client, its DeleteObjects requests sent with ``Content-MD5`` (registered once per client)."""
    client.meta.events.register("before-sign.s3.DeleteObjects", content_md5_instead_of_checksum,
                                unique_id=_HOOK_ID)
    return client


def key_chunks(keys: Sequence[str], size: int = MAX_KEYS) -> Iterator[Sequence[str]]:
    """Pure: ``keys`` in order, ``size`` at a time (S3's request limit at most)."""
    if not 1 <= size <= MAX_KEYS:
        raise ValueError(f"a DeleteObjects request holds 1 to {MAX_KEYS} keys")
    for start in range(0, len(keys), size):
        yield keys[start:start + size]


def _code(exc: BaseException) -> str:
    return getattr(exc, "response", {}).get("Error", {}).get("Code", "")


def delete_keys(client: Any, bucket: str, keys: Sequence[str]) -> bool:
    """Delete ``keys`` of ``bucket``, 1,000 a request; False when the bucket is gone (so are they).

    A missing key is no error (S3 deletes are idempotent); any per-key error raises ``BulkDeleteError``."""
    from botocore.exceptions import ClientError

    for chunk in key_chunks(keys):
        try:
            response = client.delete_objects(
                Bucket=bucket, Delete={"Objects": [{"Key": key} for key in chunk], "Quiet": True})
        except ClientError as exc:
            if _code(exc) == "NoSuchBucket":
                return False
            raise
        if response.get("Errors"):
            raise BulkDeleteError(f"{len(response['Errors'])} objects of {bucket} not deleted: "
                                  f"{response['Errors'][:3]}")
    return True


def drop_bucket(client: Any, bucket: str, limiter: RateLimiter | None = None) -> int:
    """Delete what is left in ``bucket`` (listed, deleted a page at a time), then the bucket itself.

    Returns how many objects were left in it (0 for a bucket already gone)."""
    from botocore.exceptions import ClientError

    left = 0

    # Not empty: written to after the listing; list it again.
    @retry(retry=retry_if_exception(lambda exc: _code(exc) == "BucketNotEmpty"), stop=stop_after_attempt(3),
           reraise=True)
    def empty_and_delete() -> None:
        nonlocal left
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            keys = [obj["Key"] for obj in page.get("Contents", [])]
            if keys:
                if limiter is not None:
                    limiter.acquire(len(keys))
                delete_keys(client, bucket, keys)
                left += len(keys)
        client.delete_bucket(Bucket=bucket)

    try:
        empty_and_delete()
    except ClientError as exc:
        if _code(exc) != "NoSuchBucket":
            raise
    return left
