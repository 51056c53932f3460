"""Where a job's JSON report goes: S3 (one object per job and run), and one ``REPORT`` line on stdout.

The key is deterministic (``<prefix>/<run_key>/<job>.json``) so the Airflow task after the
Spark job finds the report without XCom plumbing through spark-submit, and an operator finds
it from the DAG run id alone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_BUCKET = "maintenance-reports"


@dataclass(frozen=True)
class ReportLocation:
    bucket: str
    key: str

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.key}"

    @classmethod
    def for_run(cls, job: str, run_key: str, bucket: str | None = None) -> ReportLocation:
        safe_run = run_key.replace("/", "__")
        bucket = bucket or os.environ.get("MAINTENANCE_REPORT_BUCKET", DEFAULT_BUCKET)
        return cls(bucket, f"reports/{safe_run}/{job}.json")


def s3_client(env: Mapping[str, str] | None = None, *, max_pool_connections: int = 10) -> Any:
    """boto3 client from the platform's S3_* variables (path-style, as S3Proxy and MinIO want).
    ``max_pool_connections`` (botocore's default 10): the threads that share the client at most."""
    import boto3
    from botocore.config import Config

    env = os.environ if env is None else env
    endpoint = env.get("S3_ENDPOINT")
    if not endpoint:
        raise RuntimeError("S3_ENDPOINT is not set: the report has nowhere to go")
    return boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=env.get("S3_ACCESS_KEY"),
        aws_secret_access_key=env.get("S3_SECRET_KEY"), region_name=env.get("S3_REGION", "us-east-1"),
        config=Config(s3={"addressing_style": "path"}, request_checksum_calculation="when_required",
                      response_checksum_validation="when_required", max_pool_connections=max_pool_connections))


def write_report(report: Mapping[str, Any], location: ReportLocation, client: Any | None = None) -> None:
    client = client or s3_client()
    try:
        client.head_bucket(Bucket=location.bucket)
    except client.exceptions.ClientError:
        try:
            client.create_bucket(Bucket=location.bucket)
        except (client.exceptions.BucketAlreadyOwnedByYou, client.exceptions.BucketAlreadyExists):
            pass   # another job's first report created it between our two calls
    body = json.dumps(report, indent=2, sort_keys=True, default=str).encode()
    client.put_object(Bucket=location.bucket, Key=location.key, Body=body, ContentType="application/json")


def read_report(location: ReportLocation, client: Any | None = None) -> dict[str, Any]:
    client = client or s3_client()
    return json.loads(client.get_object(Bucket=location.bucket, Key=location.key)["Body"].read())
