"""The blob store contract on the real S3 server, plus James's S3 layout.

Every bucket of the session is named with a per-session prefix (the default bucket, never
prefixed as in James, gets a per-session name), and all of them are deleted at the end.
"""

from __future__ import annotations

import pytest

from mailserver.blob.api import BlobStoreError, BucketName
from mailserver.blob.s3 import S3BlobStore, S3Config
from tests.contract.blob_store_contract import BlobStoreContract
from tests.support.clients import s3_client

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def s3_config(stack, unique) -> S3Config:
    return S3Config(endpoint_url=stack.s3_endpoint, access_key=stack.s3_access_key, secret_key=stack.s3_secret_key,
                    region=stack.s3_region, bucket_prefix=f"t{unique}-", default_bucket=f"t{unique}-default")


@pytest.fixture(scope="module")
def s3_store(s3_config):
    store = S3BlobStore(s3_config)
    yield store
    for bucket in store.list_buckets():
        store.delete_bucket(bucket)
    assert store.list_buckets() == [store.default_bucket]


class TestS3BlobStore(BlobStoreContract):
    @pytest.fixture
    def make_blob_store(self, s3_config, s3_store):
        """Stores on the same buckets as ``s3_store`` (so cleaned up with its), sharing its client."""
        def make(ids) -> S3BlobStore:
            return S3BlobStore(s3_config, ids=ids, client=s3_store.client)
        return make


def test_object_key_is_the_blob_id_in_the_prefixed_bucket(stack, s3_store, s3_config):
    bucket = BucketName("layout")
    blob_id = s3_store.save(bucket, b"Subject: layout\r\n\r\n")
    raw = s3_client(stack)
    got = raw.get_object(Bucket=f"{s3_config.bucket_prefix}layout", Key=str(blob_id))["Body"].read()
    assert got == b"Subject: layout\r\n\r\n"
    assert BucketName("layout") in s3_store.list_buckets()
    s3_store.delete_bucket(bucket)
    names = [b["Name"] for b in raw.list_buckets()["Buckets"]]
    assert f"{s3_config.bucket_prefix}layout" not in names


def test_the_default_bucket_is_not_prefixed(stack, s3_store, s3_config):
    s3_store.save(s3_store.default_bucket, b"namespace")
    names = [b["Name"] for b in s3_client(stack).list_buckets()["Buckets"]]
    assert s3_config.default_bucket in names


def test_buckets_of_other_prefixes_are_not_listed(stack, s3_store, s3_config):
    other = S3BlobStore(S3Config(stack.s3_endpoint, stack.s3_access_key, stack.s3_secret_key,
                                 bucket_prefix=f"o{s3_config.bucket_prefix}", default_bucket=s3_config.default_bucket))
    try:
        other.save("foreign", b"x")
        assert BucketName("foreign") not in s3_store.list_buckets()
        assert BucketName("foreign") in other.list_buckets()
    finally:
        other.delete_bucket("foreign")


def test_unreachable_server_is_a_blob_store_error(s3_config):
    dead = S3BlobStore(S3Config("http://127.0.0.1:9", "k", "s", connect_timeout=1, max_attempts=1))
    with pytest.raises(BlobStoreError, match="S3 failed"):
        dead.save("unreachable", b"x")
    with pytest.raises(BlobStoreError):
        dead.read("unreachable", "abc")


def test_refused_credentials_are_a_blob_store_error_naming_the_s3_code(stack, s3_config):
    """Saves, reads, existence checks and deletes go through DirectS3: S3's refusal reaches the caller as the
    port's error (a HEAD's answer has no body, so only its status names it)."""
    wrong = S3BlobStore(S3Config(stack.s3_endpoint, stack.s3_access_key, "not-the-secret",
                                 default_bucket=s3_config.default_bucket, max_attempts=1))
    with pytest.raises(BlobStoreError, match=r"SignatureDoesNotMatch|AccessDenied|InvalidAccessKeyId"):
        wrong.save(wrong.default_bucket, b"x")
    with pytest.raises(BlobStoreError, match=r"SignatureDoesNotMatch|AccessDenied|InvalidAccessKeyId"):
        wrong.delete(wrong.default_bucket, "some-blob")
    with pytest.raises(BlobStoreError, match=r"SignatureDoesNotMatch|AccessDenied|InvalidAccessKeyId"):
        wrong.read(wrong.default_bucket, "some-blob")
    with pytest.raises(BlobStoreError, match=r"403"):
        wrong.exists(wrong.default_bucket, "some-blob")
