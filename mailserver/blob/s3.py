"""The blob store on S3 (James's ``S3BlobStoreDAO``), with boto3.

Layout as James (``BucketNameResolver``): one S3 bucket per ``BucketName``, ``bucket_prefix`` +
name, except James's namespace (``default_bucket`` when set, ``objectstorage.namespace``), which
is the default bucket and is never prefixed; without a namespace the default bucket is
``default``, prefixed like any other. The object key is the blob id.
Buckets are created lazily: a save into a missing bucket creates it and replays the upload.

Memory: the input is spooled (1 MiB in memory, then a temporary file). Content smaller than a
part goes in one PUT streamed from the spool; larger content goes through ``upload_fileobj``
as a multipart upload. s3transfer copies each part of a file object into memory, so the parts
held at once are bounded: ``max_concurrency`` uploading plus one being read, i.e. 15 MiB with
the defaults (5 MiB parts, 2 at a time), whatever the size of the message; the peak RSS growth
measured for a 50 MB message is 20-26 MiB (tests/integration/blob/test_s3_large_blob_memory.py).
Reads stream the response body (under 1 MiB of growth for the same message).

Saves of content up to 1 MiB, reads, existence checks and deletes go through ``DirectS3`` when
an endpoint is configured: the same signed requests for half the CPU (``s3_direct.py``).

S3Proxy (the local stack) needs path-style addressing and no checksum headers beyond what an
operation requires; it also refuses multi-object delete, so bucket deletion falls back to
deleting object by object.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
import urllib3
from boto3.exceptions import Boto3Error
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from botocore.handlers import add_expect_header
from tenacity import retry, retry_if_exception, stop_after_attempt

from mailserver.settings import S3Settings

from .api import DEFAULT_BUCKET, BlobId, BlobIdFactory, BlobNotFound, BlobStore, BlobStoreError, BlobStream, BucketName
from .s3_direct import DirectS3, S3Error
from .spool import Spooled

MiB = 1024 * 1024
DIRECT_PUT_MAX = MiB   # what the spool holds in memory: a PUT this small goes through DirectS3
_NOT_FOUND = {"404", "NoSuchKey", "NotFound", "NoSuchBucket"}
_PREFIX = re.compile(r"^[a-z0-9.-]*$")


@dataclass(frozen=True)
class S3Config:
    endpoint_url: str | None  # None: AWS itself
    access_key: str | None
    secret_key: str | None = field(repr=False)
    region: str = "us-east-1"
    bucket_prefix: str = ""
    default_bucket: str | None = None   # James's objectstorage.namespace; None: "default", prefixed
    part_size: int = 5 * MiB  # S3's smallest part: the least memory per part in flight
    max_concurrency: int = 2
    connect_timeout: float = 10.0
    read_timeout: float = 60.0
    max_attempts: int = 3
    # One client is shared by every spooler thread and the SMTP intake: a pool smaller than the
    # threads using it discards and reopens connections under load (seen at 4+ SMTP sessions).
    max_pool_connections: int = 64

    def __post_init__(self) -> None:
        if self.default_bucket is not None:
            BucketName.of(self.default_bucket)
        if not _PREFIX.match(self.bucket_prefix):
            raise ValueError(f"invalid bucket prefix {self.bucket_prefix!r}: lowercase letters, digits, '.', '-'")
        if self.part_size < 5 * MiB:
            raise ValueError("part_size must be at least 5 MiB (S3's smallest multipart part)")
        if self.max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        if self.max_pool_connections < 1:
            raise ValueError("max_pool_connections must be at least 1")

    @property
    def default_bucket_name(self) -> str:
        """The default bucket's name (before resolution): the namespace, or James's ``default``."""
        return self.default_bucket or DEFAULT_BUCKET

    def s3_bucket(self, bucket: str) -> str:
        """James's ``BucketNameResolver.resolve``: the namespace as is, any other bucket prefixed."""
        return bucket if bucket == self.default_bucket else self.bucket_prefix + bucket

    def bucket_name(self, s3_bucket: str) -> str | None:
        """``BucketNameResolver.unresolve``: the bucket an S3 bucket holds, None when not one of ours."""
        if s3_bucket == self.default_bucket:
            return s3_bucket
        return s3_bucket[len(self.bucket_prefix):] if s3_bucket.startswith(self.bucket_prefix) else None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> S3Config:
        """From ``S3_ENDPOINT``, ``S3_ACCESS_KEY``, ``S3_SECRET_KEY``, ``S3_REGION`` (and the optional
        ``S3_BUCKET_PREFIX``, ``S3_DEFAULT_BUCKET``, ``S3_MAX_POOL_CONNECTIONS``); keyword arguments win
        over the environment."""
        s = S3Settings.from_env(env)
        values: dict[str, Any] = {"endpoint_url": s.endpoint, "access_key": s.access_key, "secret_key": s.secret_key,
                                  "region": s.region, "bucket_prefix": s.bucket_prefix,
                                  "default_bucket": s.default_bucket or None,
                                  "max_pool_connections": s.max_pool_connections,
                                  **overrides}
        missing = [variable for key, variable in (("endpoint_url", "S3_ENDPOINT"), ("access_key", "S3_ACCESS_KEY"),
                                                  ("secret_key", "S3_SECRET_KEY")) if not values[key]]
        if missing:
            raise ValueError("S3 configuration incomplete: set " + ", ".join(missing))
        return cls(**values)


def make_client(config: S3Config) -> Any:
    # A session per client: boto3's default session is not thread-safe to create clients from.
    client = boto3.session.Session().client(
        "s3", endpoint_url=config.endpoint_url, region_name=config.region,
        aws_access_key_id=config.access_key, aws_secret_access_key=config.secret_key,
        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                      retries={"max_attempts": config.max_attempts, "mode": "standard"},
                      connect_timeout=config.connect_timeout, read_timeout=config.read_timeout,
                      max_pool_connections=max(config.max_pool_connections, 2 * config.max_concurrency),
                      request_checksum_calculation="when_required",
                      response_checksum_validation="when_required",
                      # Our requests are built from validated BucketName/BlobId values; botocore's
                      # own validation of every request's parameters is CPU spent on each of them.
                      parameter_validation=False))
    # botocore asks for "Expect: 100-continue" on every PUT with a file-like body, then waits for the
    # interim reply before sending it: a round trip per blob written, for mail-sized bodies that cost
    # less to send than to ask about (a refused request still fails, after its body was sent).
    client.meta.events.unregister("before-call.s3", add_expect_header)
    return client


def _transfer_config(config: S3Config) -> TransferConfig:
    transfer = TransferConfig(multipart_threshold=config.part_size, multipart_chunksize=config.part_size,
                              max_concurrency=config.max_concurrency, preferred_transfer_client="classic")
    # s3transfer copies each part of a file object into memory: bound how many are held at once.
    transfer.max_in_memory_upload_chunks = config.max_concurrency
    return transfer


def _code(exc: ClientError | S3Error) -> str:
    if isinstance(exc, S3Error):
        return exc.code
    return str(exc.response.get("Error", {}).get("Code", ""))


@contextmanager
def _translated(what: str) -> Iterator[None]:
    """botocore/boto3 failures become BlobStoreError, so callers depend on the port only."""
    try:
        yield
    except (ClientError, BotoCoreError, Boto3Error, S3Error, urllib3.exceptions.HTTPError) as exc:
        raise BlobStoreError(f"S3 failed {what}: {exc}") from exc


class _Body:
    """The response body of a GET, read n bytes at a time, with the port's exceptions."""

    def __init__(self, body: Any, what: str) -> None:
        self._body, self._what = body, what

    def read(self, size: int = -1) -> bytes:
        with _translated(self._what):
            return self._body.read() if size < 0 else self._body.read(size)

    def close(self) -> None:
        self._body.close()


class S3BlobStore(BlobStore):
    def __init__(self, config: S3Config, *, deduplication: bool = False, ids: BlobIdFactory | None = None,
                 client: Any = None) -> None:
        super().__init__(config.default_bucket_name, deduplication=deduplication, ids=ids)
        self.config = config
        self._s3 = client if client is not None else make_client(config)
        self._transfer = _transfer_config(config)
        # The per-mail requests (small PUTs, GETs, HEADs, DELETEs), where boto3's per-request CPU showed
        # (s3_direct.py).
        self._direct = DirectS3(
            config.endpoint_url, config.access_key or "", config.secret_key or "", config.region,
            pool_size=config.max_pool_connections, connect_timeout=config.connect_timeout,
            read_timeout=config.read_timeout, max_attempts=config.max_attempts) if config.endpoint_url else None
        self._batch_delete = True  # until the server refuses DeleteObjects (S3Proxy)

    @property
    def client(self) -> Any:
        """The boto3 S3 client this store talks through, to share with another store on the same buckets."""
        return self._s3

    @property
    def transfer_config(self) -> Any:
        """The boto3 ``TransferConfig`` of multipart uploads (part size, parts held in memory)."""
        return self._transfer

    # ------------------------------------------------------------------ bucket names
    def resolve(self, bucket: BucketName) -> str:
        """The S3 bucket of a ``BucketName`` (James's BucketNameResolver)."""
        return self.config.s3_bucket(bucket.value)

    def unresolve(self, s3_bucket: str) -> BucketName | None:
        """The ``BucketName`` of an S3 bucket, None for a bucket outside this store's namespace."""
        name = self.config.bucket_name(s3_bucket)
        if name is None:
            return None
        try:
            return BucketName(name)
        except ValueError:
            return None

    def _check_bucket(self, bucket: BucketName) -> None:
        try:
            BucketName(self.resolve(bucket))
        except ValueError as exc:
            raise ValueError(f"bucket {bucket.value!r} with prefix {self.config.bucket_prefix!r}: {exc}") from None

    # ------------------------------------------------------------------ primitives
    def _put(self, bucket: BucketName, blob_id: BlobId, content: Spooled) -> None:
        name = self.resolve(bucket)
        with _translated(f"saving {blob_id} in {name}"):
            try:
                self._upload(name, blob_id, content)
            except (ClientError, S3Error) as exc:
                if _code(exc) != "NoSuchBucket":
                    raise
                self._create_bucket(name)
                content.file.seek(0)
                self._upload(name, blob_id, content)

    def _upload(self, name: str, blob_id: BlobId, content: Spooled) -> None:
        if self._direct is not None and content.size <= DIRECT_PUT_MAX:
            self._direct.put_object(name, blob_id.value, content.file.read())
        elif content.size < self.config.part_size:
            self._s3.put_object(Bucket=name, Key=blob_id.value, Body=content.file, ContentLength=content.size)
        else:
            self._s3.upload_fileobj(content.file, name, blob_id.value, Config=self._transfer)

    def _create_bucket(self, name: str) -> None:
        kwargs: dict[str, Any] = {"Bucket": name}
        if self.config.region != "us-east-1":
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": self.config.region}
        try:
            self._s3.create_bucket(**kwargs)
        except ClientError as exc:
            if _code(exc) not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):  # a concurrent save won
                raise

    def _open(self, bucket: BucketName, blob_id: BlobId) -> BlobStream:
        name = self.resolve(bucket)
        what = f"reading {blob_id} from {name}"
        with _translated(what):
            try:
                if self._direct is not None:
                    return BlobStream(_Body(self._direct.get_object(name, blob_id.value), what))
                response = self._s3.get_object(Bucket=name, Key=blob_id.value)
            except (ClientError, S3Error) as exc:
                if _code(exc) in _NOT_FOUND:
                    raise BlobNotFound(bucket, blob_id) from None
                raise
        return BlobStream(_Body(response["Body"], what))

    def _exists(self, bucket: BucketName, blob_id: BlobId) -> bool:
        name = self.resolve(bucket)
        with _translated(f"looking for {blob_id} in {name}"):
            try:
                if self._direct is not None:
                    self._direct.head_object(name, blob_id.value)
                else:
                    self._s3.head_object(Bucket=name, Key=blob_id.value)
            except (ClientError, S3Error) as exc:
                if _code(exc) in _NOT_FOUND:
                    return False
                raise
        return True

    def _remove(self, bucket: BucketName, blob_id: BlobId) -> None:
        name = self.resolve(bucket)
        with _translated(f"deleting {blob_id} from {name}"):
            try:
                if self._direct is not None:
                    self._direct.delete_object(name, blob_id.value)
                else:
                    self._s3.delete_object(Bucket=name, Key=blob_id.value)
            except (ClientError, S3Error) as exc:
                if _code(exc) != "NoSuchBucket":
                    raise

    def _delete_bucket(self, bucket: BucketName) -> None:
        name = self.resolve(bucket)
        with _translated(f"deleting bucket {name}"):
            try:
                self._empty_and_delete(name)
            except ClientError as exc:
                if _code(exc) != "NoSuchBucket":
                    raise

    # Not empty: a concurrent save landed after the listing; empty it again.
    @retry(retry=retry_if_exception(lambda exc: isinstance(exc, ClientError) and _code(exc) == "BucketNotEmpty"),
           stop=stop_after_attempt(3), reraise=True)
    def _empty_and_delete(self, name: str) -> None:
        self._empty(name)
        self._s3.delete_bucket(Bucket=name)

    def _empty(self, name: str) -> None:
        for page in self._s3.get_paginator("list_objects_v2").paginate(Bucket=name):
            keys = [obj["Key"] for obj in page.get("Contents", [])]
            if keys:
                self._delete_keys(name, keys)

    def _delete_keys(self, name: str, keys: list[str]) -> None:
        if self._batch_delete:
            try:
                response = self._s3.delete_objects(
                    Bucket=name, Delete={"Objects": [{"Key": key} for key in keys], "Quiet": True})
            except ClientError as exc:
                if _code(exc) != "NotImplemented":
                    raise
                self._batch_delete = False  # S3Proxy refuses the checksum header botocore sends
            else:
                if response.get("Errors"):
                    raise BlobStoreError(f"S3 failed deleting objects of {name}: {response['Errors'][:3]}")
                return
        for key in keys:
            self._s3.delete_object(Bucket=name, Key=key)

    def _list_buckets(self) -> list[BucketName]:
        with _translated("listing buckets"):
            names = [bucket["Name"] for bucket in self._s3.list_buckets().get("Buckets", [])]
        return [bucket for bucket in map(self.unresolve, names) if bucket is not None]

    def _list_blobs(self, bucket: BucketName) -> Iterator[BlobId]:
        name = self.resolve(bucket)
        with _translated(f"listing {name}"):
            try:
                for page in self._s3.get_paginator("list_objects_v2").paginate(Bucket=name):
                    for obj in page.get("Contents", []):
                        if BlobId.is_valid(obj["Key"]):  # other keys are not ours: left alone
                            yield BlobId(obj["Key"])
            except ClientError as exc:
                if _code(exc) != "NoSuchBucket":
                    raise
