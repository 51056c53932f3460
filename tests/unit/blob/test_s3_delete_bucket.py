"""Deleting a bucket empties it again when a save lands meanwhile (BucketNotEmpty), three times at most."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from mailserver.blob.api import BlobStoreError
from mailserver.blob.s3 import S3BlobStore, S3Config


class BusyBucket:
    """An S3 client of one bucket into which a concurrent save lands before each of the first ``saves`` deletes."""

    def __init__(self, keys: list[str], saves: int) -> None:
        self.keys, self.saves = list(keys), saves
        self.delete_bucket_calls = 0
        self.deleted = False

    def get_paginator(self, operation: str) -> Any:
        client = self

        class Pages:
            def paginate(self, Bucket: str) -> list[dict[str, Any]]:
                return [{"Contents": [{"Key": key} for key in client.keys]}]

        return Pages()

    def delete_objects(self, Bucket: str, Delete: dict[str, Any]) -> dict[str, Any]:
        gone = {o["Key"] for o in Delete["Objects"]}
        self.keys = [key for key in self.keys if key not in gone]
        return {}

    def delete_bucket(self, Bucket: str) -> None:
        self.delete_bucket_calls += 1
        if self.saves:
            self.saves -= 1
            self.keys.append(f"saved-meanwhile-{self.saves}")
        if self.keys:
            raise ClientError({"Error": {"Code": "BucketNotEmpty", "Message": "not empty"}}, "DeleteBucket")
        self.deleted = True


def store_on(client: BusyBucket) -> S3BlobStore:
    return S3BlobStore(S3Config("http://s3.test", "k", "s"), client=client)


def test_a_bucket_written_to_meanwhile_is_emptied_again_and_deleted():
    client = BusyBucket(["a", "b"], saves=2)
    store_on(client).delete_bucket("default")
    assert client.deleted and client.delete_bucket_calls == 3 and client.keys == []


def test_a_bucket_still_written_to_after_three_attempts_is_an_error():
    client = BusyBucket(["a"], saves=3)
    with pytest.raises(BlobStoreError, match="BucketNotEmpty"):
        store_on(client).delete_bucket("default")
    assert client.delete_bucket_calls == 3 and not client.deleted
