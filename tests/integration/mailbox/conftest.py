"""Mailbox layer on the session keyspace and the real S3 server."""

from __future__ import annotations

import pytest

from mailserver.blob.s3 import S3BlobStore, S3Config
from mailserver.events.in_process import InProcessEventBus, RecordingListener
from mailserver.mailbox.wiring import cassandra_context


@pytest.fixture(scope="session")
def s3_blobs(stack, unique):
    config = S3Config(endpoint_url=stack.s3_endpoint, access_key=stack.s3_access_key,
                      secret_key=stack.s3_secret_key, region=stack.s3_region,
                      default_bucket=f"mailbox-{unique}")
    store = S3BlobStore(config)
    yield store
    store.delete_bucket(store.default_bucket)


@pytest.fixture
def mailbox_ctx(cassandra, s3_blobs):
    bus = InProcessEventBus()
    bus.register(RecordingListener())
    return cassandra_context(cassandra, s3_blobs, bus)
