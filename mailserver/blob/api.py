"""The blob store port, after James's ``BlobStore`` (server/blob/blob-api).

James keeps message content out of Cassandra: the header and the body of every message are
two blobs in an object store, addressed by (bucket, blob id). James's ``deduplication.enable``
chooses between two stores (``MAILSERVER_BLOB_DEDUPLICATION`` here, see ``config``):

* off (James's sample ``blob.properties``, ``PassThroughBlobStore``): every save gets a random
  id (``PlainBlobId``) and ``delete`` really deletes;
* on (``DeDuplicationBlobStore``, ADR 0049): the id is ``<family>_<generation>_<hash>``
  (``GenerationAwareBlobId``), so the same bytes saved within one generation are stored once,
  and ``delete`` is a no-op: unreferenced blobs are left to a garbage collector.

Ids are opaque keys for reading and deleting: nothing parses them, so content written in either
mode, by James or by this project's earlier plain-hash ids, reads and deletes the same way.
Deleting a whole bucket is always real (the deleted-messages vault drops a month at a time).

Adapters implement the protected primitives at the bottom of ``BlobStore``; the public
methods validate arguments, spool and hash the input, and apply the deduplication rules, so
every adapter behaves the same (see tests/contract/blob_store_contract.py).
"""

from __future__ import annotations

import base64
import enum
import io
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, BinaryIO, ClassVar

from mailserver import randomness

from .spool import Spooled, spool

# James's BucketName.DEFAULT, prefixed like any bucket; a namespace (S3_DEFAULT_BUCKET) replaces it unprefixed.
DEFAULT_BUCKET = "default"
# Under this size a deduplicated blob is simply written again (James overwrites unconditionally);
# above it a HEAD first saves re-uploading megabytes that are already there.
DEDUP_CHECK_MIN_SIZE = 1024 * 1024

BlobContent = bytes | bytearray | memoryview | BinaryIO | Iterable[bytes]

_BUCKET_CHARS = re.compile(r"^[a-z0-9][a-z0-9.-]*[a-z0-9]$")
_IPV4 = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_KEY_BYTES = 1024  # S3's limit on an object key


def _bucket_name_problem(value: object) -> str | None:
    if not isinstance(value, str):
        return "not a string"
    if not 3 <= len(value) <= 63:
        return "must be 3 to 63 characters long"
    if not _BUCKET_CHARS.match(value):
        return "only lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit"
    if ".." in value:
        return "no two adjacent dots"
    if _IPV4.match(value):
        return "must not look like an IP address"
    if value.startswith("xn--") or value.endswith("-s3alias"):
        return "the xn-- prefix and -s3alias suffix are reserved by S3"
    return None


@dataclass(frozen=True, order=True)
class BucketName:
    """A bucket, named by S3's rules so that every adapter accepts the same names."""

    value: str

    def __post_init__(self) -> None:
        problem = _bucket_name_problem(self.value)
        if problem:
            raise ValueError(f"invalid bucket name {self.value!r}: {problem}")

    @classmethod
    def of(cls, value: BucketName | str) -> BucketName:
        return value if isinstance(value, BucketName) else cls(value)

    @classmethod
    def deleted_messages(cls, day: date) -> BucketName:
        """The deleted-messages vault's bucket for the month of ``day`` (James: one per month)."""
        return cls(f"deleted-messages-{day:%Y-%m}-01")

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, order=True)
class BlobId:
    """A blob's id; it is also the object key in the bucket (James's S3 layout).

    Non-empty, at most 1024 UTF-8 bytes, no control characters, and "/"-separated segments
    that are neither empty nor "." / "..": such keys would escape or clash on the
    filesystem-backed stores (S3Proxy maps keys to paths).
    """

    value: str

    def __post_init__(self) -> None:
        problem = self._problem(self.value)
        if problem:
            raise ValueError(f"invalid blob id {self.value!r}: {problem}")

    @staticmethod
    def _problem(value: object) -> str | None:
        if not isinstance(value, str) or not value:
            return "must be a non-empty string"
        if len(value.encode("utf-8")) > MAX_KEY_BYTES:
            return f"longer than {MAX_KEY_BYTES} bytes"
        if _CONTROL.search(value):
            return "control characters are not allowed"
        if value.startswith("/"):
            return "must not start with '/'"
        if any(segment in ("", ".", "..") for segment in value.split("/")):
            return "empty, '.' and '..' path segments are not allowed"
        return None

    @classmethod
    def is_valid(cls, value: object) -> bool:
        return cls._problem(value) is None

    @classmethod
    def of(cls, value: BlobId | str) -> BlobId:
        return value if isinstance(value, BlobId) else cls(value)

    def __str__(self) -> str:
        return self.value


class BlobIdFactory(ABC):
    """Makes the id of new content from its SHA-256 digest (computed anyway while spooling)."""

    deduplicating: ClassVar[bool]

    @abstractmethod
    def generate(self, sha256_digest: bytes) -> BlobId: ...


def _hash(sha256_digest: bytes) -> str:
    """James's hash encoding: URL-safe base64 of the SHA-256, padded (Guava's ``base64Url()``)."""
    return base64.urlsafe_b64encode(sha256_digest).decode("ascii")


class HashBlobIdFactory(BlobIdFactory):
    """The bare hash, James's ``HashBlobId`` before generations (this project's ids until issue 14).

    Not chosen by any setting any more; kept because blobs saved under such ids must stay
    readable, and to name the legacy form in tests.
    """

    deduplicating = True

    def generate(self, sha256_digest: bytes) -> BlobId:
        return BlobId(_hash(sha256_digest))


@dataclass(frozen=True)
class GenerationConfig:
    """James's ``GenerationAwareBlobId.Configuration``: ``deduplication.gc.generation.family`` (1)
    and ``deduplication.gc.generation.duration`` (30 days)."""

    family: int = 1
    duration: timedelta = timedelta(days=30)

    def __post_init__(self) -> None:
        if not isinstance(self.family, int) or self.family < 1:
            raise ValueError(f"generation family must be a positive integer, got {self.family!r}")
        if self.duration.total_seconds() < 1:
            raise ValueError(f"generation duration must be at least one second, got {self.duration}")

    def generation(self, now: datetime) -> int:
        """James's ``computeGeneration``: whole epoch seconds divided by the duration in seconds."""
        return math.floor(now.timestamp()) // int(self.duration.total_seconds())


def _utc_now() -> datetime:
    return datetime.now(UTC)


class GenerationAwareBlobIdFactory(BlobIdFactory):
    """James's ``GenerationAwareBlobId`` over the content hash: ``<family>_<generation>_<hash>``.

    Content saved twice within one generation gets the same id (stored once); the generation lets
    James's blob GC leave recent blobs alone while references to them may still be written.
    """

    deduplicating = True

    def __init__(self, config: GenerationConfig | None = None,
                 clock: Callable[[], datetime] = _utc_now) -> None:
        self.config = config or GenerationConfig()
        self.clock = clock

    def generate(self, sha256_digest: bytes) -> BlobId:
        generation = self.config.generation(self.clock())
        return BlobId(f"{self.config.family}_{generation}_{_hash(sha256_digest)}")


_CONTENT_HASH = r"[A-Za-z0-9_-]{43}="
_CONTENT_DERIVED = re.compile(rf"^(?:\d+_\d+_)?{_CONTENT_HASH}$")


def is_content_derived(blob_id: BlobId | str) -> bool:
    """An id made from the content's hash (bare, or James's ``<family>_<generation>_<hash>``):
    written under deduplication, so other messages may share the blob."""
    return _CONTENT_DERIVED.match(str(blob_id)) is not None


class RandomBlobIdFactory(BlobIdFactory):
    """A random UUID per save (James's ``PassThroughBlobStore`` with ``PlainBlobId``): no deduplication."""

    deduplicating = False

    def generate(self, sha256_digest: bytes) -> BlobId:
        return BlobId(str(randomness.uuid4()))


def blob_id_factory(deduplication: bool, generation: GenerationConfig | None = None,
                    clock: Callable[[], datetime] = _utc_now) -> BlobIdFactory:
    """The ids James gives new content in each mode."""
    if deduplication:
        return GenerationAwareBlobIdFactory(generation, clock)
    return RandomBlobIdFactory()


class StoragePolicy(enum.Enum):
    """James's storage policies: headers are saved SIZE_BASED, bodies LOW_COST.

    Accepted for compatibility; every adapter here has a single storage tier, so the policy
    does not change where or how a blob is stored.
    """

    SIZE_BASED = "size_based"
    LOW_COST = "low_cost"
    HIGH_PERFORMANCE = "high_performance"


class BlobStoreError(Exception):
    """The blob store backend failed (unreachable, refused, ...)."""


class BlobNotFound(BlobStoreError):
    def __init__(self, bucket: BucketName | str, blob_id: BlobId | str) -> None:
        super().__init__(bucket, blob_id)  # args kept so that the exception pickles (Spark)
        self.bucket, self.blob_id = str(bucket), str(blob_id)

    def __str__(self) -> str:
        return f"blob {self.blob_id} not found in bucket {self.bucket}"


class BlobStream(io.RawIOBase):
    """A blob being read: ``read(n)`` pulls at most n bytes from the backend.

    A context manager: leaving it closes the underlying response (or buffer).
    """

    def __init__(self, raw: Any) -> None:
        super().__init__()
        self._raw = raw

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        self._checkClosed()
        if size is None or size < 0:
            return self._raw.read()
        return self._raw.read(size) if size else b""

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            try:
                self._raw.close()
            finally:
                super().close()


class BlobStore(ABC):
    """Save, read and delete blobs; see the module docstring for the deduplication rules."""

    def __init__(self, default_bucket: BucketName | str = DEFAULT_BUCKET, *, deduplication: bool = False,
                 ids: BlobIdFactory | None = None) -> None:
        """``deduplication`` picks James's ids for the mode (off by default, as James's sample
        ``blob.properties``); ``ids`` overrides them (a configured generation, a fixed clock)."""
        self._default_bucket = BucketName.of(default_bucket)
        self._ids: BlobIdFactory = ids or blob_id_factory(deduplication)

    @property
    def default_bucket(self) -> BucketName:
        return self._default_bucket

    @property
    def deduplicating(self) -> bool:
        return self._ids.deduplicating

    @property
    def blob_id_factory(self) -> BlobIdFactory:
        return self._ids

    # ------------------------------------------------------------------ public API
    def save(self, bucket: BucketName | str, data: BlobContent,
             policy: StoragePolicy = StoragePolicy.LOW_COST) -> BlobId:
        """Store ``data`` and return its id.

        ``data`` may be bytes, a binary file object or an iterable of bytes chunks; it is
        hashed while spooled (memory up to 1 MiB, then a temporary file), never held whole in
        memory. When deduplicating, content already present is not written again. ``policy``
        is accepted and ignored for placement (see ``StoragePolicy``).
        """
        name = self._bucket(bucket)
        StoragePolicy(policy)
        with spool(data) as content:  # TypeError on bad input, before anything is written
            blob_id = self._ids.generate(content.sha256)
            if self.deduplicating and content.size >= DEDUP_CHECK_MIN_SIZE and self._exists(name, blob_id):
                return blob_id
            self._put(name, blob_id, content)
        return blob_id

    def save_as(self, bucket: BucketName | str, blob_id: BlobId | str, data: BlobContent) -> BlobId:
        """Store ``data`` under an id the caller chose (James's ``BlobStoreDAO.save``): for blobs whose
        id is another record's key, such as a JMAP upload's. Overwrites; no deduplication."""
        name, chosen = self._bucket(bucket), BlobId.of(blob_id)
        with spool(data) as content:
            self._put(name, chosen, content)
        return chosen

    def read(self, bucket: BucketName | str, blob_id: BlobId | str) -> bytes:
        with self.read_stream(bucket, blob_id) as stream:
            return stream.read()

    def read_stream(self, bucket: BucketName | str, blob_id: BlobId | str) -> BlobStream:
        """Open a blob for reading in chunks; use as ``with store.read_stream(b, i) as s: s.read(n)``.

        Raises ``BlobNotFound`` here, not at the first read.
        """
        return self._open(self._bucket(bucket), BlobId.of(blob_id))

    def exists(self, bucket: BucketName | str, blob_id: BlobId | str) -> bool:
        return self._exists(self._bucket(bucket), BlobId.of(blob_id))

    def delete(self, bucket: BucketName | str, blob_id: BlobId | str, *, force: bool = False) -> bool:
        """Delete one blob; return whether a deletion was performed.

        A deduplicating store does nothing (another message may share the blob; garbage
        collection is separate) unless ``force`` is set, as James's BlobStoreDAO delete.
        A store without deduplication does the same for a content-derived id: that blob was
        written while deduplication was on (before this setting existed, this project always
        deduplicated; James warns never to turn it off once on) and may be shared, so turning
        deduplication off never deletes another message's content. A missing blob is not an error.
        """
        name, key = self._bucket(bucket), BlobId.of(blob_id)
        if not force and (self.deduplicating or is_content_derived(key)):
            return False
        self._remove(name, key)
        return True

    def delete_bucket(self, bucket: BucketName | str) -> None:
        """Delete every blob of the bucket and the bucket itself; a missing bucket is fine."""
        self._delete_bucket(self._bucket(bucket))

    def list_buckets(self) -> list[BucketName]:
        """The buckets of this store, plus the default bucket even when not yet created (as James)."""
        return sorted({*self._list_buckets(), self.default_bucket})

    def list_blobs(self, bucket: BucketName | str) -> Iterator[BlobId]:
        """Every blob id of the bucket (none for a missing bucket)."""
        return self._list_blobs(self._bucket(bucket))

    def _bucket(self, bucket: BucketName | str) -> BucketName:
        name = BucketName.of(bucket)
        self._check_bucket(name)
        return name

    # ------------------------------------------------------------- adapter primitives
    def _check_bucket(self, bucket: BucketName) -> None:  # noqa: B027 - optional hook
        """Raise ValueError when this adapter cannot use the name (e.g. too long once prefixed)."""

    @abstractmethod
    def _put(self, bucket: BucketName, blob_id: BlobId, content: Spooled) -> None:
        """Write the spooled content under blob_id, creating the bucket when missing."""

    @abstractmethod
    def _open(self, bucket: BucketName, blob_id: BlobId) -> BlobStream: ...

    @abstractmethod
    def _exists(self, bucket: BucketName, blob_id: BlobId) -> bool: ...

    @abstractmethod
    def _remove(self, bucket: BucketName, blob_id: BlobId) -> None: ...

    @abstractmethod
    def _delete_bucket(self, bucket: BucketName) -> None: ...

    @abstractmethod
    def _list_buckets(self) -> Iterable[BucketName]: ...

    @abstractmethod
    def _list_blobs(self, bucket: BucketName) -> Iterator[BlobId]: ...
