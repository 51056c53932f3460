"""A job's report reaches S3 even when another job creates the reports bucket at the same moment."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.stub import Stubber

from spark_apps.common.reports import ReportLocation, write_report


def client_and_stub():
    client = boto3.client("s3", region_name="us-east-1", endpoint_url="http://s3.invalid",
                          aws_access_key_id="k", aws_secret_access_key="s")
    return client, Stubber(client)


def test_a_bucket_created_by_another_job_between_check_and_create_still_gets_the_report():
    client, stub = client_and_stub()
    location = ReportLocation.for_run("some-job", "manual__2026-11-26T15:00:00+00:00")
    stub.add_client_error("head_bucket", http_status_code=404, service_error_code="404")
    stub.add_client_error("create_bucket", http_status_code=409, service_error_code="BucketAlreadyOwnedByYou")
    stub.add_response("put_object", {}, {"Bucket": location.bucket, "Key": location.key,
                                         "Body": json.dumps({"outcome": "COMPLETED"}, indent=2,
                                                            sort_keys=True).encode(),
                                         "ContentType": "application/json"})
    with stub:
        write_report({"outcome": "COMPLETED"}, location, client)
    stub.assert_no_pending_responses()


def test_any_other_failure_to_create_the_bucket_is_raised():
    client, stub = client_and_stub()
    location = ReportLocation.for_run("some-job", "run")
    stub.add_client_error("head_bucket", http_status_code=404, service_error_code="404")
    stub.add_client_error("create_bucket", http_status_code=403, service_error_code="AccessDenied")
    with stub, pytest.raises(client.exceptions.ClientError, match="AccessDenied"):
        write_report({"outcome": "COMPLETED"}, location, client)
