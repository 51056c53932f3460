"""S3 adapter configuration and bucket naming, without a server."""

from __future__ import annotations

import pytest

from mailserver.blob.api import BucketName
from mailserver.blob.s3 import S3BlobStore, S3Config

ENV = {"S3_ENDPOINT": "http://127.0.0.1:9000", "S3_ACCESS_KEY": "key", "S3_SECRET_KEY": "very-secret",
       "S3_REGION": "eu-west-3"}


def test_from_env():
    config = S3Config.from_env(ENV)
    assert (config.endpoint_url, config.access_key, config.secret_key, config.region) == \
        ("http://127.0.0.1:9000", "key", "very-secret", "eu-west-3")
    assert (config.bucket_prefix, config.default_bucket, config.default_bucket_name) == ("", None, "default")
    assert "very-secret" not in repr(config)


def test_from_env_defaults_and_overrides():
    env = {k: v for k, v in ENV.items() if k != "S3_REGION"} | {"S3_BUCKET_PREFIX": "prod-"}
    config = S3Config.from_env(env, default_bucket="mail")
    assert (config.region, config.bucket_prefix, config.default_bucket) == ("us-east-1", "prod-", "mail")


def test_from_env_names_what_is_missing():
    with pytest.raises(ValueError, match="S3_ACCESS_KEY, S3_SECRET_KEY"):
        S3Config.from_env({"S3_ENDPOINT": "http://x"})


@pytest.mark.parametrize("kwargs", [{"bucket_prefix": "Bad_"}, {"default_bucket": "No"}, {"part_size": 1024},
                                    {"max_concurrency": 0}])
def test_invalid_config(kwargs):
    with pytest.raises(ValueError):
        S3Config("http://x", "k", "s", **kwargs)


def test_prefix_applies_to_every_bucket_but_the_default_one():
    store = S3BlobStore(S3Config("http://x", "k", "s", bucket_prefix="p1-", default_bucket="mail-default"),
                        client=object())
    assert store.resolve(BucketName("deleted-messages-2026-11-01")) == "p1-deleted-messages-2026-11-01"
    assert store.resolve(store.default_bucket) == "mail-default"  # James's namespace: never prefixed
    assert store.unresolve("p1-abc") == BucketName("abc")
    assert store.unresolve("mail-default") == store.default_bucket
    assert store.unresolve("other-abc") is None
    with pytest.raises(ValueError, match="prefix 'p1-'"):
        store.read("x" * 62, "blob")


def test_without_a_namespace_the_default_bucket_is_prefixed_as_james_resolves_it():
    # James's BucketNameResolver: only objectstorage.namespace escapes the prefix; BucketName.DEFAULT does not.
    store = S3BlobStore(S3Config("http://x", "k", "s", bucket_prefix="p1-"), client=object())
    assert store.default_bucket == BucketName("default")
    assert store.resolve(store.default_bucket) == "p1-default"
    assert store.resolve(BucketName("deleted-messages-2026-11-01")) == "p1-deleted-messages-2026-11-01"
    assert store.unresolve("p1-default") == store.default_bucket
    assert store.unresolve("default") is None


def test_an_empty_namespace_variable_is_no_namespace():
    assert S3Config.from_env({**ENV, "S3_DEFAULT_BUCKET": ""}).default_bucket is None


def test_the_spark_jobs_read_the_mail_bucket_the_server_resolves():
    from spark_apps.common.mail_blobs import mail_bucket

    assert mail_bucket(None, {"S3_BUCKET_PREFIX": "p1-"}) == "p1-default"
    assert mail_bucket(None, {}) == "default"
    assert mail_bucket(None, {"S3_BUCKET_PREFIX": "p1-", "S3_DEFAULT_BUCKET": "mail"}) == "mail"
    assert mail_bucket("other", {"S3_BUCKET_PREFIX": "p1-", "S3_DEFAULT_BUCKET": "mail"}) == "other"


def test_uploads_hold_a_bounded_number_of_parts():
    store = S3BlobStore(S3Config("http://x", "k", "s", max_concurrency=3), client=object())
    assert store.transfer_config.max_in_memory_upload_chunks == 3
    assert store.transfer_config.multipart_chunksize == store.config.part_size


def test_connection_pool_is_sized_for_many_threads_and_configurable():
    from mailserver.blob.s3 import make_client

    assert make_client(S3Config.from_env(ENV)).meta.config.max_pool_connections == 64
    tuned = S3Config.from_env({**ENV, "S3_MAX_POOL_CONNECTIONS": "128"})
    assert make_client(tuned).meta.config.max_pool_connections == 128
    with pytest.raises(ValueError, match="max_pool_connections"):
        S3Config.from_env({**ENV, "S3_MAX_POOL_CONNECTIONS": "0"})


def test_puts_send_their_body_without_waiting_for_100_continue():
    import io

    from mailserver.blob.s3 import make_client

    class Captured(Exception):
        pass

    sent = {}

    def capture(request, **_):
        sent.update(request.headers)
        raise Captured   # no network: the request as it would go out is all this test needs

    client = make_client(S3Config.from_env(ENV))
    client.meta.events.register("before-send.s3.PutObject", capture)
    with pytest.raises(Captured):
        client.put_object(Bucket="b", Key="k", Body=io.BytesIO(b"mail body"))
    assert sent and "Expect" not in sent
