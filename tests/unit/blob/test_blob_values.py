"""Value types, id factories, spooling and the stream of the blob store port."""

from __future__ import annotations

import base64
import hashlib
import io
import pickle
import shutil
import uuid
from datetime import UTC, date, datetime, timedelta

import pytest

from mailserver.blob import spool as spool_module
from mailserver.blob.api import (
    BlobId,
    BlobNotFound,
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
from mailserver.blob.spool import spool


def test_hash_ids_are_james_base64url_padded_sha256():
    # SHA-256 of the empty string, as Guava's BaseEncoding.base64Url() writes it
    assert str(HashBlobIdFactory().generate(hashlib.sha256(b"").digest())) == \
        "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU="
    for n in range(200):  # URL-safe alphabet only: no "/" that would make a key path
        digest = hashlib.sha256(str(n).encode()).digest()
        value = str(HashBlobIdFactory().generate(digest))
        assert "/" not in value and "+" not in value and len(value) == 44 and value.endswith("=")
        assert base64.urlsafe_b64decode(value) == digest


def test_random_ids_are_uuid4_whatever_the_content():
    factory = RandomBlobIdFactory()
    digest = hashlib.sha256(b"x").digest()
    first, second = factory.generate(digest), factory.generate(digest)
    assert first != second and uuid.UUID(str(first)).version == 4


def test_factory_choice():
    assert blob_id_factory(True).deduplicating and isinstance(blob_id_factory(True), GenerationAwareBlobIdFactory)
    assert not blob_id_factory(False).deduplicating and isinstance(blob_id_factory(False), RandomBlobIdFactory)


def test_generation_is_james_epoch_seconds_divided_by_the_duration():
    """James's GenerationAwareBlobIdTest: 2021-08-19T10:15:30Z is generation 628 with 30-day generations."""
    config = GenerationConfig()
    assert (config.family, config.duration) == (1, timedelta(days=30))
    assert config.generation(datetime(2021, 8, 19, 10, 15, 30, tzinfo=UTC)) == 628
    start = datetime.fromtimestamp(629 * 30 * 86400, UTC)   # the first second of generation 629
    assert config.generation(start) == 629
    assert config.generation(start - timedelta(microseconds=1)) == 628   # floor, as getEpochSecond()
    assert GenerationConfig(2, timedelta(days=15)).generation(datetime(2021, 8, 19, 10, 15, 30, tzinfo=UTC)) == 1257


def test_generation_aware_ids_are_family_generation_hash():
    digest = hashlib.sha256(b"toto").digest()
    at = datetime(2021, 8, 19, 10, 15, 30, tzinfo=UTC)
    assert str(GenerationAwareBlobIdFactory(clock=lambda: at).generate(digest)) == \
        "1_628_MfemXjFVhqwZi9eYtmKc5JA9CJlHbVdBqfMuLlIbamY="   # James's DeduplicationBlobStoreContract hash
    family_two = GenerationAwareBlobIdFactory(GenerationConfig(2, timedelta(days=1)), clock=lambda: at)
    assert str(family_two.generate(digest)) == "2_18858_MfemXjFVhqwZi9eYtmKc5JA9CJlHbVdBqfMuLlIbamY="


@pytest.mark.parametrize("family, duration", [(0, timedelta(days=1)), (-1, timedelta(days=1)),
                                              (1, timedelta(0)), (1, timedelta(days=-5))])
def test_generation_config_refuses_what_james_refuses(family, duration):
    with pytest.raises(ValueError, match="generation"):
        GenerationConfig(family, duration)


@pytest.mark.parametrize("name", ["abc", "james-default", "deleted-messages-2026-01-01", "a.b-c.d", "x" * 63, "0ab"])
def test_valid_bucket_names(name):
    assert str(BucketName(name)) == name
    assert BucketName.of(name) == BucketName.of(BucketName(name)) == BucketName(name)


def test_bucket_name_error_says_why():
    with pytest.raises(ValueError, match=r"invalid bucket name 'Ab_c': only lowercase letters"):
        BucketName("Ab_c")
    with pytest.raises(ValueError, match="3 to 63"):
        BucketName("ab")


def test_vault_bucket_of_a_month():
    assert BucketName.deleted_messages(date(2026, 2, 28)) == BucketName("deleted-messages-2026-02-01")


# Literal values, not uuid4(): a test's id stays the same from one run to the next.
@pytest.mark.parametrize("value", ["abc", "a/b/c", "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU=",
                                   "43961990-b9ca-47b3-8091-e172b6404b1e", "dots.in.name", "..hidden", "é"])
def test_valid_blob_ids(value):
    assert str(BlobId.of(value)) == value and BlobId.is_valid(value)


def test_blob_not_found_is_a_store_error_that_pickles():
    exc = BlobNotFound(BucketName("james-default"), BlobId("abc"))
    assert isinstance(exc, BlobStoreError)
    assert str(exc) == "blob abc not found in bucket james-default"
    again = pickle.loads(pickle.dumps(exc))  # noqa: S301 - our own object
    assert (again.bucket, again.blob_id, str(again)) == ("james-default", "abc", str(exc))


def test_storage_policies_are_james_three():
    assert [p.name for p in StoragePolicy] == ["SIZE_BASED", "LOW_COST", "HIGH_PERFORMANCE"]


def test_blob_stream_is_a_readable_binary_file():
    with BlobStream(io.BytesIO(b"0123456789")) as stream:
        assert stream.read(0) == b""
        assert stream.read(3) == b"012"
        buffer = bytearray(4)
        assert stream.readinto(buffer) == 4 and buffer == b"3456"
        assert stream.read() == b"789"
        assert stream.read(5) == b""
    assert stream.closed
    with pytest.raises(ValueError):
        stream.read(1)
    out = io.BytesIO()
    with BlobStream(io.BytesIO(b"x" * 100_000)) as stream:
        shutil.copyfileobj(stream, out, 4096)
    assert out.getvalue() == b"x" * 100_000


def test_spool_stays_in_memory_when_small_and_goes_to_disk_past_the_threshold():
    with spool(iter([b"a" * 1000])) as small:
        assert not small.file._rolled  # type: ignore[attr-defined]
    big_chunks = [b"b" * spool_module.CHUNK] * (spool_module.SPOOL_IN_MEMORY // spool_module.CHUNK + 1)
    with spool(iter(big_chunks)) as big:
        assert big.file._rolled  # type: ignore[attr-defined]
        assert big.size == len(big_chunks) * spool_module.CHUNK
        assert big.sha256 == hashlib.sha256(b"".join(big_chunks)).digest()
        assert big.file.read(3) == b"bbb"


def test_spool_refuses_text():
    with pytest.raises(TypeError):
        spool(io.StringIO("text"))
    with pytest.raises(TypeError, match="str"):
        spool("text")
