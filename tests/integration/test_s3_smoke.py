"""The S3 server speaks S3: bucket and object lifecycle through boto3 with path-style addressing."""

from __future__ import annotations

import hashlib

import pytest

from tests.support.clients import s3_client

pytestmark = pytest.mark.integration


def test_bucket_put_get_list_delete(stack, unique):
    s3 = s3_client(stack)
    bucket = f"smoke-{unique}"
    body = b"Subject: hello\r\n\r\n" + bytes(range(256)) * 64
    s3.create_bucket(Bucket=bucket)
    try:
        s3.put_object(Bucket=bucket, Key="blobs/a", Body=body)
        s3.put_object(Bucket=bucket, Key="blobs/b", Body=b"second")

        got = s3.get_object(Bucket=bucket, Key="blobs/a")["Body"].read()
        listed = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="blobs/")["Contents"])

        assert hashlib.sha256(got).digest() == hashlib.sha256(body).digest()
        assert listed == ["blobs/a", "blobs/b"]

        s3.delete_object(Bucket=bucket, Key="blobs/a")
        remaining = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
        assert remaining == ["blobs/b"]
        with pytest.raises(s3.exceptions.NoSuchKey):
            s3.get_object(Bucket=bucket, Key="blobs/a")
    finally:
        for obj in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
            s3.delete_object(Bucket=bucket, Key=obj["Key"])
        s3.delete_bucket(Bucket=bucket)
    assert bucket not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
