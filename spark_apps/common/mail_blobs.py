"""Reading James's message blobs (header and body objects in the mail bucket) from executors.

The S3 settings travel with the procedure (a picklable ``S3Access``); each Python worker makes one
client per endpoint and reuses it. The blobs are read through the server's ``DirectS3`` (GETs signed
by botocore's SigV4 signer, sent on urllib3): a reindex or a fast-view recomputation makes one or two
GETs a message, and through a boto3 client a GET cost 1.6 ms of CPU against 0.7 ms (build machine,
``docs/benchmarks.md``). Everything else (listings, bulk deletes) keeps the boto3 client. Lives
outside the job modules on purpose: a job runs as ``__main__`` and its globals are pickled by value,
which a lock or a client cannot be.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mailserver.blob.s3_direct import DirectS3

_LOCK = threading.Lock()
_CLIENTS: dict[tuple[str, str | None], Any] = {}
_READERS: dict[tuple[str, str | None], DirectS3] = {}
POOL = 64   # HTTP connections per client: a client is thread-safe, the threads of a partition share it
READ_ATTEMPTS = 5   # a GET refused by a busy S3 (500/502/503/504) or cut off is tried again, as boto3 would


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

    def reader(self) -> DirectS3:
        """The worker's ``DirectS3`` for this endpoint: the blobs' GETs at under half of boto3's CPU."""
        from mailserver.blob.s3_direct import DirectS3

        key = (self.endpoint, self.access_key)
        with _LOCK:
            reader = _READERS.get(key)
            if reader is None:
                reader = _READERS[key] = DirectS3(
                    self.endpoint, self.access_key or "", self.secret_key or "", self.region, pool_size=POOL,
                    connect_timeout=10.0, read_timeout=60.0, max_attempts=READ_ATTEMPTS)
        return reader


def mail_bucket(namespace: str | None, env: Mapping[str, str]) -> str:
    """The S3 bucket of the mail blobs as the server resolves its default bucket (James's
    ``BucketNameResolver``): the namespace (``--blob-bucket``, ``S3_DEFAULT_BUCKET``) as is, else
    ``default`` behind ``S3_BUCKET_PREFIX``."""
    namespace = namespace or env.get("S3_DEFAULT_BUCKET") or None
    return namespace if namespace else env.get("S3_BUCKET_PREFIX", "") + "default"


def read_object(reader: DirectS3, bucket: str, key: str, limit: int = -1) -> bytes:
    """An object's content (its first ``limit`` bytes when given) through a ``DirectS3``."""
    body = reader.get_object(bucket, key)
    try:
        return body.read(limit)
    finally:
        body.close()   # read to the end: the connection is reused; left part-way: closed


def read_content(reader: DirectS3, bucket: str, header_blob_id: str, body_blob_id: str) -> bytes:
    """The whole message: header object then body object (the server's ``read_message``)."""
    return read_object(reader, bucket, header_blob_id) + read_object(reader, bucket, body_blob_id)


def read_prefix(reader: DirectS3, bucket: str, header_blob_id: str, body_blob_id: str, limit: int) -> bytes:
    """The header and the first body bytes, up to ``limit`` (the server's ``listeners.read_prefix`` on S3)."""
    header = read_object(reader, bucket, header_blob_id)
    remaining = max(0, limit - len(header))
    if remaining == 0:
        return header
    return header + read_object(reader, bucket, body_blob_id, remaining)   # the rest of a large body is not needed
