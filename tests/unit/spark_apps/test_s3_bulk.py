"""Bulk S3 deletes: key chunks, the Content-MD5 signing hook, and what DeleteObjects answers mean."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest
from botocore.awsrequest import AWSRequest
from botocore.exceptions import ClientError

from spark_apps.common.s3_bulk import (
    MAX_KEYS,
    BulkDeleteError,
    content_md5_instead_of_checksum,
    delete_keys,
    drop_bucket,
    key_chunks,
)


class FakeS3:
    """Records DeleteObjects requests; answers with the given errors or raises the given code."""

    def __init__(self, errors: list[dict[str, str]] | None = None, code: str | None = None) -> None:
        self.requests: list[tuple[str, list[str]]] = []
        self.errors, self.code = errors, code

    def delete_objects(self, Bucket: str, Delete: dict[str, Any]) -> dict[str, Any]:
        if self.code:
            raise ClientError({"Error": {"Code": self.code, "Message": self.code}}, "DeleteObjects")
        assert Delete["Quiet"] is True
        self.requests.append((Bucket, [o["Key"] for o in Delete["Objects"]]))
        return {"Errors": self.errors} if self.errors else {}


class BusyBucket(FakeS3):
    """One bucket into which a write lands before each of the first ``writes`` DeleteBucket requests."""

    def __init__(self, keys: list[str], writes: int) -> None:
        super().__init__()
        self.keys, self.writes, self.delete_bucket_calls = list(keys), writes, 0

    def get_paginator(self, operation: str) -> Any:
        bucket = self

        class Pages:
            def paginate(self, Bucket: str) -> list[dict[str, Any]]:
                return [{"Contents": [{"Key": key} for key in bucket.keys]}]

        return Pages()

    def delete_objects(self, Bucket: str, Delete: dict[str, Any]) -> dict[str, Any]:
        gone = {o["Key"] for o in Delete["Objects"]}
        self.keys = [key for key in self.keys if key not in gone]
        return super().delete_objects(Bucket, Delete)

    def delete_bucket(self, Bucket: str) -> None:
        self.delete_bucket_calls += 1
        if self.writes:
            self.writes -= 1
            self.keys.append(f"written-meanwhile-{self.writes}")
        if self.keys:
            raise ClientError({"Error": {"Code": "BucketNotEmpty", "Message": "not empty"}}, "DeleteBucket")


def test_a_bucket_written_to_meanwhile_is_listed_again_then_dropped():
    bucket = BusyBucket(["a", "b"], writes=2)
    assert drop_bucket(bucket, "b") == 4   # the two keys, then each write that landed meanwhile
    assert bucket.delete_bucket_calls == 3 and bucket.keys == []


def test_a_bucket_still_written_to_after_three_attempts_raises():
    bucket = BusyBucket(["a"], writes=3)
    with pytest.raises(ClientError, match="BucketNotEmpty"):
        drop_bucket(bucket, "b")
    assert bucket.delete_bucket_calls == 3


def test_keys_go_at_most_a_thousand_a_request_in_order():
    keys = [f"k{n}" for n in range(2500)]
    assert [len(c) for c in key_chunks(keys)] == [1000, 1000, 500]
    s3 = FakeS3()
    assert delete_keys(s3, "b", keys) is True
    assert [len(k) for _, k in s3.requests] == [1000, 1000, 500]
    assert [k for _, chunk in s3.requests for k in chunk] == keys
    assert list(key_chunks([])) == []
    for bad in (0, MAX_KEYS + 1):
        with pytest.raises(ValueError):
            list(key_chunks(keys, bad))


def test_a_bucket_already_gone_means_its_objects_are_gone_and_other_errors_raise():
    assert delete_keys(FakeS3(code="NoSuchBucket"), "gone", ["k"]) is False
    with pytest.raises(ClientError):
        delete_keys(FakeS3(code="AccessDenied"), "b", ["k"])
    with pytest.raises(BulkDeleteError, match="1 objects of b not deleted"):
        delete_keys(FakeS3(errors=[{"Key": "k", "Code": "InternalError"}]), "b", ["k"])


def test_the_request_is_signed_with_content_md5_instead_of_a_flexible_checksum():
    body = b"<Delete><Object><Key>k</Key></Object><Quiet>true</Quiet></Delete>"
    request = AWSRequest(method="POST", url="http://s3.local/b?delete", data=body,
                         headers={"x-amz-checksum-crc32": "AAAAAA==", "X-Amz-Sdk-Checksum-Algorithm": "CRC32",
                                  "Content-Type": "application/xml"})
    content_md5_instead_of_checksum(request)
    assert request.headers["Content-MD5"] == base64.b64encode(hashlib.md5(body).digest()).decode()  # noqa: S324
    assert not [h for h in request.headers if "checksum" in h.lower()]
    assert request.headers["Content-Type"] == "application/xml"
