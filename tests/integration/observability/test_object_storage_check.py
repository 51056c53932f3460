"""``ObjectStorage`` health on the stack's S3Proxy: what the probe of the default bucket reports."""

from __future__ import annotations

import uuid

import pytest

from mailserver.blob.s3 import S3Config, make_client
from mailserver.observability.checks import ObjectStorageHealthCheck
from mailserver.observability.health import HealthCheckRunner, Status
from tests.support.ports import unused_port

pytestmark = pytest.mark.integration


def _config(stack, **overrides) -> S3Config:
    values = dict(endpoint_url=stack.s3_endpoint, access_key=stack.s3_access_key, secret_key=stack.s3_secret_key,
                  region=stack.s3_region, connect_timeout=2.0, read_timeout=3.0, max_attempts=1)
    return S3Config(**(values | overrides))


def _status(check: ObjectStorageHealthCheck):
    runner = HealthCheckRunner([check], timeout=10)
    try:
        [result] = runner.run()
    finally:
        runner.close()
    return result


def test_an_existing_default_bucket_is_healthy(stack):
    config = _config(stack)
    client = make_client(config)
    bucket = f"health-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    try:
        assert _status(ObjectStorageHealthCheck(client, bucket)).status is Status.HEALTHY
    finally:
        client.delete_bucket(Bucket=bucket)


def test_a_default_bucket_not_created_yet_is_healthy(stack):
    # The blob store creates its bucket on the first write: a fresh deployment is not "down".
    config = _config(stack)
    assert _status(ObjectStorageHealthCheck(make_client(config), f"absent-{uuid.uuid4().hex[:12]}")).status \
        is Status.HEALTHY


def test_refused_credentials_are_unhealthy_with_the_cause(stack):
    config = _config(stack, secret_key="not-the-secret")
    result = _status(ObjectStorageHealthCheck(make_client(config), config.s3_bucket(config.default_bucket_name)))
    assert result.status is Status.UNHEALTHY
    assert "403" in result.cause or "Forbidden" in result.cause or "SignatureDoesNotMatch" in result.cause


def test_an_unreachable_store_is_unhealthy(stack):
    config = _config(stack, endpoint_url=f"http://127.0.0.1:{unused_port()}")   # nothing listens there
    result = _status(ObjectStorageHealthCheck(make_client(config), config.s3_bucket(config.default_bucket_name)))
    assert result.status is Status.UNHEALTHY
    assert "Could not connect" in result.cause
