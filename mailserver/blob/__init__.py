"""Message content storage, James-compatible: the ``BlobStore`` port (``api``), an in-memory
adapter for tests (``memory``) and the S3 adapter (``s3``, imported on demand: it needs boto3)."""

from .api import (
    DEFAULT_BUCKET,
    BlobId,
    BlobIdFactory,
    BlobNotFound,
    BlobStore,
    BlobStoreError,
    BlobStream,
    BucketName,
    HashBlobIdFactory,
    RandomBlobIdFactory,
    StoragePolicy,
    blob_id_factory,
)
from .memory import MemoryBlobStore

__all__ = [
    "DEFAULT_BUCKET",
    "BlobId",
    "BlobIdFactory",
    "BlobNotFound",
    "BlobStore",
    "BlobStoreError",
    "BlobStream",
    "BucketName",
    "HashBlobIdFactory",
    "MemoryBlobStore",
    "RandomBlobIdFactory",
    "StoragePolicy",
    "blob_id_factory",
]
