"""Message content storage, James-compatible: the ``BlobStore`` port (``api``), an in-memory
adapter for tests (``memory``), the S3 adapter (``s3``, imported on demand: it needs boto3) and the
deduplication settings (``config``)."""

from .api import (
    DEFAULT_BUCKET,
    BlobId,
    BlobIdFactory,
    BlobNotFound,
    BlobStore,
    BlobStoreError,
    BlobStream,
    BucketName,
    GenerationAwareBlobIdFactory,
    GenerationConfig,
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
    "GenerationAwareBlobIdFactory",
    "GenerationConfig",
    "HashBlobIdFactory",
    "MemoryBlobStore",
    "RandomBlobIdFactory",
    "StoragePolicy",
    "blob_id_factory",
]
