"""Mailbox layer on the session keyspace and the real S3 server."""

from __future__ import annotations

import pytest

from mailserver.events.in_process import InProcessEventBus, RecordingListener
from mailserver.mailbox.wiring import cassandra_context


@pytest.fixture
def mailbox_ctx(cassandra, s3_blobs):
    bus = InProcessEventBus()
    bus.register(RecordingListener())
    return cassandra_context(cassandra, s3_blobs, bus)
