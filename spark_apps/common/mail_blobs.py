"""Reading James's message blobs (header and body objects in the mail bucket) from executors.

The S3 settings travel with the procedure (a picklable ``S3Access``); each Python worker makes
one boto3 client per endpoint and reuses it. Lives outside the job modules on purpose: a job runs
as ``__main__`` and its globals are pickled by value, which a lock or a client cannot be.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_LOCK = threading.Lock()
_CLIENTS: dict[tuple[str, str | None], Any] = {}
POOL = 64   # HTTP connections per client: a boto3 client is thread-safe, the threads of a partition share it


@dataclass(frozen=True)
class S3Access:
    """What an executor needs to read the mail blobs, read from the driver's environment."""

    endpoint: str
    access_key: str | None
    secret_key: str | None = field(repr=False)
    region: str = "us-east-1"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> S3Access:
        if not env.get("S3_ENDPOINT"):
            raise ValueError("S3_ENDPOINT is not set: the message contents cannot be read")
        return cls(env["S3_ENDPOINT"], env.get("S3_ACCESS_KEY"), env.get("S3_SECRET_KEY"),
                   env.get("S3_REGION", "us-east-1"))

    def client(self) -> Any:
        from spark_apps.common.reports import s3_client

        key = (self.endpoint, self.access_key)
        with _LOCK:
            client = _CLIENTS.get(key)
            if client is None:
                client = _CLIENTS[key] = s3_client({
                    "S3_ENDPOINT": self.endpoint, "S3_ACCESS_KEY": self.access_key or "",
                    "S3_SECRET_KEY": self.secret_key or "", "S3_REGION": self.region}, max_pool_connections=POOL)
        return client


def mail_bucket(namespace: str | None, env: Mapping[str, str]) -> str:
    """The S3 bucket of the mail blobs as the server resolves its default bucket (James's
    ``BucketNameResolver``): the namespace (``--blob-bucket``, ``S3_DEFAULT_BUCKET``) as is, else
    ``default`` behind ``S3_BUCKET_PREFIX``."""
    namespace = namespace or env.get("S3_DEFAULT_BUCKET") or None
    return namespace if namespace else env.get("S3_BUCKET_PREFIX", "") + "default"


def read_prefix(client: Any, bucket: str, header_blob_id: str, body_blob_id: str, limit: int) -> bytes:
    """The header and the first body bytes, up to ``limit`` (the server's ``listeners.read_prefix`` on S3)."""
    header = client.get_object(Bucket=bucket, Key=header_blob_id)["Body"].read()
    remaining = max(0, limit - len(header))
    if remaining == 0:
        return header
    body = client.get_object(Bucket=bucket, Key=body_blob_id)["Body"]
    try:
        return header + body.read(remaining)
    finally:
        body.close()   # the rest of a large body is not needed
